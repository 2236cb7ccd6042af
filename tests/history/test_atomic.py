"""Atomic saving: concurrent writers and writers killed mid-write never leave a broken history.

Real processes: each writer is a separate Python interpreter calling save_history.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

from scanner.history import read_history

ROOT = Path(__file__).resolve().parents[2]

# A child that saves histories built from `run_records.make_run`; which history it
# writes is chosen by a label, so the parent can rebuild the exact bytes of each.
_WRITER = """
import sys
sys.path[:0] = [{root!r}]
from pathlib import Path
from tests.run_records import make_run
from scanner.history import save_history

def history(label, queries):
    values = {{f"{{label}}-q{{i}}": (i % 7) / 7 for i in range(queries)}}
    return [make_run(values, timestamp=f"2026-12-0{{day}}T00:00:00Z") for day in range(1, 4)]

path = Path(sys.argv[1])
labels = sys.argv[2].split(",")
rounds = int(sys.argv[3])
queries = int(sys.argv[4])
histories = [history(label, queries) for label in labels]
print("ready", flush=True)
i = 0
while rounds < 0 or i < rounds:
    save_history(path, histories[i % len(histories)])
    i += 1
"""


def _writer(path: Path, labels: str, rounds: int, queries: int) -> subprocess.Popen[str]:
    code = _WRITER.format(root=str(ROOT))
    return subprocess.Popen(
        [sys.executable, "-c", code, str(path), labels, str(rounds), str(queries)],
        stdout=subprocess.PIPE,
        text=True,
    )


def _expected_bytes(tmp_path: Path, label: str, queries: int) -> bytes:
    reference = tmp_path / f"reference-{label}.json"
    writer = _writer(reference, label, 1, queries)
    assert _finish(writer) == 0
    return reference.read_bytes()


def _stop(writers: list[subprocess.Popen[str]]) -> None:
    """SIGKILL the writers this test started that are still running, and reap them all."""
    for writer in writers:
        if writer.poll() is None:
            os.kill(writer.pid, signal.SIGKILL)
    for writer in writers:
        _finish(writer)


def _finish(writer: subprocess.Popen[str]) -> int:
    code = writer.wait(timeout=60)
    if writer.stdout is not None:
        writer.stdout.close()
    return code


def test_concurrent_writers_never_leave_a_truncated_or_invalid_file(
    tmp_path: Path,
) -> None:
    path = tmp_path / ".kb-eval-history.json"
    queries = 300
    labels = [f"w{n}" for n in range(4)]
    expected = {_expected_bytes(tmp_path, label, queries) for label in labels}
    writers = [_writer(path, label, 15, queries) for label in labels]
    reads = 0
    try:
        for writer in writers:
            assert writer.stdout is not None and writer.stdout.readline() == "ready\n"
        while any(writer.poll() is None for writer in writers):
            if path.exists():
                # Every state a reader can observe is one complete history.
                assert path.read_bytes() in expected
                assert len(read_history(path).runs) == 3
                reads += 1
            time.sleep(0.005)
    finally:
        _stop(writers)
    assert [writer.returncode for writer in writers] == [0] * len(writers)

    assert reads > 0
    assert path.read_bytes() in expected
    leftovers = [p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")]
    assert leftovers == []


def test_a_writer_killed_at_random_moments_leaves_the_old_or_the_new_file(
    tmp_path: Path,
) -> None:
    path = tmp_path / ".kb-eval-history.json"
    queries = 1500  # ~2.5 MB per file: long enough writes for kills to land mid-write
    expected = {label: _expected_bytes(tmp_path, label, queries) for label in ("a", "b")}
    assert expected["a"] != expected["b"]
    rng = random.Random(5)
    seen = []
    for _ in range(20):
        writer = _writer(path, "a,b", -1, queries)
        try:
            assert writer.stdout is not None and writer.stdout.readline() == "ready\n"
            time.sleep(rng.uniform(0.0, 0.25))
        finally:
            _stop([writer])
        assert writer.returncode == -signal.SIGKILL

        content = path.read_bytes() if path.exists() else None
        assert content in (None, expected["a"], expected["b"])
        if content is not None:
            assert len(read_history(path).runs) == 3
            seen.append("a" if content == expected["a"] else "b")
    # The test must have observed real saves, not only kills before the first write.
    assert len(seen) >= 10
    # A killed writer may leave its temp file behind; it is never the history itself.
    assert all(p.name.startswith(".") for p in tmp_path.iterdir() if p.name.endswith(".tmp"))
