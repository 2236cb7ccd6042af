"""What a run's answers cost: the spread of each query's answer time and size.

Recorded beside the quality numbers and outside the fingerprint: a slower machine or a busier
service does not make two runs incomparable, it makes them slower, which is worth seeing.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from scanner.retrievers.base import AnswerCost


@dataclass(frozen=True, slots=True)
class Spread:
    """Nearest-rank percentiles (the value at rank ceil(p * n) of the sorted values) and the largest:
    each is a value some query really had, as latency budgets (p95 <= 800 ms) are read."""

    p50: float
    p95: float
    max: float


@dataclass(frozen=True, slots=True)
class AnswerCosts:
    queries: int
    """How many answers were measured (every query of the run, or none)."""
    seconds: Spread
    """Wall time from the question sent to the answer read, per query."""
    bytes: Spread | None
    """The answer's size as received; None when the retriever reports none."""


def nearest_rank(ordered: Sequence[float], fraction: float) -> float:
    return ordered[max(0, math.ceil(fraction * len(ordered)) - 1)]


def spread(values: Iterable[float]) -> Spread:
    ordered = sorted(values)
    return Spread(nearest_rank(ordered, 0.50), nearest_rank(ordered, 0.95), ordered[-1])


def summarise(costs: Sequence[AnswerCost | None]) -> AnswerCosts | None:
    """The spread over every query; None when any query's answer was not measured (the built-in
    search, a run file, a run read back from before answers were measured)."""
    if not costs or any(cost is None for cost in costs):
        return None
    measured = [cost for cost in costs if cost is not None]
    sizes = [cost.bytes for cost in measured]
    return AnswerCosts(
        len(measured),
        spread(cost.seconds for cost in measured),
        None if any(size is None for size in sizes) else spread(float(size) for size in sizes if size is not None),
    )
