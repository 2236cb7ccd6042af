"""The regression gate: does this run's retrieval look worse than the previous run's?

Rule: the gate trips when any aggregate metric (recall@k for any k, MRR, nDCG@k
for any k) dropped by MORE than the threshold (strictly: a drop equal to the
threshold passes) against a comparable previous run. With `alpha`, a drop past
the threshold counts only when a paired sign-flip test over the per-query
values of that metric gives p < alpha, so a handful of queries flipping on a
five-query golden set does not fail a build on noise.

The gate never trips without a comparable previous run (it says why), and
findings never contribute: whether a quoted query is a leak or a labelling
gap is not something kb-eval can decide, so it is not grounds to fail a build.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from scanner.compare.comparison import Comparison, Metric, NotComparedCause, Source
from scanner.compare.significance import SignFlipResult, paired_sign_flip_test
from scanner.foundation.errors import InputError
from scanner.foundation.untrusted_text import shown

DEFAULT_REGRESSION_THRESHOLD = 0.05
"""`--regression-threshold`: an absolute drop in a metric, on the 0..1 scale."""

WORST_QUERIES_SHOWN = 5


@dataclass(frozen=True, slots=True)
class MetricVerdict:
    """One aggregate metric that fell, and whether its fall counts against the gate."""

    metric: Metric
    previous: float
    current: float
    delta: float
    """current - previous (negative), rounded as in scanner.compare.comparison."""
    over_threshold: bool
    """The drop is strictly greater than the threshold."""
    significance: SignFlipResult | None
    """The paired test, when alpha was given (computed for every fallen metric)."""
    counts: bool
    """This metric trips the gate: over the threshold and, with alpha, p < alpha."""
    worst_queries: tuple[tuple[str, float], ...]
    """(query id, delta) of the largest per-query drops in this metric."""


@dataclass(frozen=True, slots=True)
class GateResult:
    """What the gate decided; exit 1 only when `tripped` and --fail-on-regression was given."""

    tripped: bool
    evaluated: bool
    """False when there was no comparable previous run (the gate is a no-op)."""
    reason: str
    """One sentence: why it tripped, why it did not, or why it could not run."""
    threshold: float
    alpha: float | None
    verdicts: tuple[MetricVerdict, ...]
    """Every aggregate metric that fell, worst first."""


GATE_NEEDS_THE_BASE = frozenset({NotComparedCause.SHALLOW_CLONE, NotComparedCause.REVISION_UNAVAILABLE})
"""Why a comparison with a git revision can fail for a reason the workflow can fix (the clone lacks
the commit, git could not read it). A KB absent at the base is not one: nothing was there to lose."""


def gate_cannot_run(comparison: Comparison) -> InputError | None:
    """The refusal when a regression gate was asked for on a comparison with a git revision (a
    pull request's base) that could not happen: a team that believes it has a gate must not get a
    green step that checked nothing. None when the gate ran, or when nothing could be compared for
    a reason no setting fixes (the first run of a history, a KB the base did not have yet)."""
    if comparison.compared or comparison.source is not Source.GIT or comparison.cause not in GATE_NEEDS_THE_BASE:
        return None
    reason = "; ".join(comparison.reasons) or "the base revision could not be evaluated"
    return InputError(
        f"the regression gate cannot run: {reason}",
        field="--fail-on-regression",
        hint=comparison.hint or "make the base revision readable in this checkout, or turn the gate off",
    )


def evaluate_gate(comparison: Comparison, threshold: float, alpha: float | None = None) -> GateResult:
    """Decide the gate for one comparison; see the module docstring for the rule. `threshold` and
    `alpha` are as scanner/settings/declaration.py accepts them (checked there, once)."""
    if not comparison.compared:
        why = "; ".join(comparison.reasons) or "nothing to compare with"
        return GateResult(False, False, f"not evaluated: {why}", threshold, alpha, ())

    verdicts: list[MetricVerdict] = []
    for delta in comparison.metric_deltas:
        if delta.delta >= 0:
            continue
        over = -delta.delta > threshold
        significance = None
        counts = over
        if alpha is not None:
            current, previous = comparison.paired_values(delta.metric)
            significance = paired_sign_flip_test(current, previous)
            counts = over and significance.p_value < alpha
        verdicts.append(
            MetricVerdict(
                metric=delta.metric,
                previous=delta.previous,
                current=delta.current,
                delta=delta.delta,
                over_threshold=over,
                significance=significance,
                counts=counts,
                worst_queries=tuple(comparison.worst_queries(delta.metric, WORST_QUERIES_SHOWN)),
            )
        )
    verdicts.sort(key=lambda v: (v.delta, v.metric.label))
    counted = [v for v in verdicts if v.counts]
    if counted:
        names = ", ".join(f"{v.metric.label} {v.delta:+.4f}" for v in counted)
        worst = _worst_overall(counted)
        reason = f"dropped by more than {threshold:g}: {names}"
        if worst:
            reason += f"; worst queries: {', '.join(worst)}"
        return GateResult(True, True, reason, threshold, alpha, tuple(verdicts))
    over_only = [v for v in verdicts if v.over_threshold]
    if over_only and alpha is not None:
        reason = f"drops past {threshold:g} are not significant at alpha {alpha:g}: " + ", ".join(
            f"{v.metric.label} {v.delta:+.4f} (p = {_p_value(v):.4g})" for v in over_only
        )
    else:
        reason = f"no aggregate metric dropped by more than {threshold:g}"
    return GateResult(False, True, reason, threshold, alpha, tuple(verdicts))


def _p_value(verdict: MetricVerdict) -> float:
    return verdict.significance.p_value if verdict.significance is not None else math.nan


def _worst_overall(verdicts: list[MetricVerdict]) -> list[str]:
    """Query ids by their largest drop across the tripping metrics, worst first."""
    worst: dict[str, float] = {}
    for verdict in verdicts:
        for query_id, delta in verdict.worst_queries:
            worst[query_id] = min(delta, worst.get(query_id, 0.0))
    ranked = sorted(worst.items(), key=lambda item: (item[1], item[0]))
    # Query ids come from the golden file (pull-request text): shown() keeps each on its line.
    return [f"{shown(qid)} ({delta:+.3f})" for qid, delta in ranked[:WORST_QUERIES_SHOWN]]
