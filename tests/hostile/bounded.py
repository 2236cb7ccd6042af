"""Run a hostile case in a child process with a memory cap and a deadline, and compare its cost
with a baseline input of the same size.

A superlinear case is caught by a ratio, not a wall-clock figure: the adversarial input and an
ordinary input of the same size are timed in the same child, so a busy CI machine slows both. The
inputs are small (a quadratic case on them costs seconds, not hours), the child runs under
RLIMIT_AS, set that much beyond what it starts with (a regression that needs gigabytes raises
MemoryError instead of swapping CI) and is
killed at its deadline (a regression that needs minutes fails instead of hanging the suite).
"""

from __future__ import annotations

import os
import pickle
import resource
import select
import signal
import time
import traceback
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

T = TypeVar("T")

DEFAULT_LIMIT_MIB = 1024


class ChildFailed(AssertionError):
    pass


def in_capped_child(function: Callable[[], T], *, limit_mib: int = DEFAULT_LIMIT_MIB, deadline: float = 60.0) -> T:
    """`function()` in a forked child under an address-space limit and a deadline; its result.

    The limit is `limit_mib` MiB beyond the address space the child starts with (what the test
    process had mapped at the fork, which grows with the tests that ran before: libraries, thread
    arenas), so a case gets the same room whichever tests ran first."""
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        os.close(read_end)
        try:
            with open("/proc/self/statm", encoding="ascii") as statm:
                mapped = int(statm.read().split()[0]) * resource.getpagesize()
            limit = mapped + limit_mib * 1024 * 1024
            resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
            outcome: tuple[bool, Any] = (True, function())
        except BaseException:  # noqa: BLE001 - everything goes back to the parent
            outcome = (False, traceback.format_exc())
        with os.fdopen(write_end, "wb") as pipe:
            pipe.write(pickle.dumps(outcome))
        os._exit(0)
    os.close(write_end)
    chunks: list[bytes] = []
    ends = time.monotonic() + deadline
    with os.fdopen(read_end, "rb") as pipe:
        while True:
            left = ends - time.monotonic()
            if left <= 0 or not select.select([pipe], [], [], left)[0]:
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
                raise ChildFailed(f"the case did not finish within {deadline} s")
            chunk = os.read(pipe.fileno(), 1 << 20)
            if not chunk:
                break
            chunks.append(chunk)
    os.waitpid(pid, 0)
    if not chunks:
        raise ChildFailed("the child died without a result (killed by the memory limit?)")
    ok, value = pickle.loads(b"".join(chunks))
    if not ok:
        raise ChildFailed(f"the case raised in its child (limit {limit_mib} MiB):\n{value}")
    result: T = value
    return result


def best_seconds(function: Callable[[], object], repeat: int = 3, floor: float = 0.05) -> float:
    """Seconds per call, the best of `repeat` samples; a call faster than `floor` is repeated
    within a sample until the sample lasts that long (a millisecond is mostly noise)."""
    started = time.perf_counter()
    function()
    once = time.perf_counter() - started
    calls = max(1, int(floor / max(once, 1e-6)))
    best = once if calls == 1 else float("inf")
    for _ in range(repeat):
        started = time.perf_counter()
        for _ in range(calls):
            function()
        best = min(best, (time.perf_counter() - started) / calls)
    return best


def costs(
    adversarial: Callable[[], object], baseline: Callable[[], object], *, limit_mib: int = DEFAULT_LIMIT_MIB,
    deadline: float = 60.0, repeat: int = 5,
) -> tuple[float, float]:
    """(seconds of `adversarial`, seconds of `baseline`), in one capped child: the two are timed in
    turn, `repeat` times, and the best of each is kept, so a burst of load on a shared machine
    slows one sample of each rather than every sample of one."""

    def measure() -> tuple[float, float]:
        base, attack = float("inf"), float("inf")
        for _ in range(repeat):
            base = min(base, best_seconds(baseline, 1))
            attack = min(attack, best_seconds(adversarial, 1))
        return attack, base

    return in_capped_child(measure, limit_mib=limit_mib, deadline=deadline)


def cost_ratio(
    adversarial: Callable[[], object], baseline: Callable[[], object], *, limit_mib: int = DEFAULT_LIMIT_MIB,
    deadline: float = 60.0, repeat: int = 5,
) -> float:
    """Seconds of `adversarial` over seconds of `baseline` (see `costs`)."""
    attack, base = costs(adversarial, baseline, limit_mib=limit_mib, deadline=deadline, repeat=repeat)
    return attack / max(base, 1e-4)


def cost_ratios(
    adversarial: Mapping[str, Callable[[], object]], baseline: Callable[[], object], *,
    limit_mib: int = DEFAULT_LIMIT_MIB, deadline: float = 120.0, repeat: int = 5,
) -> dict[str, float]:
    """Seconds of each adversarial case over seconds of `baseline`, in one capped child: each
    round times the baseline once and every case after it (as `costs` does for one case), so
    the baseline is measured once for all of them, not once for each."""

    def measure() -> dict[str, float]:
        base, attacks = float("inf"), dict.fromkeys(adversarial, float("inf"))
        for _ in range(repeat):
            base = min(base, best_seconds(baseline, 1))
            for name, case in adversarial.items():
                attacks[name] = min(attacks[name], best_seconds(case, 1))
        return {name: attack / max(base, 1e-4) for name, attack in attacks.items()}

    return in_capped_child(measure, limit_mib=limit_mib, deadline=deadline)
