"""How sure a number is: a bootstrap interval per aggregate, and the drop the gate could detect.

Interval: the percentile bootstrap of the mean over queries (Efron & Tibshirani, *An
Introduction to the Bootstrap*, 1993, ch. 13; for IR metrics Sakai, "Evaluating evaluation
metrics based on the bootstrap", SIGIR 2006). The counted queries are resampled with
replacement BOOTSTRAP_RESAMPLES times; the interval is the 2.5th and 97.5th percentile of the
resampled means (numpy's linear interpolation). One seeded draw of resamples serves every
measure of an aggregate, so the same run gives the same intervals, to the last bit. The draws are
`scipy.stats.bootstrap(..., method="percentile", rng=numpy.random.default_rng(BOOTSTRAP_SEED))`'s,
and the interval equals scipy's to 1e-12 (its percentile interpolates in another order, which
can move the last bit; tests/metrics/test_uncertainty.py). The interval says how much the mean would move with another
sample of queries like these; it says nothing about labels that are wrong.

Detectable drop: the smallest fall of a mean that a two-sided paired test at `alpha` would find
with probability DETECTION_POWER, by the normal approximation of power analysis (Webber, Moffat &
Zobel, "Statistical power in retrieval experimentation", CIKM 2008; Sakai, "Topic set size design",
Information Retrieval Journal 2016):

    drop = (z(1 - alpha/2) + z(power)) * sd(d) / sqrt(n)

where d are the per-query differences between the two runs. Compared with a previous run, d are
the observed differences; with none, sd(d) is estimated as sd(x) * sqrt(2), x this run's
per-query values, which assumes the two runs' values are uncorrelated per query, so it
overstates the drop when they are alike, as a change's two runs usually are. With too few
queries for the sign-flip test to reach p < alpha at all (2 / 2^n >= alpha), no drop is
detectable and the value is None.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence

import numpy as np

from scanner.metrics.catalogue import CATALOGUE, Measure, per_query_values
from scanner.metrics.measures import Interval, QueryMetrics

BOOTSTRAP_RESAMPLES = 2000
"""Enough for a 95% percentile interval whose ends move by well under 0.01 between seeds for
the metric means of 20 or more queries (Efron & Tibshirani recommend 1000-2000 for intervals)."""
BOOTSTRAP_SEED = 20_261_204
"""Fixed: the same run gives the same interval."""
CONFIDENCE = 0.95
DETECTION_POWER = 0.8
"""The usual choice of power analysis (Cohen): a drop this size is found four times in five."""
DEFAULT_DETECTION_ALPHA = 0.05
"""The alpha the detectable drop is given at when --alpha is not set."""
_BATCH_CELLS = 1 << 20
"""Resamples are drawn and counted a batch at a time, batch x queries at most this many cells
(8 MiB of counts), so 10,000 queries cost 8 MiB, not 160."""


def bootstrap_means(columns: Sequence[Sequence[float]], resamples: int = BOOTSTRAP_RESAMPLES,
                    seed: int = BOOTSTRAP_SEED) -> np.ndarray:
    """Resampled means, one row per resample, one column per measure; every column is resampled
    with the same draws (`columns` are per-query values of equal length, at least 1)."""
    values = np.asarray(columns, dtype=np.float64).T  # queries x measures
    n = values.shape[0]
    rng = np.random.default_rng(seed)
    batch = max(1, _BATCH_CELLS // n)
    means = np.empty((resamples, values.shape[1]))
    done = 0
    while done < resamples:
        size = min(batch, resamples - done)
        # The draw scipy.stats.bootstrap makes: integers in [0, n), one row per resample.
        index = rng.integers(0, n, (size, n))
        # How often each query was drawn, then one matrix product for every measure at once:
        # batch x n x measures multiply-adds, instead of gathering that many values.
        rows = np.repeat(np.arange(size), n) * n
        counts = np.bincount(rows + index.ravel(), minlength=size * n).reshape(size, n).astype(np.float64)
        means[done:done + size] = counts @ values / n
        done += size
    return means


def percentile_interval(means: np.ndarray, confidence: float = CONFIDENCE) -> tuple[np.ndarray, np.ndarray]:
    tail = (1 - confidence) / 2 * 100
    low, high = np.percentile(means, [tail, 100 - tail], axis=0)
    return low, high


def intervals(columns: Sequence[tuple[str, int | None, Sequence[float]]]) -> tuple[Interval, ...]:
    """One Interval per (measure, k, per-query values) column; empty when there is no query."""
    if not columns or not columns[0][2]:
        return ()
    low, high = percentile_interval(bootstrap_means([values for _, _, values in columns]))
    return tuple(
        # Clipped into [0, 1]: interpolation between two means can differ from them in the last bit.
        Interval(measure, k, min(max(float(lo), 0.0), 1.0), min(max(float(hi), 0.0), 1.0))
        for (measure, k, _), lo, hi in zip(columns, low, high)
    )


def detectable_drop(values: Sequence[float], alpha: float, *, paired: bool) -> float | None:
    """The module docstring's formula; `values` are paired differences (`paired`) or one run's
    per-query values. None when no drop can be significant with this many queries, or when every
    value is the same (no spread to estimate from)."""
    n = len(values)
    # 2 / 2^n >= alpha, in logarithms: 2.0 ** n overflows a float past n = 1023.
    if n < 2 or n <= math.log2(2.0 / alpha):
        return None
    spread = statistics.stdev(values) * (1.0 if paired else math.sqrt(2.0))
    if spread == 0.0:
        # Every query scored the same: the normal approximation would claim any drop, however
        # small, is detectable. There is no estimate to give.
        return None
    normal = statistics.NormalDist()
    drop = (normal.inv_cdf(1 - alpha / 2) + normal.inv_cdf(DETECTION_POWER)) * spread / math.sqrt(n)
    return min(drop, 1.0)


def aggregate_columns(rows: Sequence[QueryMetrics], ks: Sequence[int]) -> list[tuple[str, int | None, list[float]]]:
    """The per-query values behind each mean of an aggregate (counted rows only), as `intervals`
    takes them: each measure without cut-offs, then each k's, under the report's keys."""
    counted = [row for row in rows if row.counted]
    table = per_query_values(counted, ks)

    def column(measure: Measure, k: int | None) -> tuple[str, int | None, list[float]]:
        return measure.report_key, k, [value or 0.0 for value in table[measure.report_key, k]]

    columns = [column(measure, None) for measure in CATALOGUE if not measure.at_k]
    for k in ks:
        columns += [column(measure, k) for measure in CATALOGUE if measure.at_k]
    return columns
