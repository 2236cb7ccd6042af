"""How kb-eval starts worker processes: one place, so reading and analysis share the same rules."""

from __future__ import annotations

import gc
import multiprocessing
from collections.abc import Callable, Iterator
from concurrent.futures import ProcessPoolExecutor
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
