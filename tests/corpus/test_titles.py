"""A page's title counts once, wherever the page writes it (scanner/corpus/titles.py): frontmatter
only, a `# Title` line only, or both score the same; a title-only section is not scored; a chunk
without a term is left out of the collection statistics."""

from __future__ import annotations

import numpy as np
import pytest

from scanner.corpus.documents import Document
from scanner.corpus.reader import build_document
from scanner.corpus.titles import ScoredFields, page_title, scored_fields
from scanner.foundation.diagnostics import Diagnostics
from scanner.retrievers.builtin import BuiltinRetriever
from scanner.search.bm25 import Bm25Parameters, Bm25Scorer, Postings
from scanner.search.index import Index

PAGES = {
    # (title, body): a one-section page, a page with sections under the title, a CJK page, a
    # page whose title is the only place a word appears, a page that is nothing but its title.
    "kettle.md": ("Descaling the kettle", "Vinegar and water, boiled twice, remove the scale from a kettle."),
    "guide/stove.md": ("Stove Safety", "## Gas\n\nTurn the gas off at the valve.\n\n## Induction\n\nOnly flat pans work on induction."),
    "ja.md": ("全文検索の仕組み", "日本語の文書は単語の間に空白がない。"),
    "pans.md": ("Cast iron pans", "Season after every wash; never soak it overnight in water."),
    "empty.md": ("Kettle warranty", ""),
}
QUERIES = ["descaling kettle", "stove gas valve", "induction pans", "全文検索", "cast iron", "kettle warranty", "water"]


def write(title: str, body: str, layout: str) -> str:
    head = f"---\ntitle: {title}\n---\n" if layout in ("frontmatter", "both") else ""
    if layout in ("heading", "both"):
        head += f"# {title}\n\n"
    return head + body + "\n"


def corpus(layout: str) -> tuple[Document, ...]:
    return tuple(
        build_document(path, write(title, body, layout), Diagnostics()) for path, (title, body) in sorted(PAGES.items())
    )


def ranking(layout: str, query: str) -> list[tuple[str, float]]:
    retriever = BuiltinRetriever(Index.build(corpus(layout)))
    return [(hit.path, round(hit.score, 5)) for hit in retriever.search(query, 10)]


@pytest.mark.parametrize("query", QUERIES)
def test_the_three_layouts_rank_and_score_alike(query: str) -> None:
    expected = ranking("frontmatter", query)
    assert expected, query
    assert ranking("heading", query) == expected
    assert ranking("both", query) == expected


def test_the_title_is_scored_once_in_the_breadcrumb_whatever_the_layout() -> None:
    for layout in ("frontmatter", "heading", "both"):
        stove = next(d for d in corpus(layout) if d.path == "guide/stove.md")
        assert page_title(stove) == "Stove Safety"
        scored = [f for f in scored_fields(stove) if f.scored]
        assert scored == [ScoredFields("Gas", "Stove Safety"), ScoredFields("Induction", "Stove Safety")], layout


def test_as_written_the_both_layout_repeats_the_title_which_search_does_not_score() -> None:
    # The near miss the rule exists for: read as written, the title is the heading and twice in
    # the breadcrumb of a section under it.
    stove = next(d for d in corpus("both") if d.path == "guide/stove.md")
    assert stove.chunks[0].heading == "Stove Safety"
    assert stove.chunks[1].breadcrumb_parts == ("Stove Safety", "Stove Safety")
    assert scored_fields(stove)[0] == ScoredFields("", "", scored=False)
    assert scored_fields(stove)[1].breadcrumb == "Stove Safety"


def test_a_title_only_section_alone_on_its_page_is_scored_and_found_by_its_title() -> None:
    for layout in ("frontmatter", "heading", "both"):
        empty = next(d for d in corpus(layout) if d.path == "empty.md")
        assert [f for f in scored_fields(empty)] == [ScoredFields("", "Kettle warranty")], layout
        assert ranking(layout, "warranty")[0][0] == "empty.md"


def test_a_frontmatter_title_and_a_different_heading_are_both_scored() -> None:
    document = build_document("a.md", "---\ntitle: Kettle care\n---\n# Descaling\n\ntext\n## Vinegar\n\nmore\n", Diagnostics())
    assert scored_fields(document) == [ScoredFields("Descaling", "Kettle care"), ScoredFields("Vinegar", "Kettle care > Descaling")]


def test_same_text_means_equal_after_case_folding_and_whitespace_only() -> None:
    same = build_document("a.md", "---\ntitle: Kettle  CARE\n---\n# kettle care\n\ntext\n", Diagnostics())
    assert scored_fields(same) == [ScoredFields("", "Kettle CARE")]
    different = build_document("a.md", "---\ntitle: Kettle care\n---\n# Kettle care!\n\ntext\n", Diagnostics())
    assert scored_fields(different) == [ScoredFields("Kettle care!", "Kettle care")]


def test_a_heading_that_does_not_enclose_the_page_is_not_its_title() -> None:
    # Two top-level headings: neither encloses the page, so the file name stays the title.
    two = build_document("notes.md", "# Kettle\n\ntext\n# Stove\n\nmore\n", Diagnostics())
    assert page_title(two) == "notes"
    assert scored_fields(two) == [ScoredFields("Kettle", "notes"), ScoredFields("Stove", "notes")]
    # Text before the heading: it does not enclose the page either.
    preamble = build_document("notes.md", "intro\n# Kettle\n\ntext\n", Diagnostics())
    assert page_title(preamble) == "notes"


def test_the_chunk_table_keeps_the_text_as_written_for_the_scan_and_the_report() -> None:
    index = Index.build(corpus("both"))
    rows = {(path, heading, breadcrumb) for _, rows in index.chunks_by_document() for _, path, heading, breadcrumb, _ in rows}
    assert ("guide/stove.md", "Stove Safety", "Stove Safety") in rows
    assert ("guide/stove.md", "Gas", "Stove Safety > Stove Safety") in rows


def postings(lengths: list[float]) -> Postings:
    """One term, in chunk 0 only (tf 1)."""
    return Postings(
        np.array([0, 1], dtype=np.int64), np.array([0], dtype=np.int32), np.array([1.0], dtype=np.float32),
        np.array(lengths, dtype=np.float32),
    )


def test_a_chunk_without_a_term_is_left_out_of_the_collection_statistics() -> None:
    parameters = Bm25Parameters()
    without = Bm25Scorer([postings([1.0, 3.0])], parameters).top([(0, 1.0)], 5)
    with_empty = Bm25Scorer([postings([1.0, 3.0, 0.0])], parameters).top([(0, 1.0)], 5)
    assert [c for c, _ in with_empty] == [c for c, _ in without] == [0]
    assert with_empty[0][1] == pytest.approx(without[0][1])
    # The near miss: a third chunk with terms does count (N and the mean length move).
    with_text = Bm25Scorer([postings([1.0, 3.0, 2.0])], parameters).top([(0, 1.0)], 5)
    assert with_text[0][1] != pytest.approx(without[0][1])
