"""golden-queries-quoted, rule by rule (docs/decisions/0006): each finding next to the near miss that must not fire."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest
from ahocorasick_rs import Implementation
from hypothesis import given, settings
from hypothesis import strategies as st

from scanner.corpus.reader import build_document
from scanner.evaluation.records import LocatedFinding, displacing_first
from scanner.foundation.diagnostics import Diagnostics
from scanner.golden.file import ExpectedEntry, GoldenQuery
from scanner.retrievers.base import Hit
from scanner.scan.quotes import (
    MIN_QUOTE_CHARS,
    PRE_CHECK_DFA_CHARS,
    PRE_CHECK_PREFIX_CHARS,
    Finding,
    Needle,
    QuoteLocation,
    QuoteScanner,
    displaces_expected,
    first_occurrences,
    fold_needles,
    locate,
    normalise,
    pre_check,
    quotes_any,
    scan,
)
from scanner.search.index import INDEXED_FIELDS, Index, IndexedChunk
from tests.conftest import golden_yaml, run_cli, write_tree

Q_ROLLBACK = "how to roll back a database migration"
Q_IMAGES = "which tag do container images get"
Q_RERANK = "what reranks the search candidates"


def query(query_id: str, text: str, *expected: str, heading: str | None = None) -> GoldenQuery:
    return GoldenQuery(query_id, text, tuple(ExpectedEntry(p, heading, 1) for p in expected), (), 1)


def findings_for(files: dict[str, str], queries: Sequence[GoldenQuery], returned: dict[str, list[Hit]] | None = None) -> list[Finding]:
    documents = tuple(build_document(path, text, Diagnostics()) for path, text in sorted(files.items()))
    index = Index.build(documents)
    with index.read_snapshot():
        return scan(index.chunks_by_document(), queries, returned or {})


GOLDEN = [
    query("rollback", Q_ROLLBACK, "deploy.md"),
    query("images", Q_IMAGES, "deploy.md"),
    query("rerank", Q_RERANK, "search.md"),
]


def test_a_document_quoting_two_golden_queries_is_a_finding_and_one_quoting_one_is_not() -> None:
    files = {
        "notes/two.md": f"I wrote down '{Q_ROLLBACK}' and also '{Q_IMAGES}'.",
        "notes/one.md": f"Only this: {Q_RERANK}.",
    }
    found = findings_for(files, GOLDEN)
    assert [(f.path, [q.query_id for q in f.quoted]) for f in found] == [("notes/two.md", ["rollback", "images"])]


def test_every_document_is_scanned_not_only_the_retrieved_ones() -> None:
    files = {"never-retrieved.md": f"{Q_ROLLBACK}\n{Q_IMAGES}"}
    found = findings_for(files, GOLDEN, returned={"rollback": [], "images": []})
    assert [f.path for f in found] == ["never-retrieved.md"]
    assert [q.rank_in_top_k for q in found[0].quoted] == [None, None]


def test_rank_in_top_k_is_the_documents_best_rank_in_that_querys_list() -> None:
    files = {"n.md": f"# A\n{Q_ROLLBACK}\n# B\n{Q_IMAGES}"}
    returned = {
        "rollback": [Hit(1, "x.md", "", 1.0), Hit(2, "n.md", "B", 0.9), Hit(3, "n.md", "A", 0.8)],
        "images": [Hit(1, "x.md", "", 1.0)],
    }
    found = findings_for(files, GOLDEN, returned)
    assert [(q.query_id, q.rank_in_top_k) for q in found[0].quoted] == [("rollback", 2), ("images", None)]


def test_quotes_count_in_heading_breadcrumb_and_body_each_on_its_own() -> None:
    files = {
        "h.md": f"# {Q_ROLLBACK}\ntext\n# {Q_IMAGES}\ntext",
        "b.md": f"---\ntitle: {Q_ROLLBACK}\n---\n# Section\n{Q_IMAGES}\n",
    }
    found = {f.path: [(q.query_id, q.first_quote_field) for q in f.quoted] for f in findings_for(files, GOLDEN)}
    assert found == {
        "b.md": [("rollback", "breadcrumb"), ("images", "body")],
        "h.md": [("rollback", "heading"), ("images", "heading")],
    }


def test_a_quote_split_across_heading_and_body_is_not_seen() -> None:
    head, tail = Q_IMAGES.split(" do ")
    files = {"seam.md": f"# {head}\ndo {tail}\n\n{Q_ROLLBACK}"}
    assert findings_for(files, GOLDEN) == []
    files = {"noseam.md": f"# x\n{head} do {tail}\n\n{Q_ROLLBACK}"}
    assert [f.path for f in findings_for(files, GOLDEN)] == ["noseam.md"]


def test_a_quote_split_across_two_chunks_is_not_seen() -> None:
    # The first chunk's body ends where the next chunk's heading goes on: adjacent in the file.
    files = {"chunks.md": f"# A\nwhich tag do\n# container images get\n{Q_ROLLBACK}"}
    assert findings_for(files, GOLDEN) == []
    files = {"chunks.md": f"# A\nwhich tag do container images get\n# B\n{Q_ROLLBACK}"}
    assert [f.path for f in findings_for(files, GOLDEN)] == ["chunks.md"]


def test_whitespace_runs_newlines_tabs_and_ideographic_spaces_and_case_do_not_hide_a_quote() -> None:
    spaced = Q_ROLLBACK.replace(" ", "\n\t ").upper()
    assert normalise("  A\u3000b\n\tC  ") == "a b c"
    files = {"ws.md": f"{spaced}\n{Q_IMAGES.replace(' ', chr(0x3000) + ' ')}"}
    assert [f.path for f in findings_for(files, GOLDEN)] == ["ws.md"]


def test_queries_shorter_than_twelve_characters_after_normalisation_are_not_matched() -> None:
    eleven, twelve = "abcde fghij", "abcde fghijk"
    assert len(eleven) == MIN_QUOTE_CHARS - 1 and len(twelve) == MIN_QUOTE_CHARS
    short = [query("s", "  " + eleven.replace(" ", "\n  ") + " ", "x.md"), query("r", Q_ROLLBACK, "x.md")]
    assert findings_for({"d.md": f"{eleven} {Q_ROLLBACK}"}, short) == []
    exact = [query("s", twelve, "x.md"), query("r", Q_ROLLBACK, "x.md")]
    assert [f.path for f in findings_for({"d.md": f"{twelve} {Q_ROLLBACK}"}, exact)] == ["d.md"]


def test_the_length_floor_counts_characters_not_bytes() -> None:
    japanese = "検索の精度を上げる方法は何か"  # 14 characters, 42 bytes
    too_short = "検索の精度を上げる方法"  # 11 characters, 33 bytes
    queries = [query("ja", japanese, "x.md"), query("short", too_short + "か", "x.md"), query("r", Q_ROLLBACK, "x.md")]
    found = findings_for({"d.md": f"{japanese}\n{Q_ROLLBACK}"}, queries)
    assert [q.query_id for q in found[0].quoted] == ["ja", "r"]
    assert findings_for({"d.md": f"{too_short}\n{Q_ROLLBACK}"}, [query("s", too_short, "x.md"), query("r", Q_ROLLBACK, "x.md")]) == []


def test_entries_with_the_same_normalised_wording_fold_into_one_needle() -> None:
    queries = [query("first", Q_ROLLBACK, "x.md"), query("dup", Q_ROLLBACK.upper() + "  ", "y.md")]
    assert findings_for({"d.md": Q_ROLLBACK}, queries) == []
    needles = fold_needles(queries)
    assert len(needles) == 1 and needles[0].representative.id == "first"
    # Without folding, those two entries would be two needles; a second real quote makes a finding.
    queries.append(query("other", Q_IMAGES, "x.md"))
    found = findings_for({"d.md": f"{Q_ROLLBACK}\n{Q_IMAGES}"}, queries)
    assert [q.query_id for q in found[0].quoted] == ["first", "other"]


def test_a_folded_needle_is_exempt_where_any_of_its_entries_expects_the_document() -> None:
    queries = [query("first", Q_ROLLBACK, "x.md"), query("dup", Q_ROLLBACK, "d.md"), query("other", Q_IMAGES, "x.md")]
    assert findings_for({"d.md": f"{Q_ROLLBACK}\n{Q_IMAGES}"}, queries) == []


def test_a_document_in_a_querys_expected_is_exempt_for_that_query_even_when_a_heading_is_pinned() -> None:
    queries = [query("rollback", Q_ROLLBACK, "deploy.md", heading="Database"), query("images", Q_IMAGES, "x.md")]
    files = {"deploy.md": f"# Database\nx\n# Unrelated section\n{Q_ROLLBACK}\n{Q_IMAGES}"}
    assert findings_for(files, queries) == []
    # The near miss: the same text in a document that is not expected is counted.
    files = {"other.md": files["deploy.md"]}
    assert [f.path for f in findings_for(files, queries)] == ["other.md"]


def test_a_match_contained_in_another_match_is_not_independent_evidence() -> None:
    short, long = "cross-encoder reranking", "how does cross-encoder reranking work?"
    queries = [query("short", short, "x.md"), query("long", long, "x.md"), query("r", Q_ROLLBACK, "x.md")]
    assert findings_for({"d.md": f"Someone asked: {long}"}, queries) == []
    found = findings_for({"d.md": f"Someone asked: {long}\n{Q_ROLLBACK}"}, queries)
    assert [q.query_id for q in found[0].quoted] == ["long", "r"]


SHORT, LONG = "cross-encoder reranking", "how does cross-encoder reranking work?"


def test_an_exempt_longer_match_still_explains_the_shorter_one_inside_it() -> None:
    # grooveseek's order: explained matches are dropped before the exemption. The labelled answer
    # for LONG quotes it once and mentions one other query: one quotation, not two.
    queries = [query("short", SHORT, "x.md"), query("long", LONG, "answer.md"), query("r", Q_ROLLBACK, "x.md")]
    assert findings_for({"answer.md": f"{LONG}\n{Q_ROLLBACK}"}, queries) == []
    # The near miss: the same text in a document no query expects is LONG plus the other query.
    found = findings_for({"note.md": f"{LONG}\n{Q_ROLLBACK}"}, queries)
    assert [(f.path, [q.query_id for q in f.quoted]) for f in found] == [("note.md", ["long", "r"])]


def test_an_exempt_document_is_still_a_finding_for_two_other_queries_it_quotes() -> None:
    # The exemption is per query: answering LONG does not hide two independent quotations.
    queries = [query("long", LONG, "answer.md"), query("r", Q_ROLLBACK, "x.md"), query("i", Q_IMAGES, "x.md")]
    found = findings_for({"answer.md": f"{LONG}\n{Q_ROLLBACK}\n{Q_IMAGES}"}, queries)
    assert [(f.path, [q.query_id for q in f.quoted]) for f in found] == [("answer.md", ["r", "i"])]
    assert findings_for({"answer.md": f"{LONG}\n{Q_ROLLBACK}"}, queries) == []


def test_folding_happens_before_explained_matches_and_exemption() -> None:
    # Two spellings of one wording are one needle before anything else looks at them: unfolded,
    # each would 'explain' the other away (same text), and the exemption of one would not cover
    # the other. Folded, it is exempt wherever either entry expects, and counts once elsewhere.
    queries = [query("a", SHORT, "x.md"), query("b", SHORT.upper(), "d.md"), query("r", Q_ROLLBACK, "x.md")]
    assert findings_for({"d.md": f"{SHORT}\n{Q_ROLLBACK}"}, queries) == []
    found = findings_for({"e.md": f"{SHORT}\n{Q_ROLLBACK}"}, queries)
    assert [q.query_id for q in found[0].quoted] == ["a", "r"]


# --- displaces_expected: did the quoting document take a place above the labelled answer? ------

def ranks(*paths: str, headings: dict[int, str] | None = None) -> list[Hit]:
    return [Hit(n, path, (headings or {}).get(n, ""), 1.0 / n) for n, path in enumerate(paths, 1)]


NOTE = {"note.md": f"{Q_ROLLBACK}\n{Q_IMAGES}"}


def quoted_by_id(returned: dict[str, list[Hit]], queries: Sequence[GoldenQuery] = GOLDEN) -> dict[str, tuple[int | None, int | None, bool | None]]:
    [finding] = findings_for(NOTE, queries, returned)
    return {q.query_id: (q.rank_in_top_k, q.best_expected_rank, q.displaces_expected) for q in finding.quoted}


def test_displaces_expected_is_true_above_the_labelled_answer_and_false_below_it() -> None:
    returned = {"rollback": ranks("note.md", "x.md", "deploy.md"), "images": ranks("deploy.md", "note.md")}
    assert quoted_by_id(returned) == {"rollback": (1, 3, True), "images": (2, 1, False)}


def test_displaces_expected_is_true_when_no_labelled_answer_reached_the_list() -> None:
    returned = {"rollback": ranks("x.md", "note.md"), "images": ranks("deploy.md", "note.md")}
    assert quoted_by_id(returned) == {"rollback": (2, None, True), "images": (2, 1, False)}


def test_displaces_expected_is_unknown_when_the_quoting_document_is_not_in_the_list() -> None:
    returned = {"rollback": ranks("x.md"), "images": ranks("x.md", "deploy.md")}
    assert quoted_by_id(returned) == {"rollback": (None, None, None), "images": (None, 2, None)}


def test_a_pinned_heading_counts_as_the_labelled_answer_only_where_the_heading_matches() -> None:
    pinned = [query("rollback", Q_ROLLBACK, "deploy.md", heading="Database"), query("images", Q_IMAGES, "x.md")]
    other_section = ranks("deploy.md", "note.md", "deploy.md", headings={1: "Images", 3: " database "})
    assert quoted_by_id({"rollback": other_section}, pinned)["rollback"] == (2, 3, True)
    labelled_section = ranks("deploy.md", "note.md", headings={1: "DATABASE"})
    assert quoted_by_id({"rollback": labelled_section}, pinned)["rollback"] == (2, 1, False)


def test_displaces_expected_never_changes_which_documents_are_findings() -> None:
    files = {"note.md": f"{Q_ROLLBACK}\n{Q_IMAGES}", "one.md": Q_RERANK, "deploy.md": f"{Q_ROLLBACK}\n{Q_IMAGES}"}
    listed = {q.id: ranks("note.md", "one.md", "deploy.md") for q in GOLDEN}
    unlisted: dict[str, list[Hit]] = {}
    shape = [(f.path, [q.query_id for q in f.quoted]) for f in findings_for(files, GOLDEN, listed)]
    assert shape == [(f.path, [q.query_id for q in f.quoted]) for f in findings_for(files, GOLDEN, unlisted)]
    assert shape == [("note.md", ["rollback", "images"])]


def test_the_comparison_is_strict_and_unknown_only_without_a_rank() -> None:
    assert (displaces_expected(1, 2), displaces_expected(2, 1), displaces_expected(3, None)) == (True, False, True)
    assert displaces_expected(2, 2) is False
    assert (displaces_expected(None, 1), displaces_expected(None, None)) == (None, None)


def test_findings_that_displaced_a_labelled_answer_come_first_each_group_in_path_order() -> None:
    files = {"a-overview.md": f"{Q_ROLLBACK}\n{Q_IMAGES}", "b-note.md": f"{Q_ROLLBACK}\n{Q_RERANK}", "c-index.md": f"{Q_IMAGES}\n{Q_RERANK}", "d-note.md": f"{Q_IMAGES}\n{Q_RERANK}"}
    returned = {
        "rollback": ranks("deploy.md", "a-overview.md", "b-note.md"),
        "images": ranks("deploy.md", "a-overview.md", "c-index.md", "d-note.md"),
        "rerank": ranks("b-note.md", "d-note.md", "search.md", "c-index.md"),
    }
    found = [LocatedFinding(finding, ()) for finding in findings_for(files, GOLDEN, returned)]
    assert [f.finding.path for f in found] == ["a-overview.md", "b-note.md", "c-index.md", "d-note.md"]
    assert [f.finding.path for f in displacing_first(found)] == ["b-note.md", "d-note.md", "a-overview.md", "c-index.md"]
    assert displacing_first([]) == []


def test_a_query_holding_the_seam_character_cannot_join_two_fields() -> None:
    queries = [query("nul", "which tag do\x00container images", "x.md"), query("r", Q_ROLLBACK, "x.md")]
    assert findings_for({"d.md": f"# x\nwhich tag do\n# container images get\n{Q_IMAGES}\n{Q_ROLLBACK}"}, queries) == []


def test_two_matches_that_only_overlap_both_count() -> None:
    a, b = "alpha beta gamma delta", "gamma delta epsilon zeta"
    found = findings_for({"d.md": "alpha beta gamma delta epsilon zeta"}, [query("a", a, "x.md"), query("b", b, "x.md")])
    assert [q.query_id for q in found[0].quoted] == ["a", "b"]


def test_quoted_queries_are_reported_in_golden_order_and_findings_in_path_order() -> None:
    files = {"z.md": f"{Q_RERANK} {Q_ROLLBACK}", "a.md": f"{Q_IMAGES} {Q_RERANK}"}
    found = findings_for(files, GOLDEN)
    assert [(f.path, [q.query_id for q in f.quoted]) for f in found] == [
        ("a.md", ["images", "rerank"]),
        ("z.md", ["rollback", "rerank"]),
    ]


def test_the_location_points_at_the_line_and_column_of_the_first_quotation() -> None:
    document = build_document(
        "n.md",
        f"---\ntitle: {Q_IMAGES}\n---\n# Notes\nintro\n  see: {Q_ROLLBACK.upper()}\n## {Q_RERANK}\n",
        Diagnostics(),
    )
    notes, rerank = document.chunks
    assert locate(notes, "body", [normalise(Q_ROLLBACK)]) == [QuoteLocation("body", 6, 8)]
    assert locate(rerank, "heading", [normalise(Q_RERANK)]) == [QuoteLocation("heading", 7, None)]
    assert locate(rerank, "breadcrumb", [normalise(Q_IMAGES)]) == [QuoteLocation("breadcrumb", 2, None)]
    by_name = build_document("which tag do container images get.md", "# Notes\n## Sub\nx", Diagnostics())
    assert locate(by_name.chunks[1], "breadcrumb", [normalise(Q_IMAGES)]) == [QuoteLocation("breadcrumb", 1, None)]


# --- The multi-pattern scan agrees with the plain reference on random corpora -----------------

def reference_matches(chunks: Sequence[IndexedChunk], needles: Sequence[Needle]) -> set[int]:
    """The naive definition: a needle matches if it is inside any one field's normalised text."""
    return {
        needle.order for needle in needles
        if any(needle.text in normalise(getattr(chunk, field)) for chunk in chunks for field in INDEXED_FIELDS)
    }


_ALPHABET = st.sampled_from(list("ab \n\tA") + ["\u3000", "é", "検"])


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.tuples(st.text(_ALPHABET, max_size=30), st.text(_ALPHABET, max_size=30), st.text(_ALPHABET, max_size=60)), min_size=1, max_size=4),
    st.lists(st.text(_ALPHABET, min_size=12, max_size=16), min_size=1, max_size=6),
)
def test_aho_corasick_finds_exactly_what_the_naive_scan_finds(fields, texts) -> None:  # type: ignore[no-untyped-def]
    chunks = [IndexedChunk(n + 1, "d.md", h, b, body) for n, (h, b, body) in enumerate(fields)]
    queries = [query(f"q{n}", text, "x.md") for n, text in enumerate(texts)]
    scanner = QuoteScanner(queries)
    found = set(scanner.matches_in_document(chunks))
    expected = reference_matches(chunks, scanner.needles)
    assert found == expected


# --- End to end, in the shape of the original incident ---------------------------------------

def incident_kb(root: Path) -> Path:
    return write_tree(
        root,
        {
            "guides/rrf.md": "# Fusion\nReciprocal rank fusion merges the result lists of several retrievers.\n",
            "guides/chunks.md": "# Chunking\nDocuments are split into chunks at headings before indexing.\n",
            "guides/deploy.md": "# Deploy\nImages are tagged with the commit.\n",
            ".kb-eval.yml": golden_yaml(
                ("rrf-q", "how does reciprocal rank fusion combine rankings", ["guides/rrf.md"]),
                ("chunks-q", "where are documents split into chunks", ["guides/chunks.md"]),
                ("deploy-q", "what are images tagged with", ["guides/deploy.md"]),
            ),
        },
    )


def test_a_clean_corpus_reports_no_findings_and_prints_no_warning(tmp_path: Path) -> None:
    kb = incident_kb(tmp_path / "kb")
    result = run_cli("--kb-path", kb, "--format", "json")
    assert result.code == 0
    assert result.json()["findings"] == []
    assert "golden-queries-quoted" not in result.stderr


def test_a_note_quoting_one_query_in_a_heading_and_another_in_its_body_is_reported_exit_zero(tmp_path: Path) -> None:
    kb = incident_kb(tmp_path / "kb")
    clean = run_cli("--kb-path", kb, "--format", "json").json()
    write_tree(kb, {"notes/about-the-eval.md": (
        "# How does reciprocal rank fusion combine rankings\n"
        "Notes on the golden set.\n"
        "The second query reads: `where are documents split into chunks`.\n"
    )})
    result = run_cli("--kb-path", kb, "--format", "json")
    assert result.code == 0
    report = result.json()
    [finding] = report["findings"]
    assert finding["path"] == "notes/about-the-eval.md"
    assert [(q["query_id"], q["field"], q["line"]) for q in finding["quoted"]] == [
        ("rrf-q", "heading", 1),
        ("chunks-q", "body", 3),
    ]
    assert finding["quoted"][0]["rank_in_top_k"] == 1  # the note displaced the labelled answer
    rrf_before = next(q for q in clean["per_query"] if q["id"] == "rrf-q")
    rrf_after = next(q for q in report["per_query"] if q["id"] == "rrf-q")
    assert (rrf_before["metrics"]["reciprocal_rank"], rrf_after["metrics"]["reciprocal_rank"]) == (1.0, 0.5)
    assert [q["displaces_expected"] for q in finding["quoted"]] == [True, False]
    assert "kb-eval: 1 document quotes 2 or more golden queries verbatim (golden-queries-quoted)." in result.stderr
    assert "    rrf-q (took rank 1 above the expected document)" in result.stderr
    # The rest of the report is intact, and the finding stays out of the fingerprint.
    assert report["fingerprint"] == clean["fingerprint"]
    assert [q["id"] for q in report["per_query"]] == ["rrf-q", "chunks-q", "deploy-q"]
    assert report["corpus"]["documents"] == clean["corpus"]["documents"] + 1


def test_the_text_report_lists_the_findings_too(tmp_path: Path) -> None:
    kb = incident_kb(tmp_path / "kb")
    write_tree(kb, {"notes/q.md": "how does reciprocal rank fusion combine rankings\nwhere are documents split into chunks\n"})
    result = run_cli("--kb-path", kb)
    assert result.code == 0
    assert "findings: 1 document quotes 2 or more golden queries verbatim (golden-queries-quoted)" in result.stdout
    assert "notes/q.md" in result.stdout


def test_the_scan_reads_exactly_the_indexed_fields_in_the_index_column_order() -> None:
    # The scanner slices rows as chunk[2:5]; this is the equality decision 0006 makes the rule.
    assert IndexedChunk._fields[2:5] == INDEXED_FIELDS == ("heading", "breadcrumb", "body")


def test_init_placeholders_still_tagged_starter_are_not_scanned_and_rewritten_queries_are() -> None:
    # `kb-eval init` writes page titles as placeholder queries; an index page listing two of those
    # titles is a list of links, and on a first run it was reported as a leak.
    titles = [
        GoldenQuery("setup", "Setting up the deploy pipeline", (ExpectedEntry("setup.md", None, 1),), ("starter",), 1),
        GoldenQuery("images", "Building the container images", (ExpectedEntry("images.md", None, 1),), ("starter",), 1),
    ]
    files = {"index.md": "# Guides\n\n- Setting up the deploy pipeline\n- Building the container images\n"}
    assert findings_for(files, titles) == []
    # The near miss: the same queries once the tag is removed (rewritten, kept as they were) are scanned.
    kept = [GoldenQuery(q.id, q.text, q.expected, (), q.line) for q in titles]
    assert [f.path for f in findings_for(files, kept)] == ["index.md"]


def test_the_needles_are_measured_once_per_scan_not_once_per_document(monkeypatch: pytest.MonkeyPatch) -> None:
    """Measuring every needle for every document made the scan cost documents x queries (41 s of
    CPU for 20,000 documents and 10,000 queries); the automaton's sizes are the scanner's."""
    from scanner.scan import quotes

    measured: list[int] = []
    word_sizes = quotes.word_sizes
    monkeypatch.setattr(quotes, "word_sizes", lambda words: measured.append(len(words)) or word_sizes(words))
    needles = [query(f"q{n}", f"golden question number {n:04d}") for n in range(200)]
    scanner = QuoteScanner(needles)
    for n in range(100):
        scanner.matches_in_document([IndexedChunk(n, f"d{n}.md", "", "", f"text of document {n}")])
    assert measured == [200]  # once, by the scanner
    # The near miss: a document whose reports outgrow their budget (needles that are suffixes of one
    # another over a run of `a`) drops the words found and measures the rest again.
    # One needle is never found, so the scan goes on past the chain and the reports pile up.
    chain = QuoteScanner([*(query(f"a{n}", "a" * (12 + n)) for n in range(50)), query("b", "b" * 12)])
    measured.clear()
    assert len(chain.matches_in_document([IndexedChunk(1, "a.md", "", "", "a" * 10_000)])) == 50
    assert measured and all(size < 51 for size in measured)


@pytest.mark.parametrize("documents", [10, 1_000])
def test_a_document_quoting_fewer_than_two_queries_builds_no_automaton_of_its_own(
    monkeypatch: pytest.MonkeyPatch, documents: int
) -> None:
    """Dropping explained matches builds an automaton of the document's matches: a document with
    fewer matches than a finding needs is no finding whatever is dropped, so none is built for it."""
    from scanner.scan import quotes

    built: list[int] = []
    automaton = quotes._automaton
    monkeypatch.setattr(quotes, "_automaton", lambda words: built.append(len(words)) or automaton(words))
    quoting_one = {f"d{n}.md": f"# Note {n}\n\nWe ask {Q_ROLLBACK} here.\n" for n in range(documents)}
    assert findings_for(quoting_one, GOLDEN) == []
    assert len(built) == 1  # the scanner's own, of every needle
    # The near miss: a document quoting two is checked for explained matches (one automaton more),
    # and is a finding.
    built.clear()
    found = findings_for({**quoting_one, "leak.md": f"{Q_ROLLBACK}\n\n{Q_IMAGES}\n"}, GOLDEN)
    assert [f.path for f in found] == ["leak.md"]
    assert len(built) == 2


# --- The pre-check: documents quoting nothing never reach the exact path ---------------------

_WORDS = st.sampled_from(list("ab é"))


@settings(max_examples=300, deadline=None)
@given(st.lists(st.text(_WORDS, min_size=1, max_size=8), min_size=1, max_size=8), st.text(_WORDS, max_size=80))
def test_the_pre_check_passes_over_a_text_only_when_no_needle_occurs_in_it(words, text) -> None:  # type: ignore[no-untyped-def]
    # Words drawn from a small alphabet are often suffixes, prefixes and substrings of one another.
    keyed = dict(enumerate(dict.fromkeys(words)))
    for dfa_up_to in (0, 10**9):  # the contiguous NFA, then the DFA
        # Words no longer than the prefix: exactly whether one occurs.
        assert quotes_any(pre_check(keyed, dfa_up_to), text) == bool(first_occurrences(keyed, text))
        assert quotes_any(pre_check(keyed, dfa_up_to), text) == any(word in text for word in keyed.values())
        # Words cut to their first 3 characters: whether a beginning occurs, never False where a word does.
        cut = quotes_any(pre_check(keyed, dfa_up_to, prefix=3), text)
        assert cut == any(word[:3] in text for word in keyed.values())
        assert cut or not first_occurrences(keyed, text)


def test_the_pre_check_looks_for_the_first_64_characters_of_each_query(monkeypatch: pytest.MonkeyPatch) -> None:
    from scanner.scan import quotes

    patterns: list[list[str]] = []
    build = quotes.ahocorasick_rs.BytesAhoCorasick
    monkeypatch.setattr(quotes.ahocorasick_rs, "BytesAhoCorasick", lambda words, implementation: patterns.append(list(words)) or build(words, implementation=implementation))
    long_queries = [f"{n:04d} " + "a long golden question about the deploy pipeline " * 40 for n in range(3)]
    scanner = QuoteScanner([query(f"q{n}", text) for n, text in enumerate(long_queries)])
    assert PRE_CHECK_PREFIX_CHARS == 64 and [len(p) for p in patterns[0]] == [64, 64, 64]
    # A document holding a query's beginning but not the query passes the pre-check and is no match;
    # the near miss, the whole query, is one.
    beginning = [IndexedChunk(1, "a.md", "", "", long_queries[0][:100])]
    assert quotes_any(scanner.pre_check, normalise(long_queries[0][:100]))
    assert scanner.matches_in_document(beginning) == {}
    assert set(scanner.matches_in_document([IndexedChunk(1, "a.md", "", "", long_queries[0])])) == {0}


def test_the_exact_automaton_is_built_only_when_a_document_passes_the_pre_check(monkeypatch: pytest.MonkeyPatch) -> None:
    from scanner.scan import quotes

    built: list[int] = []
    automaton = quotes._automaton
    monkeypatch.setattr(quotes, "_automaton", lambda words: built.append(len(words)) or automaton(words))
    quiet = {f"d{n:02d}.md": f"# Note {n}\n\nNothing golden is asked here.\n" for n in range(20)}
    assert findings_for(quiet, GOLDEN) == [] and built == []
    # The near miss: a document quoting one query needs it, once, for every needle.
    assert findings_for({**quiet, "one.md": f"We ask {Q_ROLLBACK} here.\n", "z.md": Q_IMAGES}, GOLDEN) == []
    assert built == [3]


def test_only_documents_quoting_a_needle_are_given_to_the_exact_scan(monkeypatch: pytest.MonkeyPatch) -> None:
    from scanner.scan import quotes

    exact: list[str] = []
    first = quotes.first_occurrences
    monkeypatch.setattr(quotes, "first_occurrences", lambda words, text, *rest: exact.append(text) or first(words, text, *rest))
    quiet = {f"d{n:02d}.md": f"# Note {n}\n\nNothing golden is asked here.\n" for n in range(40)}
    assert findings_for(quiet, GOLDEN) == []
    assert exact == []
    # The near miss: one document quoting one query is scanned exactly (and still no finding);
    # one quoting two is scanned, checked for explained matches, and is a finding.
    assert findings_for({**quiet, "one.md": f"We ask {Q_ROLLBACK} here.\n"}, GOLDEN) == []
    assert len(exact) == 1 and Q_ROLLBACK in exact[0]
    exact.clear()
    found = findings_for({**quiet, "two.md": f"{Q_ROLLBACK}\n\n{Q_IMAGES}\n"}, GOLDEN)
    assert [f.path for f in found] == ["two.md"] and len(exact) == 2


def test_the_pre_check_reports_at_most_one_match_per_needle_length_of_text() -> None:
    # Needles that are suffixes of one another all end at every character of a run of `a`: an
    # overlapping search reports each of them there, the pre-check one match per needle length.
    chain = QuoteScanner([*(query(f"a{n}", "a" * (MIN_QUOTE_CHARS + n)) for n in range(300)), query("b", "b" * 12)])
    reported: list[int] = []

    class Counted:
        def find_matches_as_indexes(self, text: bytes, overlapping: bool = False) -> list[tuple[int, int, int]]:
            found = chain.pre_check.find_matches_as_indexes(text, overlapping)
            reported.append(len(found))
            return found

    text = "a" * 40_000
    assert quotes_any(Counted(), text)  # type: ignore[arg-type]
    assert 0 < reported[0] <= len(text) // MIN_QUOTE_CHARS
    # The near miss: the same automaton asked for overlapping matches reports each of the 53
    # beginnings (`a` x 12 to 64) at nearly every character.
    assert len(Counted().find_matches_as_indexes(text.encode(), overlapping=True)) > 50 * len(text)


def test_the_pre_check_is_a_dfa_for_a_few_needles_and_an_nfa_beyond_its_character_budget(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from scanner.scan import quotes

    made: list[object] = []
    build = quotes.ahocorasick_rs.BytesAhoCorasick
    monkeypatch.setattr(quotes.ahocorasick_rs, "BytesAhoCorasick", lambda words, implementation: made.append(implementation) or build(words, implementation=implementation))
    wordings = [f"golden question number {n:05d}" for n in range(PRE_CHECK_DFA_CHARS // 28)]
    more = "one golden question more"
    assert sum(map(len, wordings)) <= PRE_CHECK_DFA_CHARS < sum(map(len, wordings)) + len(more)
    QuoteScanner([query(f"q{n}", text) for n, text in enumerate(wordings)])
    QuoteScanner([query(f"q{n}", text) for n, text in enumerate([*wordings, more])])
    assert made == [Implementation.DFA, Implementation.ContiguousNFA]
