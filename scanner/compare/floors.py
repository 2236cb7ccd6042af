"""Absolute floors (`--fail-under recall@10=0.6,ops:mrr=0.5`): a mean below its floor fails the step.

Unlike the regression gate, a floor needs nothing to compare with: it holds on a first run, after
the golden file changed, and against an incomparable history, which is when a drop-only gate is
silent. A floor without @k (`recall=0.5`) holds every k the run measures; a `tag:` floor holds the
mean over the queries carrying the tag. A value equal to its floor passes.
"""

from __future__ import annotations

from dataclasses import dataclass

from scanner.compare.comparison import DELTA_DECIMALS, metrics_of
from scanner.compare.gate import MetricSelector, tagged
from scanner.evaluation.records import RunRecord


@dataclass(frozen=True, slots=True)
class Floors:
    """The `--fail-under` pairs, as given."""

    items: tuple[tuple[MetricSelector, float], ...] = ()

    def named_tags(self) -> list[str]:
        return list(dict.fromkeys(selector.tag for selector, _ in self.items if selector.tag is not None))

    def named_cutoffs(self) -> set[int]:
        return {selector.k for selector, _ in self.items if selector.k is not None}


@dataclass(frozen=True, slots=True)
class FloorCheck:
    """One measured mean held against its floor."""

    metric_label: str
    """`recall@10`, `MRR`."""
    tag: str | None
    floor: float
    value: float

    @property
    def label(self) -> str:
        """`recall@10`, `ops:MRR`."""
        return tagged(self.tag, self.metric_label)

    @property
    def below(self) -> bool:
        return self.shortfall > 0

    @property
    def shortfall(self) -> float:
        """How far below the floor (positive), rounded as deltas are; 0 or less when it holds."""
        return round(self.floor - self.value, DELTA_DECIMALS)


@dataclass(frozen=True, slots=True)
class FloorResult:
    checks: tuple[FloorCheck, ...] = ()
    """Every mean a floor names, in the report's metric order, tags after the overall means."""

    @property
    def failed(self) -> tuple[FloorCheck, ...]:
        return tuple(check for check in self.checks if check.below)


def evaluate_floors(floors: Floors, run: RunRecord) -> FloorResult:
    """Each mean a pair names against its floor; a pair with @k wins over its family's. Whether each
    named tag and k exist was checked before (a floor that names nothing is refused, never silent)."""
    checks = []
    by_tag = dict(run.by_tag)
    for tag in [None, *floors.named_tags()]:
        aggregate = run.aggregate if tag is None else by_tag.get(tag)
        if aggregate is None:
            continue
        for metric in metrics_of(aggregate):
            chosen = [(s, v) for s, v in floors.items if s.selects(metric, tag)]
            exact = [v for s, v in chosen if s.k is not None]
            floor = exact[0] if exact else (chosen[0][1] if chosen else None)
            value = metric.in_aggregate(aggregate)
            if floor is not None and value is not None:
                checks.append(FloorCheck(metric.label, tag, floor, value))
    return FloorResult(tuple(checks))
