"""Worker pools: results in order, with only a bounded number of tasks waiting for the consumer."""

from __future__ import annotations

import os
import subprocess
import sys
from concurrent.futures import Future
from typing import Any

import numpy as np
import pytest

from scanner.foundation.workers import ordered_map, release_free_memory, worker_pool


def squared(value: int) -> int:
    return value * value


def test_ordered_map_gives_every_result_in_order_with_at_most_its_window_of_tasks_ahead_of_the_consumer() -> None:
    with worker_pool(2) as pool:
        submitted: list[int] = []
        submit = pool.submit

        def counted(*args: Any) -> Future[Any]:
            submitted.append(len(args[2]))
            return submit(*args)

        pool.submit = counted  # type: ignore[method-assign]
        results = []
        for consumed, value in enumerate(ordered_map(pool, squared, list(range(100)), 5, 3), start=1):
            results.append(value)
            # The tasks whose results were reached, plus the window: never every task at once.
            assert len(submitted) <= -(-consumed // 5) + 3
        assert results == [n * n for n in range(100)]
        assert len(submitted) == 20 and set(submitted) == {5}
        # The near miss: before the first result only the window was submitted, not all 20 tasks.
        submitted.clear()
        first = ordered_map(pool, squared, list(range(100)), 5, 3)
        assert next(first) == 0 and len(submitted) == 4


def test_a_pool_started_with_the_objects_frozen_leaves_them_frozen_and_one_started_without_unfreezes() -> None:
    import gc

    gc.freeze()
    try:
        with worker_pool(1) as pool:
            assert pool.submit(squared, 3).result() == 9
        # A pull request's base is forked with the head's objects frozen: its pool keeps them so.
        assert gc.get_freeze_count() > 0
    finally:
        gc.unfreeze()
    with worker_pool(1) as pool:
        assert gc.get_freeze_count() > 0
    # The near miss: frozen by the pool alone, they are back in the collector's sight after it.
    assert gc.get_freeze_count() == 0


def resident_kib() -> int:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * (os.sysconf("SC_PAGE_SIZE") // 1024)


@pytest.mark.skipif(not os.path.exists("/proc/self/statm"), reason="reads /proc")
def test_releasing_free_memory_gives_the_heaps_free_pages_back_before_a_fork() -> None:
    # 40,000 blocks of 4 KiB from the C heap, all freed but the last (which keeps the heap's top
    # from shrinking by itself): about 160 MiB free but still resident until released.
    blocks = [np.ones(512) for _ in range(40_000)]
    last = blocks[-1]
    del blocks[:-1]
    before = resident_kib()
    if not release_free_memory():
        pytest.skip("no malloc_trim in this C library")
    assert before - resident_kib() > 100 * 1024
    # The near miss: with nothing freed since, releasing again gives back almost nothing.
    again = resident_kib()
    release_free_memory()
    assert again - resident_kib() < 10 * 1024
    assert last.sum() == 512


_FAULTS = """
import resource, sys
import numpy as np
from scanner.foundation.workers import keep_freed_memory
kept = sys.argv[1] == "kept" and keep_freed_memory()
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for _ in range(40):
    # A dense query's temporaries: a few arrays of several MiB alive at once (26 MiB), then freed.
    held = [np.ones(n) for n in (1_500_000, 1_000_000, 800_000)]
    del held
print(kept, resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
"""


@pytest.mark.skipif(not hasattr(os, "fork"), reason="glibc's allocator")
def test_keeping_freed_memory_spares_the_page_faults_of_a_searchs_repeated_temporaries() -> None:
    def faults(mode: str) -> tuple[str, int]:
        done = subprocess.run([sys.executable, "-c", _FAULTS, mode], capture_output=True, text=True, check=True)
        kept, count = done.stdout.split()
        return kept, int(count)

    kept, with_setting = faults("kept")
    if kept != "True":
        pytest.skip("no mallopt in this C library")
    # The near miss: with the C library's defaults the same work gives freed pages back and faults
    # them in again on most of the 40 rounds (about 1,300 a round measured).
    _, without = faults("default")
    assert without > 40_000
    assert with_setting < without / 10


_MALLINFO = """
import ctypes, ctypes.util, sys
from scanner.foundation.workers import keep_freed_memory, large_allocations_apart
class Info(ctypes.Structure):
    _fields_ = [(name, ctypes.c_size_t) for name in
                ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks", "fordblks", "keepcost")]
libc = ctypes.CDLL(ctypes.util.find_library("c"))
if not hasattr(libc, "mallinfo2"):
    print("skip"); sys.exit()
libc.mallinfo2.restype = Info
libc.malloc.restype = ctypes.c_void_p
libc.free.argtypes = [ctypes.c_void_p]
assert keep_freed_memory()  # as the command line starts
if sys.argv[1] == "apart":
    assert large_allocations_apart()
before = libc.mallinfo2()
block = libc.malloc(1 << 20)
after = libc.mallinfo2()
# 12.5 MiB of 64 KiB blocks from the heap, freed: given back, or kept for the next allocations.
small = [libc.malloc(64 << 10) for _ in range(200)]
grown = libc.mallinfo2().arena
for pointer in reversed(small):
    libc.free(pointer)
print(after.hblks - before.hblks, after.arena - before.arena, grown - libc.mallinfo2().arena)
"""


def test_after_large_allocations_apart_a_megabyte_gets_pages_of_its_own_even_once_a_larger_block_was_freed() -> None:
    # In a process of its own: the setting is the whole process's, for good.
    def counted(mode: str) -> list[int]:
        out = subprocess.run([sys.executable, "-c", _MALLINFO, mode], capture_output=True, text=True, check=True)
        if out.stdout.strip() == "skip":
            pytest.skip("no mallinfo2 in this C library")
        return [int(n) for n in out.stdout.split()]

    # One mapping of its own, the heap not grown, the freed heap given back; the near miss, as the
    # command line leaves it for one run: carved from the heap, and the freed heap kept.
    mappings, heap, given_back = counted("apart")
    assert (mappings, heap) == (1, 0) and given_back >= 12 << 20
    mappings, heap, given_back = counted("as is")
    assert mappings == 0 and heap >= 1 << 20 and given_back == 0


def test_large_allocations_apart_changes_nothing_where_the_program_kept_no_freed_memory() -> None:
    # kb-eval's pull request run in process (as tests run it) must leave that process's allocator
    # as it found it; the program's own setting is undone at the fork.
    script = ("from scanner.foundation.workers import keep_freed_memory, large_allocations_apart\n"
              "print(large_allocations_apart(), keep_freed_memory() and large_allocations_apart())")
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    if out.stdout.split() == ["False", "False"]:
        pytest.skip("no mallopt in this C library")
    assert out.stdout.split() == ["False", "True"]
