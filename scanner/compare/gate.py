"""The regression gate: does this run's retrieval look worse than the previous run's?

Rule: the gate trips when any aggregate metric (recall@k, nDCG@k, P@k, success@k
for any k, MRR, MAP) dropped by MORE than its budget (strictly: a drop equal to the
budget passes) against a comparable previous run. The budget is the one threshold
(`--regression-threshold 0.05`) unless a `metric=drop` pair names the metric
(`--regression-threshold 0.05,map=0.02,recall@10=0.1`): a pair with a k budgets that
metric at that k, a pair without one (`recall=0.1`) every k of it, and the more
specific pair wins. judged@k measures the labels' coverage, not search, so it is
gated only when a pair names it. A `tag:metric=drop` pair (`ops:mrr=0.02`) gates
that tag's mean (over the queries carrying the tag) as well; a tag's means are
gated only where a pair names them, since a tag holds a few queries and the single
number was chosen for the mean over all of them. With `alpha`, a drop past
the threshold counts only when a paired sign-flip test over the per-query
values of that metric gives p < alpha (DEFAULT_ALPHA unless `--alpha off`), so one
event (two queries whose first answer a good new page took) does not fail a build on noise.

The gate never trips without a comparable previous run (it says why), and
findings never contribute: whether a quoted query is a leak or a labelling
gap is not something kb-eval can decide, so it is not grounds to fail a build.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from scanner.compare.comparison import (
    Comparison,
    Metric,
    MetricDelta,
    MetricFamily,
    NotComparedCause,
    Source,
    aggregate_deltas,
    metrics_of,
)
from scanner.compare.significance import SignFlipResult, paired_sign_flip_test
from scanner.evaluation.records import RunRecord
from scanner.evaluation.tags import MAX_TAGS_AGGREGATED
from scanner.foundation.errors import InputError
from scanner.foundation.untrusted_text import shown
from scanner.metrics.catalogue import per_query_values
from scanner.metrics.uncertainty import DEFAULT_DETECTION_ALPHA, detectable_drop

DEFAULT_REGRESSION_THRESHOLD = 0.05
"""`--regression-threshold`: an absolute drop in a metric, on the 0..1 scale."""
DEFAULT_ALPHA = 0.05
"""`--alpha`: a drop past the threshold counts only when the paired sign-flip test gives p below
this. On by default, because the threshold alone fails a pull request on one event: on a real
MkDocs site with 36 queries, two queries whose rank 1 went to a good new page dropped the four @1
measures by 0.056 each (p = 0.5) and failed the step. A dozen queries losing their answer give
p < 0.001. n queries all falling can reach at best p = 2/2^n: 6 of them at 0.05."""

WORST_QUERIES_SHOWN = 5


@dataclass(frozen=True, slots=True)
class MetricSelector:
    """The metric(s) one `metric=drop` or `tag:metric=drop` pair names."""

    family: MetricFamily
    k: int | None
    """The cut-off named (`recall@10`); None for MRR and MAP, or for every k of the family (`recall`)."""
    tag: str | None = None
    """`ops:mrr`: the mean over the queries tagged `ops`; None: over every query."""

    def selects(self, metric: Metric, tag: str | None = None) -> bool:
        return self.tag == tag and metric.family == self.family and (self.k is None or self.k == metric.k)

    @property
    def label(self) -> str:
        return tagged(self.tag, Metric(self.family, self.k).label)


def tagged(tag: str | None, label: str) -> str:
    """`ops:MRR` for a tag's mean, `MRR` for the overall one (the spelling of the budget pair)."""
    return label if tag is None else f"{tag}:{label}"


@dataclass(frozen=True, slots=True)
class RegressionBudget:
    """The largest tolerated drop of each aggregate metric (`--regression-threshold`)."""

    default: float = DEFAULT_REGRESSION_THRESHOLD
    """The single number: every metric no pair names (judged@k aside)."""
    per_metric: tuple[tuple[MetricSelector, float], ...] = ()
    """The `metric=drop` pairs, as given."""

    def threshold_for(self, metric: Metric, tag: str | None = None) -> float | None:
        """The budget of `metric` (of `tag`'s mean when given); None when it is not gated: judged@k
        that no pair names, and a tag's mean that no `tag:metric` pair names (a tag holds a few
        queries, and the single number was set for the mean over all of them)."""
        exact = [drop for selector, drop in self.per_metric if selector.k is not None and selector.selects(metric, tag)]
        if exact:
            return exact[0]
        family = [drop for selector, drop in self.per_metric if selector.selects(metric, tag)]
        if family:
            return family[0]
        return None if metric.judges_the_golden_set or tag is not None else self.default

    def named_cutoffs(self) -> set[int]:
        return {selector.k for selector, _ in self.per_metric if selector.k is not None}

    def named_tags(self) -> list[str]:
        """The tags the pairs name, in the order first named."""
        return list(dict.fromkeys(selector.tag for selector, _ in self.per_metric if selector.tag is not None))


@dataclass(frozen=True, slots=True)
class DetectableDrop:
    metric: Metric
    drop: float | None
    """None: no drop is detectable with this few queries."""
    paired: bool
    """True: from the per-query differences with the compared run; False: from this run alone
    (no comparison, or no query's value of this metric moved)."""


@dataclass(frozen=True, slots=True)
class Detectable:
    """The smallest drop of each mean a paired test at `alpha` finds with DETECTION_POWER
    (metrics/uncertainty.py `detectable_drop`)."""

    alpha: float
    """The gate's --alpha, else DEFAULT_DETECTION_ALPHA."""
    queries: int
    drops: tuple[DetectableDrop, ...]
    """In report order, judged@k left out (it is not gated by default)."""


def detectable_drops(comparison: Comparison, run: RunRecord, alpha: float | None) -> Detectable:
    """From the paired differences where compared and some query's value moved; from this run otherwise."""
    level = alpha if alpha is not None else DEFAULT_DETECTION_ALPHA
    rows = [q.metrics for q in run.queries or () if q.metrics.counted]
    metrics = metrics_of(run.aggregate)
    # Each row's values read once for every metric (per_query_values), not once per metric and k.
    table = per_query_values(rows, sorted({metric.k for metric in metrics if metric.k is not None}))
    drops = []
    for metric in metrics:
        if metric.judges_the_golden_set:
            continue
        differences: list[float] = []
        if comparison.compared:
            current, previous = comparison.paired_values(metric)
            differences = [c - p for c, p in zip(current, previous)]
        if len(set(differences)) > 1:
            drops.append(DetectableDrop(metric, detectable_drop(differences, level, paired=True), True))
        else:
            values = [value for value in table[metric.measure.report_key, metric.k] if value is not None]
            drops.append(DetectableDrop(metric, detectable_drop(values, level, paired=False), False))
    return Detectable(level, len(rows), tuple(drops))


@dataclass(frozen=True, slots=True)
class MetricVerdict:
    """One aggregate metric that fell, and whether its fall counts against the gate."""

    metric: Metric
    previous: float
    current: float
    delta: float
    """current - previous (negative), rounded as in scanner.compare.comparison."""
    over_threshold: bool
    """The drop is strictly greater than this metric's budget."""
    significance: SignFlipResult | None
    """The paired test, when alpha was given (computed for every fallen metric)."""
    counts: bool
    """This metric trips the gate: over the threshold and, with alpha, p < alpha."""
    worst_queries: tuple[tuple[str, float], ...]
    """(query id, delta) of the largest per-query drops in this metric."""
    threshold: float | None = None
    """This metric's budget; None when it is not gated (judged@k without a pair naming it)."""
    tag: str | None = None
    """The tag whose mean this is (a `tag:metric=drop` pair); None: the mean over every query."""

    @property
    def label(self) -> str:
        return tagged(self.tag, self.metric.label)


@dataclass(frozen=True, slots=True)
class GateResult:
    """What the gate decided; exit 1 only when `tripped` and --fail-on-regression was given."""

    tripped: bool
    evaluated: bool
    """False when there was no comparable previous run (the gate is a no-op)."""
    reason: str
    """One sentence: why it tripped, why it did not, or why it could not run."""
    threshold: float
    """The single number (the budget of every metric no pair names)."""
    alpha: float | None
    verdicts: tuple[MetricVerdict, ...]
    """Every aggregate metric that fell, worst first."""
    budget: RegressionBudget | None = None
    """The whole budget, pairs included; None: the single `threshold`."""
    detectable: Detectable | None = None
    """The smallest drop of each metric the gate could detect with this golden set; None when
    the run was not given."""
    enforced: bool = False
    """fail-on-regression was given: a tripped gate fails the step (exit 1), and one that could not
    run is said out loud. False: the gate is advice, the step passes whatever it decided."""

    @property
    def per_metric(self) -> tuple[tuple[MetricSelector, float], ...]:
        return self.budget.per_metric if self.budget is not None else ()


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


def evaluate_gate(
    comparison: Comparison,
    threshold: float | RegressionBudget,
    alpha: float | None = None,
    run: RunRecord | None = None,
    *,
    enforced: bool = False,
) -> GateResult:
    """Decide the gate for one comparison; see the module docstring for the rule. `threshold` and
    `alpha` are as scanner/settings/declaration.py accepts them (checked there, once). With `run`
    (this run), the result also says what drop the gate could detect. `enforced`: fail-on-regression
    was given (recorded, so every output says the same about the step)."""
    budget = as_budget(threshold)
    threshold = budget.default
    detectable = detectable_drops(comparison, run, alpha) if run is not None else None
    if not comparison.compared:
        why = "; ".join(comparison.reasons) or "nothing to compare with"
        return GateResult(False, False, f"not evaluated: {why}", threshold, alpha, (), budget, detectable, enforced)

    verdicts = [
        verdict for delta in comparison.metric_deltas
        if (verdict := _verdict(comparison, delta, budget.threshold_for(delta.metric), alpha)) is not None
    ]
    verdicts += tag_verdicts(comparison, budget, alpha, run)
    verdicts.sort(key=lambda v: (v.delta, v.label))
    counted = [v for v in verdicts if v.counts]
    if counted:
        worst = _worst_overall(counted)
        reason = tripped_words(counted, budget, alpha)
        if worst:
            reason += f"; worst queries: {', '.join(worst)}"
        return GateResult(True, True, reason, threshold, alpha, tuple(verdicts), budget, detectable, enforced)
    over_only = [v for v in verdicts if v.over_threshold]
    if over_only and alpha is not None:
        reason = (
            f"drops past {budget_words(budget, over_only)} that chance explains (the gate needs p < {alpha:g}): "
            + dropped_names(over_only, budget, alpha)
        )
    else:
        reason = f"no aggregate metric dropped by more than {budget_words(budget, None)}"
    return GateResult(False, True, reason, threshold, alpha, tuple(verdicts), budget, detectable, enforced)


def tripped_words(counted: list[MetricVerdict], budget: RegressionBudget, alpha: float | None) -> str:
    """Why a gate tripped, in plain words and without query ids: the means that fell past their
    budget and, with alpha, that more queries fell than chance explains."""
    chance = f", in more queries than chance explains (p < {alpha:g})" if alpha is not None else ""
    return f"dropped by more than {budget_words(budget, counted)}{chance}: {dropped_names(counted, budget, alpha)}"


def _verdict(
    comparison: Comparison, delta: MetricDelta, limit: float | None, alpha: float | None,
    tag: str | None = None, ids: frozenset[str] | None = None,
) -> MetricVerdict | None:
    """The verdict on one fallen mean; None when it did not fall. `ids`: the tag's queries, over
    which the paired test and the worst queries are taken."""
    if delta.delta >= 0:
        return None
    over = limit is not None and -delta.delta > limit
    significance = None
    counts = over
    if alpha is not None:
        current, previous = comparison.paired_values(delta.metric, ids)
        significance = paired_sign_flip_test(current, previous)
        counts = over and significance.p_value < alpha
    return MetricVerdict(
        metric=delta.metric,
        previous=delta.previous,
        current=delta.current,
        delta=delta.delta,
        over_threshold=over,
        significance=significance,
        counts=counts,
        worst_queries=tuple(comparison.worst_queries(delta.metric, WORST_QUERIES_SHOWN, ids)),
        threshold=limit,
        tag=tag,
    )


def tag_verdicts(
    comparison: Comparison, budget: RegressionBudget, alpha: float | None, run: RunRecord | None
) -> list[MetricVerdict]:
    """The fallen means of each tag a `tag:metric=drop` pair names, with the same test as the overall
    means, over that tag's queries (as this run tags them)."""
    previous_run = comparison.previous
    if run is None or previous_run is None:
        return []
    current_by_tag, previous_by_tag = dict(run.by_tag), dict(previous_run.by_tag)
    verdicts = []
    for tag in budget.named_tags():
        current, previous = current_by_tag.get(tag), previous_by_tag.get(tag)
        if current is None or previous is None:
            continue  # a tag the previous run did not have: nothing of it to compare
        ids = frozenset(q.id for q in run.queries or () if tag in q.tags)
        for delta in aggregate_deltas(current, previous):
            limit = budget.threshold_for(delta.metric, tag)
            if limit is None:
                continue
            verdict = _verdict(comparison, delta, limit, alpha, tag, ids)
            if verdict is not None:
                verdicts.append(verdict)
    return verdicts


def as_budget(threshold: float | RegressionBudget) -> RegressionBudget:
    return threshold if isinstance(threshold, RegressionBudget) else RegressionBudget(threshold)


def check_budget_tags(budget: RegressionBudget, run: RunRecord) -> None:
    """A `tag:metric` pair naming a tag no golden query carries would budget nothing, silently:
    refused (exit 2), naming the tags there are."""
    check_named_tags(budget.named_tags(), run, "--regression-threshold")


TAGS_LISTED = 20
"""Tags a refusal lists: a golden file can give thousands."""


def check_named_tags(named: list[str], run: RunRecord, flag: str) -> None:
    there = sorted({tag for query in run.queries or () for tag in query.tags})
    missing = [tag for tag in named if tag not in there]
    if missing:
        more = f" and {len(there) - TAGS_LISTED} more" if len(there) > TAGS_LISTED else ""
        raise InputError(
            f"{flag} names the tag {', '.join(map(repr, missing))}, which no golden query carries "
            f"(tags: {', '.join(there[:TAGS_LISTED]) or 'none'}{more})",
            field=flag, hint="name a tag the golden file gives its queries (`tags:`), or remove the pair",
        )
    # Past the cap on tags aggregated (evaluation/tags.py) a carried tag has no aggregate: its
    # budget would judge nothing, silently.
    aggregated = {tag for tag, _ in run.by_tag}
    capped = [tag for tag in named if tag not in aggregated]
    if capped:
        raise InputError(
            f"{flag} names the tag {', '.join(map(repr, capped))}, which has no aggregate of its own: the golden "
            f"queries carry {len(there)} tags and only the {MAX_TAGS_AGGREGATED} carried by the most queries are "
            "aggregated",
            field=flag, hint="name a tag more queries carry, or give these queries a tag they share",
        )


def budget_words(budget: RegressionBudget, verdicts: list[MetricVerdict] | None) -> str:
    """`0.05` when one number decides (the wording the gate always had); `its budget` when pairs
    gave some of these metrics their own."""
    if not budget.per_metric:
        return f"{budget.default:g}"
    if verdicts is not None and all(v.threshold == budget.default and v.tag is None for v in verdicts):
        return f"{budget.default:g}"
    return "its budget"


def dropped_names(verdicts: list[MetricVerdict], budget: RegressionBudget, alpha: float | None = None) -> str:
    """The fallen means, one event once: means that fell by the same amount in the same queries (the
    four @1 measures when queries lost rank 1) are named together, with the test's words when it ran."""
    events: dict[tuple[object, ...], list[MetricVerdict]] = {}
    for verdict in verdicts:
        key = (verdict.delta, verdict.tag, _own_budget(verdict, budget), verdict.worst_queries, _p_value(verdict))
        events.setdefault(key, []).append(verdict)
    named = []
    for group in events.values():
        first = group[0]
        labels = [v.label for v in group]
        names = labels[0] if len(labels) == 1 else ", ".join(labels[:-1]) + " and " + labels[-1]
        test = ""
        if alpha is not None and first.significance is not None:
            result = first.significance
            test = f" ({result.nonzero} of {result.pairs} queries moved, p = {result.p_value:.2g})"
        named.append(f"{names} {first.delta:+.4f}{_own_budget(first, budget)}{test}")
    return "; ".join(named)


def _own_budget(verdict: MetricVerdict, budget: RegressionBudget) -> str:
    if verdict.tag is None and (not budget.per_metric or verdict.threshold == budget.default or verdict.threshold is None):
        return ""
    return f" (budget {verdict.threshold:g})"


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
