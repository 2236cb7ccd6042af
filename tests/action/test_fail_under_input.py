"""The `fail-under` input: declared once with the flag, it fails the step on a first run, and the
step summary and an error annotation say which floor and by how much."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from scanner.foundation.errors import ExitCode
from tests.conftest import Launch
from tests.support.action_cases import KB, clean_workspace, next_step, observe, run_entrypoint
from tests.support.container import RunnerLayout, action_inputs, pull_request_event


@pytest.fixture
def layout(tmp_path: Path) -> RunnerLayout:
    layout = RunnerLayout(tmp_path)
    layout.write_event(pull_request_event())
    return layout


def test_a_floor_input_fails_a_first_run_and_says_which_floor_and_by_how_much(launch: Launch, layout: RunnerLayout) -> None:
    clean_workspace(layout.workspace)
    observed = observe(run_entrypoint(launch, layout, action_inputs({"kb-path": KB, "fail-under": "P@10=1"})))
    report = json.loads((layout.workspace / "kb-eval-report.json").read_text(encoding="utf-8"))
    [check] = report["floors"]
    assert check["below"] is True and observed.returncode == ExitCode.REGRESSION
    sentence = f"P@10 {check['value']:.4f} is below its floor 1 by {check['shortfall']:.4f}"
    assert f"**Below the fail-under floor, so the step fails: {sentence}.**" in observed.summary
    [annotation] = [a for a in observed.annotations if a[4] == "kb-eval: below the fail-under floor"]
    assert annotation[0] == "error" and sentence in annotation[5]
    # The near miss: a floor the run meets passes the step and says it holds.
    next_step(layout)
    observed = observe(run_entrypoint(launch, layout, action_inputs({"kb-path": KB, "fail-under": f"P@10={check['value']}"})))
    assert observed.returncode == ExitCode.OK and "Every fail-under floor holds" in observed.summary
    assert not [a for a in observed.annotations if a[4] == "kb-eval: below the fail-under floor"]
