"""`--summary FILE` and the step summary of a command-line run: the Markdown Action mode writes."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from scanner.foundation.errors import ExitCode
from tests.conftest import Launch
from tests.support.action_cases import KB, finding_workspace, next_step, run_entrypoint
from tests.support.container import RunnerLayout, action_inputs

KB_EVAL = str(Path(sys.executable).parent / "kb-eval")


@pytest.fixture
def layout(tmp_path: Path) -> RunnerLayout:
    layout = RunnerLayout(tmp_path)
    layout.write_event({})  # a push: no pull-request base to compare with
    finding_workspace(layout.workspace)
    return layout


def cli(layout: RunnerLayout, *args: str, step_summary: bool = True) -> subprocess.CompletedProcess[str]:
    """kb-eval in a workflow's `run:` step: the runner's variables, no INPUT_*, cwd the workspace."""
    env = {"PATH": os.environ.get("PATH", ""), **layout.host_environment()}
    if not step_summary:
        env.pop("GITHUB_STEP_SUMMARY")
    return subprocess.run([KB_EVAL, *args], cwd=layout.workspace, env=env, capture_output=True, text=True,
                          timeout=120, check=False)


def test_the_summary_file_and_the_step_summary_are_the_markdown_action_mode_writes(layout: RunnerLayout) -> None:
    action = run_entrypoint(Launch.IN_PROCESS, layout, action_inputs({"kb-path": KB, "history": "h-action.json"}))
    assert action.returncode == ExitCode.OK
    expected = layout.summary_file.read_text(encoding="utf-8")
    assert "| metric | value |" in expected and "leak-0.md" in expected

    next_step(layout)  # a new step: its step summary file starts empty
    run = cli(layout, "--kb-path", KB, "--history", "h-cli.json", "--report", "kb-eval-report.json",
              "--summary", "summary.md")
    assert run.returncode == ExitCode.OK, run.stderr
    written = (layout.workspace / "summary.md").read_text(encoding="utf-8")
    assert written == expected.replace("h-action.json", "h-cli.json")
    assert layout.summary_file.read_text(encoding="utf-8") == written


def test_without_github_step_summary_only_the_file_is_written(layout: RunnerLayout) -> None:
    run = cli(layout, "--kb-path", KB, "--no-history", "--summary", "summary.md", step_summary=False)
    assert run.returncode == ExitCode.OK, run.stderr
    assert "| metric | value |" in (layout.workspace / "summary.md").read_text(encoding="utf-8")
    assert layout.summary_file.read_text(encoding="utf-8") == ""


def test_the_step_summary_is_written_without_the_flag_when_github_step_summary_is_set(layout: RunnerLayout) -> None:
    run = cli(layout, "--kb-path", KB, "--no-history")
    assert run.returncode == ExitCode.OK, run.stderr
    assert "| metric | value |" in layout.summary_file.read_text(encoding="utf-8")


def test_a_refused_run_summarises_the_error(layout: RunnerLayout) -> None:
    run = cli(layout, "--kb-path", KB, "--no-history", "--golden", "missing.yml", "--summary", "summary.md")
    assert run.returncode == ExitCode.BAD_INPUT
    written = (layout.workspace / "summary.md").read_text(encoding="utf-8")
    assert "missing.yml" in written and written == layout.summary_file.read_text(encoding="utf-8")


def test_a_summary_file_that_cannot_be_written_is_a_warning_not_a_failed_run(layout: RunnerLayout) -> None:
    (layout.workspace / "taken").mkdir()
    run = cli(layout, "--kb-path", KB, "--no-history", "--summary", "taken", step_summary=False)
    assert run.returncode == ExitCode.OK
    assert "--summary" in run.stderr and "not written" in run.stderr
