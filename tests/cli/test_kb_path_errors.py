"""A mistyped kb-path is reported as a missing folder, not as a missing golden file."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from scanner.cli.main import main
from scanner.foundation.errors import ExitCode
from tests.conftest import Launch
from tests.support.action_cases import KB, clean_workspace, observe, run_entrypoint
from tests.support.container import RunnerLayout, action_inputs, pull_request_event


def kb_eval(*argv: str) -> tuple[int, str]:
    err = io.StringIO()
    code = main(list(argv), io.StringIO(), err)
    return code, err.getvalue()


def test_a_kb_path_that_does_not_exist_says_the_folder_is_missing(tmp_path: Path) -> None:
    code, err = kb_eval("--kb-path", str(tmp_path / "docs" / "kbb"), "--no-history")
    assert code == ExitCode.BAD_INPUT
    assert f"{tmp_path / 'docs' / 'kbb'}: knowledge base folder not found" in err
    assert "kb-path is relative to the current folder" in err and "golden" not in err


def test_a_kb_path_naming_a_file_says_it_is_not_a_folder(tmp_path: Path) -> None:
    (tmp_path / "kb.md").write_text("# a\n", encoding="utf-8")
    code, err = kb_eval("--kb-path", str(tmp_path / "kb.md"), "--no-history")
    assert code == ExitCode.BAD_INPUT and "knowledge base path is not a folder" in err


def test_an_existing_kb_folder_without_a_golden_file_still_says_so(tmp_path: Path) -> None:
    code, err = kb_eval("--kb-path", str(tmp_path), "--no-history")
    assert code == ExitCode.BAD_INPUT
    assert "no golden file found" in err and "knowledge base folder not found" not in err


def test_the_folder_is_checked_even_when_the_golden_file_is_given(tmp_path: Path) -> None:
    golden = tmp_path / "golden.yml"
    golden.write_text("queries:\n  - query: a question\n    expected: [a.md]\n", encoding="utf-8")
    code, err = kb_eval("--kb-path", str(tmp_path / "missing"), "--golden", str(golden), "--no-history")
    assert code == ExitCode.BAD_INPUT and "knowledge base folder not found" in err


def test_in_action_mode_a_mistyped_kb_path_is_an_error_annotation_saying_the_folder_is_missing(
    launch: Launch, tmp_path: Path
) -> None:
    layout = RunnerLayout(tmp_path)
    layout.write_event(pull_request_event())
    clean_workspace(layout.workspace)
    typo = observe(run_entrypoint(launch, layout, action_inputs({"kb-path": KB + "b"})))
    assert typo.returncode == ExitCode.BAD_INPUT and typo.outputs == {}
    [(kind, file, _, _, _, message)] = typo.annotations
    assert (kind, file) == ("error", KB + "b") and message.startswith("knowledge base folder not found")
    # The near miss: the same workspace with the right kb-path runs.
    right_layout = RunnerLayout(tmp_path / "right")
    right_layout.write_event(pull_request_event())
    clean_workspace(right_layout.workspace)
    right = observe(run_entrypoint(launch, right_layout, action_inputs({"kb-path": KB})))
    assert right.returncode == ExitCode.OK and right.annotations == []


def test_a_run_from_the_repository_root_names_the_folder_that_holds_the_golden_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "src").mkdir()
    (tmp_path / "docs" / "guides").mkdir(parents=True)
    (tmp_path / "docs" / "guides" / "a.md").write_text("# A\n", encoding="utf-8")
    (tmp_path / "docs" / ".kb-eval.yml").write_text("queries:\n  - id: a\n    query: a\n    expected: [guides/a.md]\n")
    monkeypatch.chdir(tmp_path)
    code, err = kb_eval("--no-history")
    assert code == ExitCode.BAD_INPUT
    assert "but there is docs/.kb-eval.yml" in err and "run with --kb-path docs" in err
    assert "kb-eval init" not in err
    # The near miss: with no golden file anywhere below, the starter is what to write.
    (tmp_path / "docs" / ".kb-eval.yml").unlink()
    code, err = kb_eval("--no-history")
    assert code == ExitCode.BAD_INPUT and "kb-eval init --kb-path ." in err and "but there is" not in err


def test_a_golden_file_deeper_than_the_search_goes_is_not_looked_for(tmp_path: Path) -> None:
    from scanner.golden.file import GOLDEN_SEARCH_DEPTH, golden_below

    deep = tmp_path.joinpath(*["d"] * (GOLDEN_SEARCH_DEPTH + 1))
    deep.mkdir(parents=True)
    (deep / ".kb-eval.yml").write_text("queries: []\n")
    assert golden_below(tmp_path) is None
    (deep.parent / ".kb-eval.yml").write_text("queries: []\n")
    assert golden_below(tmp_path) == deep.parent / ".kb-eval.yml"
