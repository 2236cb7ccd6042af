"""What the summary says about the gate is what the report's records say, in every state.

Each state a reviewer meets (tests/render/states.py, the runs behind docs/screenshots/) is
rendered with the gate on and off, and what the text claims (passed, could not run, the step
fails or passes, a regression) is read back with patterns that know nothing of the renderer's
sentences, then checked against the records: the gate's `evaluated`, `tripped` and `enforced`,
and whether the comparison's failure is one the workflow can fix. The pinned screenshots are
checked the same way, so a pinned file cannot pin a contradiction.
"""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import pytest

from bench.screenshots import OUT
from scanner.compare.gate import gate_cannot_run
from scanner.compare.report import Report
from scanner.pipeline.run import RunOutcome
from scanner.render.markdown import render_summary
from scanner.report.document import report_document
from tests.render.states import STATES, context

CLAIMS = {
    "passed": re.compile(r"gate passed", re.IGNORECASE),
    "not run": re.compile(r"(could not|cannot) run", re.IGNORECASE),
    "step fails": re.compile(r"step fails", re.IGNORECASE),
    "gate lets the step pass": re.compile(r"does not fail the step", re.IGNORECASE),
    "no regression": re.compile(r"\bno regression\b|gate passed", re.IGNORECASE),
    "regression": re.compile(r"^## kb-eval: Regressed|^\*\*Regression", re.MULTILINE),
    "not compared": re.compile(r"\bnot compared\b|\bno comparison\b", re.IGNORECASE),
}
"""What a reader takes from the first screen, whatever the wording around it."""


def claims(markdown: str) -> set[str]:
    """The claims of the part a reviewer reads first: everything above the metrics table."""
    head = markdown.split("| metric |")[0]
    return {name for name, pattern in CLAIMS.items() if pattern.search(head.replace("\\", ""))}


def true_claims(report: Report) -> set[str]:
    """The claims the records make true, from the gate's record and the comparison alone."""
    gate = report.gate
    fixable = gate_cannot_run(report.comparison) is not None
    true = set()
    if gate.enforced and gate.evaluated and not gate.tripped:
        true.add("passed")
    if gate.enforced and not gate.evaluated:
        true.add("not run")
    if gate.enforced and (gate.tripped or (not gate.evaluated and fixable)) or report.floors.failed:
        true.add("step fails")
    if not gate.enforced and gate.tripped:
        true.add("gate lets the step pass")  # a regression nobody enforces says what the gate did
    if gate.evaluated and not gate.tripped:
        true.add("no regression")
    if gate.tripped:
        true.add("regression")
    if not report.comparison.compared:
        true.add("not compared")
    return true


@pytest.fixture(scope="module")
def outcomes(tmp_path_factory: pytest.TempPathFactory) -> dict[str, RunOutcome]:
    return {name: make(tmp_path_factory.mktemp(name)) for name, make in STATES.items()}


def enforced_as(report: Report, enforced: bool) -> Report:
    return dataclasses.replace(report, gate=dataclasses.replace(report.gate, enforced=enforced))


@pytest.mark.parametrize("enforced", [True, False], ids=["gate on", "gate off"])
@pytest.mark.parametrize("name", sorted(STATES))
def test_every_state_says_about_the_gate_exactly_what_its_records_say(
    outcomes: dict[str, RunOutcome], name: str, enforced: bool
) -> None:
    report = enforced_as(outcomes[name].report, enforced)
    markdown = render_summary(report, context(outcomes[name]))
    assert claims(markdown) == true_claims(report), markdown.split("| metric |")[0]
    # The JSON report carries the same record the summary was derived from.
    gate = report_document(report)["gate"]
    assert (gate["evaluated"], gate["tripped"], gate["enforced"]) == (
        report.gate.evaluated, report.gate.tripped, enforced
    )


@pytest.mark.parametrize("name", sorted(STATES))
def test_each_pinned_screenshot_says_what_its_run_recorded(outcomes: dict[str, RunOutcome], name: str) -> None:
    pinned = (OUT / f"{name}.md").read_text(encoding="utf-8")
    assert claims(pinned) == true_claims(outcomes[name].report)


def test_the_states_cover_every_gate_state_a_reviewer_meets(outcomes: dict[str, RunOutcome]) -> None:
    # Guard against passing vacuously: the states hold a gate that passed, one that tripped, one
    # that could not run and one whose failure fails the step, with the gate on as recorded.
    seen = {frozenset(true_claims(outcome.report)) for outcome in outcomes.values()}
    for needed in ({"passed", "no regression"}, {"regression", "step fails"}, {"not run", "not compared"},
                   {"not run", "not compared", "step fails"}):
        assert frozenset(needed) in seen, needed


def test_a_contradiction_is_caught_by_the_claims() -> None:
    # The near miss the pinned files once held: both sentences one line apart.
    text = "Regression gate passed: no metric fell.\n\n**The regression gate could not run: nothing to compare with.**\n"
    assert {"passed", "not run"} <= claims(text)


def test_every_state_has_a_pinned_screenshot() -> None:
    assert set(STATES) <= {path.stem for path in Path(OUT).glob("*.md")}
