"""The bootstrap interval equals scipy.stats.bootstrap's; the detectable drop is the power
analysis formula of docs/metrics.md."""

from __future__ import annotations

import math
import random

import numpy as np
import pytest
import scipy.stats

from scanner.metrics import uncertainty
from scanner.metrics.uncertainty import (
    BOOTSTRAP_RESAMPLES,
    BOOTSTRAP_SEED,
    DETECTION_POWER,
    bootstrap_means,
    detectable_drop,
    intervals,
    percentile_interval,
)
from tests.metrics.test_graded_reference import QRELS, ours, rankings


def cranfield_average_precision() -> list[float]:
    """Per-query AP of seeded rankings over Cranfield's graded judgments: real, skewed, tied values."""
    return [row.average_precision or 0.0 for q, r in rankings(5).items() if (row := ours(r, QRELS[q], 1)).counted]


def scipy_interval(values: list[float]) -> tuple[float, float]:
    result = scipy.stats.bootstrap(
        (np.asarray(values),), np.mean, n_resamples=BOOTSTRAP_RESAMPLES, method="percentile",
        confidence_level=0.95, rng=np.random.default_rng(BOOTSTRAP_SEED), vectorized=True,
    )
    return float(result.confidence_interval.low), float(result.confidence_interval.high)


@pytest.mark.parametrize("size", [2, 7, 40, None])
def test_the_interval_equals_scipy_s_percentile_bootstrap(size: int | None) -> None:
    values = cranfield_average_precision()[:size]
    low, high = percentile_interval(bootstrap_means([values]))
    expected_low, expected_high = scipy_interval(values)
    assert low[0] == pytest.approx(expected_low, abs=1e-12)
    assert high[0] == pytest.approx(expected_high, abs=1e-12)
    assert low[0] <= sum(values) / len(values) <= high[0]


def test_batches_draw_what_one_call_draws(monkeypatch: pytest.MonkeyPatch) -> None:
    # Resamples are drawn a batch at a time to bound memory; the stream must be scipy's one call.
    values = cranfield_average_precision()
    monkeypatch.setattr(uncertainty, "_BATCH_CELLS", len(values) * 7)  # batches of 7 resamples
    low, high = percentile_interval(bootstrap_means([values]))
    assert (low[0], high[0]) == pytest.approx(scipy_interval(values), abs=1e-12)


def test_every_measure_of_an_aggregate_is_resampled_with_the_same_draws() -> None:
    values = cranfield_average_precision()
    doubled = [2 * v for v in values]
    means = bootstrap_means([values, doubled])
    assert np.allclose(means[:, 1], 2 * means[:, 0], atol=1e-12)


def test_the_same_values_give_the_same_interval_and_another_sample_another() -> None:
    values = cranfield_average_precision()
    columns = [("map", None, values)]
    assert intervals(columns) == intervals(columns)
    shuffled = random.Random(1).sample(values, len(values))
    assert intervals([("map", None, shuffled)]) != intervals(columns)  # the draws index positions
    assert intervals([("map", None, [])]) == ()


def test_the_detectable_drop_is_the_power_analysis_formula() -> None:
    values = cranfield_average_precision()
    n = len(values)
    z = scipy.stats.norm.ppf(1 - 0.05 / 2) + scipy.stats.norm.ppf(DETECTION_POWER)
    sd = float(np.std(values, ddof=1))
    assert detectable_drop(values, 0.05, paired=True) == pytest.approx(z * sd / math.sqrt(n), rel=1e-12)
    assert detectable_drop(values, 0.05, paired=False) == pytest.approx(z * sd * math.sqrt(2) / math.sqrt(n), rel=1e-12)
    # A smaller alpha needs a larger drop.
    assert detectable_drop(values, 0.01, paired=True) > detectable_drop(values, 0.05, paired=True)  # type: ignore[operator]


def test_no_drop_is_detectable_when_the_sign_flip_test_cannot_reach_alpha() -> None:
    # With n queries the smallest two-sided sign-flip p-value is 2 / 2^n: 0.0625 for 5, 0.03125 for 6.
    assert detectable_drop([0.1, 0.5, 0.2, 0.9, 0.4], 0.05, paired=True) is None
    assert detectable_drop([0.1, 0.5, 0.2, 0.9, 0.4, 0.3], 0.05, paired=True) is not None


def test_a_golden_set_of_ten_thousand_queries_has_a_detectable_drop() -> None:
    # 2.0 ** 10000 overflows a float: the sign-flip bound must be computed without it.
    values = [(n % 7) / 7 for n in range(10_000)]
    drop = detectable_drop(values, 0.05, paired=False)
    assert drop is not None and 0 < drop < 0.05


def test_no_spread_gives_no_detectable_drop_estimate() -> None:
    # Every query scored the same: a normal approximation would say a drop of 0 is detectable.
    from scanner.metrics.uncertainty import detectable_drop

    assert detectable_drop([1.0] * 30, 0.05, paired=False) is None
    # The near miss: one query differs, and there is an estimate above 0.
    estimate = detectable_drop([1.0] * 29 + [0.0], 0.05, paired=False)
    assert estimate is not None and estimate > 0
