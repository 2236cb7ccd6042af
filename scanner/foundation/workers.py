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
    gc.freeze()
    try:
        with ProcessPoolExecutor(
            max_workers=workers, mp_context=context, initializer=initializer, initargs=initargs
        ) as pool:
            yield pool
    finally:
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


def release_free_memory() -> bool:
    """Give the allocator's free pages back to the system (glibc's malloc_trim), before a fork: a
    child's allocations would otherwise land in free pages it shares with its parent, each then
    copied (a pull request's base at 10,000 bench documents: run's peak 383 to 270 MiB, one run
    each). False where the C library has no such call (it is then a no-op)."""
    import ctypes
    import ctypes.util

    name = ctypes.util.find_library("c")
    trim = getattr(ctypes.CDLL(name), "malloc_trim", None) if name else None
    if trim is None:
        return False
    trim(0)
    return True
