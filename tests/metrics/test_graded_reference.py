"""Graded labels and the standard measures against trec_eval (pytrec_eval) on judgments the
project did not make: Cranfield's graded qrels (tests/fixtures/cranfield/README.md).

Rankings are drawn with a fixed seed from each query's judged documents (every grade, 0
included) and unjudged ones, one chunk per document and path-only entries: the unit where
kb-eval's definitions and trec_eval's coincide (scanner/metrics/measures.py). Each hit gets a
strictly decreasing score, so trec_eval's tie order (by docno) never decides anything.
"""

from __future__ import annotations

import math
import random
from pathlib import Path

import ir_measures
import pytest
import pytrec_eval
from hypothesis import given, settings
from hypothesis import strategies as st

from scanner.golden.file import ExpectedEntry
from scanner.metrics.catalogue import aggregate
from scanner.metrics.measures import score_query
from scanner.retrievers.base import Hit

CRANQREL = Path(__file__).parents[1] / "fixtures" / "cranfield" / "cranqrel"
KS = (1, 3, 5, 10, 20)
LIMIT = 30
TOLERANCE = 1e-12


def cranfield_grades() -> dict[str, dict[str, int]]:
    """query -> document -> grade (5 - Cleverdon's code; -1, no interest, is grade 0)."""
    qrels: dict[str, dict[str, int]] = {}
    for line in CRANQREL.read_text().splitlines():
        query, doc, code = line.split()
        grade = 0 if int(code) == -1 else 5 - int(code)
        qrels.setdefault(query, {})[f"{doc}.md"] = grade
    return qrels


QRELS = cranfield_grades()


def test_the_judgments_are_graded_and_hold_not_relevant_ones() -> None:
    # Guards the tests below against passing on a binary or empty file.
    grades = {grade for docs in QRELS.values() for grade in docs.values()}
    assert grades == {0, 1, 2, 3, 4}
    assert len(QRELS) == 225


def rankings(seed: int) -> dict[str, list[str]]:
    rng = random.Random(seed)
    runs = {}
    for query, judged in QRELS.items():
        pool = list(judged) + [f"{n}.md" for n in rng.sample(range(1, 1401), 40)]
        pool = list(dict.fromkeys(pool))
        rng.shuffle(pool)
        runs[query] = pool[: rng.randint(0, LIMIT)]
    return runs


def ours(ranking: list[str], judged: dict[str, int], level: int):  # type: ignore[no-untyped-def]
    hits = [Hit(rank, path, "", float(LIMIT - rank)) for rank, path in enumerate(ranking, 1)]
    expected = [ExpectedEntry(path, None, 1, grade) for path, grade in judged.items()]
    return score_query(hits, expected, KS, level)


def theirs(runs: dict[str, list[str]], qrels: dict[str, dict[str, int]], level: int) -> dict[str, dict[str, float]]:
    cut = ",".join(map(str, KS))
    evaluator = pytrec_eval.RelevanceEvaluator(
        qrels, {"recip_rank", "map", f"recall.{cut}", f"P.{cut}", f"success.{cut}", f"ndcg_cut.{cut}"},
        relevance_level=level,
    )
    run = {q: {doc: float(LIMIT - rank) for rank, doc in enumerate(r, 1)} for q, r in runs.items() if r}
    return evaluator.evaluate(run)  # type: ignore[no-any-return]


@pytest.mark.parametrize("level", [1, 2, 3, 4])
@pytest.mark.parametrize("seed", [1, 2])
def test_every_measure_equals_trec_eval_per_query_on_cranfield(level: int, seed: int) -> None:
    runs = rankings(seed)
    reference = theirs(runs, QRELS, level)
    compared = 0
    for query, ranking in runs.items():
        mine = ours(ranking, QRELS[query], level)
        if not mine.counted:
            # No judged document reaches the level: left out, and trec_eval's recall has nothing to divide.
            assert not any(grade >= level for grade in QRELS[query].values())
            continue
        theirs_row = reference.get(query)
        if theirs_row is None:  # trec_eval skips a query with nothing retrieved; ours scores it 0
            assert ranking == []
            assert mine.average_precision == 0.0 and mine.reciprocal_rank == 0.0
            continue
        compared += 1
        assert mine.reciprocal_rank == pytest.approx(theirs_row["recip_rank"], abs=TOLERANCE)
        assert mine.average_precision == pytest.approx(theirs_row["map"], abs=TOLERANCE)
        for k in KS:
            assert mine.recall_at_k[k] == pytest.approx(theirs_row[f"recall_{k}"], abs=TOLERANCE)
            assert mine.precision_at_k[k] == pytest.approx(theirs_row[f"P_{k}"], abs=TOLERANCE)
            assert mine.success_at_k[k] == pytest.approx(theirs_row[f"success_{k}"], abs=TOLERANCE)
            assert mine.ndcg_at_k[k] == pytest.approx(theirs_row[f"ndcg_cut_{k}"], abs=TOLERANCE)
    assert compared > 50


@pytest.mark.parametrize("seed", [1, 2])
def test_judged_at_k_equals_ir_measures_judged(seed: int) -> None:
    runs = rankings(seed)
    qrels = [ir_measures.Qrel(q, doc, grade) for q, docs in QRELS.items() for doc, grade in docs.items()]
    run = [ir_measures.ScoredDoc(q, doc, float(LIMIT - rank)) for q, r in runs.items() for rank, doc in enumerate(r, 1)]
    measures = [ir_measures.Judged @ k for k in KS]
    reference: dict[str, dict[int, float]] = {}
    for metric in ir_measures.iter_calc(measures, qrels, run):
        reference.setdefault(metric.query_id, {})[metric.measure.params["cutoff"]] = metric.value
    compared = 0
    for query, ranking in runs.items():
        mine = ours(ranking, QRELS[query], 1)
        if not ranking:
            assert all(value == 0.0 for value in mine.judged_at_k.values())
            continue
        compared += 1
        for k in KS:
            assert mine.judged_at_k[k] == pytest.approx(reference[query][k], abs=TOLERANCE)
    # Short lists are where "divided by k" and "divided by what came back" part: they are here.
    assert compared > 100 and any(0 < len(r) < max(KS) for r in runs.values())


def test_the_aggregates_are_trec_eval_s_means_over_the_counted_queries() -> None:
    runs = rankings(3)
    reference = theirs(runs, QRELS, 2)
    rows = [ours(ranking, QRELS[q], 2) for q, ranking in runs.items()]
    counted = [q for q, row in zip(runs, rows) if row.counted]
    total = aggregate(rows, KS)
    assert total.query_count == len(counted) < len(runs)

    def mean(measure: str) -> float:
        return math.fsum(reference[q][measure] if q in reference else 0.0 for q in counted) / len(counted)

    assert total.map == pytest.approx(mean("map"), abs=TOLERANCE)
    assert total.mrr == pytest.approx(mean("recip_rank"), abs=TOLERANCE)
    for k in KS:
        assert total.precision_at_k[k] == pytest.approx(mean(f"P_{k}"), abs=TOLERANCE)
        assert total.success_at_k[k] == pytest.approx(mean(f"success_{k}"), abs=TOLERANCE)
        assert total.ndcg_at_k[k] == pytest.approx(mean(f"ndcg_cut_{k}"), abs=TOLERANCE)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.sampled_from([f"d{i}.md" for i in range(8)]), max_size=12),
    st.dictionaries(st.sampled_from([f"d{i}.md" for i in range(8)]), st.integers(0, 4), min_size=1),
    st.integers(1, 4),
)
def test_every_measure_stays_within_zero_and_one_with_grades_and_repeated_chunks(ranking, judged, level) -> None:  # type: ignore[no-untyped-def]
    hits = [Hit(rank, path, "", None) for rank, path in enumerate(ranking, 1)]
    row = score_query(hits, [ExpectedEntry(p, None, 1, g) for p, g in judged.items()], KS, level)
    values = [row.reciprocal_rank, row.average_precision or 0.0]
    for family in (row.recall_at_k, row.ndcg_at_k, row.precision_at_k, row.success_at_k, row.judged_at_k):
        values += family.values()
    assert all(0.0 <= value <= 1.0 for value in values)
