"""The record every output renders: a run, what it was compared with, and the gate's verdict.

It lives above the comparison and the gate rather than beside the run record, so the run record
never refers up to what is computed from it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from scanner.compare.comparison import Comparison
from scanner.compare.cost_budgets import CostResult
from scanner.compare.findings import FindingAtBase
from scanner.compare.floors import FloorResult
from scanner.compare.gate import GateResult
from scanner.evaluation.records import RunRecord


@dataclass(frozen=True, slots=True)
class Report:
    """A run, what it was compared with, and the gate's verdict: what every output renders."""

    run: RunRecord
    comparison: Comparison
    gate: GateResult
    findings_at_base: tuple[FindingAtBase, ...] | None = None
    """Each finding of `run` told from the pull request's base (same order); None when this run
    was not compared with a git revision it could evaluate."""
    floors: FloorResult = field(default_factory=FloorResult)
    """The `--fail-under` floors held against this run's means; none checked when none was set."""
    costs: CostResult = field(default_factory=CostResult)
    """The `--latency-budget` and `--answer-budget` budgets held against this run's answers."""

    def findings_at_base_by_path(self) -> dict[str, FindingAtBase]:
        """`findings_at_base` keyed by the finding's path (empty when not compared with a base):
        built once per rendering, so looking findings up stays linear in their number."""
        return {item.path: item for item in self.findings_at_base or ()}
