"""Paired sign-flip randomization test for a change in a mean metric.

The question the regression gate asks with `--alpha` is: "is the drop in this
metric's mean more than what shuffling noise between two runs of the same
golden set would produce?". The per-query values of the two runs are paired
(same query id), so the test works on the per-query differences
`d_i = current_i - previous_i`.

Null hypothesis: each difference is as likely to have had the opposite sign
(the two runs are exchangeable within a pair). Statistic: the mean difference;
two-sided, so the p-value is the share of sign patterns whose mean difference
is at least as far from zero as the observed one:

    p = #{s in {-1, +1}^n : |sum s_i d_i| >= |sum d_i|} / 2^n

Zero differences are dropped before testing: flipping the sign of a zero
changes nothing, so each pattern of the other signs occurs exactly 2^z times
and the ratio above is unchanged (the result equals the enumeration with the
zeros left in). Dropping them is what keeps a large golden set with few changed
queries on the exact path. With no non-zero difference the p-value is 1.

With at most `EXACT_MAX_NONZERO` non-zero differences every pattern is
enumerated (exact p-value). Above that, `MONTE_CARLO_SAMPLES` patterns are
drawn with a fixed seed, so the same two runs always give the same p-value,
and p = (count + 1) / (samples + 1): the observed pattern counts as one of the
samples, which keeps the estimate valid (never 0) -- the convention of
scipy.stats.permutation_test.

Ties: sums of the same values taken in different orders can differ in the last
bits, so a pattern counts as "at least as extreme" within a relative
tolerance of `TIE_TOLERANCE` (a pattern that is mathematically equal to the
observed one must not be missed by rounding).
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

EXACT_MAX_NONZERO = 16
"""Enumerate all 2^n sign patterns up to this many non-zero differences (65,536 patterns)."""

MONTE_CARLO_SAMPLES = 20_000
"""Random sign patterns drawn above EXACT_MAX_NONZERO. The standard error of p is
at most sqrt(0.25 / 20000) = 0.0035, small beside any alpha worth using."""

MONTE_CARLO_SEED = 20_260_815
"""Fixed so a rerun on the same two runs reports the same p-value."""

TIE_TOLERANCE = 1e-9
"""Relative to sum(|d_i|); differences are in [-1, 1], so rounding error is far below this."""

_GROUP_BITS = 8
"""Sign patterns are evaluated 8 differences at a time through 256-entry tables of partial
sums, which keeps the pure-Python Monte Carlo loop at n/8 lookups per sample."""


@dataclass(frozen=True, slots=True)
class SignFlipResult:
    """The outcome of one paired sign-flip test."""

    p_value: float
    """Two-sided p-value in (0, 1]."""
    method: Literal["exact", "monte-carlo"]
    """How the null distribution was obtained."""
    pairs: int
    """Number of paired values given (zero differences included)."""
    nonzero: int
    """Number of pairs whose difference is not zero (the n the test runs on)."""
    samples: int | None
    """Random patterns drawn (monte-carlo), or None when exact."""

    def to_json(self) -> dict[str, object]:
        return {
            "p_value": self.p_value,
            "method": self.method,
            "pairs": self.pairs,
            "nonzero": self.nonzero,
            "samples": self.samples,
        }


def paired_sign_flip_test(
    current: Sequence[float],
    previous: Sequence[float],
    *,
    samples: int = MONTE_CARLO_SAMPLES,
    seed: int = MONTE_CARLO_SEED,
) -> SignFlipResult:
    """Test whether mean(current - previous) differs from zero; see the module docstring."""
    if len(current) != len(previous):
        raise ValueError("paired test needs the same number of current and previous values")
    differences = [c - p for c, p in zip(current, previous)]
    return sign_flip_test(differences, samples=samples, seed=seed)


def sign_flip_test(
    differences: Sequence[float],
    *,
    samples: int = MONTE_CARLO_SAMPLES,
    seed: int = MONTE_CARLO_SEED,
) -> SignFlipResult:
    """Two-sided sign-flip test on paired differences; see the module docstring."""
    for value in differences:
        if not math.isfinite(value):
            # Values come from validated run records; a non-finite one is a bug upstream.
            raise ValueError("sign-flip test needs finite differences")
    pairs = len(differences)
    nonzero = [d for d in differences if d != 0.0]
    n = len(nonzero)
    if n == 0:
        return SignFlipResult(1.0, "exact", pairs, 0, None)

    total = math.fsum(nonzero)
    observed = abs(total)
    threshold = observed - TIE_TOLERANCE * math.fsum(abs(d) for d in nonzero)
    tables = _partial_sum_tables(nonzero)

    def is_extreme(flipped: int) -> bool:
        # Flipping the signs in `flipped` turns sum(d) into sum(d) - 2 * sum(flipped d).
        flipped_sum = 0.0
        shift = 0
        for table in tables:
            flipped_sum += table[(flipped >> shift) & 0xFF]
            shift += _GROUP_BITS
        return abs(total - 2.0 * flipped_sum) >= threshold

    if n <= EXACT_MAX_NONZERO:
        count = sum(1 for pattern in range(1 << n) if is_extreme(pattern))
        return SignFlipResult(count / (1 << n), "exact", pairs, n, None)

    if samples < 1:
        raise ValueError("samples must be at least 1")
    rng = random.Random(seed)
    count = sum(1 for _ in range(samples) if is_extreme(rng.getrandbits(n)))
    return SignFlipResult((count + 1) / (samples + 1), "monte-carlo", pairs, n, samples)


def _partial_sum_tables(values: Sequence[float]) -> list[list[float]]:
    """For each group of 8 values, the sum of every subset, indexed by its bit mask."""
    tables: list[list[float]] = []
    for start in range(0, len(values), _GROUP_BITS):
        group = values[start : start + _GROUP_BITS]
        table = [0.0] * (1 << len(group))
        for mask in range(1, 1 << len(group)):
            lowest = mask & -mask
            table[mask] = table[mask ^ lowest] + group[lowest.bit_length() - 1]
        tables.append(table)
    return tables
