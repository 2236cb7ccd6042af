"""How kb-eval starts worker processes: one place, so reading and analysis share the same rules."""

from __future__ import annotations

import gc
import itertools
import multiprocessing
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from contextlib import contextmanager
from typing import Any


@contextmanager
def worker_pool(
    workers: int, initializer: Callable[..., None] | None = None, initargs: tuple[Any, ...] = ()
) -> Iterator[ProcessPoolExecutor]:
    """A process pool whose workers are forked from this process where the platform can fork.

    Forked, because a worker then starts with the modules already imported instead of importing
    them again (spawn). The parent's objects are frozen out of the cyclic garbage collector while
    the pool lives: a collection in a worker would otherwise walk every one of them and write to
    their pages, turning memory the worker shares with its parent copy-on-write into its own copy
    (measured at 1,000 bench documents, peak PSS summed over the processes of one `kb-eval` run, as
    bench/run.py's TreeRssSampler reads it: 132 MiB without the freeze, 106 with, one run each).
    """
    context = multiprocessing.get_context("fork") if "fork" in multiprocessing.get_all_start_methods() else None
    # Frozen already (a pull request's base, in the child forked with its objects frozen): left so.
    frozen_before = gc.get_freeze_count() > 0
    gc.freeze()
    try:
        with ProcessPoolExecutor(
            max_workers=workers, mp_context=context, initializer=initializer, initargs=initargs
        ) as pool:
            yield pool
    finally:
        if not frozen_before:
            gc.unfreeze()


def ordered_map(
    pool: ProcessPoolExecutor, function: Callable[[Any], Any], items: Sequence[Any], chunk: int, in_flight: int
) -> Iterator[Any]:
    """`function` of each item, in order, run by the pool `chunk` items to a task, with at most
    `in_flight` tasks submitted and not yet consumed. ProcessPoolExecutor.map submits every task at
    once, so results the consumer has not reached pile up in the parent (a million files read in
    16 tasks: 3.7 GiB); here what waits is at most `in_flight` tasks' results, however many items."""
    tasks = (items[first : first + chunk] for first in range(0, len(items), chunk))
    pending: deque[Future[list[Any]]] = deque()
    for task in itertools.islice(tasks, in_flight):
        pending.append(pool.submit(_each, function, task))
    while pending:
        results = pending.popleft().result()
        for task in itertools.islice(tasks, 1):
            pending.append(pool.submit(_each, function, task))
        yield from results


def _each(function: Callable[[Any], Any], items: Sequence[Any]) -> list[Any]:
    return [function(item) for item in items]


KEPT_FREE_BYTES = 64 << 20
"""Freed memory the C heap keeps for the next allocations instead of giving it back at once (glibc's
trim threshold; arrays below half of it are carved from the heap rather than mapped anew). numpy's
temporaries are mapped and unmapped a few MiB at a time otherwise, and each page of each one is
faulted in and zeroed again: searching 10,000 queries at 20,000 bench documents took 828,737 page
faults (2.7 s of system time of 13.6 s) and 3,672 with this setting (0.1 of 10.4 s)."""


_freed_memory_kept = False
"""Whether keep_freed_memory was made in this process (the allocator's setting is the process's)."""


def keep_freed_memory() -> bool:
    """Let the C heap reuse freed memory (KEPT_FREE_BYTES) instead of mapping and faulting in fresh
    pages for each large temporary. Forked workers inherit it. False where the C library has no
    mallopt (a no-op there); release_free_memory still gives everything back before a fork. The
    program's to make as it starts (scanner.cli.main.run, entrypoint.py), never a run's."""
    global _freed_memory_kept
    mallopt = _libc_function("mallopt")
    if mallopt is None:
        return False
    # glibc's M_TRIM_THRESHOLD and M_MMAP_THRESHOLD (malloc.h); the largest mapping threshold it
    # accepts is 32 MiB on 64-bit systems.
    _freed_memory_kept = bool(mallopt(-1, KEPT_FREE_BYTES)) and bool(mallopt(-3, KEPT_FREE_BYTES // 2))
    return _freed_memory_kept


def _libc_function(name: str) -> Any:
    import ctypes
    import ctypes.util

    library = ctypes.util.find_library("c")
    return getattr(ctypes.CDLL(library), name, None) if library else None


SEPARATE_PAGES_FROM_BYTES = 128 * 1024
"""glibc's own mapping and trim thresholds, which a pull request's two processes return to at the fork."""


def large_allocations_apart(threshold: int = SEPARATE_PAGES_FROM_BYTES) -> bool:
    """From now on, every allocation of `threshold` bytes or more gets pages of its own, and freed
    memory goes back to the system past `threshold` (glibc's M_MMAP_THRESHOLD and M_TRIM_THRESHOLD),
    undoing keep_freed_memory: a pull request's head and base's child run at once, and what each
    kept freed (up to KEPT_FREE_BYTES, or the largest block freed so far with glibc's own sliding
    threshold) added to the pair's peak: after the head's analysis, a search's temporary arrays were
    carved from the heap and stayed resident in both. False where the C library has no mallopt, and
    a no-op where keep_freed_memory was not made: kb-eval run in process (tests) leaves the calling
    process's allocator as it found it."""
    mallopt = _libc_function("mallopt")
    if mallopt is None or not _freed_memory_kept:
        return False
    return bool(mallopt(-1, threshold)) and bool(mallopt(-3, threshold))


def release_free_memory() -> bool:
    """Give the allocator's free pages back to the system (glibc's malloc_trim), before a fork: a
    child's allocations would otherwise land in free pages it shares with its parent, each then
    copied (a pull request's base at 10,000 bench documents: run's peak 383 to 270 MiB, one run
    each). False where the C library has no such call (it is then a no-op)."""
    trim = _libc_function("malloc_trim")
    if trim is None:
        return False
    trim(0)
    return True
