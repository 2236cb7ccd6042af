"""Progress on stderr: quiet for short phases, a live line on a terminal, periodic plain lines in CI."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from scanner.foundation import progress as progress_module
from scanner.foundation.progress import PLAIN_INTERVAL, QUIET_SECONDS, counted, progress


class FakeStream(io.StringIO):
    def __init__(self, tty: bool) -> None:
        super().__init__()
        self.tty = tty

    def isatty(self) -> bool:
        return self.tty


class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_a_phase_shorter_than_the_quiet_time_prints_nothing() -> None:
    stream, clock = FakeStream(tty=True), FakeClock()
    with progress("indexed", 10, "sections", stream, clock) as tick:
        for _ in range(10):
            clock.now += (QUIET_SECONDS - 0.1) / 10
            tick()
    assert stream.getvalue() == ""


def test_without_a_terminal_progress_is_plain_lines_at_the_plain_interval() -> None:
    stream, clock = FakeStream(tty=False), FakeClock()
    with progress("answered", 1000, "queries", stream, clock) as tick:
        for _ in range(1000):
            clock.now += 0.05  # 50 s in all
            tick()
    lines = stream.getvalue().splitlines()
    assert "\r" not in stream.getvalue()
    # First after the quiet time, then every PLAIN_INTERVAL seconds, then the final state.
    assert len(lines) == 1 + int((50 - QUIET_SECONDS) // PLAIN_INTERVAL) + 1
    assert lines[0].startswith("kb-eval: answered ") and lines[0].endswith(" queries (2 s)")
    assert lines[-1] == "kb-eval: answered 1,000/1,000 queries (50 s)"


def test_on_a_terminal_progress_redraws_one_line_and_ends_it() -> None:
    stream, clock = FakeStream(tty=True), FakeClock()
    with progress("indexed", None, "sections", stream, clock) as tick:
        for _ in range(100):
            clock.now += 0.1
            tick(7)
    text = stream.getvalue()
    assert text.count("\r\x1b[K") > 10
    assert text.count("\n") == 1 and text.endswith("kb-eval: indexed 700 sections (10 s)\n")


def test_progress_goes_to_stderr_never_stdout(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(progress_module.DISABLE_ENV, raising=False)
    clock = FakeClock()
    with progress("scanned", 3, "documents", clock=clock) as tick:
        clock.now += QUIET_SECONDS + 1
        tick()
    captured = capsys.readouterr()
    assert captured.out == ""
    assert "kb-eval: scanned 1/3 documents" in captured.err


def test_the_switch_turns_progress_off(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(progress_module.DISABLE_ENV, "1")
    clock = FakeClock()
    with progress("scanned", 3, "documents", clock=clock) as tick:
        clock.now += QUIET_SECONDS + 1
        tick()
    assert capsys.readouterr().err == ""


def test_counted_passes_every_item_through_in_order() -> None:
    assert list(counted(iter("abc"), "scanned", 3, "documents")) == ["a", "b", "c"]


def test_reading_the_kb_counts_files_read_skipped_ones_included(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from scanner.corpus.reader import read_corpus

    root = tmp_path
    for name, data in {"a.md": b"# A\ntext\n", "b.md": b"# B\ntext\n", "bad.md": b"\xff"}.items():
        (root / name).write_bytes(data)
    monkeypatch.delenv(progress_module.DISABLE_ENV, raising=False)
    monkeypatch.setattr(progress_module, "QUIET_SECONDS", 0.0)
    assert len(read_corpus(root, workers=1).documents) == 2
    captured = capsys.readouterr()
    assert "read 3/3 files" in captured.err and captured.out == ""
