"""The Elasticsearch/OpenSearch recipe of docs/retrievers.md checked against Elastic's published
API specification (the fields it uses, extracted into tests/fixtures/elasticsearch-spec/search.json):
the request body, where the hits are, the error and partial-result shapes kb-eval reads."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

from scanner.foundation.errors import InputError
from scanner.retrievers.base import NoteKind, SearchRequest
from scanner.retrievers.mapping import ErrorContext, Notes, ResponseMapping, map_response, partial_result
from scanner.retrievers.templates import parse_json_template, render_json_template
from tests.support.engines import recipes

SPEC = json.loads((Path(__file__).parents[1] / "fixtures" / "elasticsearch-spec" / "search.json").read_text())
REQUEST = SearchRequest("q1", "roll back", 3)


def recipe_flags() -> dict[str, str]:
    argv = shlex.split(recipes()["elasticsearch"].replace("\\\n", " "))
    return {argv[i]: argv[i + 1] for i in range(1, len(argv) - 1) if argv[i].startswith("--")}


def mapping() -> ResponseMapping:
    flags = recipe_flags()
    return ResponseMapping(flags["--hits-path"], flags["--path-field"], flags["--heading-field"], flags["--score-field"],
                           (flags["--path-prefix-strip"],))


def test_the_request_body_uses_only_fields_of_the_search_request() -> None:
    body = render_json_template(parse_json_template(recipe_flags()["--http-body"], "--http-body"), "roll back", 3)
    assert isinstance(body, dict)
    assert set(body) <= set(SPEC["search_request_body"])
    assert body["size"] == 3  # an integer, as the body's `size` is
    assert set(body["query"]["multi_match"]) <= set(SPEC["multi_match_query"])
    assert body["query"]["multi_match"]["query"] == "roll back"


def spec_hit(path: str, score: float | None) -> dict[str, object]:
    hit: dict[str, object] = {name: "x" for name in SPEC["hit"]["required"]}
    hit.update({"_score": score, "_source": {"path": path, "title": "Database"}})
    return hit


def spec_answer(hits: list[dict[str, object]], **overrides: object) -> dict[str, object]:
    answer: dict[str, object] = {
        "took": 3, "timed_out": False, "_shards": {"failed": 0, "successful": 1, "total": 1},
        "hits": {"hits": hits, "max_score": None},
    }
    assert set(answer) == set(SPEC["response_body"]["required"])
    assert set(answer["_shards"]) == set(SPEC["shard_statistics"]["required"])  # type: ignore[arg-type]
    answer.update(overrides)
    return answer


def test_the_hits_and_fields_the_recipe_reads_are_where_the_specification_puts_them() -> None:
    assert mapping().hits_path == "hits.hits" and "hits" in SPEC["hits_metadata"]["required"]
    assert mapping().score_field in SPEC["hit"]["optional"] and mapping().path_field.split(".")[0] in SPEC["hit"]["optional"]
    answer = spec_answer([spec_hit("/srv/kb/guides/deploy.md", 2.5), spec_hit("/srv/kb/faq.md", None)])
    hits = map_response(answer, mapping(), REQUEST, ErrorContext("es"))
    assert [(hit.path, hit.heading, hit.score) for hit in hits] == [("guides/deploy.md", "Database", 2.5), ("faq.md", "Database", None)]


def test_an_error_answer_shaped_as_specified_shows_the_root_cause_reason() -> None:
    cause = {"type": "query_shard_exception", "reason": "Failed to parse query [roll AND]", "root_cause": []}
    error = {"type": "search_phase_execution_exception", "reason": "all shards failed", "root_cause": [cause]}
    assert set(SPEC["error_cause"]["required"]) <= set(error)
    answer = {"error": error, "status": 400}
    assert set(answer) == set(SPEC["error_response"]["required"])
    try:
        map_response(answer, mapping(), REQUEST, ErrorContext("es"))
    except InputError as refused:
        assert "Failed to parse query [roll AND]" in str(refused)
    else:
        raise AssertionError("an error answer was read as hits")


def test_the_routing_layer_error_as_text_is_shown_too() -> None:
    try:
        map_response({"error": "no handler found for uri [/kb/_serch]", "status": 400}, mapping(), REQUEST, ErrorContext("es"))
    except InputError as refused:
        assert "no handler found" in str(refused)


def test_partial_results_shaped_as_specified_are_noted() -> None:
    failure = {"shard": 0, "reason": {"type": "x", "reason": "node left", "root_cause": []}}
    assert set(SPEC["shard_failure"]["required"]) <= set(failure)
    answer = spec_answer(
        [spec_hit("/srv/kb/a.md", 1.0)], timed_out=True,
        _shards={"failed": 1, "successful": 1, "total": 2, "failures": [failure]},
        _clusters={"total": 2, "successful": 1, "skipped": 1, "running": 0, "partial": 0, "failed": 0},
    )
    notes = Notes()
    map_response(answer, mapping(), REQUEST, ErrorContext("es", notes=notes))
    assert [note.kind for note in notes.items()] == [NoteKind.PARTIAL]
    assert notes.items()[0].detail == "timed_out is true; 1 of 2 shards failed (node left); 1 cluster(s) skipped"
    assert partial_result(spec_answer([])) is None
