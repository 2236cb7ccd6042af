"""Progress of long phases on stderr: a live line on a terminal, periodic plain lines elsewhere (CI).

    with progress("indexed", total=len(rows), unit="sections") as tick:
        for row in rows:
            ...
            tick()           # or tick(n) for n items at once

    for item in counted(items, "scanned", total=n, unit="documents"):   # a loop elsewhere
        ...

Never on stdout (results go there). Silent for phases that end quickly: nothing is written
before QUIET_SECONDS have passed, so a small KB's run prints exactly what it printed before.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import Protocol, TypeVar

T = TypeVar("T")


class Stream(Protocol):
    """What progress writes to: sys.stderr, or a test's stand-in."""

    def write(self, text: str, /) -> int: ...
    def flush(self) -> None: ...
    def isatty(self) -> bool: ...

QUIET_SECONDS = 2.0
"""A phase shorter than this prints nothing: progress is for runs a person would wonder about."""
TERMINAL_INTERVAL = 0.2
"""Seconds between redraws of the live line on a terminal."""
PLAIN_INTERVAL = 10.0
"""Seconds between plain lines when stderr is not a terminal: a CI log stays short."""
DISABLE_ENV = "KB_EVAL_NO_PROGRESS"
"""Set to any non-empty value to turn progress off (tests that read stderr)."""


class Progress:
    """Counts items of one phase and reports them on `stream` at a rate suited to it."""

    def __init__(self, label: str, total: int | None, unit: str, stream: Stream, clock: Callable[[], float]) -> None:
        self.label = label
        self.total = total
        self.unit = unit
        self.done = 0
        self._stream = stream
        self._clock = clock
        self._started = clock()
        self._live = stream.isatty()
        self._interval = TERMINAL_INTERVAL if self._live else PLAIN_INTERVAL
        self._next = self._started + QUIET_SECONDS
        self._shown = False

    def __call__(self, count: int = 1) -> None:
        self.done += count
        now = self._clock()
        if now >= self._next:
            self._next = now + self._interval
            self._show(now, final=False)

    def line(self, now: float) -> str:
        of = f"/{self.total:,}" if self.total is not None else ""
        return f"kb-eval: {self.label} {self.done:,}{of} {self.unit} ({now - self._started:.0f} s)"

    def _show(self, now: float, final: bool) -> None:
        self._shown = True
        if self._live:
            self._stream.write("\r\x1b[K" + self.line(now) + ("\n" if final else ""))
        else:
            self._stream.write(self.line(now) + "\n")
        self._stream.flush()

    def finish(self) -> None:
        # A phase that showed progress says where it ended; one that stayed quiet stays quiet.
        if self._shown:
            self._show(self._clock(), final=True)


@contextmanager
def progress(
    label: str, total: int | None = None, unit: str = "", stream: Stream | None = None,
    clock: Callable[[], float] = time.monotonic,
) -> Iterator[Progress]:
    """A Progress for one phase; its last state is written when the phase ends (if it was shown)."""
    if stream is None:
        stream = _Silent() if os.environ.get(DISABLE_ENV) else sys.stderr
    tracker = Progress(label, total, unit, stream, clock)
    try:
        yield tracker
    finally:
        tracker.finish()


class _Silent:
    def write(self, text: str) -> int:
        return len(text)

    def flush(self) -> None:
        return None

    def isatty(self) -> bool:
        return False


def counted(items: Iterable[T], label: str, total: int | None = None, unit: str = "") -> Iterator[T]:
    """`items` unchanged, counted as they are consumed (for a loop that lives in another module)."""
    with progress(label, total, unit) as tick:
        for item in items:
            yield item
            tick()
