"""The run-file retriever: TREC runs ranked like trec_eval, JSONL runs, refusals."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
import pytrec_eval
from hypothesis import given, settings
from hypothesis import strategies as st

from scanner.foundation.errors import InputError
from scanner.retrievers.base import Hit, SearchRequest
from scanner.retrievers.runfile import RunFileRetriever, TrecLine, trec_order

# Scores drawn from three values and docids that differ in case, digits,
# a path#heading suffix and a non-ASCII letter: most of the order is decided
# by the tie rule.
TIE_HEAVY = [
    ("a.md", 1.0), ("B.md", 1.0), ("b.md", 1.0), ("a.md#Intro", 1.0), ("a.md#intro", 1.0),
    ("z/é.md", 1.0), ("z/e.md", 1.0), ("10.md", 2.0), ("9.md", 2.0), ("1.md", 2.0),
    ("docs/a.md", 0.5), ("docs/A.md", 0.5), ("docs/a.md#Setup", 0.5), ("x.md", 3.0),
]


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def ask(*ids: str, limit: int = 100) -> list[SearchRequest]:
    return [SearchRequest(query_id=query_id, text="", limit=limit) for query_id in ids]


def pytrec_eval_ranks(docs: list[tuple[str, float]]) -> dict[str, int]:
    """Each docid's rank as trec_eval's code assigns it, read back through recip_rank."""
    run = {"q": dict(docs)}
    ranks = {}
    for docid, _score in docs:
        evaluator = pytrec_eval.RelevanceEvaluator({"q": {docid: 1}}, {"recip_rank"})
        ranks[docid] = round(1 / evaluator.evaluate(run)["q"]["recip_rank"])
    return ranks


def trec_text(docs: list[tuple[str, float]], qid: str = "q") -> str:
    # The rank column is deliberately nonsense: trec_eval ignores it.
    return "".join(f"{qid} Q0 {docid} {999 - i} {score!r} tag\n" for i, (docid, score) in enumerate(docs))


def test_a_tie_heavy_trec_run_is_ranked_exactly_like_pytrec_eval(tmp_path: Path) -> None:
    [hits] = RunFileRetriever(write(tmp_path, "run.trec", trec_text(TIE_HEAVY))).search_all(ask("q"))
    ours = {(hit.path + ("#" + hit.heading if hit.heading else "")): hit.rank for hit in hits}
    assert ours == pytrec_eval_ranks(TIE_HEAVY)
    # Spelled out, so the rule is readable here: score desc, then docid desc.
    assert [hit.path + ("#" + hit.heading if hit.heading else "") for hit in hits][:6] == [
        "x.md", "9.md", "10.md", "1.md", "z/é.md", "z/e.md"
    ]


@settings(max_examples=40, deadline=None)
@given(
    st.dictionaries(
        st.text(alphabet="abAB01é_/.#", min_size=1, max_size=6).filter(lambda s: not s.startswith("#")),
        st.sampled_from([0.0, 1.0, 1.5, -2.0]),
        min_size=1,
        max_size=12,
    )
)
def test_any_tie_heavy_ranking_matches_pytrec_eval(docs: dict[str, float]) -> None:
    lines = [TrecLine(docid=docid, score=score, line=i) for i, (docid, score) in enumerate(docs.items())]
    ours = {entry.docid: rank for rank, entry in enumerate(trec_order(lines), start=1)}
    assert ours == pytrec_eval_ranks(list(docs.items()))


def test_the_rank_column_is_ignored_and_the_order_in_the_file_does_not_matter(tmp_path: Path) -> None:
    forward = RunFileRetriever(write(tmp_path, "a.trec", trec_text(TIE_HEAVY))).search_all(ask("q"))
    backward = RunFileRetriever(write(tmp_path, "b.trec", trec_text(TIE_HEAVY[::-1]))).search_all(ask("q"))
    assert forward == backward


def test_a_docid_with_a_heading_is_split_and_percent_decoded(tmp_path: Path) -> None:
    run = write(tmp_path, "run.trec", "q1 Q0 guide/setup.md#Getting%20started 1 2.0 t\nq1 Q0 my%20notes.md 2 1.0 t\n")
    assert RunFileRetriever(run).search_all(ask("q1")) == [
        [Hit(1, "guide/setup.md", "Getting started", 2.0), Hit(2, "my notes.md", "", 1.0)]
    ]


def test_results_are_cut_to_the_limit_after_ranking(tmp_path: Path) -> None:
    run = write(tmp_path, "run.trec", "q1 Q0 low.md 1 1 t\nq1 Q0 high.md 2 5 t\nq1 Q0 mid.md 3 3 t\n")
    [hits] = RunFileRetriever(run).search_all(ask("q1", limit=2))
    assert [hit.path for hit in hits] == ["high.md", "mid.md"]


def test_comments_blank_lines_and_extra_fields_are_skipped_like_trec_eval(tmp_path: Path) -> None:
    run = write(tmp_path, "run.txt", "# made by bm25\n\n  q1 Q0 a.md 1 1.5 tag extra fields\n")
    assert RunFileRetriever(run).search_all(ask("q1")) == [[Hit(1, "a.md", "", 1.5)]]


def test_results_come_back_in_golden_order_not_file_order(tmp_path: Path) -> None:
    run = write(tmp_path, "run.trec", "q2 Q0 two.md 1 1 t\nq1 Q0 one.md 1 1 t\n")
    assert RunFileRetriever(run).search_all(ask("q1", "q2")) == [[Hit(1, "one.md", "", 1.0)], [Hit(1, "two.md", "", 1.0)]]


def test_a_golden_query_missing_from_the_run_is_an_error_naming_the_id_and_file(tmp_path: Path) -> None:
    run = write(tmp_path, "run.trec", "q1 Q0 a.md 1 1 t\n")
    with pytest.raises(InputError) as caught:
        RunFileRetriever(run).search_all(ask("q1", "q-missing"))
    assert caught.value.file == str(run)
    assert "'q-missing'" in str(caught.value)
    assert "'q1'" not in caught.value.message


def test_an_extra_query_in_the_run_is_not_an_error(tmp_path: Path) -> None:
    run = write(tmp_path, "run.trec", "q1 Q0 a.md 1 1 t\nold Q0 b.md 1 1 t\n")
    assert RunFileRetriever(run).search_all(ask("q1")) == [[Hit(1, "a.md", "", 1.0)]]


@pytest.mark.parametrize(
    ("text", "line", "complaint"),
    [
        ("q1 Q0 a.md 1 1 t\nq1 Q0 b.md 1\n", 2, "has 4 fields"),
        ("q1 Q0 a.md 1 high t\n", 1, "not a finite number"),
        ("q1 Q0 a.md 1 nan t\n", 1, "not a finite number"),
        ("q1 Q0 a.md 1 1 t\n\nq1 Q0 a.md 2 0.5 t\n", 3, "listed twice"),
    ],
)
def test_a_malformed_trec_line_names_file_and_line(tmp_path: Path, text: str, line: int, complaint: str) -> None:
    run = write(tmp_path, "run.trec", text)
    with pytest.raises(InputError, match=complaint) as caught:
        RunFileRetriever(run)
    assert (caught.value.file, caught.value.line) == (str(run), line)


def test_the_same_docid_under_two_queries_is_not_a_duplicate(tmp_path: Path) -> None:
    run = write(tmp_path, "run.trec", "q1 Q0 a.md 1 1 t\nq2 Q0 a.md 1 1 t\n")
    assert len(RunFileRetriever(run).search_all(ask("q1", "q2"))) == 2


def test_a_jsonl_run_keeps_list_order_and_optional_fields(tmp_path: Path) -> None:
    lines = [
        {"id": "q1", "hits": [{"path": "b.md", "score": 0.1}, {"path": "a.md", "heading": "Intro", "score": 0.9}]},
        {"id": "q2", "hits": []},
    ]
    run = write(tmp_path, "run.jsonl", "\n".join(json.dumps(line) for line in lines) + "\n")
    assert RunFileRetriever(run).search_all(ask("q1", "q2")) == [
        [Hit(1, "b.md", "", 0.1), Hit(2, "a.md", "Intro", 0.9)],
        [],
    ]


def test_the_format_is_detected_from_content_when_the_extension_says_nothing(tmp_path: Path) -> None:
    jsonl = write(tmp_path, "run.out", '{"id": "q1", "hits": [{"path": "a.md"}]}\n')
    trec = write(tmp_path, "run2.out", "q1 Q0 a.md 1 1 t\n")
    assert RunFileRetriever(jsonl).describe()["format"] == "jsonl"
    assert RunFileRetriever(trec).describe()["format"] == "trec"


@pytest.mark.parametrize(
    ("text", "line", "complaint"),
    [
        ('{"id": "q1", "hits": []}\n{"id": "q2", "hits": [\n', 2, "not a JSON object"),
        ('{"id": "q1", "hits": []}\n[1, 2]\n', 2, "not a JSON object"),
        ('{"hits": []}\n', 1, "needs an \"id\""),
        ('{"id": "q1", "hits": {"path": "a.md"}}\n', 1, "needs a \"hits\" list"),
        ('{"id": "q1", "hits": []}\n{"id": "q1", "hits": []}\n', 2, "appears twice"),
        ('{"id": "q1", "hits": [{"path": "a.md"}, {"heading": "H"}]}\n', 1, "hit 1 has no path"),
    ],
)
def test_a_malformed_jsonl_line_names_file_and_line(tmp_path: Path, text: str, line: int, complaint: str) -> None:
    run = write(tmp_path, "run.jsonl", text)
    with pytest.raises(InputError, match=complaint) as caught:
        RunFileRetriever(run)
    assert (caught.value.file, caught.value.line) == (str(run), line)


def test_describe_records_format_and_content_hash(tmp_path: Path) -> None:
    text = "q1 Q0 a.md 1 1 t\n"
    run = write(tmp_path, "run.trec", text)
    assert RunFileRetriever(run).describe() == {
        "name": "run", "format": "trec", "sha256": hashlib.sha256(text.encode()).hexdigest()
    }


def test_an_unreadable_run_file_is_an_input_error(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="run file"):
        RunFileRetriever(tmp_path / "absent.trec")
