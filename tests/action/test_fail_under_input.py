"""The `fail-under` input: declared once with the flag, it fails the step on a first run, and the
step summary and an error annotation say which floor and by how much."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from scanner.foundation.errors import ExitCode
from tests.conftest import Launch
from tests.support.action_cases import (
    KB,
    Q_ROLLBACK,
    Q_SPLIT,
    Q_TAGS,
    clean_workspace,
    next_step,
    observe,
    run_entrypoint,
)
from tests.support.container import RunnerLayout, action_inputs, pull_request_event

FAKE = Path(__file__).parents[1] / "support" / "fake_kb_search.py"


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


def test_a_floor_and_an_answer_budget_that_both_fail_each_get_their_error(launch: Launch, layout: RunnerLayout) -> None:
    # The team's search (a program answering with the expected paths) under a floor no run meets
    # and an answer budget of one byte: the step fails for both reasons, and says both.
    clean_workspace(layout.workspace)
    rankings = layout.workspace / "rankings.json"
    rankings.write_text(json.dumps({
        Q_ROLLBACK: [{"path": "guides/deploy.md"}], Q_TAGS: [{"path": "guides/deploy.md"}],
        Q_SPLIT: [{"path": "guides/search.md"}],
    }))
    command = f"{sys.executable} {FAKE} search --format json --limit {{limit}} --rankings {rankings} {{query}}"
    inputs = {"kb-path": KB, "command": command, "fail-under": "P@10=1", "answer-budget": "max=1B"}
    observed = observe(run_entrypoint(launch, layout, action_inputs(inputs)))
    assert observed.returncode == ExitCode.REGRESSION
    titles = [a[4] for a in observed.annotations if a[0] == "error"]
    assert titles == ["kb-eval: below the fail-under floor", "kb-eval: an answer over its budget"]
    assert "**answer size max" in observed.summary and "is over its budget 1 B" in observed.summary
    # The near miss: a budget the answers meet adds no error, and the floor alone fails the step.
    next_step(layout)
    inputs["answer-budget"] = "max=1MiB"
    observed = observe(run_entrypoint(launch, layout, action_inputs(inputs)))
    assert [a[4] for a in observed.annotations if a[0] == "error"] == ["kb-eval: below the fail-under floor"]
    assert "Answer budgets held: answer size max" in observed.summary
