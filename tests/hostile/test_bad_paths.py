"""Every bad input path or file is exit 2 naming it (never a traceback, never 3), and an output
path that is a link is replaced, not written through; a failure while printing is never exit 1."""

from __future__ import annotations

import io
import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

import scanner.retrievers.runfile
from scanner.cli.main import main
from scanner.foundation.errors import ExitCode, InputError
from scanner.retrievers.base import Hit, SearchRequest
from scanner.retrievers.command import CommandRetriever, CommandSettings
from scanner.retrievers.mapping import ResponseMapping
from scanner.retrievers.runfile import RunFileRetriever
from tests.conftest import run_cli, write_tree
from tests.hostile.support import ANSWER, GOLDEN

ROOT = Path(__file__).resolve().parents[2]


def kb(root: Path) -> Path:
    return write_tree(root / "kb", {".kb-eval.yml": GOLDEN, "a.md": ANSWER})


def plant(link: Path, kind: str) -> None:
    if kind == "loop":
        os.symlink(link.with_name("other"), link)
        os.symlink(link, link.with_name("other"))
    else:
        os.symlink(link.parent / "missing" / "x", link)


@pytest.mark.parametrize("kind", ["loop", "dangling"])
@pytest.mark.parametrize("flag", ["--kb-path", "--golden", "--history", "--baseline", "--run"])
def test_a_link_loop_or_dangling_link_as_an_input_path_is_exit_2_naming_it(tmp_path: Path, flag: str, kind: str) -> None:
    folder = kb(tmp_path)
    link = tmp_path / "link"
    plant(link, kind)
    args: list[str | Path] = ["--kb-path", link if flag == "--kb-path" else folder]
    args += [] if flag == "--kb-path" else [flag, link]
    result = run_cli(*args)
    assert result.code == ExitCode.BAD_INPUT, result.stderr
    assert str(link) in result.stderr and "Traceback" not in result.stderr


@pytest.mark.parametrize("kind", ["loop", "dangling"])
@pytest.mark.parametrize("flag", ["--output", "--save-baseline"])
def test_a_link_at_an_output_path_is_replaced_by_the_file_not_written_through(tmp_path: Path, flag: str, kind: str) -> None:
    folder = kb(tmp_path)
    link = tmp_path / "link"
    plant(link, kind)
    result = run_cli("--kb-path", folder, "--no-history", flag, link)
    assert result.code == ExitCode.OK, result.stderr
    assert not link.is_symlink() and json.loads(link.read_text())["aggregate"]
    assert not (tmp_path / "missing").exists()


def test_a_run_file_that_is_a_fifo_is_refused_without_blocking(tmp_path: Path) -> None:
    fifo = tmp_path / "run.trec"
    os.mkfifo(fifo)
    with pytest.raises(InputError, match="not a regular file"):
        RunFileRetriever(fifo)


@pytest.mark.parametrize(("size", "refused"), [(100, False), (101, True)])
def test_a_run_file_past_its_byte_cap_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, size: int, refused: bool
) -> None:
    monkeypatch.setattr(scanner.retrievers.runfile, "MAX_RUN_FILE_BYTES", 100)
    line = b"q1 Q0 a.md 1 1.0 t\n"
    run = tmp_path / "run.trec"
    run.write_bytes(line + b"#" * (size - len(line) - 1) + b"\n")
    if refused:
        with pytest.raises(InputError, match="over the 100-byte cap"):
            RunFileRetriever(run)
    else:
        assert RunFileRetriever(run).search_all([SearchRequest("q1", "", 5)])[0][0].path == "a.md"


@pytest.mark.parametrize(("lines", "refused"), [(3, False), (4, True)])
def test_a_run_file_past_its_line_cap_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, lines: int, refused: bool
) -> None:
    monkeypatch.setattr(scanner.retrievers.runfile, "MAX_RUN_LINES", 3)
    trec = tmp_path / "run.trec"
    trec.write_text("".join(f"q1 Q0 d{n}.md {n} 1.0 t\n" for n in range(lines)))
    jsonl = tmp_path / "run.jsonl"
    jsonl.write_text(json.dumps({"id": "q1", "hits": [{"path": f"d{n}.md"} for n in range(lines)]}) + "\n")
    for run in (trec, jsonl):
        if refused:
            with pytest.raises(InputError, match="more than 3 ranked documents"):
                RunFileRetriever(run)
        else:
            RunFileRetriever(run)


@pytest.mark.parametrize(
    ("line", "reason"),
    [
        ('{"id": "q1", "hits": ' + "[" * 100_000 + "]" * 100_000 + "}", "nested too deeply"),
        ('{"id": "q1", "hits": [{"path": "a.md", "score": ' + "9" * 5000 + "}]}", "too many digits"),
        ('{"id": "q1", "hits": [{"path": "a.md", "score": 1e999}]}', "out of range"),
    ],
)
def test_hostile_json_in_a_run_file_is_exit_2_with_its_line(tmp_path: Path, line: str, reason: str) -> None:
    run = tmp_path / "run.jsonl"
    run.write_text('{"id": "q0", "hits": []}\n' + line + "\n")
    with pytest.raises(InputError, match=reason) as caught:
        RunFileRetriever(run)
    assert caught.value.line == 2 and caught.value.file == str(run)


def test_a_400_digit_score_in_a_run_file_is_recorded_as_missing_with_a_note(tmp_path: Path) -> None:
    # Past a float's range: not a number kb-eval can keep, and (list order ranks) no metric needs it.
    run = tmp_path / "run.jsonl"
    run.write_text('{"id": "q1", "hits": [{"path": "a.md", "score": ' + "9" * 400 + "}]}\n")
    retriever = RunFileRetriever(run)
    assert retriever.search_all([SearchRequest("q1", "alpha", 5)]) == [[Hit(1, "a.md", "", None)]]
    assert [note.query_id for note in retriever.notes()] == ["q1"]


def test_deep_json_from_a_command_is_a_refusal() -> None:
    code = "print('[' * 100000 + ']' * 100000)"
    template = f"{shlex.quote(sys.executable)} -c {shlex.quote(code)} {{query}}"
    retriever = CommandRetriever(CommandSettings(template), ResponseMapping())
    with pytest.raises(InputError, match="nested too deeply"):
        retriever.search_all([SearchRequest("q1", "alpha", 5)])


# -- printing -------------------------------------------------------------------------------------


class _Broken(io.StringIO):
    def write(self, text: str) -> int:
        raise OSError(5, "Input/output error")


def test_a_failure_while_printing_is_exit_3_not_the_regression_code(tmp_path: Path) -> None:
    err = io.StringIO()
    assert main(["--kb-path", str(kb(tmp_path)), "--no-history"], stdout=_Broken(), stderr=err) == ExitCode.INTERNAL


def test_printing_that_works_keeps_the_runs_exit_code(tmp_path: Path) -> None:
    out = io.StringIO()
    assert main(["--kb-path", str(kb(tmp_path)), "--no-history"], stdout=out, stderr=io.StringIO()) == ExitCode.OK
    assert "recall" in out.getvalue().lower()


def test_a_closed_stdout_pipe_is_exit_3_without_a_traceback(tmp_path: Path) -> None:
    code = "from scanner.cli.main import run; run()"
    child = subprocess.Popen(
        [sys.executable, "-c", code, "--kb-path", str(kb(tmp_path)), "--no-history"],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )
    assert child.stdout is not None and child.stderr is not None
    child.stdout.close()  # the reader is gone before kb-eval prints
    with child.stderr:
        stderr = child.stderr.read().decode()
    assert child.wait(timeout=120) == ExitCode.INTERNAL, stderr
    assert "Traceback" not in stderr
