"""The response mapping shared by the http and command retrievers, and the template rules."""

from __future__ import annotations

import pytest

from scanner.foundation.errors import InputError
from scanner.retrievers.base import AnswerNote, Hit, NoteKind, SearchRequest
from scanner.retrievers.mapping import (
    ErrorContext,
    Notes,
    ResponseMapping,
    map_response,
    partial_result,
    redact_url,
    service_error_words,
    strip_path_prefix,
)
from scanner.retrievers.templates import (
    parse_json_template,
    quote_bare_placeholders,
    render_json_template,
    substitute_placeholders,
)

REQUEST = SearchRequest(query_id="q7", text="t", limit=10)
WHERE = ErrorContext(source="test")


def mapped(body: object, mapping: ResponseMapping | None = None, limit: int = 10) -> list[Hit]:
    request = SearchRequest(query_id="q7", text="t", limit=limit)
    return map_response(body, mapping or ResponseMapping(), request, WHERE)


def refusal(body: object, mapping: ResponseMapping | None = None) -> str:
    with pytest.raises(InputError) as caught:
        mapped(body, mapping)
    return str(caught.value)


def test_the_default_reads_results_from_an_object() -> None:
    assert mapped({"results": [{"path": "a.md", "heading": "H", "score": 1}]}) == [Hit(1, "a.md", "H", 1.0)]


def test_the_default_reads_a_bare_list() -> None:
    assert mapped([{"path": "a.md"}, {"path": "b.md"}]) == [Hit(1, "a.md", "", None), Hit(2, "b.md", "", None)]


def test_an_object_without_results_and_no_hits_path_is_refused() -> None:
    assert "--hits-path" in refusal({"hits": []})


def test_the_refusal_names_the_keys_the_answer_has_so_the_list_can_be_found() -> None:
    assert "(its keys are 'content', 'total')" in refusal({"content": "/kb/a.md", "total": 1})
    assert "(its keys are 'k0', 'k1'," in refusal({f"k{n}": n for n in range(12)})
    assert "and 2 more)" in refusal({f"k{n}": n for n in range(12)})
    assert "(it is an empty object)" in refusal({})
    assert "(it is a string)" in refusal("a.md")
    # A key that holds a secret is not shown in the clear.
    secret = ErrorContext(source="test", secrets=("tok-123",))
    with pytest.raises(InputError) as caught:
        map_response({"tok-123": 1}, ResponseMapping(), SearchRequest("q7", "t", 10), secret)
    assert "tok-123" not in str(caught.value) and "***" in str(caught.value)


def test_a_dotted_hits_path_and_fields_read_an_elasticsearch_answer() -> None:
    body = {"hits": {"hits": [{"_score": 2, "_source": {"file": "a.md", "section": {"title": "T"}}}]}}
    mapping = ResponseMapping("hits.hits", "_source.file", "_source.section.title", "_score")
    assert mapped(body, mapping) == [Hit(1, "a.md", "T", 2.0)]


def test_a_hits_path_that_is_missing_or_not_a_list_is_refused() -> None:
    assert "has no 'hits.hits'" in refusal({"hits": {}}, ResponseMapping(hits_path="hits.hits"))
    assert "not a list" in refusal({"hits": {"hits": {"a": 1}}}, ResponseMapping(hits_path="hits.hits"))


def test_hits_are_cut_to_the_limit_and_entries_past_it_are_not_read() -> None:
    body = [{"path": "a.md"}, {"path": "b.md"}, {"no": "path"}]
    assert [hit.path for hit in mapped(body, limit=2)] == ["a.md", "b.md"]


@pytest.mark.parametrize("hit", [{"heading": "H"}, {"path": None}, {"path": ""}])
def test_a_hit_without_a_path_names_the_query_and_the_hit_index(hit: dict[str, object]) -> None:
    assert "query 'q7', hit 1 has no path" in refusal([{"path": "a.md"}, hit])


@pytest.mark.parametrize(
    ("hit", "complaint"),
    [
        ({"path": 3}, "path is a number"),
        ({"path": "a.md", "heading": ["a", "b"]}, "heading is a list"),
        ({"path": ["a.md", "b.md"]}, "is a list of 2 values"),
        ("a.md", "hit 0 is a string"),
    ],
)
def test_a_hit_field_of_the_wrong_type_is_refused(hit: object, complaint: str) -> None:
    assert complaint in refusal([hit])


def test_a_null_heading_or_score_means_none_given() -> None:
    assert mapped([{"path": "a.md", "heading": None, "score": None}]) == [Hit(1, "a.md", "", None)]


@pytest.mark.parametrize("path", ["/srv/kb/a.md", "C:\\kb\\a.md"])
def test_an_absolute_path_is_kept_for_the_corpus_check(path: str) -> None:
    # Not refused hit by hit: evaluation/answers.py checks every returned path against the corpus
    # and computes the prefix to strip from all of them (tests/evaluation/test_answers.py).
    assert mapped([{"path": path}]) == [Hit(1, path, "", None)]


def test_a_url_left_after_stripping_is_recorded_without_its_query_values() -> None:
    assert mapped([{"path": "https://kb.example/a.md?key=s3cret"}])[0].path == "https://kb.example/a.md?key=REDACTED"


def test_a_path_emptied_by_the_prefix_is_refused() -> None:
    assert "empty once --path-prefix-strip" in refusal([{"path": "/srv/kb/"}], ResponseMapping(path_prefix_strip=("/srv/kb",)))


# --- tolerant where it costs nothing ---------------------------------------------------------------


def noted(body: object, mapping: ResponseMapping | None = None) -> tuple[list[Hit], tuple[AnswerNote, ...]]:
    notes = Notes()
    hits = map_response(body, mapping or ResponseMapping(), REQUEST, ErrorContext("test", secrets=("s3cret",), notes=notes))
    return hits, notes.items()


@pytest.mark.parametrize("score", ["0.204014", "83%", True, [1, 2], {"v": 1}, float("nan"), 10**400])
def test_a_score_that_is_not_a_finite_number_is_recorded_as_missing_with_a_note(score: object) -> None:
    hits, notes = noted([{"path": "a.md", "score": score}])
    assert hits == [Hit(1, "a.md", "", None)]
    assert [(note.kind, note.query_id) for note in notes] == [(NoteKind.SCORE_NOT_NUMBER, "q7")]
    assert notes[0].detail.startswith("hit 0: ")


def test_a_numeric_score_makes_no_note() -> None:
    assert noted([{"path": "a.md", "score": 0.5}]) == ([Hit(1, "a.md", "", 0.5)], ())


def test_a_score_note_never_shows_a_secret() -> None:
    _, notes = noted([{"path": "a.md", "score": "s3cret"}])
    assert "s3cret" not in notes[0].detail and "***" in notes[0].detail


def test_one_element_arrays_are_read_as_their_value() -> None:
    # Elasticsearch's `fields` hold every value in a list.
    body = {"hits": {"hits": [{"fields": {"path": ["a.md"], "heading": ["H"]}, "_score": [1.5]}]}}
    mapping = ResponseMapping("hits.hits", "fields.path", "fields.heading", "_score")
    assert mapped(body, mapping) == [Hit(1, "a.md", "H", 1.5)]


def test_an_empty_heading_list_means_no_heading() -> None:
    assert mapped([{"path": "a.md", "heading": []}]) == [Hit(1, "a.md", "", None)]


# --- the service's own words -----------------------------------------------------------------------


LONG = "x" * 400


@pytest.mark.parametrize(
    ("body", "words"),
    [
        ({"data": None, "errors": [{"message": "syntax error in tsquery: \"a &\"", "locations": []}]},
         "syntax error in tsquery"),
        ({"error": {"root_cause": [{"type": "query_shard_exception", "reason": "Failed to parse query [a AND]",
                                    "index": LONG}], "type": "search_phase_execution_exception",
                    "reason": "all shards failed"}, "status": 400},
         "Failed to parse query [a AND]"),
        ({"ok": False, "error": "fts5: syntax error near \"'\"", "status": 400, "title": "Invalid SQL"},
         "fts5: syntax error near"),
        ({"code": "42601", "details": None, "hint": None, "message": "syntax error in tsquery"},
         "syntax error in tsquery"),
        ({"error": "index_not_found"}, "index_not_found"),
    ],
)
def test_the_services_error_is_shown_instead_of_a_hits_path_guess(body: dict[str, object], words: str) -> None:
    for mapping in (ResponseMapping(), ResponseMapping(hits_path="data.search.nodes")):
        shown = refusal(body, mapping)
        assert "the service answered with an error" in shown and words in shown
        assert "--hits-path" not in shown


def test_error_words_past_the_first_200_characters_are_found() -> None:
    body = {"padding": LONG, "error": {"root_cause": [{"reason": "the reason at the end"}]}}
    assert service_error_words(body) == "the reason at the end"


def test_an_answer_without_error_fields_has_no_words_and_keeps_the_hits_path_hint() -> None:
    assert service_error_words({"hits": [], "message_count": 3}) is None
    assert service_error_words({"message": "hello"}) is None  # data, not an error: no code, status or ok
    assert "--hits-path" in refusal({"hits": []})


def test_partial_results_are_a_note_naming_the_query() -> None:
    body = {"timed_out": True, "_shards": {"total": 5, "failed": 2, "failures": [{"reason": {"reason": "too slow"}}]},
            "hits": {"hits": [{"_source": {"path": "a.md"}}]}}
    hits, notes = noted(body, ResponseMapping("hits.hits", "_source.path"))
    assert [hit.path for hit in hits] == ["a.md"]
    assert [(note.kind, note.query_id) for note in notes] == [(NoteKind.PARTIAL, "q7")]
    assert notes[0].detail == "timed_out is true; 2 of 5 shards failed (too slow)"


def test_a_complete_answer_makes_no_partial_note() -> None:
    body = {"timed_out": False, "_shards": {"total": 5, "failed": 0}, "hits": {"hits": []}}
    assert partial_result(body) is None and noted(body, ResponseMapping("hits.hits")) == ([], ())


def test_graphql_errors_beside_data_are_a_note() -> None:
    body = {"data": {"search": [{"path": "a.md"}]}, "errors": [{"message": "field x failed"}]}
    _, notes = noted(body, ResponseMapping("data.search"))
    assert [(note.kind, note.detail) for note in notes] == [(NoteKind.SERVICE_ERRORS, "field x failed")]


# --- an error answered as success ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "words"),
    [
        # basic-memory and other MCP servers: the tool's JSON, sent as a success.
        ({"results": [], "error": "Search failed: no such table: search_index"}, "no such table: search_index"),
        ({"results": [], "error": {"message": "index is locked", "code": 17}}, "index is locked"),
        ({"results": [], "errors": [{"message": "fts5: syntax error near \"AND\""}]}, "fts5: syntax error"),
        ({"results": [], "status": "error", "message": "project 'main' not found"}, "project 'main' not found"),
        ({"results": [], "status": "FAILED", "message": "embedding model missing"}, "embedding model missing"),
        ({"success": False, "results": [], "message": "Search query cannot be empty"}, "Search query cannot be empty"),
        ({"ok": False, "results": [], "detail": "database is closed"}, "database is closed"),
        ({"results": [], "error": True, "message": "the index is being rebuilt"}, "the index is being rebuilt"),
        ({"results": [], "error": True}, '{"error": true}'),
        ({"results": [], "status": "error"}, '{"status": "error"}'),
        ({"results": [], "error": 503}, '{"error": 503}'),
    ],
)
def test_an_error_answered_as_success_with_no_hits_is_refused_in_the_services_words(
    body: dict[str, object], words: str
) -> None:
    shown = refusal(body)
    assert "query 'q7': the service answered with an error" in shown and words in shown
    # The same answer where the hit list is nested under --hits-path.
    nested = {key: value for key, value in body.items() if key != "results"} | {"data": {"hits": []}}
    assert words in refusal(nested, ResponseMapping(hits_path="data.hits"))


@pytest.mark.parametrize(
    "body",
    [
        {"results": [], "error": None},
        {"results": [], "errors": []},
        {"results": [], "error": ""},
        {"results": [], "error": False},
        {"results": [], "error": 0},
        {"results": [], "error": {}},
        {"results": [], "status": "ok", "message": "0 notes found"},
        {"results": [], "success": True, "message": "nothing matched"},
        {"results": [], "found": False, "message": "no results"},
        {"results": [], "code": 0, "message": "done"},
    ],
)
def test_an_answer_that_says_no_error_with_no_hits_is_zero_hits(body: dict[str, object]) -> None:
    assert noted(body) == ([], ())


def test_an_error_field_inside_a_hit_is_the_hits_data_not_a_failed_answer() -> None:
    body = {"results": [{"path": "a.md", "metadata": {"error": "draft", "errors": ["spelling"], "status": "error"}}]}
    assert noted(body) == ([Hit(1, "a.md", "", None)], ())


def test_an_error_beside_hits_is_a_note_and_the_hits_are_kept() -> None:
    hits, notes = noted({"results": [{"path": "a.md"}], "error": "1 of 3 indexes unavailable"})
    assert hits == [Hit(1, "a.md", "", None)]
    assert [(note.kind, note.detail) for note in notes] == [(NoteKind.SERVICE_ERRORS, "1 of 3 indexes unavailable")]


def test_a_list_holding_an_error_in_place_of_a_hit_is_refused_in_the_services_words() -> None:
    shown = refusal([{"error": "Search failed: connection refused", "query": "t"}])
    assert "the service answered with an error: 'Search failed: connection refused'" in shown
    # The near miss: a hit without a path that says no error is the --path-field refusal.
    shown = refusal([{"error": None, "title": "a"}])
    assert "hit 0 has no path ('path')" in shown and "answered with an error" not in shown


def test_an_error_answered_as_success_never_shows_a_secret() -> None:
    with pytest.raises(InputError) as caught:
        map_response({"results": [], "error": {"reason": "key s3cret refused"}}, ResponseMapping(), REQUEST,
                     ErrorContext("test", secrets=("s3cret",)))
    assert "s3cret" not in str(caught.value) and "key *** refused" in str(caught.value)


@pytest.mark.parametrize(
    ("path", "prefixes", "expected"),
    [
        ("/srv/kb/docs/a.md", ("/srv/kb",), "docs/a.md"),
        ("/srv/kb/docs/a.md", ("/srv/kb/",), "docs/a.md"),
        ("/srv/kb/docs/a.md", ("/srv", "/srv/kb/docs"), "a.md"),
        ("https://kb.example/wiki/my%20notes.md?v=2#part", ("https://kb.example/wiki",), "my notes.md"),
        ("./docs/a.md", (), "docs/a.md"),
        ("/other/a.md", ("/srv/kb",), "/other/a.md"),
        ("docs/100%25.md", (), "docs/100%25.md"),
    ],
)
def test_path_prefix_strip_makes_paths_kb_relative(path: str, prefixes: tuple[str, ...], expected: str) -> None:
    assert strip_path_prefix(path, prefixes) == expected


def test_redact_url_drops_credentials_and_query_values_but_keeps_names() -> None:
    assert redact_url("https://u:p%40ss@kb.example:8443/s?key=abc&index=kb&flag#frag") == (
        "https://kb.example:8443/s?key=REDACTED&index=REDACTED&flag"
    )
    assert redact_url("/srv/kb") == "/srv/kb"


def test_describe_redacts_a_url_prefix() -> None:
    described = ResponseMapping(path_prefix_strip=("https://u:secret@kb.example/docs",)).describe()
    assert described["path_prefix_strip"] == ["https://kb.example/docs"]


def test_placeholders_are_substituted_in_one_pass() -> None:
    assert substitute_placeholders("{query}|{limit}", "{limit}{query}", 3) == "{limit}{query}|3"


def test_bare_placeholders_are_quoted_only_outside_json_strings() -> None:
    template = r'{"q": "say \"{query}\" {limit}", "n": {limit}, "m": [{query}]}'
    assert quote_bare_placeholders(template) == r'{"q": "say \"{query}\" {limit}", "n": "{limit}", "m": ["{query}"]}'


def test_a_rendered_template_keeps_its_structure_for_any_query() -> None:
    template = parse_json_template('{"query": {query}, "limit": {limit}, "note": "{limit} max"}', "--http-body")
    hostile = '"}, "limit": 999, "x": {"'
    assert render_json_template(template, hostile, 5) == {"query": hostile, "limit": 5, "note": "5 max"}


@pytest.mark.parametrize(
    ("query", "literal"),
    [("it's", "'it''s'"), ("plain", "'plain'"), ("''", "''''''"), ('a "b" \\ c; --', "'a \"b\" \\ c; --'")],
)
def test_query_sql_is_the_query_as_one_sql_string_literal(query: str, literal: str) -> None:
    assert substitute_placeholders("WHERE q = {query_sql} LIMIT {limit}", query, 3) == f"WHERE q = {literal} LIMIT 3"


@pytest.mark.parametrize("query", ["it's", "'; DROP TABLE docs; --", 'a "b" \\n', "ünï'cödé'' ' "])
def test_sqlite_reads_query_sql_back_as_exactly_the_query(query: str) -> None:
    import sqlite3

    with sqlite3.connect(":memory:") as connection:
        assert connection.execute(substitute_placeholders("SELECT {query_sql}", query, 1)).fetchone() == (query,)
