"""Metric definitions: hand-computed cases, and agreement with trec_eval where the definitions coincide."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence

import pytest
import pytrec_eval
from hypothesis import given, settings
from hypothesis import strategies as st

from scanner.golden.file import ExpectedEntry
from scanner.metrics.catalogue import aggregate
from scanner.metrics.measures import Judgments, score_query
from scanner.retrievers.base import Hit
from tests.support.counting import CallCounter
from tests.support.matching import hit_matches


def recall_at_k(hits: Sequence[Hit], expected: Sequence[ExpectedEntry], k: int) -> float:
    """score_query's recall@k alone (at the default relevance level)."""
    return score_query(hits, expected, (k,)).recall_at_k[k]


def reciprocal_rank(hits: Sequence[Hit], expected: Sequence[ExpectedEntry]) -> float:
    return score_query(hits, expected, (1,)).reciprocal_rank


def ndcg_at_k(hits: Sequence[Hit], expected: Sequence[ExpectedEntry], k: int) -> float:
    return score_query(hits, expected, (k,)).ndcg_at_k[k]


def hits(*items: str | tuple[str, str]) -> list[Hit]:
    out = []
    for rank, item in enumerate(items, 1):
        path, heading = (item, "") if isinstance(item, str) else item
        out.append(Hit(rank, path, heading, float(100 - rank)))
    return out


def exp(path: str, heading: str | None = None) -> ExpectedEntry:
    return ExpectedEntry(path, heading, 1)


def test_a_heading_pinned_entry_matches_only_that_heading_after_trimming_and_lower_casing() -> None:
    assert hit_matches(Hit(1, "a.md", "  Rollback ", None), exp("a.md", "rollback"))
    assert not hit_matches(Hit(1, "a.md", "Rollbacks", None), exp("a.md", "rollback"))
    assert not hit_matches(Hit(1, "b.md", "Rollback", None), exp("a.md", "rollback"))
    assert hit_matches(Hit(1, "a.md", "anything", None), exp("a.md"))


def test_recall_counts_entries_not_hits_so_duplicate_chunks_of_one_document_count_once() -> None:
    ranked = hits("a.md", "a.md", "x.md", "b.md")
    expected = [exp("a.md"), exp("b.md")]
    assert recall_at_k(ranked, expected, 2) == 0.5
    assert recall_at_k(ranked, expected, 3) == 0.5
    assert recall_at_k(ranked, expected, 4) == 1.0


def test_reciprocal_rank_looks_at_the_whole_returned_list_not_only_k() -> None:
    assert reciprocal_rank(hits("x.md", "y.md", "z.md", "a.md"), [exp("a.md")]) == 0.25
    assert reciprocal_rank(hits("x.md"), [exp("a.md")]) == 0.0


def test_ndcg_credits_a_second_chunk_of_the_same_document_nothing() -> None:
    # a.md at 1 and 2, b.md at 3: DCG = 1 + 1/log2(4); IDCG(2) = 1 + 1/log2(3)
    value = ndcg_at_k(hits("a.md", "a.md", "b.md"), [exp("a.md"), exp("b.md")], 3)
    assert value == pytest.approx((1 + 1 / math.log2(4)) / (1 + 1 / math.log2(3)), abs=1e-15)


def test_ndcg_offers_heading_pinned_entries_first_so_a_path_only_entry_is_left_for_another_chunk() -> None:
    # Entries in file order: path-only a.md, then a.md#Setup. The first hit is a.md#Setup: it
    # consumes the pinned entry, leaving the path-only one for the next a.md chunk at rank 2.
    expected = [exp("a.md"), exp("a.md", "Setup")]
    ranked = hits(("a.md", "Setup"), ("a.md", "Other"))
    assert ndcg_at_k(ranked, expected, 2) == pytest.approx(1.0, abs=1e-15)
    # Were file order used, rank 1 would take the path-only entry and rank 2 could not match Setup.
    assert ndcg_at_k(hits(("a.md", "Other"), ("a.md", "Setup")), expected, 2) == pytest.approx(1.0)


def test_ndcg_ideal_is_capped_at_k_when_there_are_more_expected_entries() -> None:
    expected = [exp("a.md"), exp("b.md"), exp("c.md")]
    assert ndcg_at_k(hits("a.md"), expected, 1) == 1.0
    assert ndcg_at_k(hits("x.md", "a.md"), expected, 1) == 0.0


def test_aggregates_are_means_over_queries() -> None:
    ks = (1, 2)
    rows = [score_query(hits("a.md"), [exp("a.md")], ks), score_query(hits("x.md", "a.md"), [exp("a.md")], ks)]
    total = aggregate(rows, ks)
    assert total.query_count == 2
    assert total.mrr == 0.75
    assert total.recall_at_k == {1: 0.5, 2: 1.0}


# --- Differential test against trec_eval (pytrec_eval), where definitions coincide ----------------
# Path-only expected entries and one chunk per document: each hit is a distinct docno.

_DOCS = [f"d{i}.md" for i in range(12)]


@st.composite
def ranked_case(draw):  # type: ignore[no-untyped-def]
    ranking = draw(st.lists(st.sampled_from(_DOCS), unique=True, max_size=12))
    relevant = draw(st.lists(st.sampled_from(_DOCS), unique=True, min_size=1, max_size=6))
    return ranking, relevant


@settings(max_examples=300, deadline=None)
@given(st.lists(ranked_case(), min_size=1, max_size=5))
def test_recall_mrr_and_ndcg_equal_trec_eval(cases) -> None:  # type: ignore[no-untyped-def]
    ks = (1, 3, 5, 10)
    qrels = {f"q{n}": {doc: 1 for doc in relevant} for n, (_, relevant) in enumerate(cases)}
    run = {f"q{n}": {doc: float(100 - r) for r, doc in enumerate(ranking)} for n, (ranking, _) in enumerate(cases)}
    measures = {"recip_rank", "recall_1", "recall_3", "recall_5", "recall_10",
                "ndcg_cut_1", "ndcg_cut_3", "ndcg_cut_5", "ndcg_cut_10"}
    evaluator = pytrec_eval.RelevanceEvaluator(qrels, {"recip_rank", "recall.1,3,5,10", "ndcg_cut.1,3,5,10"})
    theirs = evaluator.evaluate({q: r for q, r in run.items()})
    for n, (ranking, relevant) in enumerate(cases):
        ours = score_query(hits(*ranking), [exp(p) for p in relevant], ks)
        # trec_eval leaves out a query with no retrieved documents; both sides score it 0.
        reference = theirs.get(f"q{n}", {m: 0.0 for m in measures})
        assert ours.reciprocal_rank == pytest.approx(reference["recip_rank"], abs=1e-12)
        for k in ks:
            assert ours.recall_at_k[k] == pytest.approx(reference[f"recall_{k}"], abs=1e-12)
            assert ours.ndcg_at_k[k] == pytest.approx(reference[f"ndcg_cut_{k}"], abs=1e-12)


@settings(max_examples=200, deadline=None)
@given(ranked_case(), st.integers(min_value=1, max_value=12))
def test_every_metric_stays_within_zero_and_one(case, k) -> None:  # type: ignore[no-untyped-def]
    ranking, relevant = case
    ranked = hits(*ranking, *ranking)  # duplicated chunks must not push anything past 1
    expected = [exp(p) for p in relevant]
    for value in (recall_at_k(ranked, expected, k), ndcg_at_k(ranked, expected, k), reciprocal_rank(ranked, expected)):
        assert 0.0 <= value <= 1.0


# --- kb-eval's label forms (`subsections:`, `parent:`, `any:`) against trec_eval ---------------------
# Each label form makes one entry out of several sections. Its definition (docs/metrics.md) is that
# of trec_eval on collapsed docnos: every section an entry accepts is one docno, the entry's; the
# first of them in the ranking is that docno, a later one is a non-relevant docno of its own (the
# entry counts once). The sections each label accepts are written out here by hand, from the
# definitions, so the reference does not use kb-eval's matching.

# One document whose headings repeat (`B` under `A` and under `E`), and five one-section documents.
_UNITS: list[tuple[str, str, tuple[str, ...]]] = [
    ("t.md", "A", ()), ("t.md", "B", ("A",)), ("t.md", "`C`", ("A", "B")), ("t.md", "D", ("A",)),
    ("t.md", "E", ()), ("t.md", "B", ("E",)), ("t.md", "F", ("E",)),
    *((f"x{i}.md", "", ()) for i in range(1, 6)),
]
# Pairwise disjoint, so that each section is credited to at most one entry, as in trec_eval.
_LABELS: list[tuple[ExpectedEntry, set[int]]] = [
    (ExpectedEntry("t.md", "a", 1, subsections=True), {0, 1, 2, 3}),  # A with B, `C` and D under it
    (ExpectedEntry("t.md", "B", 1, parent="E"), {5}),  # the B under E, not the one under A
    (ExpectedEntry("t.md", "f", 1, parent="e", subsections=True), {6}),
    (ExpectedEntry("x1.md", None, 1, any_of=(exp("x1.md"), exp("x2.md"))), {7, 8}),
    (ExpectedEntry("x3.md", None, 1, any_of=(exp("x3.md"), exp("t.md", "E"))), {9, 4}),
    (exp("x4.md"), {10}),
]


@st.composite
def labelled_case(draw):  # type: ignore[no-untyped-def]
    ranking = draw(st.lists(st.sampled_from(range(len(_UNITS))), unique=True, max_size=len(_UNITS)))
    chosen = draw(st.lists(st.sampled_from(range(len(_LABELS))), unique=True, min_size=1, max_size=len(_LABELS)))
    grades = {j: draw(st.integers(min_value=0, max_value=3)) for j in chosen}
    return ranking, grades


@settings(max_examples=300, deadline=None)
@given(st.lists(labelled_case(), min_size=1, max_size=4), st.sampled_from([1, 2]))
def test_subsections_parent_and_any_labels_equal_trec_eval_on_collapsed_docnos(cases, level) -> None:  # type: ignore[no-untyped-def]
    """Graded: the label forms' entries carry grades (a group one for the group), at relevance level 1 and 2."""
    ks = (1, 3, 5, 10)
    cut = ",".join(map(str, ks))
    qrels, run = {}, {}
    for n, (ranking, grades) in enumerate(cases):
        qrels[f"q{n}"] = {f"entry{j}": grade for j, grade in grades.items()}
        docnos: dict[str, float] = {}
        for rank, unit in enumerate(ranking, 1):
            owner = next((j for j in grades if unit in _LABELS[j][1]), None)
            docno = f"entry{owner}" if owner is not None else f"unit{unit}"
            docnos[docno if docno not in docnos else f"again{rank}"] = float(100 - rank)
        run[f"q{n}"] = docnos
    measures = {"recip_rank", "map", f"recall.{cut}", f"ndcg_cut.{cut}", f"P.{cut}", f"success.{cut}"}
    theirs = pytrec_eval.RelevanceEvaluator(qrels, measures, relevance_level=level).evaluate(run)
    for n, (ranking, grades) in enumerate(cases):
        ranked = [Hit(r, *(_UNITS[u][:2]), float(100 - r), _UNITS[u][2]) for r, u in enumerate(ranking, 1)]
        labels = [dataclasses.replace(_LABELS[j][0], grade=grade) for j, grade in grades.items()]
        ours = score_query(ranked, labels, ks, level)
        if not ours.counted:  # no entry at the level: trec_eval has nothing to average either
            assert all(grade < level for grade in grades.values())
            continue
        reference = theirs.get(f"q{n}")
        if reference is None:  # trec_eval leaves out a query that retrieved nothing; kb-eval scores it 0
            assert not ranking and ours.reciprocal_rank == 0.0 and ours.average_precision == 0.0
            continue
        assert ours.reciprocal_rank == pytest.approx(reference["recip_rank"], abs=1e-12)
        assert ours.average_precision == pytest.approx(reference["map"], abs=1e-12)
        for k in ks:
            assert ours.recall_at_k[k] == pytest.approx(reference[f"recall_{k}"], abs=1e-12)
            assert ours.ndcg_at_k[k] == pytest.approx(reference[f"ndcg_cut_{k}"], abs=1e-12)
            assert ours.precision_at_k[k] == pytest.approx(reference[f"P_{k}"], abs=1e-12)
            assert ours.success_at_k[k] == pytest.approx(reference[f"success_{k}"], abs=1e-12)


def test_a_heading_matches_as_the_reader_sees_it_and_a_near_miss_does_not() -> None:
    assert hit_matches(Hit(1, "a.md", "`virtualenvs.in-project`", None), exp("a.md", "virtualenvs.in-project"))
    assert hit_matches(Hit(1, "a.md", "**Cache**  [directory](#dir)", None), exp("a.md", "cache directory"))
    assert not hit_matches(Hit(1, "a.md", "Cache Directory", None), exp("a.md", "Cache Directry"))
    assert not hit_matches(Hit(1, "a.md", "`virtualenvs.in-project`", None), exp("a.md", "virtualenvs.in_project"))


def test_a_parent_or_subsections_label_without_known_parents_falls_back_to_the_heading() -> None:
    """A retriever's hit whose heading repeats in its document has no known place: the heading decides."""
    unknown = Hit(1, "t.md", "B", None, None)
    assert hit_matches(unknown, ExpectedEntry("t.md", "B", 1, parent="E"))
    assert not hit_matches(Hit(1, "t.md", "B", None, ("A",)), ExpectedEntry("t.md", "B", 1, parent="E"))
    assert not hit_matches(Hit(1, "t.md", "C", None, None), ExpectedEntry("t.md", "A", 1, subsections=True))


# --- Judgments (the indexed matching) against the pairwise rule it replaces -------------------------
_HEADINGS = ["A", "`a`", "B", "C", ""]


@st.composite
def member(draw):  # type: ignore[no-untyped-def]
    path = draw(st.sampled_from(["p.md", "q.md"]))
    heading = draw(st.sampled_from([None, *_HEADINGS]))
    if heading is None:
        return ExpectedEntry(path, None, 0)
    parent = draw(st.sampled_from([None, "A", "B"]))
    return ExpectedEntry(path, heading, 0, parent=parent, subsections=draw(st.booleans()))


@st.composite
def entry(draw):  # type: ignore[no-untyped-def]
    grade = draw(st.integers(min_value=0, max_value=3))
    members = draw(st.lists(member(), min_size=1, max_size=3))
    if len(members) == 1:
        return dataclasses.replace(members[0], grade=grade)
    return ExpectedEntry(members[0].path, members[0].heading, 0, grade, any_of=tuple(members))


@st.composite
def hit(draw):  # type: ignore[no-untyped-def]
    parents = draw(st.one_of(st.none(), st.lists(st.sampled_from(["A", "a", "B", "C"]), max_size=3).map(tuple)))
    return Hit(1, draw(st.sampled_from(["p.md", "q.md", "r.md"])), draw(st.sampled_from(_HEADINGS)), None, parents)


def naive_credited(hits, entries):  # type: ignore[no-untyped-def]
    pending = sorted(
        range(len(entries)),
        key=lambda i: (not all(m.heading is not None for m in entries[i].members), -entries[i].grade, i),
    )
    result = []
    for position, h in enumerate(hits, 1):
        for slot, i in enumerate(pending):
            if hit_matches(h, entries[i]):
                del pending[slot]
                result.append((position, entries[i]))
                break
    return result


@settings(max_examples=400, deadline=None)
@given(st.lists(hit(), max_size=12), st.lists(entry(), max_size=8))
def test_judgments_match_and_credit_as_the_pairwise_rule(hits, entries) -> None:  # type: ignore[no-untyped-def]
    judgments = Judgments(entries)
    assert judgments.first_positions(hits) == [
        next((p for p, h in enumerate(hits, 1) if hit_matches(h, e)), None) for e in entries
    ]
    assert [(p, id(e)) for p, e in judgments.credited(hits)] == [(p, id(e)) for p, e in naive_credited(hits, entries)]


def test_matching_a_long_ranking_against_many_entries_costs_their_sum_not_their_product(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """1,000 hits of one document's sections against 2,000 labels of its headings: the pairwise rule
    compares 2 million pairs, each heading brought to the reader's form again; the indexed
    one brings each label's heading and each hit's chain to that form once per walk."""
    from scanner.metrics import measures

    counter = CallCounter(monkeypatch, measures, "reader_heading")
    hits = [Hit(r, "d.md", f"`H{r % 50}` **x**", 1.0, ("Top",)) for r in range(1, 1001)]
    entries = [ExpectedEntry("d.md", f"X{i}", i, parent="Top" if i % 2 else None) for i in range(2_000)]
    score_query(hits, entries, (1, 5, 10, 100, 1000))
    walks = 4  # first positions and three crediting walks (relevant, gaining, all)
    assert counter.calls <= walks * (2 * len(entries) + 2 * len(hits))
    # The near miss: the pairwise rule on a slice of the same input already costs the product.
    from tests.support import matching

    pairwise = CallCounter(monkeypatch, matching, "reader_heading")
    [hit_matches(h, e) for h in hits[:100] for e in entries[:200]]
    assert pairwise.calls >= 100 * 200
