"""Property tests for every parser of untrusted files and answers this package owns: frontmatter,
run files (TREC and JSONL), HTTP/command answers, history and baseline.

The property is the same for each: the result, or an InputError (exit 2), never another exception
(which would be exit 3 with a traceback). Inputs mix arbitrary JSON, arbitrary text and bytes, and
values known to break parsers (deep nesting, huge numbers, NaN, superscript digits, lone
surrogates, line separators).
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from scanner.corpus.reader import build_document
from scanner.foundation.diagnostics import Diagnostics
from scanner.foundation.errors import InputError
from scanner.foundation.strict_json import NotJson, loads_strict
from scanner.report.baseline import read_baseline
from scanner.report.document import validation_errors as iter_validation_errors
from scanner.report.history import read_history
from scanner.retrievers.base import SearchRequest
from scanner.retrievers.mapping import ErrorContext, ResponseMapping, map_response
from scanner.retrievers.runfile import RunFileRetriever
from tests.support.history import record_run
from tests.support.run_records import make_run

FUZZ = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])

_SCALARS = st.one_of(
    st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=12), st.sampled_from(["a.md", "/abs/a.md", "https://x/a.md", "", "\u2028", "\xb2", "::x"]),
)
JSON = st.recursive(
    _SCALARS,
    lambda inner: st.one_of(
        st.lists(inner, max_size=5),
        st.dictionaries(st.sampled_from(["results", "path", "heading", "score", "hits", "id", "k", "x"]) | st.text(max_size=5),
                        inner, max_size=5),
    ),
    max_leaves=25,
)
_NASTY = st.sampled_from([
    "[" * 5000, "[" * 100_000 + "]" * 100_000, "9" * 5000, "-" + "9" * 400, "1e400", "NaN", "-Infinity",
    '"\\ud800"', '"\\udc00x"', "\ufeff{}", "{\"results\": [{\"path\": \"a.md\", \"score\": " + "9" * 400 + "}]}",
])


def _json_text(value: Any) -> str:
    return json.dumps(value)


ANSWER_TEXT = st.one_of(JSON.map(_json_text), _NASTY, st.text(max_size=60))
REQUEST = SearchRequest(query_id="q1", text="alpha", limit=5)


@FUZZ
@given(ANSWER_TEXT, st.sampled_from([None, "results", "hits.hits", "0"]))
def test_any_answer_maps_to_hits_or_is_an_input_error(text: str, hits_path: str | None) -> None:
    try:
        body = loads_strict(text.encode("utf-8", "surrogatepass"))
    except NotJson:
        return
    try:
        hits = map_response(body, ResponseMapping(hits_path=hits_path), REQUEST, ErrorContext("fuzz"))
    except InputError:
        return
    assert len(hits) <= REQUEST.limit and all(not hit.path.startswith("/") for hit in hits)


_FILES = tempfile.TemporaryDirectory(prefix="kb-eval-fuzz-")
"""Every example's file lives under one folder, removed when the test process ends (an example
per folder under /tmp left thousands behind each run)."""


def _with_file(name: str, data: bytes) -> Path:
    folder = Path(tempfile.mkdtemp(dir=_FILES.name))
    path = folder / name
    path.write_bytes(data)
    return path


_TREC_LINE = st.lists(
    st.one_of(st.sampled_from(["q1", "Q0", "a.md", "a.md#H%20x", "1", "1.5", "nan", "1e400", "\xb2", "#"]), st.text(max_size=6)),
    max_size=8,
).map(" ".join)
_JSONL_LINE = st.one_of(
    st.fixed_dictionaries({"id": st.sampled_from(["q1", "q2", 1, True]), "hits": JSON}).map(_json_text),
    JSON.map(_json_text), _NASTY,
)


@FUZZ
@given(st.lists(_TREC_LINE, max_size=8), st.sampled_from(["\n", "\r\n", "\r", "\u2028"]))
def test_any_trec_run_loads_or_is_an_input_error(lines: list[str], newline: str) -> None:
    path = _with_file("run.trec", newline.join(lines).encode("utf-8", "surrogatepass"))
    try:
        RunFileRetriever(path).search_all([REQUEST])
    except InputError:
        pass


@FUZZ
@given(st.lists(_JSONL_LINE, max_size=6))
def test_any_jsonl_run_loads_or_is_an_input_error(lines: list[str]) -> None:
    path = _with_file("run.jsonl", "\n".join(lines).encode("utf-8", "surrogatepass"))
    try:
        RunFileRetriever(path).search_all([REQUEST])
    except InputError:
        pass


@FUZZ
@given(st.binary(max_size=300))
def test_any_bytes_as_a_run_file_load_or_are_an_input_error(data: bytes) -> None:
    try:
        RunFileRetriever(_with_file("run", data)).search_all([REQUEST])
    except InputError:
        pass


def _history_with(runs: Any) -> str:
    return json.dumps({"format": "kb-eval-history", "schema_version": 1, "runs": runs}, separators=(",", ":"))


def _mutated_run(changes: dict[str, Any]) -> Any:
    run = make_run()
    run.update(changes)
    return run


HISTORY_TEXT = st.one_of(
    st.lists(st.one_of(JSON, st.dictionaries(st.sampled_from(["aggregate", "per_query", "corpus", "timestamp"]), JSON,
                                             max_size=3).map(_mutated_run)), max_size=4).map(_history_with),
    JSON.map(_json_text), _NASTY, st.text(max_size=40),
)


@FUZZ
@given(HISTORY_TEXT)
def test_any_history_reads_and_saves_or_is_an_input_error(text: str) -> None:
    path = _with_file("history.json", text.encode("utf-8", "surrogatepass"))
    before = path.read_bytes()
    try:
        read_history(path)
    except InputError:
        assert path.read_bytes() == before  # refused and left untouched
        return
    try:
        record_run(path, make_run(timestamp="2026-12-03T00:00:00Z"))
    except InputError:
        return
    assert read_history(path).documents[0]["timestamp"] == "2026-12-03T00:00:00Z"


@FUZZ
@given(st.one_of(
    st.dictionaries(st.sampled_from(["aggregate", "per_query", "corpus", "fingerprint", "x"]), JSON, max_size=3)
    .map(_mutated_run).map(_json_text),
    JSON.map(_json_text), _NASTY,
))
def test_any_baseline_reads_or_is_an_input_error(text: str) -> None:
    try:
        read_baseline(_with_file("baseline.json", text.encode("utf-8", "surrogatepass")), iter_validation_errors)
    except InputError:
        pass


_YAML_TEXT = st.lists(
    st.one_of(st.sampled_from(["title: ", "title:", "- ", "{", "}", "[", "]", "&a ", "*a", "!!python/object ", "0x10",
                               "1:30", "'", '"\\ud800"', "\n", "  ", "---", "...", "#", "? ", "|\n", "<<: *a\n"]),
              st.text(max_size=8)),
    max_size=30,
).map("".join)


@FUZZ
@given(_YAML_TEXT, st.text(max_size=40))
def test_any_frontmatter_builds_a_document_with_warnings_never_an_exception(block: str, body: str) -> None:
    diagnostics = Diagnostics()
    document = build_document("notes/x.md", f"---\n{block}\n---\n{body}", diagnostics)
    assert document.path == "notes/x.md" and document.title
    assert all(item.code == "frontmatter-invalid" for item in diagnostics.items)
