"""Comparing this run with a previous one: only what is comparable, and what changed.

Two runs are comparable when their fingerprints are equal: the fingerprint holds
every setting that changes the numbers (the golden file's hash, the limit, the
k values, the metric version, and the retriever's own `describe()`, which for
the built-in search includes its query-compiler version). Equality is checked
over every key, so a fingerprint key added later is never ignored; a run
recorded before that key existed is not comparable (a missing setting may have
had another value).

The corpus snapshot and the findings are deliberately NOT in the fingerprint:
a knowledge base grows every day, and if a new document made runs incomparable
the gate would go quiet exactly when a change might have hurt retrieval. A
changed corpus is reported instead (`CorpusChange`), so a reader knows a
delta may come from the corpus rather than from retrieval.

Pure: run records in (a record read from a file was checked by
`scanner.report.read` first), frozen records out. How a comparison reads is
scanner/render's job.
"""

from __future__ import annotations

import bisect
import enum
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum

from scanner.compare.fingerprint import fingerprint_differences, pick_comparable
from scanner.compare.pooling import QueryPool, pool_query
from scanner.evaluation.records import QueryRecord, RunRecord
from scanner.golden.file import ExpectedEntry
from scanner.metrics.catalogue import BY_NAME, IN_COMPARISON_ORDER, Measure
from scanner.metrics.measures import AggregateMetrics, Judgments, QueryMetrics
from scanner.retrievers.base import Hit
from scanner.search.index import CorpusSnapshot

DELTA_DECIMALS = 10
"""Deltas are rounded to 10 decimals: 0.80 - 0.75 is 0.05000000000000004 in floating
point, and float noise must not decide whether a drop is over the gate threshold.
Metrics are means over at most tens of thousands of queries, far coarser than 1e-10."""

class ComparisonStatus(enum.Enum):
    COMPARED = "compared"
    """A previous run with an equal fingerprint was found and compared."""
    NO_PREVIOUS = "no-previous"
    """Nothing to compare with (no history yet, history disabled, or it started fresh)."""
    INCOMPARABLE = "incomparable"
    """Previous runs exist but none has this run's fingerprint; `reasons` say what differs."""


class NotComparedCause(enum.Enum):
    """Why nothing was compared, as a closed set the renderers can phrase: a gate
    that could not run is a warning naming one of these, never silence."""

    NO_BASELINE = "no-baseline"
    """Nothing to compare with was configured: no history, no baseline file, no git revision."""
    NO_HISTORY = "no-history"
    """A history is kept but holds no run yet (the first run)."""
    INCOMPARABLE = "incomparable-fingerprint"
    """Previous runs exist but none has this run's settings; `reasons` say what differs."""
    SHALLOW_CLONE = "shallow-clone"
    """The git revision to compare with is not in this checkout, which is shallow."""
    REVISION_UNAVAILABLE = "revision-unavailable"
    """The git revision could not be evaluated: no git, not a repository, an external retriever,
    or git failing or over its deadline."""
    KB_ABSENT_AT_BASE = "kb-absent-at-base"
    """The revision was read and the KB folder did not exist there (a pull request that adds the
    KB): there is nothing to compare with, and nothing the person could fix."""


class Origin(enum.Enum):
    FLAG = "flag"
    """The user named the revision (`--baseline-ref`, input `baseline-ref`)."""
    PULL_REQUEST = "pull-request"
    """The Action chose the pull request's base commit: nothing the user set can be wrong, so
    every problem is a warning and a reason, never exit 2."""


@dataclass(frozen=True, slots=True)
class BaseRequest:
    revision: str
    """As given: a branch, tag or SHA (for a pull request: its base commit's SHA)."""
    origin: Origin = Origin.FLAG
    label: str | None = None
    """What `previous.ref` shows; None: `revision`. The pull request's base branch name."""

    @property
    def ref(self) -> str:
        return self.label or self.revision


MetricFamily = str
"""A measure's name in the catalogue (scanner/metrics/catalogue.py): `recall`, `mrr`, `judged`."""


class Source(StrEnum):
    """What a run was compared with."""

    HISTORY = "history"
    BASELINE = "baseline"
    GIT = "git"
    """The KB at a git revision (a pull request's base commit, or --baseline-ref), evaluated in this run."""


class QueryStatus(StrEnum):
    """How one query's metrics moved between two runs."""

    WORSE = "worse"
    """Some metric fell and none rose."""
    BETTER = "better"
    """Some metric rose and none fell."""
    MIXED = "mixed"
    UNCHANGED = "unchanged"
"""Where the previous run came from: the history file, a baseline report, or a git revision
evaluated in the same job."""


@dataclass(frozen=True, slots=True, kw_only=True)
class BaseRevision:
    """The git revision a `git` comparison evaluated (scanner.pipeline.base)."""

    commit: str
    """The full commit SHA the revision resolved to."""
    ref: str
    """The revision as given (`--baseline-ref`), or the pull request's base branch name."""


@dataclass(frozen=True, slots=True)
class Metric:
    """One aggregate metric: a measure of the catalogue, at one k if it has cut-offs."""

    family: MetricFamily
    k: int | None
    """The cut-off of an @k measure; None for MRR and MAP."""

    @property
    def measure(self) -> Measure:
        return BY_NAME[self.family]

    @property
    def label(self) -> str:
        """How people read it: MRR, MAP, recall@5, nDCG@10, P@5, success@1, judged@10."""
        return self.measure.label(self.k)

    @property
    def judges_the_golden_set(self) -> bool:
        """A measure of the labels' coverage rather than of search (judged@k, `Measure.gated`): it is
        reported and compared, and gated only when a per-metric budget names it."""
        return not self.measure.gated

    def in_aggregate(self, aggregate: AggregateMetrics) -> float | None:
        """The value in an aggregate, None when that run did not record it (an older run, no nDCG)."""
        return self.measure.aggregate_value(aggregate, self.k)

    def in_query(self, metrics: QueryMetrics) -> float | None:
        """The value for one query (MRR's per-query value is the reciprocal rank, MAP's the AP)."""
        return self.measure.query_value(metrics, self.k)


@dataclass(frozen=True, slots=True, kw_only=True)
class MetricDelta:
    """How one metric moved between the previous run and this one."""

    metric: Metric
    previous: float
    current: float

    @property
    def delta(self) -> float:
        """current - previous, rounded to DELTA_DECIMALS; negative means it got worse."""
        return round(self.current - self.previous, DELTA_DECIMALS)


@dataclass(frozen=True, slots=True, kw_only=True)
class ExpectedMove:
    """One expected entry of a query whose rank changed between the two runs."""

    entry: ExpectedEntry
    rank_before: int | None
    """Rank of this entry's first matching hit in the previous run; None: not in the list."""
    rank_after: int | None
    now_above: Hit | None
    """The best-ranked section above this entry now whose document was not above it before."""


@dataclass(frozen=True, slots=True, kw_only=True)
class QueryDelta:
    """One golden query present in both runs (matched by id) and how its metrics moved."""

    query_id: str
    query: str | None
    """The query text as this run recorded it."""
    deltas: tuple[MetricDelta, ...]
    """Every metric both runs recorded for this query, in aggregate order."""
    rank_before: int | None = None
    """Rank of the first expected document in the previous run's list; None: not in it (or not recorded)."""
    rank_after: int | None = None
    """The same in this run."""
    now_above: str | None = None
    """A document that now ranks above the first expected one and did not before: what pushed
    it down (None when nothing new ranks above it)."""
    moves: tuple[ExpectedMove, ...] = ()
    """Each expected entry whose own rank moved, in file order (not only the first expected one)."""

    @property
    def status(self) -> QueryStatus:
        fell = any(d.delta < 0 for d in self.deltas)
        rose = any(d.delta > 0 for d in self.deltas)
        if fell and rose:
            return QueryStatus.MIXED
        if fell:
            return QueryStatus.WORSE
        if rose:
            return QueryStatus.BETTER
        return QueryStatus.UNCHANGED

    def delta_of(self, metric: Metric) -> MetricDelta | None:
        for delta in self.deltas:
            if delta.metric == metric:
                return delta
        return None


@dataclass(frozen=True, slots=True)
class CorpusChange:
    """Whether the corpus moved between the two runs (it never makes them incomparable)."""

    changed: bool | None
    """True/False when both runs recorded a corpus; None when the previous one did not (unknown)."""
    description: str
    """`642 -> 646 documents`, `same counts, different contents`, `unchanged`, or why unknown."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Comparison:
    """The result of comparing this run with a previous one (or of finding none)."""

    status: ComparisonStatus
    reasons: tuple[str, ...]
    """Why nothing was compared (no-previous / incomparable); empty when compared."""
    source: Source | None
    """Where the previous run came from; None when there was nowhere to look."""
    previous: RunRecord | None
    """The compared run record, only when status is COMPARED."""
    metric_deltas: tuple[MetricDelta, ...]
    """Every aggregate metric both runs recorded: MRR, recall@k and nDCG@k for each k."""
    query_deltas: tuple[QueryDelta, ...]
    """Every query in both runs, in this run's order."""
    only_in_current: tuple[str, ...]
    """Query ids this run has and the previous one did not."""
    only_in_previous: tuple[str, ...]
    corpus: CorpusChange | None
    """None when nothing was compared."""
    revision: BaseRevision | None = None
    """The git revision, when `source` is git (also when it could not be compared, if resolved)."""
    cause: NotComparedCause | None = None
    """Why nothing was compared; None when compared."""
    hint: str | None = None
    """What to change so that a later run compares (e.g. `fetch-depth: 0`); None if nothing helps."""
    pools: tuple[QueryPool, ...] = ()
    """Every query in both runs, pooled at this run's largest k (compare/pooling.py), in this run's order."""

    @property
    def compared(self) -> bool:
        return self.status is ComparisonStatus.COMPARED

    def worst_queries(self, metric: Metric, limit: int = 5, ids: frozenset[str] | None = None) -> list[tuple[str, float]]:
        """The queries (of `ids` when given) whose value of `metric` fell the most, largest drop first."""
        drops = []
        for query in self.query_deltas:
            if ids is not None and query.query_id not in ids:
                continue
            delta = query.delta_of(metric)
            if delta is not None and delta.delta < 0:
                drops.append((query.query_id, delta.delta))
        drops.sort(key=lambda item: (item[1], item[0]))
        return drops[:limit]

    def paired_values(self, metric: Metric, ids: frozenset[str] | None = None) -> tuple[list[float], list[float]]:
        """Per-query (current, previous) values of `metric` over the matched queries (of `ids` when given)."""
        current: list[float] = []
        previous: list[float] = []
        for query in self.query_deltas:
            if ids is not None and query.query_id not in ids:
                continue
            delta = query.delta_of(metric)
            if delta is not None:
                current.append(delta.current)
                previous.append(delta.previous)
        return current, previous

    def changed_queries(self) -> list[QueryDelta]:
        """The queries whose metrics moved, the largest single drop first (what a reader needs)."""
        moved = [query for query in self.query_deltas if query.status is not QueryStatus.UNCHANGED]
        return sorted(moved, key=lambda q: min((d.delta for d in q.deltas), default=0.0))


# --- choosing what to compare with -----------------------------------------------


def no_previous(
    reason: str,
    source: Source | None = None,
    cause: NotComparedCause = NotComparedCause.NO_BASELINE,
    *,
    hint: str | None = None,
    revision: BaseRevision | None = None,
) -> Comparison:
    """A comparison that did not happen because there was nothing to compare with."""
    return _not_compared(
        ComparisonStatus.NO_PREVIOUS, (reason,), source=source, revision=revision, cause=cause, hint=hint
    )


def compare_with_history(current: RunRecord, runs: Sequence[RunRecord]) -> Comparison:
    """Compare with the newest comparable run of the history (newest first)."""
    if not runs:
        return no_previous("no previous run in the history", Source.HISTORY, NotComparedCause.NO_HISTORY)
    match = pick_comparable(current.fingerprint, runs)
    if match is not None:
        return compare_runs(current, match, Source.HISTORY)
    reasons = fingerprint_differences(current.fingerprint, runs[0].fingerprint, "the previous run")
    if len(runs) > 1:
        reasons.insert(
            0,
            f"none of the {len(runs)} runs in the history has this run's settings; the newest differs as follows",
        )
    return _incomparable(reasons, Source.HISTORY)


def compare_runs(
    current: RunRecord, previous: RunRecord, source: Source = Source.HISTORY, revision: BaseRevision | None = None
) -> Comparison:
    """Compare this run with one previous run: incomparable unless the fingerprints are equal."""
    against = {Source.BASELINE: "the baseline", Source.GIT: "the base revision"}.get(source, "the previous run")
    reasons = fingerprint_differences(current.fingerprint, previous.fingerprint, against)
    if reasons:
        return _incomparable(reasons, source, revision)

    metrics = metrics_of(current.aggregate)

    previous_rows = {row.id: row for row in previous.queries or ()}
    current_rows = current.queries or ()
    current_ids = {row.id for row in current_rows}
    query_deltas = []
    pools = []
    for row in current_rows:
        old_row = previous_rows.get(row.id)
        if old_row is None:
            continue
        pools.append(pool_query(row, old_row, current.largest_k))
        deltas = _query_deltas(metrics, row.metrics, old_row.metrics)
        before, after = first_expected_rank(old_row), first_expected_rank(row)
        query_deltas.append(
            QueryDelta(
                query_id=row.id, query=row.text, deltas=deltas, rank_before=before, rank_after=after,
                now_above=newly_above(row, old_row, after), moves=expected_moves(row, old_row),
            )
        )
    return Comparison(
        status=ComparisonStatus.COMPARED,
        reasons=(),
        source=source,
        previous=previous,
        metric_deltas=aggregate_deltas(current.aggregate, previous.aggregate),
        query_deltas=tuple(query_deltas),
        only_in_current=tuple(r.id for r in current_rows if r.id not in previous_rows),
        only_in_previous=tuple(i for i in previous_rows if i not in current_ids),
        corpus=corpus_change(current.corpus, previous.corpus),
        revision=revision,
        pools=tuple(pools),
    )


def metric_deltas(
    metrics: Iterable[Metric], current: Callable[[Metric], float | None], previous: Callable[[Metric], float | None]
) -> tuple[MetricDelta, ...]:
    """A delta for each of `metrics` that both runs recorded, in the order given."""
    found = []
    for metric in metrics:
        new, old = current(metric), previous(metric)
        if new is not None and old is not None:
            found.append(MetricDelta(metric=metric, previous=old, current=new))
    return tuple(found)


def aggregate_deltas(current: AggregateMetrics, previous: AggregateMetrics) -> tuple[MetricDelta, ...]:
    """How each mean of `current` moved since `previous` (a run's, or one tag's)."""
    return metric_deltas(
        metrics_of(current), lambda metric: metric.in_aggregate(current), lambda metric: metric.in_aggregate(previous)
    )


def _query_deltas(metrics: Sequence[Metric], current: QueryMetrics, previous: QueryMetrics) -> tuple[MetricDelta, ...]:
    return metric_deltas(metrics, lambda metric: metric.in_query(current), lambda metric: metric.in_query(previous))


def first_expected_rank(query: QueryRecord) -> int | None:
    """Rank of the first hit that matches any expected entry (kb-mcp's hit rule), None if none."""
    positions = Judgments(_answers(query)).first_positions(query.hits)
    first = min((p for p in positions if p is not None), default=None)
    return query.hits[first - 1].rank if first is not None else None


def _answers(query: QueryRecord) -> list[ExpectedEntry]:
    # An entry judged not relevant (`grade: 0`) is not the answer whose rank a reader follows.
    return [e for e in query.expected if e.grade > 0]


def expected_moves(current: QueryRecord, previous: QueryRecord) -> tuple[ExpectedMove, ...]:
    """Every expected entry of the query (as this run labels it) whose rank moved."""
    answers = _answers(current)
    judgments = Judgments(answers)

    def ranks(query: QueryRecord) -> list[int | None]:
        return [query.hits[p - 1].rank if p is not None else None for p in judgments.first_positions(query.hits)]

    newly = _NewlyAbove(current, previous)
    moves = []
    for entry, before, after in zip(answers, ranks(previous), ranks(current), strict=True):
        if before != after:
            moves.append(ExpectedMove(entry=entry, rank_before=before, rank_after=after, now_above=newly.hit(before, after)))
    return tuple(moves)


class _NewlyAbove:
    """The best-ranked hit above a rank now whose document was not above another rank before, for
    any number of entries at one binary search each (not a pass over both lists per entry)."""

    def __init__(self, current: QueryRecord, previous: QueryRecord) -> None:
        best: dict[str, int] = {}
        for h in previous.hits:
            best[h.path] = min(h.rank, best.get(h.path, h.rank))
        self.hits = current.hits
        # A hit qualifies for a previous rank B when its document's best previous rank is B or
        # worse (never listed: infinity). The running maximum of that rank along the current list
        # is non-decreasing, so the first hit that qualifies is found by bisection.
        self.reach: list[float] = []
        highest = -math.inf
        for h in current.hits:
            highest = max(highest, best.get(h.path, math.inf))
            self.reach.append(highest)

    def hit(self, rank_before: int | None, rank_after: int | None) -> Hit | None:
        bound = rank_before if rank_before is not None else math.inf
        cut = rank_after if rank_after is not None else len(self.hits) + 1
        at = bisect.bisect_left(self.reach, bound)
        if at < len(self.hits) and self.hits[at].rank < cut:
            return self.hits[at]
        return None


def newly_above(current: QueryRecord, previous: QueryRecord, rank_after: int | None) -> str | None:
    """The best-ranked document above the first expected one now that was not above it before."""
    found = _NewlyAbove(current, previous).hit(first_expected_rank(previous), rank_after)
    return found.path if found is not None else None


def _incomparable(reasons: list[str], source: Source, revision: BaseRevision | None = None) -> Comparison:
    return _not_compared(
        ComparisonStatus.INCOMPARABLE, tuple(reasons), source=source, revision=revision,
        cause=NotComparedCause.INCOMPARABLE, hint=None,
    )


def _not_compared(
    status: ComparisonStatus, reasons: tuple[str, ...], *, source: Source | None, revision: BaseRevision | None,
    cause: NotComparedCause, hint: str | None,
) -> Comparison:
    """A comparison with nothing compared: no previous run, no deltas, no corpus change."""
    return Comparison(
        status=status, reasons=reasons, source=source, previous=None, metric_deltas=(), query_deltas=(),
        only_in_current=(), only_in_previous=(), corpus=None, revision=revision, cause=cause, hint=hint,
    )


def metrics_of(aggregate: AggregateMetrics) -> list[Metric]:
    """Every metric an aggregate recorded, in the catalogue's comparison order: recall@k by k, MRR,
    nDCG@k by k (kb-mcp's three), then P@k, success@k, MAP and judged@k."""
    metrics: list[Metric] = []
    for measure in IN_COMPARISON_ORDER:
        value = measure.of_aggregate(aggregate)
        if isinstance(value, Mapping):
            metrics += [Metric(measure.name, k) for k in sorted(value)]
        elif value is not None:
            metrics.append(Metric(measure.name, None))
    return metrics


def corpus_change(current: CorpusSnapshot | None, previous: CorpusSnapshot | None) -> CorpusChange:
    """Describe how the corpus moved: counts first, then the content digest."""
    if previous is None:
        return CorpusChange(None, "the previous run did not record its corpus")
    if current is None:
        return CorpusChange(None, "this run did not record its corpus")
    parts = [
        f"{old} -> {new} {field}"
        for field, old, new in (
            ("documents", previous.documents, current.documents),
            ("chunks", previous.chunks, current.chunks),
        )
        if old != new
    ]
    if parts:
        return CorpusChange(True, ", ".join(parts))
    if not previous.digest:
        # Equal counts prove nothing about contents: an edited document keeps them.
        return CorpusChange(None, "same counts; the previous run recorded no content digest")
    if previous.digest != current.digest:
        return CorpusChange(True, "same counts, different contents")
    return CorpusChange(False, "unchanged")
