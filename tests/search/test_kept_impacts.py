"""The impacts written over every posting but the kept terms' (a pull request's head keeps its golden
terms' counts for the base): the same bits as computed without keeping any, the kept terms' counts
left as they were, and a heavy kept term not computed at all."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scanner.search import bm25
from scanner.search.bm25 import Bm25Parameters, Postings


def postings(df: list[int], chunks: int, seed: int) -> Postings:
    rng = np.random.default_rng(seed)
    parts = [np.sort(rng.choice(chunks, size=n, replace=False)) for n in df]
    return Postings(
        start=np.concatenate(([0], np.cumsum(df))).astype(np.int64),
        chunks=np.concatenate(parts).astype(np.int32) if parts else np.zeros(0, np.int32),
        tf=rng.integers(1, 9, size=sum(df)).astype(np.float32),
        lengths=rng.integers(1, 60, size=chunks).astype(np.float32),
    )


@settings(max_examples=60, deadline=None)
@given(
    df=st.lists(st.integers(1, 40), min_size=1, max_size=30),
    kept=st.sets(st.integers(0, 35)),
    block=st.integers(1, 64),
    skipped_from=st.integers(1, 50),
    seed=st.integers(0, 1000),
    masked=st.booleans(),
)
def test_impacts_over_every_posting_but_the_kept_terms_are_the_bits_of_impacts_over_all(
    df: list[int], kept: set[int], block: int, skipped_from: int, seed: int, masked: bool
) -> None:
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(bm25, "MERGE_BLOCK", block)
        patch.setattr(bm25, "KEPT_SKIPPED_FROM", skipped_from)
        layer = postings(df, 50, seed)
        mask = np.random.default_rng(seed).random(50) > 0.3 if masked else None
        parameters = Bm25Parameters()
        every = bm25._impacts(layer, 50, parameters, None, 1.25, mask)
        tf = layer.tf.copy()
        written = bm25._impacts(layer, 50, parameters, tf, 1.25, mask, frozenset(kept))
    start = layer.start
    for term in range(len(df)):
        lo, hi = start[term], start[term + 1]
        want = layer.tf[lo:hi] if term in kept else every[lo:hi]
        assert written[lo:hi].tobytes() == want.tobytes()


def test_a_heavy_kept_term_is_not_computed_and_a_light_one_is_left_out_when_written(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(bm25, "KEPT_SKIPPED_FROM", 30)
    layer = postings([5, 40, 7, 35, 3], 60, 3)
    computed: list[int] = []
    term_impacts = bm25._term_impacts

    def counted(idf, df, chunks, tf, norm, k1):  # type: ignore[no-untyped-def]
        computed.append(len(chunks))
        return term_impacts(idf, df, chunks, tf, norm, k1)

    monkeypatch.setattr(bm25, "_term_impacts", counted)
    bm25._impacts(layer, 60, Bm25Parameters(), layer.tf.copy(), keep=frozenset({1, 2, 3}))
    # Terms 1 and 3 (40 and 35 postings) are skipped; term 2 (7, under 30) is computed with its
    # neighbours and not written. The near miss, every block computed whole: 90 postings.
    assert sum(computed) == 5 + 7 + 3
    computed.clear()
    bm25._impacts(layer, 60, Bm25Parameters(), layer.tf.copy())
    assert sum(computed) == 90
