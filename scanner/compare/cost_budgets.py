"""Budgets on what the search's answers cost (`--latency-budget p95=800ms`, `--answer-budget max=64KiB`).

Like a floor, a budget needs nothing to compare with: the run's own spread (scanner/evaluation/
costs.py) is held against it, and one over its budget fails the step (exit 1). A budget on answers
that were not measured (the built-in search, a run file) would hold whatever happened, so it is
refused (exit 2) rather than passed in silence. A value equal to its budget passes.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from scanner.evaluation.costs import AnswerCosts, Spread
from scanner.foundation.errors import InputError

STATISTICS = ("p50", "p95", "max")


class CostKind(enum.Enum):
    TIME = "time"
    """Seconds from the question sent to the answer read."""
    SIZE = "size"
    """Bytes of the answer as received."""


@dataclass(frozen=True, slots=True)
class CostBudgets:
    """The pairs of `--latency-budget` (seconds) and `--answer-budget` (bytes), as given."""

    time: tuple[tuple[str, float], ...] = ()
    size: tuple[tuple[str, float], ...] = ()

    def __bool__(self) -> bool:
        return bool(self.time or self.size)


@dataclass(frozen=True, slots=True)
class CostCheck:
    kind: CostKind
    statistic: str
    budget: float
    value: float

    @property
    def over(self) -> bool:
        return self.value > self.budget


@dataclass(frozen=True, slots=True)
class CostResult:
    checks: tuple[CostCheck, ...] = ()

    @property
    def failed(self) -> tuple[CostCheck, ...]:
        return tuple(check for check in self.checks if check.over)


def evaluate_cost_budgets(budgets: CostBudgets, answers: AnswerCosts | None) -> CostResult:
    """Each budget against the run's spread; InputError when a budget names what was not measured."""
    if not budgets:
        return CostResult()
    if answers is None:
        flags = " and ".join(flag for flag, given in (("--latency-budget", budgets.time), ("--answer-budget", budgets.size)) if given)
        raise InputError(
            f"{flags} cannot be checked: this search's answers are not timed or sized (the built-in search and "
            "run files answer inside kb-eval)",
            field="--latency-budget" if budgets.time else "--answer-budget",
            hint="use it with --command, --http-url or an MCP retriever, or remove it",
        )
    if budgets.size and answers.bytes is None:
        raise InputError(
            "--answer-budget cannot be checked: this retriever does not report its answers' sizes",
            field="--answer-budget", hint="remove it",
        )
    checks = [CostCheck(CostKind.TIME, statistic, budget, _of(answers.seconds, statistic)) for statistic, budget in budgets.time]
    if answers.bytes is not None:
        checks += [CostCheck(CostKind.SIZE, statistic, budget, _of(answers.bytes, statistic)) for statistic, budget in budgets.size]
    return CostResult(tuple(checks))


def _of(spread: Spread, statistic: str) -> float:
    return {"p50": spread.p50, "p95": spread.p95, "max": spread.max}[statistic]
