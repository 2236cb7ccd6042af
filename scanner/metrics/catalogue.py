"""Every measure kb-eval reports, declared once: its name, how people read it, its cut-offs, how it
aggregates and whether the gate watches it.

The comparison, the gate, the budget parser, the renderers and the JSON report read this catalogue;
what each measure means and how one query's value is computed is in `measures.py` (its docstring
and `score_query`). Adding a measure is its definition there, its value on `QueryMetrics` and
`AggregateMetrics`, and one entry here; then its keys in the JSON schema and its row in
docs/metrics.md (tests/metrics/test_catalogue.py fails until both match this catalogue), and
reading it back from a history (`scanner/report/read.py`): docs/architecture.md, "Where to add".
"""

from __future__ import annotations

import enum
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

from scanner.metrics.measures import AggregateMetrics, QueryMetrics

Value = float | Mapping[int, float] | None
"""One run's value of a measure: a number, one per cut-off (an @k measure), or None where the run
was recorded before the measure existed."""


class Aggregation(enum.Enum):
    MEAN = "mean"
    """The plain mean over the counted queries (macro average), as trec_eval's `all` row."""

    def over(self, values: Sequence[float]) -> float:
        """The aggregate of the counted queries' values (at least one)."""
        return math.fsum(values) / len(values)


@dataclass(frozen=True, slots=True)
class Measure:
    name: str
    """The lower-case name a `metric=drop` budget pair uses, and the family of every label."""
    display: str
    """How people read it: `MRR`, `nDCG` (`nDCG@10` with a cut-off)."""
    at_k: bool
    """Measured at each cut-off of `--k` (recall@k), or once over the returned list (MRR)."""
    report_key: str
    """Its key in the JSON report's aggregates (`recall_at_k`, `mrr`)."""
    query_key: str
    """Its key in a query's metrics (`recall_at_k`, `reciprocal_rank`)."""
    reference: tuple[str, str]
    """The tool and the measure of it this one equals (`trec_eval`, `recip_rank`); the tests in
    tests/metrics compare with it."""
    description: str
    """The sentence the JSON schema gives its aggregate (tests/metrics/test_catalogue.py checks)."""
    of_query: Callable[[QueryMetrics], Value]
    of_aggregate: Callable[[AggregateMetrics], Value]
    gated: bool
    """Whether the gate's single threshold covers it. judged@k is not gated: it measures how much of
    the top k the labels cover, not how well search ranks, and it falls when a change surfaces
    unlabelled documents, good or bad; a `judged=` budget pair gates it, and a move of it says
    nothing about search."""
    headline: bool
    """In the summary's first metrics table (kb-mcp's measures and MAP); the others are folded below it."""
    comparison_position: int
    """Its place in a comparison's list of metrics, which the JSON's deltas and the gate's verdicts
    follow: kb-mcp's recall@k, MRR, nDCG@k first, as kb-mcp's diff lists them."""
    brief_position: int | None = None
    """Its place in the one-line lists a reader takes in at a glance (the text report's intervals,
    the detectable-drop sentence), at the largest k; None: left to the JSON."""
    budget_aliases: tuple[str, ...] = ()
    """Other names a budget pair may use for it (`precision` for P)."""
    aggregation: Aggregation = Aggregation.MEAN

    def label(self, k: int | None) -> str:
        """`MRR`, `recall@5`, `nDCG@10`, `P@5`: trec_eval's and ir_measures' spellings."""
        return self.display if k is None else f"{self.display}@{k}"

    def query_value(self, metrics: QueryMetrics, k: int | None) -> float | None:
        """One query's value at `k` (None for a measure without cut-offs); None when not recorded."""
        return _at(self.of_query(metrics), k)

    def aggregate_value(self, aggregate: AggregateMetrics, k: int | None) -> float | None:
        """The mean at `k` (None for a measure without cut-offs); None when not recorded."""
        return _at(self.of_aggregate(aggregate), k)


def _at(value: Value, k: int | None) -> float | None:
    # A run's own values are dicts: their type is asked first, an ABC's isinstance costs more,
    # and this runs for every measure, cut-off and query of a run several times over.
    if type(value) is dict or isinstance(value, Mapping):
        return value.get(k) if k is not None else None
    if value is None or k is not None or math.isnan(value):
        # NaN: a reciprocal rank a history entry did not record (scanner.report.read).
        return None
    return value


def _with_map(values: Callable[[AggregateMetrics], Mapping[int, float]]) -> Callable[[AggregateMetrics], Value]:
    """The measures added with MAP were recorded together: a run without MAP has none of them."""
    return lambda a: values(a) if a.map is not None else None


def _with_ap(values: Callable[[QueryMetrics], Mapping[int, float]]) -> Callable[[QueryMetrics], Value]:
    return lambda q: values(q) if q.average_precision is not None else None


CATALOGUE: tuple[Measure, ...] = (
    Measure(
        name="mrr", display="MRR", at_k=False, report_key="mrr", query_key="reciprocal_rank", reference=("trec_eval", "recip_rank"),
        description="Mean reciprocal rank over the counted queries (trec_eval recip_rank).",
        of_query=lambda q: q.reciprocal_rank, of_aggregate=lambda a: a.mrr,
        gated=True, headline=True, comparison_position=1, brief_position=0,
    ),
    Measure(
        name="recall", display="recall", at_k=True, report_key="recall_at_k", query_key="recall_at_k", reference=("trec_eval", "recall_k"),
        description="Mean recall@k (trec_eval recall_k).",
        of_query=lambda q: q.recall_at_k, of_aggregate=lambda a: a.recall_at_k,
        gated=True, headline=True, comparison_position=0, brief_position=3,
    ),
    Measure(
        name="ndcg", display="nDCG", at_k=True, report_key="ndcg_at_k", query_key="ndcg_at_k", reference=("trec_eval", "ndcg_cut_k"),
        description="Mean nDCG@k (trec_eval ndcg_cut_k).",
        of_query=lambda q: q.ndcg_at_k, of_aggregate=lambda a: a.ndcg_at_k,
        gated=True, headline=True, comparison_position=2, brief_position=2,
    ),
    Measure(
        name="map", display="MAP", at_k=False, report_key="map", query_key="average_precision", reference=("trec_eval", "map"),
        description="Mean average precision over the counted queries (trec_eval map).",
        of_query=lambda q: q.average_precision, of_aggregate=lambda a: a.map,
        gated=True, headline=True, comparison_position=5, brief_position=1,
    ),
    Measure(
        name="precision", display="P", at_k=True, report_key="precision_at_k", query_key="precision_at_k", reference=("trec_eval", "P_k"),
        description="Mean precision@k (trec_eval P_k).",
        of_query=_with_ap(lambda q: q.precision_at_k), of_aggregate=_with_map(lambda a: a.precision_at_k),
        gated=True, headline=False, comparison_position=3, budget_aliases=("p",),
    ),
    Measure(
        name="success", display="success", at_k=True, report_key="success_at_k", query_key="success_at_k", reference=("trec_eval", "success_k"),
        description="Share of counted queries with a relevant entry in the top k (trec_eval success_k).",
        of_query=_with_ap(lambda q: q.success_at_k), of_aggregate=_with_map(lambda a: a.success_at_k),
        gated=True, headline=False, comparison_position=4,
    ),
    Measure(
        name="judged", display="judged", at_k=True, report_key="judged_at_k", query_key="judged_at_k", reference=("ir_measures", "Judged@k"),
        description="Mean share of the top k that some label judges, grade 0 included (ir_measures Judged@k).",
        of_query=_with_ap(lambda q: q.judged_at_k), of_aggregate=_with_map(lambda a: a.judged_at_k),
        gated=False, headline=False, comparison_position=6,
    ),
)
"""In the order the JSON report writes them (and the summary's tables show them)."""

BY_NAME: dict[str, Measure] = {measure.name: measure for measure in CATALOGUE}
BY_REPORT_KEY: dict[str, Measure] = {measure.report_key: measure for measure in CATALOGUE}

BUDGET_NAMES: dict[str, Measure] = {
    name: measure for measure in CATALOGUE for name in (measure.name, *measure.budget_aliases)
}
"""Every name a `metric=drop` pair may use, lower case."""

IN_COMPARISON_ORDER: tuple[Measure, ...] = tuple(sorted(CATALOGUE, key=lambda measure: measure.comparison_position))
BRIEF: tuple[Measure, ...] = tuple(
    sorted((m for m in CATALOGUE if m.brief_position is not None), key=lambda m: m.brief_position or 0)
)


def aggregate(per_query: Iterable[QueryMetrics], ks: Sequence[int]) -> AggregateMetrics:
    """Each measure over the counted queries, aggregated as its catalogue entry says; a query
    without a value of a measure (MAP in a run recorded before it existed) counts as 0."""
    rows = [row for row in per_query if row.counted]
    if not rows:
        zero = {k: 0.0 for k in ks}
        return AggregateMetrics(0, 0.0, dict(zero), dict(zero), dict(zero), dict(zero), dict(zero), 0.0)
    table = per_query_values(rows, ks)

    def over(name: str, k: int | None) -> float:
        return BY_REPORT_KEY[name].aggregation.over([0.0 if value is None else value for value in table[name, k]])

    def per_k(name: str) -> dict[int, float]:
        return {k: over(name, k) for k in ks}

    return AggregateMetrics(
        query_count=len(rows),
        mrr=over("mrr", None),
        recall_at_k=per_k("recall_at_k"),
        ndcg_at_k=per_k("ndcg_at_k"),
        precision_at_k=per_k("precision_at_k"),
        success_at_k=per_k("success_at_k"),
        judged_at_k=per_k("judged_at_k"),
        map=over("map", None),
    )


def per_query_values(rows: Sequence[QueryMetrics], ks: Sequence[int]) -> dict[tuple[str, int | None], list[float | None]]:
    """(report key, k) -> each row's value (`Measure.query_value`), k None for a measure without
    cut-offs. A row's value of a measure is read once for all its cut-offs, not once per k."""
    table: dict[tuple[str, int | None], list[float | None]] = {}
    for measure in CATALOGUE:
        values = [measure.of_query(row) for row in rows]
        for k in ks if measure.at_k else (None,):
            table[measure.report_key, k] = [_at(value, k) for value in values]
    return table
