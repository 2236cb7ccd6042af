"""Golden files a pull request can write: every refusal is exit 2 naming the file, line and field."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scanner.foundation.errors import InputError
from scanner.golden.file import (
    MAX_GOLDEN_BYTES,
    MAX_GOLDEN_NODES,
    MAX_QUERIES,
    MAX_QUERY_CHARS,
    MAX_RANKED_HITS,
    load_golden,
)
from tests.conftest import write_tree
from tests.hostile.support import ANSWER, GOLDEN, refused, run_json

MIB = 1024 * 1024

WRONG_SHAPES = [
    pytest.param('- a\n- b\n', 1, 'the top level', 'the top level must be a mapping', id='top-level-list'),
    pytest.param('just text\n', 1, 'the top level', 'the top level must be a mapping', id='top-level-scalar'),
    pytest.param('42\n', 1, 'the top level', 'the top level must be a mapping', id='top-level-int'),
    pytest.param('queries:\n  a: b\n', 2, 'queries', '`queries` must be a non-empty list', id='queries-mapping'),
    pytest.param('queries: alpha\n', 1, 'queries', '`queries` must be a non-empty list', id='queries-string'),
    pytest.param('queries: []\n', 1, 'queries', '`queries` must be a non-empty list', id='queries-empty'),
    pytest.param('queries:\n', 1, 'queries', '`queries` must be a non-empty list', id='queries-null'),
    pytest.param('queries:\n  - alpha beta\n', 2, 'queries[0]', 'queries[0] must be a mapping', id='query-a-string'),
    pytest.param('queries:\n  - [alpha, beta]\n', 2, 'queries[0]', 'queries[0] must be a mapping', id='query-a-list'),
    pytest.param('queries:\n  - query: [alpha]\n    expected: [a.md]\n', 2, 'queries[0].query', 'queries[0].query must be a string', id='query-text-a-list'),
    pytest.param('queries:\n  - query: 42\n    expected: [a.md]\n', 2, 'queries[0].query', 'queries[0].query must be a string', id='query-text-an-int'),
    pytest.param('queries:\n  - id: q\n    expected: [a.md]\n', 2, 'queries[0].query', 'missing `query`', id='query-text-missing'),
    pytest.param('queries:\n  - id: [q]\n    query: alpha beta\n    expected: [a.md]\n', 2, 'queries[0].id', 'queries[0].id must be a string', id='id-a-list'),
    pytest.param('queries:\n  - id: true\n    query: alpha beta\n    expected: [a.md]\n', 2, 'queries[0].id', 'queries[0].id must be a string', id='id-a-bool'),
    pytest.param('queries:\n  - id: q\n    query: alpha beta\n', 2, 'queries[q].expected', 'missing `expected`', id='expected-missing'),
    pytest.param('queries:\n  - id: q\n    query: alpha beta\n    expected: a.md\n', 4, 'queries[q].expected', '`expected` must be a list', id='expected-a-string'),
    pytest.param('queries:\n  - id: q\n    query: alpha beta\n    expected:\n', 4, 'queries[q].expected', '`expected` must be a list', id='expected-null'),
    pytest.param('queries:\n  - id: q\n    query: alpha beta\n    expected: {path: a.md}\n', 4, 'queries[q].expected', '`expected` must be a list', id='expected-a-mapping'),
    pytest.param('queries:\n  - id: q\n    query: alpha beta\n    expected:\n      - [a.md]\n', 5, 'queries[q].expected[0]', 'queries[q].expected[0] must be a mapping', id='expected-entry-a-list'),
    pytest.param('queries:\n  - id: q\n    query: alpha beta\n    expected:\n      - heading: Intro\n', 5, 'queries[q].expected[0].path', 'missing `path`', id='expected-entry-without-path'),
    pytest.param('queries:\n  - id: q\n    query: alpha beta\n    expected:\n      - path: 3\n', 5, 'queries[q].expected[0].path', 'queries[q].expected[0].path must be a string', id='path-an-int'),
    pytest.param('queries:\n  - id: q\n    query: alpha beta\n    expected:\n      - /etc/passwd\n', 5, 'queries[q].expected[0].path', "`path` '/etc/passwd' is absolute", id='path-absolute'),
    pytest.param('queries:\n  - id: q\n    query: alpha beta\n    expected:\n      - ../outside.md\n', 5, 'queries[q].expected[0].path', "`path` '../outside.md' contains `..`", id='path-dotdot'),
    pytest.param("queries:\n  - id: q\n    query: alpha beta\n    expected:\n      - 'C:\\x.md'\n", 5, 'queries[q].expected[0].path', "`path` 'C:\\\\x.md' is absolute", id='path-windows-absolute'),
    pytest.param('queries:\n  - id: q\n    query: alpha beta\n    expected:\n      - path: a.md\n        heading: 3\n', 6, 'queries[q].expected[0].heading', 'queries[q].expected[0].heading must be a string', id='heading-an-int'),
    pytest.param('queries:\n  - id: q\n    query: alpha beta\n    expected: [a.md]\n    tags: ops\n', 5, 'queries[q].tags', '`tags` must be a list of strings', id='tags-a-string'),
    pytest.param('queries:\n  - id: q\n    query: alpha beta\n    expected: [a.md]\n    tags: [{a: b}]\n', 5, 'queries[q].tags', 'queries[q].tags must be a string', id='tags-holding-a-mapping'),
    pytest.param('querys: []\n', 1, 'the top level.querys', "unknown key 'querys' in the top level", id='unknown-top-level-key'),
    pytest.param('queries:\n  - id: q\n    query: alpha beta\n    expected: [a.md]\n    limit: 3\n', 5, 'queries[0].limit', "unknown key 'limit' in queries[0]", id='unknown-query-key'),
    pytest.param('queries:\n  - 1: x\n', 2, 'queries[0]', 'queries[0] has a key that is not a string', id='non-string-key'),
    pytest.param('queries:\n  - id: q\n    query: alpha beta\n    expected: [a.md]\n    query: again\n', 5, 'queries[0].query', "key 'query' appears twice in queries[0]", id='duplicate-key'),
    pytest.param('defaults: [1]\nqueries:\n  - id: q\n    query: alpha beta\n    expected: [a.md]\n', 1, 'defaults', 'defaults must be a mapping', id='defaults-a-list'),
    pytest.param('defaults: {limit: ten}\nqueries:\n  - id: q\n    query: alpha beta\n    expected: [a.md]\n', 1, 'defaults.limit', 'defaults.limit must be an integer from 1 to 1000', id='defaults-limit-a-string'),
    pytest.param('defaults: {limit: 0}\nqueries:\n  - id: q\n    query: alpha beta\n    expected: [a.md]\n', 1, 'defaults.limit', 'defaults.limit must be an integer from 1 to 1000', id='defaults-limit-zero'),
    pytest.param('defaults: {rerank: yes please}\nqueries:\n  - id: q\n    query: alpha beta\n    expected: [a.md]\n', 1, 'defaults.rerank', 'defaults.rerank must be true or false', id='defaults-rerank-a-string'),
    pytest.param("queries: !!python/object/apply:os.system ['touch /tmp/x']\n", 1, 'queries[0]', 'queries[0] must be a mapping', id='object-tag'),
    pytest.param('queries:\n  - query: !!binary aGVsbG8=\n    expected: [a.md]\n', 2, 'queries[0].query', 'queries[0].query must be a string', id='tagged-query-text'),
    pytest.param('queries: !!set {a, b}\n', 1, 'queries', '`queries` must be a non-empty list', id='set-tag'),
]


def golden_kb(tmp_path: Path, golden: str | bytes) -> Path:
    kb = write_tree(tmp_path / "kb", {"a.md": ANSWER})
    path = kb / ".kb-eval.yml"
    path.write_bytes(golden if isinstance(golden, bytes) else golden.encode("utf-8"))
    return kb


@pytest.mark.parametrize(("golden", "line", "field", "message"), WRONG_SHAPES)
def test_valid_yaml_of_the_wrong_shape_is_refused_naming_line_and_field(
    tmp_path: Path, golden: str, line: int, field: str, message: str
) -> None:
    stderr = refused(golden_kb(tmp_path, golden))
    assert f".kb-eval.yml:{line}: {message} (field: {field})" in stderr


def test_a_billion_laughs_golden_file_is_refused_at_the_first_alias(tmp_path: Path) -> None:
    laughs = ['a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    laughs += [f"{chr(98 + n)}: &{chr(98 + n)} [{','.join(['*' + chr(97 + n)] * 9)}]" for n in range(8)]
    stderr = refused(golden_kb(tmp_path, "\n".join(laughs) + "\nqueries: [*i]\n"))
    assert ".kb-eval.yml:2: not valid YAML: aliases (*name) are not accepted" in stderr


@pytest.mark.parametrize("opening", ["[", "{a: ", "- "], ids=["flow-sequence", "flow-mapping", "block-sequence"])
def test_a_golden_file_nested_thousands_deep_is_refused_not_a_recursion_error(tmp_path: Path, opening: str) -> None:
    closing = {"[": "]", "{a: ": "}", "- ": ""}[opening]
    if opening == "- ":
        nested = "".join("  " * n + "-\n" for n in range(600))
    else:
        nested = opening * 5_000 + "x" + closing * 5_000 + "\n"
    stderr = refused(golden_kb(tmp_path, "queries:\n" + nested if opening == "- " else "queries: " + nested))
    assert "not valid YAML: nested more than 50 levels deep" in stderr


@pytest.mark.parametrize(
    "tag",
    ["!!python/object/apply:os.system ['touch {marker}']", "!!python/object/new:os.system ['touch {marker}']",
     "!!python/name:os.system", "!!python/module:os"],
)
def test_tags_that_would_construct_objects_construct_nothing_and_are_refused(tmp_path: Path, tag: str) -> None:
    marker = tmp_path / "pwned"
    golden = f"queries:\n  - query: {tag.format(marker=marker)}\n    expected: [a.md]\n"
    stderr = refused(golden_kb(tmp_path, golden))
    assert not marker.exists()
    assert ".kb-eval.yml:2: queries[0].query must be a string (field: queries[0].query)" in stderr


def test_a_golden_file_over_the_byte_cap_is_refused_before_it_is_parsed(tmp_path: Path) -> None:
    golden = "queries:\n  - {query: alpha, expected: [a.md]}\n# " + "x" * MAX_GOLDEN_BYTES + "\n"
    assert len(golden) > MAX_GOLDEN_BYTES
    stderr = refused(golden_kb(tmp_path, golden))
    assert f".kb-eval.yml: golden file is {len(golden)} bytes, over the {MAX_GOLDEN_BYTES}-byte cap" in stderr


def test_a_golden_file_exactly_at_the_byte_cap_is_read(tmp_path: Path) -> None:
    golden = "queries:\n  - {id: q, query: alpha beta, expected: [a.md]}\n"
    _, report = run_json(golden_kb(tmp_path, golden.ljust(MAX_GOLDEN_BYTES - 1) + "\n"))
    assert report["aggregate"]["query_count"] == 1


@pytest.mark.slow
def test_a_golden_file_of_more_values_than_the_node_cap_is_refused_naming_the_cap(tmp_path: Path) -> None:
    # Two bytes a value: far under the byte cap, and each value would cost ~300 bytes composed.
    golden = "queries:\n  - {query: alpha, expected: [a.md]}\nfiller: [" + "a," * MAX_GOLDEN_NODES + "]\n"
    assert len(golden) < MAX_GOLDEN_BYTES
    stderr = refused(golden_kb(tmp_path, golden))
    assert f"not valid YAML: more than {MAX_GOLDEN_NODES} values" in stderr


@pytest.mark.slow
def test_one_query_over_the_query_count_cap_is_refused_naming_the_limit(tmp_path: Path) -> None:
    golden = "queries:\n" + "".join(f"  - {{query: q{n} alpha, expected: [a.md]}}\n" for n in range(MAX_QUERIES + 1))
    stderr = refused(golden_kb(tmp_path, golden))
    assert f".kb-eval.yml:2: {MAX_QUERIES + 1} queries is over the limit of {MAX_QUERIES} (field: queries)" in stderr


@pytest.mark.slow
def test_exactly_the_query_count_cap_runs(tmp_path: Path) -> None:
    golden = "queries:\n" + "".join(f"  - {{query: q{n} alpha, expected: [a.md]}}\n" for n in range(MAX_QUERIES))
    _, report = run_json(golden_kb(tmp_path, golden))
    assert report["aggregate"]["query_count"] == MAX_QUERIES and len(report["per_query"]) == MAX_QUERIES


@pytest.mark.parametrize("length", [MAX_QUERY_CHARS + 1, 1_000_000], ids=["one-over", "1MB"])
def test_a_query_over_the_length_cap_is_cut_with_a_warning_naming_its_line_and_the_run_goes_on(tmp_path: Path, length: int) -> None:
    golden = "queries:\n  - {id: ok, query: alpha beta, expected: [a.md]}\n" f"  - {{id: long, query: {'a' * length}, expected: [a.md]}}\n"
    result, report = run_json(golden_kb(tmp_path, golden))
    assert [len(q["query"]) for q in report["per_query"]] == [len("alpha beta"), MAX_QUERY_CHARS]
    assert report["aggregate"]["query_count"] == 2
    [cut] = [w for w in report["warnings"] if w["code"] == "query-cut"]
    assert (cut["file"].endswith(".kb-eval.yml"), cut["line"]) == (True, 3)
    assert f".kb-eval.yml:3: query 'long' is {length} characters; it is searched as its first {MAX_QUERY_CHARS}" in result.stderr


def test_a_query_exactly_at_the_length_cap_runs(tmp_path: Path) -> None:
    golden = f"queries:\n  - {{id: edge, query: {'alpha ' * (MAX_QUERY_CHARS // 6)}{'x' * (MAX_QUERY_CHARS % 6)}, expected: [a.md]}}\n"
    _, report = run_json(golden_kb(tmp_path, golden))
    assert len(report["per_query"][0]["query"]) == MAX_QUERY_CHARS


@pytest.mark.parametrize(
    "query",
    ['"?!.,;:"', '"*** --- ((( ))) ^^^ + : ~"', '"\\"\\"\\""', '"_ __ ___"', '"🙂🙂"'],
    ids=["punctuation", "fts5-operator-characters", "quotes", "underscores", "emoji"],
)
def test_a_query_with_nothing_to_search_for_is_refused_naming_its_id_and_line(tmp_path: Path, query: str) -> None:
    golden = f"queries:\n  - {{id: fine, query: alpha beta, expected: [a.md]}}\n  - id: bare\n    query: {query}\n    expected: [a.md]\n"
    stderr = refused(golden_kb(tmp_path, golden))
    assert ".kb-eval.yml:3: query 'bare' has no letters or digits to search for (field: queries[bare].query)" in stderr


def test_a_query_of_only_unicode_separators_is_refused_as_empty(tmp_path: Path) -> None:
    golden = 'queries:\n  - id: blank\n    query: "\\u2028 \\t\\u00a0"\n    expected: [a.md]\n'
    assert ".kb-eval.yml:3: `query` is empty (field: queries[0].query)" in refused(golden_kb(tmp_path, golden))


@pytest.mark.parametrize("query", ["AND OR NOT", "NEAR(a b)", "heading : body *", "-alpha +beta", "alpha*"])
def test_fts5_operator_words_are_searched_as_words_not_refused(tmp_path: Path, query: str) -> None:
    golden = f"queries:\n  - id: ops\n    query: {query!r}\n    expected: [a.md]\n".replace("'", '"')
    _, report = run_json(golden_kb(tmp_path, golden))
    assert report["per_query"][0]["query"] == query


def test_duplicate_ids_are_refused_naming_both_lines(tmp_path: Path) -> None:
    golden = "queries:\n  - {id: same, query: alpha, expected: [a.md]}\n  - {id: same, query: beta, expected: [a.md]}\n"
    stderr = refused(golden_kb(tmp_path, golden))
    assert ".kb-eval.yml:3: duplicate query id 'same' (first at line 2) (field: queries[same].id)" in stderr


def test_an_id_taken_from_the_query_text_that_collides_is_refused_too(tmp_path: Path) -> None:
    text = "alpha beta " * 4  # the first 32 characters become the id when there is none
    golden = f"queries:\n  - {{query: {text}one, expected: [a.md]}}\n  - {{query: {text}two, expected: [a.md]}}\n"
    stderr = refused(golden_kb(tmp_path, golden))
    assert "duplicate query id 'alpha beta alpha beta alpha beta' (first at line 2)" in stderr


@pytest.mark.parametrize(
    ("golden", "message"),
    [
        (b"queries:\n  - {query: caf\xe9, expected: [a.md]}\n", "not valid UTF-8 at byte 24"),
        (b"queries:\n  - {query: a\x00b, expected: [a.md]}\n", "not valid YAML"),
        (b"", "golden file is empty"),
        (b"# only a comment\n", "golden file is empty"),
        (b"queries: [\n", "not valid YAML"),
        (b"\tqueries: []\n", "not valid YAML"),
    ],
    ids=["latin1", "nul", "empty", "comment-only", "unclosed", "tab-indent"],
)
def test_unreadable_golden_bytes_are_refused_with_a_message(tmp_path: Path, golden: bytes, message: str) -> None:
    assert message in refused(golden_kb(tmp_path, golden))


@pytest.mark.parametrize("golden", [
    b"\xef\xbb\xbfqueries:\n  - {id: q, query: alpha beta, expected: [a.md]}\n",
    b"queries:\r\n  - id: q\r\n    query: alpha beta\r\n    expected: [a.md]\r\n",
], ids=["utf8-bom", "crlf"])
def test_a_bom_or_crlf_golden_file_loads(tmp_path: Path, golden: bytes) -> None:
    _, report = run_json(golden_kb(tmp_path, golden))
    assert report["per_query"][0]["id"] == "q" and report["per_query"][0]["line"] == 2


@pytest.mark.parametrize("path", ["c:d.md", "::set-output name=x::y.md", "c:/d/e.md".replace("/", ":", 1)])
def test_a_colon_in_an_expected_path_is_not_mistaken_for_a_windows_drive(tmp_path: Path, path: str) -> None:
    # `path[1] == ":"` refused `c:d.md` and `::x.md` as absolute, though both are files a KB can hold.
    kb = golden_kb(tmp_path, f"queries:\n  - id: q\n    query: alpha beta\n    expected: [{json.dumps(path)}]\n")
    (kb / path).parent.mkdir(parents=True, exist_ok=True)
    (kb / path).write_text(ANSWER, encoding="utf-8")
    _, report = run_json(kb)
    assert report["per_query"][0]["expected"] == [{"path": path, "heading": None, "grade": 1}]
    assert report["warnings"] == []  # the path names an indexed document
    assert path in [hit["path"] for hit in report["per_query"][0]["top_k"]]


@pytest.mark.parametrize("path", ["C:\\\\x.md", "c:/x.md", "/etc/passwd", "\\\\\\\\server\\\\share.md"])
def test_absolute_expected_paths_of_either_os_are_refused(tmp_path: Path, path: str) -> None:
    kb = golden_kb(tmp_path, f"queries:\n  - id: q\n    query: alpha beta\n    expected: [{json.dumps(path)}]\n")
    assert f"`path` {path!r} is absolute" in refused(kb)


def test_an_empty_expected_list_is_reported_and_left_out_of_the_aggregate(tmp_path: Path) -> None:
    golden = "queries:\n  - {id: q1, query: alpha beta, expected: [a.md]}\n  - {id: none, query: alpha, expected: []}\n"
    _, report = run_json(golden_kb(tmp_path, golden))
    assert [(q["id"], q["expected"], q["metrics"]["reciprocal_rank"]) for q in report["per_query"]] == [("q1", [{"path": "a.md", "heading": None, "grade": 1}], 1.0), ("none", [], 0.0)]
    assert (report["aggregate"]["query_count"], report["aggregate"]["mrr"]) == (1, 1.0)


@pytest.mark.parametrize(
    "value",
    ["0x10", "1:30", "190:20:30", "0b1010", "1_0", "9" * 5000, "0x" + "f" * 5000, "1" + "_0" * 3000, ".inf", "1e3"],
    ids=["hex", "sexagesimal", "sexagesimal-3", "binary", "underscore", "5000-digits", "5000-hex-digits", "underscored-digits", "inf", "exponent"],
)
def test_a_yaml_1_1_integer_as_the_limit_is_exit_2_naming_file_line_and_field(tmp_path: Path, value: str) -> None:
    golden = f"queries:\n  - {{id: q, query: alpha beta, expected: [a.md]}}\ndefaults:\n  limit: {value}\n"
    stderr = refused(golden_kb(tmp_path, golden))
    assert ".kb-eval.yml:4: defaults.limit must be an integer from 1 to 1000 (field: defaults.limit)" in stderr


@pytest.mark.parametrize("value", ["0x10", "1:30", "9" * 5000], ids=["hex", "sexagesimal", "5000-digits"])
def test_a_yaml_1_1_integer_as_an_id_is_kept_as_written(tmp_path: Path, value: str) -> None:
    golden = f"queries:\n  - {{id: {value}, query: alpha beta, expected: [a.md]}}\n"
    _, report = run_json(golden_kb(tmp_path, golden))
    assert report["per_query"][0]["id"] == value


@pytest.mark.parametrize(
    ("slot", "line", "field"),
    [
        ('query: "alpha \\ud800"', 3, "queries[0].query"),
        ('tags: ["\\udbff"]', 3, "queries[q].tags"),
        ('expected: ["a\\udc00.md"]', 3, "queries[q].expected[0].path"),
    ],
    ids=["query", "tag", "path"],
)
def test_a_lone_surrogate_escape_is_exit_2_naming_file_line_and_field(tmp_path: Path, slot: str, line: int, field: str) -> None:
    golden = f"queries:\n  - id: q\n    {slot}\n    query: alpha beta\n    expected: [a.md]\n"
    golden = golden.replace("    query: alpha beta\n", "", 1) if slot.startswith("query") else golden
    golden = golden.replace("    expected: [a.md]\n", "", 1) if slot.startswith("expected") else golden
    stderr = refused(golden_kb(tmp_path, golden))
    assert f".kb-eval.yml:{line}: {field} holds a lone surrogate escape" in stderr and f"(field: {field})" in stderr


# --- Fuzz: golden files of the right shape, with hostile scalars in every slot ---------------------

_HOSTILE_SCALAR = st.one_of(
    st.sampled_from(["0x10", "1:30", "0b11", "0o17", "012", "1_000", "+12", "-0", ".inf", ".nan", "~", "null", "yes", "on", "''", '""']),
    st.integers(min_value=0, max_value=6000).map(lambda n: "9" * n or "0"),
    st.lists(st.sampled_from(["\\ud800", "\\udfff", "\\ud83d\\ude00", "\\U0001F600", "\\x41", "\\0", "\\N", "\\_", "a", " ", "::", "##["]), max_size=6).map(lambda parts: '"' + "".join(parts) + '"'),
    st.text(st.characters(blacklist_categories=["Cs"]), max_size=20).map(json.dumps),
)


def _slot(valid: str) -> st.SearchStrategy[str]:
    """Half the time a value that loads, so that the slots after it are reached too."""
    return st.one_of(st.just(valid), _HOSTILE_SCALAR)


@settings(max_examples=300, deadline=None)
@given(_slot("10"), _slot("q"), _slot("alpha beta"), _slot("a.md"), _slot("Intro"), _slot("t"))
def test_any_hostile_scalar_in_any_slot_loads_or_is_an_input_error_naming_the_line(
    limit: str, query_id: str, text: str, path: str, heading: str, tag: str
) -> None:
    golden = (
        f"defaults:\n  limit: {limit}\nqueries:\n  - id: {query_id}\n    query: {text}\n"
        f"    expected:\n      - path: {path}\n        heading: {heading}\n    tags: [{tag}]\n"
    )
    with tempfile.TemporaryDirectory() as folder:
        file = Path(folder) / "golden.yml"
        file.write_text(golden, encoding="utf-8")
        try:
            loaded = load_golden(file, shown="golden.yml")
        except InputError as error:
            assert error.file == "golden.yml" and error.line is not None
            str(error).encode("utf-8")
            return
    # Whatever loaded can be written out: no half of a surrogate pair survives the loader.
    for query in loaded.queries:
        for value in (query.id, query.text, *query.tags, *(e.path for e in query.expected), *(e.heading or "" for e in query.expected)):
            value.encode("utf-8")
    assert loaded.default_limit is None or 1 <= loaded.default_limit <= 1000


def test_a_pull_request_adding_a_golden_file_beside_the_kept_one_stops_the_run_naming_both(tmp_path: Path) -> None:
    broken = GOLDEN.replace("alpha beta", "zeta")  # the PR broke q1 in the file the repository keeps
    kb = write_tree(tmp_path / "kb", {"a.md": ANSWER, ".kb-mcp-eval.yml": broken, ".kb-eval.yml": GOLDEN})
    stderr = refused(kb)
    assert ".kb-mcp-eval.yml" in stderr and ".kb-eval.yml" in stderr and "--golden" in stderr
    # The near miss: the repository's own file alone is read as always.
    (kb / ".kb-eval.yml").unlink()
    _, report = run_json(kb, "--no-history")
    assert report["aggregate"]["mrr"] == 0.0


def _many_queries(count: int, limit: int) -> str:
    lines = ["defaults:", f"  limit: {limit}", "queries:"]
    for n in range(count):
        lines += [f"  - id: q{n}", '    query: "alpha beta"', "    expected: [a.md]"]
    return "\n".join(lines) + "\n"


def test_queries_times_limit_past_the_cap_is_exit_2_naming_where_the_limit_comes_from(tmp_path: Path) -> None:
    # 1,000 queries at defaults.limit 1000 were 113 s, 1.5 GB and a 140 MB report.
    kb = write_tree(tmp_path / "kb", {"a.md": ANSWER, ".kb-eval.yml": _many_queries(MAX_RANKED_HITS // 1000 + 1, 1000)})
    stderr = refused(kb)
    assert "defaults.limit" in stderr and ".kb-eval.yml" in stderr and f"over the {MAX_RANKED_HITS}" in stderr
    stderr = refused(kb, "--limit", "999")
    assert "--limit" in stderr and "defaults.limit" not in stderr


def test_queries_times_limit_at_the_cap_runs(tmp_path: Path) -> None:
    kb = write_tree(tmp_path / "kb", {"a.md": ANSWER, ".kb-eval.yml": _many_queries(MAX_RANKED_HITS // 1000, 1000)})
    _, report = run_json(kb, "--no-history")
    assert report["fingerprint"]["limit"] == 1000 and len(report["per_query"]) == MAX_RANKED_HITS // 1000
