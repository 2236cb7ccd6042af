"""Bm25Scorer.top sums a rare query's scores over the chunks it touches, with the same result."""

from __future__ import annotations

from array import array
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from scanner.search import bm25
from scanner.search.bm25 import Bm25Parameters, Bm25Scorer, Postings
from tests.support.counting import CallCounter

CHUNKS = 4_000


def scorer(seed: int) -> Bm25Scorer:
    rng = np.random.default_rng(seed)
    df = np.concatenate([rng.integers(1, 20, 300), rng.integers(500, 2_000, 20)])  # rare terms, then common
    start = np.concatenate(([0], np.cumsum(df))).astype(np.int64)
    chunks = np.concatenate([np.sort(rng.choice(CHUNKS, d, replace=False)) for d in df]).astype(np.int32)
    tf = rng.integers(1, 4, len(chunks)).astype(np.float32)
    # Integral lengths and tfs make exact ties common, which the tie rule (lower position first) decides.
    lengths = rng.integers(1, 30, CHUNKS).astype(np.float32)
    return Bm25Scorer([Postings(start, chunks, tf, lengths)], Bm25Parameters())


def queries(seed: int) -> list[list[tuple[int, float]]]:
    rng = np.random.default_rng(seed + 1)
    return [[(int(t), float(w)) for t, w in zip(rng.choice(320, rng.integers(1, 5), replace=False),
                                                rng.choice([0.5, 1.0, 2.0], 4))] for _ in range(300)]


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_scoring_the_touched_chunks_ranks_exactly_as_scoring_every_chunk(
    seed: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    index, asked = scorer(seed), queries(seed)
    sparse = [index.top(q, 10) for q in asked]
    monkeypatch.setattr(bm25, "SPARSE_SCORES_BELOW", 0)  # every query over every chunk
    dense = [index.top(q, 10) for q in asked]
    assert sparse == dense
    assert sum(1 for ranking in dense if len(ranking) == 10) > 100  # not vacuous: full top tens compared


def test_a_rare_query_allocates_for_the_chunks_it_touches_and_a_common_one_for_every_chunk(
    monkeypatch: pytest.MonkeyPatch
) -> None:
    index = scorer(1)
    sizes: list[int] = []
    bincount, zeros = np.bincount, np.zeros

    def counting(x: np.ndarray, weights: np.ndarray | None = None, minlength: int = 0) -> np.ndarray:
        sizes.append(max(minlength, int(x.max()) + 1 if len(x) else 0))
        return bincount(x, weights=weights, minlength=minlength)

    def zeroed(shape: int, dtype: type = np.float64) -> np.ndarray:
        sizes.append(shape)
        return zeros(shape, dtype=dtype)

    monkeypatch.setattr(bm25.np, "bincount", counting)
    monkeypatch.setattr(bm25.np, "zeros", zeroed)
    index.top([(0, 1.0), (1, 1.0)], 10)  # two rare terms: fewer than 40 postings
    assert sizes and max(sizes) < 40
    sizes.clear()
    index.top([(300, 1.0), (301, 1.0)], 10)  # two common terms: 1,000 or more postings
    assert sizes == [CHUNKS]


TOP_MEMORY = """
import sys, tracemalloc
import numpy as np
from scanner.search.bm25 import Bm25Parameters, Bm25Scorer, Postings
from tests.support.counting import CallCounter
chunks, terms, per_term = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
rng = np.random.default_rng(5)
start = np.arange(terms + 1, dtype=np.int64) * per_term
postings = np.concatenate([np.sort(rng.choice(chunks, per_term, replace=False)) for _ in range(terms)])
layer = Postings(start, postings.astype(np.int32), np.ones(terms * per_term, np.float32),
                 rng.integers(1, 30, chunks).astype(np.float32))
index = Bm25Scorer([layer], Bm25Parameters())
query = [(term, 1.0 if term % 2 else 2.0) for term in range(terms)]
tracemalloc.start()
index.top(query, 10)
print(tracemalloc.get_traced_memory()[1])
"""


def test_a_common_word_query_holds_one_score_per_chunk_and_one_terms_postings_not_all_of_them_joined() -> None:
    import subprocess
    import sys

    chunks, per_term = 200_000, 100_000
    peaks = {}
    for terms in (2, 32):
        ran = subprocess.run(
            [sys.executable, "-c", TOP_MEMORY, str(chunks), str(terms), str(per_term)],
            capture_output=True, text=True, check=True, cwd=Path(__file__).resolve().parents[2],
        )
        peaks[terms] = int(ran.stdout)
    # A score for every chunk and, for the chunks scored, their positions, their scores and the
    # partition's copy (8 bytes each), then a term's postings widened while they are added (a
    # weight other than 1: its products too), with a MiB to spare: at 2 terms and at 32 alike
    # (measured: 5.2 and 6.4 MB).
    room = 4 * 8 * chunks + 3 * 8 * per_term + (1 << 20)
    assert peaks[2] <= room and peaks[32] <= room
    assert peaks[32] >= 8 * chunks  # not vacuous: the scores of every chunk were made
    # The near miss: the 32 terms' postings joined and widened to 16 bytes each before they are
    # added (measured: 70 MB).
    assert peaks[32] < 16 * 32 * per_term // 4


@pytest.mark.parametrize("seed", [1, 2])
def test_a_chunk_s_score_is_the_sum_of_its_terms_impacts_times_their_weights_in_query_order(seed: int) -> None:
    # The reference: each posting's impact in float64 times the term's weight, added in query
    # order; a weight of 1 and a weight of 2 alike, so the unweighted shortcut changes no bit.
    index, asked = scorer(seed), queries(seed)
    start, chunks, impacts = index.layers[0]
    for query in asked[:100]:
        sums: dict[int, float] = {}
        for term, weight in query:
            for position in range(int(start[term]), int(start[term + 1])):
                chunk = int(chunks[position])
                sums[chunk] = sums.get(chunk, 0.0) + float(np.float64(impacts[position]) * weight)
        best = sorted(((-s, c) for c, s in sums.items() if s > 0))[:10]
        assert index.top(query, 10) == [(c, -s) for s, c in best]
    assert any(weight == 1.0 for query in asked for _, weight in query)
    assert any(weight != 1.0 for query in asked for _, weight in query)


@pytest.mark.parametrize("weights", [(2.0, 3.0625, 1.0), (0.1, 0.7, 0.3)])
def test_a_posting_s_weighted_count_is_its_fields_weights_summed_field_by_field(
    weights: tuple[float, float, float], monkeypatch: pytest.MonkeyPatch
) -> None:
    # The reference: per (term, chunk), the float64 sum of each occurrence's field weight, the
    # fields in order, made float32; a stopword (-1) counts nowhere. Small batches: many folds.
    monkeypatch.setattr(bm25, "BATCH_TOKENS", 50)
    rng = np.random.default_rng(7)
    builder = bm25.PostingsBuilder(300, list(weights))
    expected: dict[tuple[int, int], float] = {}
    for chunk in range(300):
        fields = [rng.integers(-1, 40, rng.integers(0, 12)).astype(np.int32) for _ in weights]
        builder.add([array("i", ids.tolist()) for ids in fields])
        for ids, weight in zip(fields, weights):
            for term in ids.tolist():
                if term >= 0:
                    expected[term, chunk] = expected.get((term, chunk), 0.0) + float(np.float32(weight))
    postings = builder.finish(40)
    found = {
        (term, int(postings.chunks[at])): float(postings.tf[at])
        for term in range(40) for at in range(int(postings.start[term]), int(postings.start[term + 1]))
    }
    assert found == {key: float(np.float32(value)) for key, value in expected.items()}


def test_a_spilled_builder_places_the_postings_its_own_finish_would_give(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(bm25, "BATCH_TOKENS", 50)
    rng = np.random.default_rng(11)
    chunks = [[rng.integers(-1, 40, rng.integers(0, 12)).astype(np.int32) for _ in range(2)] for _ in range(300)]
    kept = bm25.PostingsBuilder(300, [2.0, 1.0])
    spilled = bm25.PostingsBuilder(300, [2.0, 1.0], spill=str(tmp_path / "batches"))
    for fields in chunks:
        kept.add([array("i", ids.tolist()) for ids in fields])
        spilled.add([array("i", ids.tolist()) for ids in fields])
    expected = kept.finish(40)
    # Its terms mapped onto another numbering, as a worker's are onto the parent's vocabulary.
    mapping = np.arange(40, dtype=np.int64)[::-1].copy()
    placed = bm25.place_spilled([(mapping, spilled.finish_spilled(40))], 40)
    for term in range(40):
        lo, hi = int(expected.start[term]), int(expected.start[term + 1])
        at, to = int(placed.start[mapping[term]]), int(placed.start[mapping[term] + 1])
        assert placed.chunks[at:to].tolist() == expected.chunks[lo:hi].tolist()
        assert placed.tf[at:to].tolist() == expected.tf[lo:hi].tolist()
    assert placed.lengths.tolist() == expected.lengths.tolist() and len(placed.chunks) == len(expected.chunks) > 500
    assert not (tmp_path / "batches").exists()


def test_a_consuming_scorer_keeps_its_impacts_in_the_tf_arrays_and_scores_to_the_same_bits() -> None:
    def layer() -> Postings:
        start = np.array([0, 3, 5], dtype=np.int64)
        return Postings(start, np.array([0, 1, 3, 1, 2], dtype=np.int32),
                        np.array([1, 2, 1, 3, 1], dtype=np.float32), np.array([4, 6, 2, 9], dtype=np.float32))

    consumed, kept = layer(), layer()
    eaten = Bm25Scorer([consumed], Bm25Parameters(), consume=True)
    spared = Bm25Scorer([kept], Bm25Parameters())
    assert np.shares_memory(eaten.postings_of(0, 0)[1], consumed.tf)  # no array of its own
    # The near miss: without consume the tf is untouched and the impacts are another array.
    assert kept.tf.tolist() == [1, 2, 1, 3, 1] and not np.shares_memory(spared.postings_of(0, 0)[1], kept.tf)
    assert eaten.top([(0, 1.0), (1, 1.0)], 4) == spared.top([(0, 1.0), (1, 1.0)], 4)
    assert consumed.tf.tolist() != [1, 2, 1, 3, 1]


@given(st.lists(st.lists(st.integers(0, 60), max_size=30), min_size=1, max_size=6))
def test_the_distinct_chunks_of_a_join_are_numpys_unique_with_each_postings_place(runs: list[list[int]]) -> None:
    # Each term's postings ascending and distinct, as a layer holds them; the runs overlap freely.
    hit = np.concatenate([np.array(sorted(set(run)), dtype=np.intp) for run in runs])
    touched, inverse = bm25._distinct(hit)
    expected_touched, expected_inverse = np.unique(hit, return_inverse=True)
    assert touched.tolist() == expected_touched.tolist()
    assert inverse.tolist() == expected_inverse.ravel().tolist()
    assert touched[inverse].tolist() == hit.tolist()  # each posting points at its own chunk


@pytest.mark.parametrize("queries_asked", [10, 1_000])
def test_common_word_queries_under_the_join_cap_are_summed_by_one_bincount_each_not_term_by_term(
    monkeypatch: pytest.MonkeyPatch, queries_asked: int
) -> None:
    index = scorer(1)
    common = [[(300 + n % 20, 1.0), (300 + (n + 7) % 20, 2.0)] for n in range(queries_asked)]  # 1,000+ postings each
    joined = [index.top(q, 10) for q in common]
    added = CallCounter(monkeypatch, bm25, "_add_impacts")
    summed = CallCounter(monkeypatch, bm25.np, "bincount")
    assert [index.top(q, 10) for q in common] == joined
    assert added.calls == 0 and summed.calls == queries_asked
    # The near miss: past the cap, each term is added on its own (no query holds more joined), to the same bits.
    monkeypatch.setattr(bm25, "JOINED_POSTINGS_AT_MOST", 100)
    assert [index.top(q, 10) for q in common] == joined
    assert added.calls == 2 * queries_asked and summed.calls == queries_asked


@pytest.mark.parametrize("queries_asked", [10, 1_000])
def test_a_common_word_querys_best_are_chosen_among_the_chunks_at_its_floor_not_every_positive_one(
    monkeypatch: pytest.MonkeyPatch, queries_asked: int
) -> None:
    index = scorer(2)
    start, chunks, impacts = index.layers[0]
    common = [[(300 + n % 20, 1.0), (300 + (n + 7) % 20, 2.0), (n % 300, 1.0)] for n in range(queries_asked)]
    partitioned: list[int] = []
    partition = np.partition

    def counting(a: np.ndarray, kth: int) -> np.ndarray:
        partitioned.append(len(a))
        return partition(a, kth)

    monkeypatch.setattr(bm25.np, "partition", counting)
    ranked = [index.top(q, 10) for q in common]
    positive = 0
    for query, ranking in zip(common, ranked):
        # The reference: every chunk's score over the whole array, the best ten by a full sort.
        scores = np.zeros(CHUNKS)
        for term, weight in query:
            lo, hi = int(start[term]), int(start[term + 1])
            scores[chunks[lo:hi]] += impacts[lo:hi] * np.float64(weight)
        best = sorted((-float(s), int(c)) for c, s in enumerate(scores) if s > 0)[:10]
        assert ranking == [(c, -s) for s, c in best]
        positive += int((scores > 0).sum())
    assert all(len(ranking) == 10 for ranking in ranked)  # not vacuous: full top tens compared
    # Each query partitions its sampled term's scores and the chunks at the floor, not the two
    # thousand chunks each query scores above zero (measured: about a third as many).
    assert positive > 1_000 * queries_asked
    assert sum(partitioned) < positive // 2
