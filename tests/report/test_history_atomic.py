"""Atomic saving: concurrent writers and writers killed mid-write never leave a broken history.

Real processes: each writer is a separate Python interpreter calling save_history in a loop,
saying on stdout when each save begins and ends, so the test waits for what it needs (a first
complete save) instead of sleeping, and knows where each kill landed.
"""

from __future__ import annotations

import os
import random
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from scanner.report.history import read_history
from tests.support.history import save_history
from tests.support.run_records import labelled_history as history

ROOT = Path(__file__).resolve().parents[2]
DEADLINE_S = 60.0
"""Bounds every wait on a writer: far above what a loaded machine needs, so only a hang hits it."""
BEGIN, DONE = "begin", "done"
"""What a writer prints before and after each save."""

# The child builds its histories with the parent's `history()`, so the parent writes the exact
# bytes of each with the same code, in process. It saves until killed or until the stop file
# appears (checked between saves, so it never stops mid-save).
_WRITER = """
import sys
sys.path[:0] = [{root!r}]
from pathlib import Path
from tests.support.run_records import labelled_history as history
from tests.support.history import save_history

path, stop = Path(sys.argv[1]), Path(sys.argv[2])
labels = sys.argv[3].split(",")
queries = int(sys.argv[4])
histories = [history(label, queries) for label in labels]
print("ready", flush=True)
i = 0
while not stop.exists():
    print("{begin}", flush=True)
    save_history(path, histories[i % len(histories)])
    print("{done}", flush=True)
    i += 1
"""


class Writer:
    """A writer process and the lines it has printed, read without blocking past the deadline."""

    def __init__(self, path: Path, stop: Path, labels: str, queries: int) -> None:
        code = _WRITER.format(root=str(ROOT), begin=BEGIN, done=DONE)
        self.process = subprocess.Popen(
            [sys.executable, "-c", code, str(path), str(stop), labels, str(queries)],
            stdout=subprocess.PIPE,
        )
        self.lines: list[str] = []
        self._partial = b""

    def wait_for(self, line: str) -> None:
        """Read until the writer prints `line` (or fail at the deadline, or if it exits first)."""
        deadline = time.monotonic() + DEADLINE_S
        while line not in self.lines:
            remaining = deadline - time.monotonic()
            assert remaining > 0, f"no {line!r} from the writer within {DEADLINE_S} s: {self.lines[-5:]}"
            assert self._read(remaining), f"the writer exited before printing {line!r}: {self.lines[-5:]}"

    def saves(self) -> int:
        """Saves completed so far, by what it has printed (read without waiting)."""
        self._read(0)
        return self.lines.count(DONE)

    def kill(self) -> None:
        """SIGKILL it if still running, then finish."""
        if self.process.poll() is None:
            os.kill(self.process.pid, signal.SIGKILL)
        self.finish()

    def finish(self) -> None:
        """Reap it (within the deadline) and read what it printed before exiting; again, nothing."""
        self.process.wait(timeout=DEADLINE_S)
        assert self.process.stdout is not None
        if self.process.stdout.closed:
            return
        while self._read(DEADLINE_S):
            pass
        self.process.stdout.close()

    def _read(self, timeout: float) -> bool:
        """One read of whatever is there; False at end of output."""
        assert self.process.stdout is not None
        fd = self.process.stdout.fileno()
        ready, _, _ = select.select([fd], [], [], timeout)
        if not ready:
            return True  # the caller checks its deadline
        data = os.read(fd, 65536)
        if not data:
            return False
        *complete, self._partial = (self._partial + data).split(b"\n")
        self.lines.extend(line.decode("ascii") for line in complete)
        return True


@pytest.mark.parametrize(("writers", "saves"), [(2, 5), pytest.param(4, 15, marks=pytest.mark.slow)])
def test_concurrent_writers_never_leave_a_truncated_or_invalid_file(tmp_path: Path, writers: int, saves: int) -> None:
    path, stop = tmp_path / ".kb-eval-history.json", tmp_path / "stop"
    queries = 300
    labels = [f"w{n}" for n in range(writers)]
    expected = set()
    for label in labels:
        save_history(tmp_path / f"reference-{label}.json", history(label, queries))
        expected.add((tmp_path / f"reference-{label}.json").read_bytes())
    running = [Writer(path, stop, label, queries) for label in labels]
    reads = 0
    deadline = time.monotonic() + DEADLINE_S
    try:
        for writer in running:
            writer.wait_for("ready")
        # Read while they write, until each has saved `saves` times and this side has read 10
        # times: the writers stop only when told, so the reads never depend on the machine's load.
        while reads < 10 or any(writer.saves() < saves for writer in running):
            assert time.monotonic() < deadline, (reads, [writer.saves() for writer in running])
            if path.exists():
                # Every state a reader can observe is one complete history.
                assert path.read_bytes() in expected
                assert len(read_history(path).runs) == 3
                reads += 1
            time.sleep(0.005)
        stop.touch()
        for writer in running:
            writer.finish()
    finally:
        for writer in running:
            writer.kill()
    assert [writer.process.returncode for writer in running] == [0] * writers
    assert path.read_bytes() in expected
    leftovers = [p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")]
    assert leftovers == []


@pytest.mark.parametrize("kills", [4, pytest.param(20, marks=pytest.mark.slow)])
def test_a_writer_killed_at_random_moments_leaves_the_old_or_the_new_file(tmp_path: Path, kills: int) -> None:
    path = tmp_path / ".kb-eval-history.json"
    queries = 1500  # ~2.5 MB per file: long enough writes for kills to land mid-write
    expected = {}
    for label in ("a", "b"):
        save_history(tmp_path / f"reference-{label}.json", history(label, queries))
        expected[label] = (tmp_path / f"reference-{label}.json").read_bytes()
    assert expected["a"] != expected["b"]
    rng = random.Random(5)
    killed_mid_save = 0
    for _ in range(kills):
        writer = Writer(path, tmp_path / "never", "a,b", queries)
        try:
            # Wait for one complete save, then kill within about one more save's time, as long as
            # the first one took on this machine now: the kill lands in a later save. (Aiming at
            # the write itself, late in a save, does not survive a loaded machine's jitter.)
            writer.wait_for(BEGIN)
            started = time.monotonic()
            writer.wait_for(DONE)
            time.sleep(rng.uniform(0.0, time.monotonic() - started))
        finally:
            writer.kill()
        assert writer.process.returncode == -signal.SIGKILL
        killed_mid_save += writer.lines[-1] == BEGIN

        # A save completed, so a history is there: the old one or the new one, whole.
        content = path.read_bytes()
        assert content in (expected["a"], expected["b"])
        assert len(read_history(path).runs) == 3
    # The test must have killed writers in the middle of a save, not only between saves.
    assert killed_mid_save >= 1
    # A killed writer may leave its temp file behind; it is never the history itself.
    assert all(p.name.startswith(".") for p in tmp_path.iterdir() if p.name.endswith(".tmp"))
