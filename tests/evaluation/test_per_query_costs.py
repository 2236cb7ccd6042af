"""What a run does per golden query, counted: work that a large golden set repeats per query is
done once per thing it is about (a query, a heading, a page), never again for each reader of it.
Each rule is counted on 10 and 1,000 queries, and its results are checked unchanged."""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from scanner.compare.comparison import metrics_of, no_previous
from scanner.compare.gate import detectable_drops
from scanner.evaluation import health
from scanner.evaluation.health import title_queries, title_similarity
from scanner.foundation.diagnostics import Diagnostics
from scanner.foundation.errors import InputError
from scanner.golden import labels
from scanner.golden.file import ExpectedEntry, GoldenQuery, GoldenSet
from scanner.golden.labels import SectionInfo, check_headings
from scanner.metrics import catalogue, measures
from scanner.metrics.catalogue import CATALOGUE, aggregate, per_query_values
from scanner.metrics.measures import score_query
from scanner.metrics.uncertainty import aggregate_columns, detectable_drop
from scanner.pipeline.evaluate import EvalOptions, plan_evaluation, without_parents
from scanner.retrievers.base import Hit
from scanner.search.analysis import Analyzer
from scanner.search.query_compiler import compile_query, is_searchable
from tests.support.counting import CallCounter
from tests.support.run_records import make_record

SIZES = (10, 1_000)


def golden_set(queries: list[GoldenQuery]) -> GoldenSet:
    return GoldenSet("golden.yml", "0" * 64, tuple(queries), None)


def query(n: int, text: str | None = None, path: str = "a.md", heading: str | None = None, grade: int = 1) -> GoldenQuery:
    entry = ExpectedEntry(path, heading, n + 3, grade=grade)
    return GoldenQuery(f"q{n}", text or f"deploy the service number {n}", (entry,), (), n + 2)


# -- the golden set is analysed once, by the search --------------------------------------------


@given(st.text(max_size=30))
def test_a_query_is_searchable_exactly_when_it_compiles(text: str) -> None:
    assert is_searchable(text) == (compile_query(text) is not None)


def test_punctuation_alone_is_unsearchable_and_function_words_alone_are_searched() -> None:
    assert not is_searchable('"" * - ( ) : ^')
    # The near miss: "the" holds letters; it compiles to no term, and is searched (it finds nothing).
    assert is_searchable("the")
    compiled = compile_query("the")
    assert compiled is not None and compiled.terms == ()


@pytest.mark.parametrize("size", SIZES)
def test_planning_a_golden_set_analyses_none_of_its_queries(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, size: int
) -> None:
    analysed = CallCounter(monkeypatch, Analyzer, "query_terms")
    plan = plan_evaluation(EvalOptions(kb_path=tmp_path), Diagnostics(), golden_set([query(n) for n in range(size)]))
    assert len(plan.requests) == size
    assert analysed.calls == 0
    # The counter sees an analysis when there is one.
    compile_query(plan.requests[0].text)
    assert analysed.calls == 1


def test_planning_still_refuses_a_query_with_nothing_to_search_for(tmp_path: Path) -> None:
    queries = [query(0), query(1, text="?! -- ()")]
    with pytest.raises(InputError, match="query 'q1' has no letters or digits to search for"):
        plan_evaluation(EvalOptions(kb_path=tmp_path), Diagnostics(), golden_set(queries))


# -- hits, scored --------------------------------------------------------------------------------


def test_a_hit_stripped_of_its_parents_is_the_same_hit_without_them() -> None:
    placed = Hit(3, "a.md", "Deploy", 2.5, ("Guide", "Ops"))
    unplaced = Hit(4, "b.md", "Other", None)
    stripped = without_parents({"q": [placed, unplaced]})["q"]
    assert stripped[0] == dataclasses.replace(placed, parents=None)
    assert stripped[0] != placed
    assert stripped[1] is unplaced


def hits_for(size: int) -> list[Hit]:
    return [Hit(r, "a.md" if r % 3 else "b.md", f"Step {r % 5}", 1.0, ("Guide",)) for r in range(1, size + 1)]


@pytest.mark.parametrize("size", SIZES)
def test_a_query_whose_entries_are_all_relevant_indexes_them_once(monkeypatch: pytest.MonkeyPatch, size: int) -> None:
    built = CallCounter(monkeypatch, measures, "Judgments")
    entries = [ExpectedEntry("a.md", "Step 1", 1), ExpectedEntry("b.md", None, 2, grade=2)]
    for _ in range(size):
        score_query(hits_for(10), entries, (1, 5, 10))
    assert built.calls == size
    # The near miss: a grade 0 entry is judged but not relevant, so that walk is a walk of its own.
    built.calls = 0
    for _ in range(size):
        score_query(hits_for(10), [*entries, ExpectedEntry("a.md", "Step 2", 3, grade=0)], (1, 5, 10))
    assert built.calls == 2 * size


def test_one_walk_for_all_three_gives_what_three_walks_give() -> None:
    entries = [ExpectedEntry("a.md", "Step 1", 1), ExpectedEntry("b.md", None, 2, grade=2)]
    shared = score_query(hits_for(20), entries, (1, 5, 10))
    # Each walk forced apart: equal entries that are not the same objects are walked again.
    apart = score_query(hits_for(20), [dataclasses.replace(e) for e in entries], (1, 5, 10), relevance_level=1)
    assert shared == apart
    assert shared.judged_at_k[10] > 0 and shared.ndcg_at_k[10] > 0


@pytest.mark.parametrize("size", SIZES)
def test_a_querys_hits_have_each_heading_formed_once(monkeypatch: pytest.MonkeyPatch, size: int) -> None:
    formed = CallCounter(monkeypatch, measures, "heading_forms")
    hits = hits_for(size)
    score_query(hits, [ExpectedEntry("a.md", "Step 1", 1), ExpectedEntry("a.md", "Step 2", 2)], (1, 5, 10))
    # Five headings and their one parent, whatever the number of hits and walks.
    assert formed.calls == 6


@pytest.mark.parametrize("size", SIZES)
def test_a_labelled_documents_headings_are_each_formed_once(monkeypatch: pytest.MonkeyPatch, size: int) -> None:
    formed = CallCounter(monkeypatch, labels, "heading_forms")
    sections = [SectionInfo("Guide", ())] + [SectionInfo(f"Step {n}", ("Guide",)) for n in range(size)]
    golden = golden_set([query(0, heading="Step 1"), query(1, heading="Nowhere")])
    warnings = check_headings(golden, {"a.md": sections})
    assert formed.calls == size + 1
    # The label whose heading is there passes; the near miss is named.
    assert [w.message.split(" expects heading ")[1][:9] for w in warnings] == ["'Nowhere'"]


@pytest.mark.parametrize("size", SIZES)
def test_labels_written_as_their_headings_are_checked_without_forming_the_documents_headings(
    monkeypatch: pytest.MonkeyPatch, size: int
) -> None:
    formed = CallCounter(monkeypatch, labels, "heading_forms")
    sections = [SectionInfo("Guide", ())] + [SectionInfo(f"Step {n}", ("Guide",)) for n in range(size)]
    golden = golden_set([query(n, heading=f"Step {n}") for n in range(size)])
    assert check_headings(golden, {"a.md": sections}) == []
    assert formed.calls == 0
    # With `parent:`, the parents of the sections the label names are formed, not the document's.
    parented = [dataclasses.replace(q, expected=(dataclasses.replace(q.expected[0], parent="guide"),))
                for q in golden.queries]
    assert check_headings(golden_set(parented), {"a.md": sections}) == []
    assert formed.calls == size
    # The near misses: a label in another form than the page's is found by every heading's forms
    # (no warning), and one no section has is named.
    formed.calls = 0
    other_form = golden_set([query(0, heading="step 1"), query(1, heading="Nowhere")])
    warnings = check_headings(other_form, {"a.md": sections})
    assert [w.message.split(" expects heading ")[1][:9] for w in warnings] == ["'Nowhere'"]
    assert formed.calls == size + 1


# -- the golden set's health ---------------------------------------------------------------------


@pytest.mark.parametrize("size", SIZES)
def test_an_answers_titles_are_cut_into_words_once_however_many_queries_name_it(
    monkeypatch: pytest.MonkeyPatch, size: int
) -> None:
    cut = CallCounter(monkeypatch, health, "_words")
    titles = {"a.md": ["Deploy Guide", *(f"Step {n}" for n in range(20))]}
    found = title_queries([query(n, text="deploy guide") for n in range(size)], titles)
    assert cut.calls == size + 21
    assert [(t.query_id, t.title) for t in found] == [(f"q{n}", "Deploy Guide") for n in range(size)]
    # The near miss: a query that is not the title is not named.
    assert title_queries([query(0, text="rolling back the release")], titles) == []
    assert title_similarity("deploy guide", "Deploy Guide") == 1.0


# -- the aggregates and their intervals ----------------------------------------------------------


def counting_catalogue(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    calls = [0]

    def counted(measure: catalogue.Measure) -> catalogue.Measure:
        read = measure.of_query

        def of_query(metrics: measures.QueryMetrics) -> catalogue.Value:
            calls[0] += 1
            return read(metrics)

        return dataclasses.replace(measure, of_query=of_query)

    monkeypatch.setattr(catalogue, "CATALOGUE", tuple(counted(m) for m in CATALOGUE))
    return calls


@pytest.mark.parametrize("size", SIZES)
def test_a_rows_value_of_a_measure_is_read_once_for_every_cut_off(monkeypatch: pytest.MonkeyPatch, size: int) -> None:
    rows = [score_query(hits_for(10), [ExpectedEntry("a.md", f"Step {n % 5}", 1)], (1, 5, 10)) for n in range(size)]
    calls = counting_catalogue(monkeypatch)
    table = per_query_values(rows, (1, 5, 10))
    assert calls[0] == size * len(CATALOGUE)
    # One column per measure without cut-offs and one per measure and cut-off, each a value per row.
    plain = sum(1 for m in CATALOGUE if not m.at_k)
    assert len(table) == plain + 3 * (len(CATALOGUE) - plain)
    assert all(len(values) == size for values in table.values())


def test_the_means_and_their_columns_are_each_rows_query_value() -> None:
    rows = [score_query(hits_for(10), [ExpectedEntry("a.md", f"Step {n % 5}", 1)], (1, 5)) for n in range(7)]
    columns = aggregate_columns(rows, (1, 5))
    expected = [(m.report_key, None, [m.query_value(r, None) or 0.0 for r in rows]) for m in CATALOGUE if not m.at_k]
    for k in (1, 5):
        expected += [(m.report_key, k, [m.query_value(r, k) or 0.0 for r in rows]) for m in CATALOGUE if m.at_k]
    assert columns == expected
    means = aggregate(rows, (1, 5))
    assert means.recall_at_k[5] == math.fsum(r.recall_at_k[5] for r in rows) / 7
    assert means.mrr == math.fsum(r.reciprocal_rank for r in rows) / 7


@pytest.mark.parametrize("size", SIZES)
def test_the_detectable_drops_read_each_rows_values_once_and_are_the_per_metric_ones(
    monkeypatch: pytest.MonkeyPatch, size: int
) -> None:
    run = make_record({f"q{n}": (n % 7) / 7 for n in range(size)})
    rows = [q.metrics for q in run.queries or ()]
    expected = [
        detectable_drop([v for row in rows if (v := metric.in_query(row)) is not None], 0.05, paired=False)
        for metric in metrics_of(run.aggregate)
        if not metric.judges_the_golden_set
    ]
    calls = counting_catalogue(monkeypatch)
    found = detectable_drops(no_previous("history disabled (--no-history)"), run, 0.05)
    assert [drop.drop for drop in found.drops] == expected
    assert any(value is not None for value in expected)
    assert calls[0] == size * len(CATALOGUE)


def test_the_built_in_search_locates_hits_headings_only_for_labels_that_read_them(tmp_path: Path) -> None:
    from scanner.pipeline.evaluate import bind, head_side, prepare
    from scanner.retrievers.builtin import BuiltinRetriever

    kb = tmp_path / "kb"
    kb.mkdir()
    (kb / "a.md").write_text("# Guide\n\nDeploy the service.\n\n## Step 1\n\nDeploy step one.\n", encoding="utf-8")
    told = {}
    for labels_read in (False, True):
        entry = ExpectedEntry("a.md", "Step 1", 3, subsections=labels_read)
        golden = golden_set([GoldenQuery("q0", "deploy step", (entry,), (), 2)])
        options = EvalOptions(kb_path=kb)
        diagnostics = Diagnostics()
        plan = plan_evaluation(options, diagnostics, golden)
        retriever = bind(options, prepare(options, plan, head_side(options), diagnostics))
        try:
            assert isinstance(retriever, BuiltinRetriever)
            told[labels_read] = retriever.parents
        finally:
            retriever.close()
    # `subsections:` reads where a hit sits; a plain heading label does not.
    assert told == {False: False, True: True}
