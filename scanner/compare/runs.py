"""N runs side by side (`kb-eval compare REPORT...`): a row per metric, a column per run, and each
run's paired significance against the first.

Several search configurations are compared on one golden set, so the runs' retrievers differ by
design: two runs are paired when their fingerprints are equal apart from `retriever` (the same
golden file, k, limit, relevance level, score level and metric version: the same questions asked
the same way). Anything else that differs is the reason they are not paired, and their values
are shown without a change or a p-value. The test is the gate's paired sign-flip test over the
queries both runs scored (scanner/compare/significance.py).

Pure: run records in, a frozen table out.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from scanner.compare.comparison import DELTA_DECIMALS, Metric, metrics_of
from scanner.compare.fingerprint import fingerprint_differences
from scanner.compare.significance import SignFlipResult, paired_sign_flip_test
from scanner.evaluation.records import QueryRecord, RunRecord
from scanner.metrics.measures import AggregateMetrics

DEFAULT_COMPARE_ALPHA = 0.05
"""Where a p-value is marked significant when `--alpha` is not given."""
PAIRING_IGNORES = ("retriever",)
"""Fingerprint keys that may differ between paired runs: what the runs compare."""


@dataclass(frozen=True, slots=True)
class NamedRun:
    name: str
    """The report file as named on the command line."""
    run: RunRecord


@dataclass(frozen=True, slots=True)
class Pairing:
    """How one run relates to the first."""

    paired: bool
    reasons: tuple[str, ...]
    """Why it is not paired (empty when paired)."""
    queries: int
    """Queries both runs scored (the pairs of the test); 0 when not paired."""


@dataclass(frozen=True, slots=True)
class Cell:
    value: float | None
    """None: this run did not record the metric (an older report, another k)."""
    delta: float | None
    """value - the first run's value, rounded as a comparison rounds it; None for the first run and
    for a run not paired with it."""
    test: SignFlipResult | None
    """The paired test against the first run; None where there is no delta."""


@dataclass(frozen=True, slots=True)
class MetricRow:
    metric: Metric
    cells: tuple[Cell, ...]
    """One per run, in the runs' order."""


@dataclass(frozen=True, slots=True)
class RunsTable:
    runs: tuple[NamedRun, ...]
    pairings: tuple[Pairing, ...]
    """One per run after the first."""
    rows: tuple[MetricRow, ...]
    alpha: float
    tag: str | None = None
    """The tag whose queries alone were compared; None: every query."""

    def significant(self, cell: Cell) -> bool:
        return cell.test is not None and cell.test.p_value < self.alpha


def compare_named_runs(
    runs: Sequence[NamedRun], alpha: float = DEFAULT_COMPARE_ALPHA, tag: str | None = None
) -> RunsTable:
    """With `tag`, the tag's means and only its queries in the tests (whether any run carries the
    tag is the caller's to check: `tags_of`)."""
    first = runs[0]
    pairings = tuple(pairing(first.run, other.run, tag) for other in runs[1:])
    aggregates = [_aggregate(named.run, tag) for named in runs]
    rows = []
    for metric in _metrics_in_order([a for a in aggregates if a is not None]):
        base = metric.in_aggregate(aggregates[0]) if aggregates[0] is not None else None
        cells = [Cell(base, None, None)]
        for other, paired, aggregate in zip(runs[1:], pairings, aggregates[1:]):
            value = metric.in_aggregate(aggregate) if aggregate is not None else None
            if not paired.paired or value is None or base is None:
                cells.append(Cell(value, None, None))
                continue
            current, previous = paired_values(metric, other.run, first.run, tag)
            cells.append(Cell(value, round(value - base, DELTA_DECIMALS), paired_sign_flip_test(current, previous)))
        rows.append(MetricRow(metric, tuple(cells)))
    return RunsTable(tuple(runs), pairings, tuple(rows), alpha, tag)


def tags_of(runs: Sequence[NamedRun]) -> list[str]:
    """Every tag some run's queries carry, sorted."""
    return sorted({tag for named in runs for tag, _ in named.run.by_tag})


def _aggregate(run: RunRecord, tag: str | None) -> AggregateMetrics | None:
    if tag is None:
        return run.aggregate
    return dict(run.by_tag).get(tag)


def _scored(row: QueryRecord, tag: str | None) -> bool:
    return row.metrics.counted and (tag is None or tag in row.tags)


def pairing(first: RunRecord, other: RunRecord, tag: str | None = None) -> Pairing:
    def kept(run: RunRecord) -> dict[str, object]:
        return {key: value for key, value in run.fingerprint.items() if key not in PAIRING_IGNORES}

    reasons = fingerprint_differences(kept(other), kept(first), "the first run")
    if not reasons and (first.queries is None or other.queries is None):
        reasons = ["a report without per-query rows cannot be paired"]
    if reasons:
        return Pairing(False, tuple(reasons), 0)
    first_ids = {row.id for row in first.queries or () if _scored(row, tag)}
    return Pairing(True, (), sum(1 for row in other.queries or () if _scored(row, tag) and row.id in first_ids))


def paired_values(
    metric: Metric, run: RunRecord, first: RunRecord, tag: str | None = None
) -> tuple[list[float], list[float]]:
    """Per-query (run, first) values of `metric` over the queries both scored, in `run`'s order."""
    earlier = {row.id: row for row in first.queries or () if _scored(row, tag)}
    current: list[float] = []
    previous: list[float] = []
    for row in run.queries or ():
        match = earlier.get(row.id)
        if match is None or not _scored(row, tag):
            continue
        new, old = metric.in_query(row.metrics), metric.in_query(match.metrics)
        if new is not None and old is not None:
            current.append(new)
            previous.append(old)
    return current, previous


def _metrics_in_order(aggregates: Sequence[AggregateMetrics]) -> list[Metric]:
    """The first run's metrics in report order, then any another run adds (a k only it measured)."""
    seen: dict[Metric, None] = {}
    for aggregate in aggregates:
        seen.update(dict.fromkeys(metrics_of(aggregate)))
    return list(seen)
