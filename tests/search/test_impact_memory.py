"""The scorer's precomputed impacts: one array the size of the postings, the rest a block's.

At a million documents the postings are most of a run's memory, and computing their BM25 impacts
took three more arrays their size at once (the run's peak). Block by block, the temporaries are
bounded by MERGE_BLOCK whatever the index's size, and every impact is the same float32 number.
Counted with tracemalloc (numpy reports its buffers to it), not timed.
"""

from __future__ import annotations

import tracemalloc

import numpy as np
import pytest

import scanner.search.bm25
from scanner.search.bm25 import Bm25Parameters, Postings, _impacts


def postings(terms: int, per_term: int, chunks: int) -> Postings:
    rng = np.random.default_rng(terms)
    df = np.full(terms, per_term)
    start = np.concatenate(([0], np.cumsum(df))).astype(np.int64)
    ids = np.concatenate([np.sort(rng.choice(chunks, per_term, replace=False)) for _ in range(terms)]).astype(np.int32)
    tf = rng.integers(1, 9, len(ids)).astype(np.float32)
    lengths = rng.integers(1, 300, chunks).astype(np.float32)
    return Postings(start, ids, tf, lengths)


def reference(p: Postings, n_chunks: int, parameters: Bm25Parameters) -> np.ndarray:
    """The whole-array form the blocks must equal to the last bit."""
    mean = float(p.lengths.sum(dtype=np.float64)) / n_chunks
    df = np.diff(p.start)
    idf = np.log1p((n_chunks - df + 0.5) / (df + 0.5)).astype(np.float32)
    k1, b = np.float32(parameters.k1), np.float32(parameters.b)
    norm = k1 * (np.float32(1) - b + b * p.lengths / np.float32(mean))
    saturation = norm[p.chunks] + p.tf
    return np.repeat(idf, df) * (p.tf * (k1 + 1) / saturation)


def traced_peak(p: Postings) -> int:
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        _impacts(p, len(p.lengths), Bm25Parameters())
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_impacts_in_blocks_equal_the_whole_array_computation_to_the_last_bit(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(scanner.search.bm25, "MERGE_BLOCK", 1000)
    p = postings(300, 50, 4000)
    # A first term in 3,000 chunks, alone longer than a block, then p's terms.
    p_long = Postings(
        np.concatenate(([0], p.start[1:] + 3000)), np.concatenate((np.arange(3000, dtype=np.int32), p.chunks)),
        np.concatenate((np.ones(3000, np.float32), p.tf)), p.lengths,
    )
    for case in (p, p_long):
        got = _impacts(case, len(case.lengths), Bm25Parameters())
        assert np.array_equal(got.view(np.uint32), reference(case, len(case.lengths), Bm25Parameters()).view(np.uint32))


def test_the_impacts_temporaries_do_not_grow_with_the_postings(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(scanner.search.bm25, "MERGE_BLOCK", 10_000)
    small, large = postings(200, 500, 20_000), postings(800, 500, 20_000)
    # Beyond the result (4 bytes a posting), what is held at once is a block's worth.
    extra_small = traced_peak(small) - 4 * len(small.chunks)
    extra_large = traced_peak(large) - 4 * len(large.chunks)
    assert extra_large < 40 * 10_000 + 300_000, extra_large
    # The near miss that must not hold: the whole-array form grows by 12 bytes a posting more.
    assert extra_large - extra_small < 4 * (len(large.chunks) - len(small.chunks))
