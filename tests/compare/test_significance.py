"""The paired sign-flip test against brute-force enumeration and against SciPy."""

from __future__ import annotations

import itertools
import math
import random

import numpy as np
import pytest
from scipy import stats

from scanner.compare.significance import (
    EXACT_MAX_NONZERO,
    MONTE_CARLO_SAMPLES,
    paired_sign_flip_test,
    sign_flip_test,
)


def _brute_force_p(differences: list[float]) -> float:
    """All 2^n sign patterns, zeros included, straight from the definition."""
    observed = abs(math.fsum(differences))
    extreme = 0
    total = 0
    for signs in itertools.product((1, -1), repeat=len(differences)):
        value = abs(math.fsum(s * d for s, d in zip(signs, differences)))
        extreme += value >= observed - 1e-9
        total += 1
    return extreme / total


METRIC_STEPS = (1.0, 0.5, 1 / 3, 0.25, 0.2, 0.1, 0.6309)
"""Per-query metric differences look like this: reciprocal ranks and nDCG gains."""

DYADIC_STEPS = (1.0, 0.5, 0.25, 0.125, 0.75, 0.375)
"""Sums of these are exact in floating point. SciPy counts ties within 100 ulps of the
observed statistic, which sums of 1/3 and 0.1 taken in another order can miss (we
allow 1e-9): on such data SciPy reports 0.9917 where enumeration gives exactly 1.
Comparing with SciPy on exact data tests the method, not the two tie tolerances."""


def _metric_like(
    rng: random.Random,
    n: int,
    zero_share: float = 0.3,
    steps: tuple[float, ...] = METRIC_STEPS,
) -> list[float]:
    """Random paired differences: exact zeros, and signed steps."""
    return [0.0 if rng.random() < zero_share else rng.choice((-1, 1)) * rng.choice(steps) for _ in range(n)]


@pytest.mark.parametrize("seed", range(12))
def test_small_cases_equal_brute_force_enumeration(seed: int) -> None:
    rng = random.Random(seed)
    differences = _metric_like(rng, rng.randint(1, 11))
    result = sign_flip_test(differences)
    assert result.method == "exact"
    assert result.p_value == pytest.approx(_brute_force_p(differences), abs=1e-12)


def test_zero_differences_do_not_change_the_p_value() -> None:
    core = [0.5, -0.25, 1.0, 1.0, -0.2]
    padded = core + [0.0] * 9
    assert sign_flip_test(padded).p_value == sign_flip_test(core).p_value
    assert sign_flip_test(padded).p_value == pytest.approx(_brute_force_p(padded))
    assert sign_flip_test(padded).nonzero == 5 and sign_flip_test(padded).pairs == 14


def test_no_change_at_all_has_p_one() -> None:
    result = paired_sign_flip_test([0.5, 1.0], [0.5, 1.0])
    assert result.p_value == 1.0 and result.nonzero == 0
    assert sign_flip_test([]).p_value == 1.0


def test_ties_between_equal_sums_are_counted() -> None:
    # +-0.1 three times: sums taken in another order differ in the last bits, and the
    # patterns equal to the observed one must still count as extreme.
    differences = [0.1, 0.1, 0.1, -0.1, 0.2, -0.2]
    assert sign_flip_test(differences).p_value == pytest.approx(_brute_force_p(differences))


def test_many_zeros_keep_a_large_set_on_the_exact_path() -> None:
    differences = [0.0] * 500 + [-1.0] * EXACT_MAX_NONZERO
    result = sign_flip_test(differences)
    assert result.method == "exact"
    assert result.p_value == pytest.approx(2 / 2**EXACT_MAX_NONZERO)


def test_above_the_exact_limit_it_samples_and_never_reports_zero() -> None:
    result = sign_flip_test([-1.0] * 30)
    assert result.method == "monte-carlo" and result.samples == MONTE_CARLO_SAMPLES
    # Only the two all-same-sign patterns are as extreme (chance 2^-29): none sampled.
    assert result.p_value == 1 / (MONTE_CARLO_SAMPLES + 1)


def test_the_sampled_p_value_is_reproducible_and_sign_symmetric() -> None:
    differences = _metric_like(random.Random(7), 60)
    first = sign_flip_test(differences)
    assert sign_flip_test(differences) == first
    assert sign_flip_test([-d for d in differences]).p_value == first.p_value


def _scipy_p(differences: list[float], n_resamples: int) -> float:
    def mean_difference(x: np.ndarray, y: np.ndarray, axis: int) -> np.ndarray:
        difference: np.ndarray = np.mean(x - y, axis=axis)
        return difference

    x = np.array(differences)
    y = np.zeros_like(x)
    result = stats.permutation_test(
        (x, y),
        mean_difference,
        permutation_type="samples",
        alternative="two-sided",
        n_resamples=n_resamples,
        vectorized=True,
        random_state=np.random.default_rng(0),
    )
    return float(result.pvalue)


@pytest.mark.parametrize("seed", range(6))
def test_exact_p_values_equal_scipy_exact_permutation_test(seed: int) -> None:
    rng = random.Random(100 + seed)
    differences = _metric_like(rng, 14, zero_share=0.1, steps=DYADIC_STEPS)
    # With n_resamples >= 2^n SciPy enumerates every pattern, as we do.
    expected = _scipy_p(differences, n_resamples=2**14)
    assert sign_flip_test(differences).p_value == pytest.approx(expected, abs=1e-9)


@pytest.mark.parametrize(("seed", "n"), [(0, 40), (1, 80), (2, 200), (3, 30), (4, 25)])
def test_sampled_p_values_agree_with_scipy_on_larger_sets(seed: int, n: int) -> None:
    rng = random.Random(200 + seed)
    differences = _metric_like(rng, n, zero_share=0.2, steps=DYADIC_STEPS)
    ours = sign_flip_test(differences)
    assert ours.method == "monte-carlo"
    assert 0.001 < ours.p_value  # a case where sampling error is visible at all
    theirs = _scipy_p(differences, n_resamples=20_000)
    # Both sample 20,000 patterns: standard error of each <= 0.0035, so 0.02 is > 4 sigma.
    assert ours.p_value == pytest.approx(theirs, abs=0.02)
