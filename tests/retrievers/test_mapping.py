"""The response mapping shared by the http and command retrievers, and the template rules."""

from __future__ import annotations

import pytest

from scanner.foundation.errors import InputError
from scanner.retrievers.base import Hit, SearchRequest
from scanner.retrievers.mapping import (
    ErrorContext,
    ResponseMapping,
    map_response,
    redact_url,
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
        ({"path": "a.md", "score": "0.5"}, "score is a string"),
        ({"path": "a.md", "score": True}, "score is a boolean"),
        ({"path": "a.md", "score": float("nan")}, "not a finite number"),
        ("a.md", "hit 0 is a string"),
    ],
)
def test_a_hit_field_of_the_wrong_type_is_refused(hit: object, complaint: str) -> None:
    assert complaint in refusal([hit])


def test_a_null_heading_or_score_means_none_given() -> None:
    assert mapped([{"path": "a.md", "heading": None, "score": None}]) == [Hit(1, "a.md", "", None)]


@pytest.mark.parametrize("path", ["/srv/kb/a.md", "C:\\kb\\a.md", "https://kb.example/a.md"])
def test_an_absolute_path_or_url_without_a_matching_prefix_is_refused(path: str) -> None:
    assert "--path-prefix-strip" in refusal([{"path": path}])


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
