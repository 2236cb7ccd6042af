"""The golden loader: format, errors that name file, line and field, and what is refused."""

from __future__ import annotations

from pathlib import Path

import pytest

from scanner.foundation.errors import InputError
from scanner.golden.file import (
    MAX_GOLDEN_BYTES,
    MAX_QUERY_CHARS,
    _plain_decimal,
    cut_query,
    find_golden,
    load_golden,
)


def load(tmp_path: Path, text: str):  # type: ignore[no-untyped-def]
    path = tmp_path / "golden.yml"
    path.write_text(text, encoding="utf-8")
    return load_golden(path, shown="golden.yml")


def error_of(tmp_path: Path, text: str) -> InputError:
    with pytest.raises(InputError) as caught:
        load(tmp_path, text)
    return caught.value


def test_a_full_golden_file_loads_with_lines_ids_tags_and_defaults(tmp_path: Path) -> None:
    golden = load(
        tmp_path,
        "defaults:\n  limit: 5\n  rerank: false\nqueries:\n"
        "  - id: a\n    query: first question\n    expected:\n      - path: x.md\n        heading: Intro\n    tags: [t]\n"
        "  - query: a question without an id that is longer than thirty-two characters\n    expected: [y.md]\n",
    )
    assert golden.default_limit == 5
    first, second = golden.queries
    assert (first.id, first.line, first.tags) == ("a", 5, ("t",))
    assert (first.expected[0].path, first.expected[0].heading, first.expected[0].line) == ("x.md", "Intro", 8)
    assert second.id == "a question without an id that is" and len(second.id) == 32
    assert second.expected[0].path == "y.md" and second.expected[0].heading is None
    assert len(golden.sha256) == 64


@pytest.mark.parametrize(
    ("text", "line", "field", "words"),
    [
        ("queries:\n  - query: q\n    expected: [a.md]\n    colour: red\n", 4, "queries[0].colour", "unknown key"),
        ("queries:\n  - id: x\n    query: '  '\n    expected: [a.md]\n", 3, "queries[0].query", "empty"),
        ("queries:\n  - id: x\n    query: q\n    expected: a.md\n", 4, "queries[x].expected", "must be a list"),
        ("queries:\n  - id: x\n    query: q\n    expected: [/etc/passwd]\n", 4, "queries[x].expected[0].path", "absolute"),
        ("queries:\n  - id: x\n    query: q\n    expected:\n      - path: a/../../b.md\n", 5, "queries[x].expected[0].path", ".."),
        ("queries:\n  - {id: x, query: q, expected: [a.md]}\n  - {id: x, query: r, expected: [a.md]}\n", 3, "queries[x].id", "duplicate"),
        ("queries:\n  - id: x\n    query: [not, text]\n    expected: [a.md]\n", 3, "queries[0].query", "string"),
        ("queries: {}\n", 1, "queries", "list"),
        ("defaults:\n  limit: many\nqueries: []\n", 2, "defaults.limit", "integer"),
        ("queries:\n  - id: x\n    query: q\n    expected:\n      - {path: a.md, weight: 2}\n", 5, "queries[x].expected[0].weight", "unknown key"),
        ("queries:\n  - id: x\n    query: q\n", 2, "queries[x].expected", "missing"),
        ("extra: 1\nqueries: []\n", 1, "the top level.extra", "unknown key"),
    ],
)
def test_each_shape_error_names_the_field_and_the_line(tmp_path: Path, text: str, line: int, field: str, words: str) -> None:
    error = error_of(tmp_path, text)
    assert (error.file, error.line, error.field) == ("golden.yml", line, field)
    assert words in error.message


def test_yaml_syntax_errors_name_the_line(tmp_path: Path) -> None:
    error = error_of(tmp_path, "queries:\n  - id: x\n    query: 'unclosed\n")
    assert error.file == "golden.yml" and error.line is not None and "YAML" in error.message


def test_aliases_are_refused_so_a_billion_laughs_costs_nothing(tmp_path: Path) -> None:
    bomb = "a: &a [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n" + "".join(
        f"{chr(98 + i)}: &{chr(98 + i)} [" + ", ".join([f"*{chr(97 + i)}"] * 9) + "]\n" for i in range(8)
    )
    error = error_of(tmp_path, bomb + "queries: []\n")
    assert "aliases" in error.message and error.line == 2


def test_tags_that_would_construct_objects_are_refused(tmp_path: Path) -> None:
    error = error_of(tmp_path, "queries:\n  - id: x\n    query: !!python/object/apply:os.system ['true']\n    expected: [a.md]\n")
    assert error.line == 3 and "string" in error.message


def test_an_over_long_query_is_cut_to_the_limit_with_a_warning_naming_its_line(tmp_path: Path) -> None:
    golden = load(tmp_path, f"queries:\n  - id: x\n    query: {'a' * (MAX_QUERY_CHARS + 1)}\n    expected: [a.md]\n")
    [query] = golden.queries
    assert (query.text, query.cut_from_chars) == ("a" * MAX_QUERY_CHARS, MAX_QUERY_CHARS + 1)
    [warning] = golden.warnings
    assert (warning.code, warning.file, warning.line) == ("query-cut", "golden.yml", 2)
    assert f"query 'x' is {MAX_QUERY_CHARS + 1} characters; it is searched as its first {MAX_QUERY_CHARS}" in warning.message


def test_a_query_exactly_at_the_length_limit_loads_uncut_and_without_a_warning(tmp_path: Path) -> None:
    golden = load(tmp_path, f"queries:\n  - id: x\n    query: {'a' * MAX_QUERY_CHARS}\n    expected: [a.md]\n")
    assert len(golden.queries[0].text) == MAX_QUERY_CHARS
    assert (golden.queries[0].cut_from_chars, golden.warnings) == (None, ())


def test_a_cut_that_ends_between_words_drops_the_trailing_space() -> None:
    text = "a" * (MAX_QUERY_CHARS - 1) + " tail"
    assert cut_query(text) == "a" * (MAX_QUERY_CHARS - 1)
    assert cut_query("short query ") == "short query "


def test_an_explicit_null_in_an_optional_field_means_the_field_is_absent_as_in_kb_mcp(tmp_path: Path) -> None:
    golden = load(
        tmp_path,
        "defaults:\n  limit: null\n  rerank:\nqueries:\n"
        "  - id: null\n    query: first question\n    expected:\n      - {path: x.md, heading: null}\n    tags:\n",
    )
    [query] = golden.queries
    assert (golden.default_limit, query.id, query.expected[0].heading, query.tags) == (None, "first question", None, ())
    assert load(tmp_path, "defaults:\nqueries:\n  - {query: q, expected: [a.md]}\n").default_limit is None
    # Required fields stay required: null is not a list of queries or of expected documents.
    assert error_of(tmp_path, "queries:\n  - {id: x, query: q, expected: null}\n").field == "queries[x].expected"
    assert error_of(tmp_path, "queries:\n  - {id: x, query: null, expected: []}\n").field == "queries[0].query"


def test_expected_may_be_an_empty_list_as_kb_mcp_allows_but_not_missing(tmp_path: Path) -> None:
    golden = load(tmp_path, "queries:\n  - id: x\n    query: q\n    expected: []\n")
    assert golden.queries[0].expected == ()
    assert error_of(tmp_path, "queries:\n  - id: x\n    query: q\n").field == "queries[x].expected"


@pytest.mark.parametrize("value", ["0x10", "1:30", "0b11", "0o17", "1_000", "012_0", "9" * 5000, "-5", "1001", "0", "'10'", "١٠"])
def test_a_limit_that_is_not_plain_decimal_from_1_to_1000_is_refused_naming_line_and_field(tmp_path: Path, value: str) -> None:
    error = error_of(tmp_path, f"queries:\n  - {{id: x, query: q, expected: [a.md]}}\ndefaults:\n  limit: {value}\n")
    assert (error.file, error.line, error.field) == ("golden.yml", 4, "defaults.limit")
    assert "decimal digits" in (error.hint or "")


def test_only_ascii_decimal_digits_are_a_plain_decimal() -> None:
    # YAML never tags these as integers, so the loader cannot be handed them; the rule holds anyway.
    assert [_plain_decimal(t) for t in ("١٠", "²", "1 0", "", "+", "10\n", "+1000", "00001")] == [None] * 6 + [1000, None]


@pytest.mark.parametrize(("value", "limit"), [("10", 10), ("+12", 12), ("0012", 12), ("1000", 1000), ("1", 1)])
def test_a_plain_decimal_limit_loads(tmp_path: Path, value: str, limit: int) -> None:
    golden = load(tmp_path, f"defaults:\n  limit: {value}\nqueries:\n  - {{id: x, query: q, expected: [a.md]}}\n")
    assert golden.default_limit == limit


@pytest.mark.parametrize(
    ("text", "line", "field"),
    [
        ('queries:\n  - id: x\n    query: "alpha \\ud800 beta"\n    expected: [a.md]\n', 3, "queries[0].query"),
        ('queries:\n  - id: "\\udc00"\n    query: q\n    expected: [a.md]\n', 2, "queries[0].id"),
        ('queries:\n  - id: x\n    query: q\n    expected: ["\\ude00\\ud83d.md"]\n', 4, "queries[x].expected[0].path"),
        ('queries:\n  - id: x\n    query: q\n    expected:\n      - {path: a.md, heading: "\\ud83d"}\n', 5, "queries[x].expected[0].heading"),
        ('queries:\n  - id: x\n    query: q\n    expected: [a.md]\n    tags: [ok, "\\udfff"]\n', 5, "queries[x].tags"),
        ('queries:\n  - id: x\n    "\\ud800": q\n', 3, "queries[0]"),
    ],
    ids=["query", "id", "path-reversed-pair", "heading-high-half", "tag-low-half", "key"],
)
def test_a_lone_surrogate_escape_is_refused_naming_line_and_field(tmp_path: Path, text: str, line: int, field: str) -> None:
    error = error_of(tmp_path, text)
    assert (error.file, error.line, error.field) == ("golden.yml", line, field)
    assert "lone surrogate" in error.message
    str(error).encode("utf-8")  # the message itself prints


def test_an_escaped_surrogate_pair_is_joined_into_the_character_it_encodes(tmp_path: Path) -> None:
    # What json.dumps writes for an emoji; JSON is YAML, so a converted golden set holds these.
    golden = load(tmp_path, 'queries:\n  - id: "\\ud83d\\ude00"\n    query: "smile \\ud83d\\ude00 please"\n    expected: [a.md]\n')
    assert (golden.queries[0].id, golden.queries[0].text) == ("\U0001f600", "smile \U0001f600 please")


def test_symlinked_oversized_and_non_regular_golden_files_are_refused(tmp_path: Path) -> None:
    real = tmp_path / "real.yml"
    real.write_text("queries:\n  - {query: q, expected: [a.md]}\n", encoding="utf-8")
    link = tmp_path / "link.yml"
    link.symlink_to(real)
    with pytest.raises(InputError, match="symbolic link"):
        load_golden(link)
    big = tmp_path / "big.yml"
    big.write_bytes(b"#" * (MAX_GOLDEN_BYTES + 1))
    with pytest.raises(InputError, match="-byte cap"):
        load_golden(big)
    with pytest.raises(InputError, match="regular file"):
        load_golden(tmp_path)


@pytest.mark.parametrize("name", [".kb-eval.yml", ".kb-mcp-eval.yml", ".groove-eval.yml"])
def test_each_default_golden_name_alone_is_found(tmp_path: Path, name: str) -> None:
    (tmp_path / name).write_text("x", encoding="utf-8")
    assert find_golden(tmp_path, None) == tmp_path / name


def test_two_default_golden_files_in_one_kb_are_exit_2_naming_both(tmp_path: Path) -> None:
    # A pull request adding .kb-eval.yml beside the repository's .kb-mcp-eval.yml would otherwise
    # replace the golden set it is measured against.
    (tmp_path / ".kb-mcp-eval.yml").write_text("x", encoding="utf-8")
    (tmp_path / ".kb-eval.yml").write_text("x", encoding="utf-8")
    with pytest.raises(InputError) as caught:
        find_golden(tmp_path, None)
    message = str(caught.value)
    assert str(tmp_path / ".kb-eval.yml") in message and str(tmp_path / ".kb-mcp-eval.yml") in message
    assert caught.value.hint is not None and "--golden" in caught.value.hint
    # The near miss: naming one explicitly is a choice, and is taken.
    assert find_golden(tmp_path, tmp_path / ".kb-mcp-eval.yml") == tmp_path / ".kb-mcp-eval.yml"


def test_a_miss_says_where_it_looked(tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(InputError) as caught:
        find_golden(empty, None)
    assert ".kb-eval.yml" in str(caught.value) and ".groove-eval.yml" in str(caught.value)


def test_a_colon_in_a_file_name_is_not_a_drive_letter_but_c_slash_is(tmp_path: Path) -> None:
    golden = load(tmp_path, "queries:\n  - id: x\n    query: q\n    expected: ['a:b.md', 'notes/x:y.md']\n")
    assert [e.path for e in golden.queries[0].expected] == ["a:b.md", "notes/x:y.md"]
    error = error_of(tmp_path, "queries:\n  - id: x\n    query: q\n    expected: ['C:/kb/a.md']\n")
    assert "absolute" in error.message


def test_an_unclosed_quote_is_reported_at_the_line_it_opens_not_where_yaml_gave_up(tmp_path: Path) -> None:
    from scanner.foundation.errors import InputError

    filler = "".join(f"  - id: q{n}\n    query: question {n}\n    expected: [a.md]\n" for n in range(40))
    golden = tmp_path / ".kb-eval.yml"
    golden.write_text(
        'queries:\n  - id: a\n    query: "how do I roll back\n    expected: [a.md]\n'
        + filler + '  - id: z\n    query: "the last one"\n    expected: [a.md]\n',
        encoding="utf-8",
    )
    with pytest.raises(InputError) as raised:
        load_golden(golden)
    assert raised.value.line == 3 and "opens at line 3" in raised.value.message
    assert raised.value.hint == "close the quote on the line it opens"
    # The near misses: a quoted query written over two lines on purpose is valid, and another
    # mistake is reported where YAML found it, with the usual hint.
    golden.write_text('queries:\n  - id: a\n    query: "how do I\n      roll back"\n    expected: [a.md]\n', encoding="utf-8")
    assert load_golden(golden).queries[0].text == "how do I roll back"
    golden.write_text('queries:\n  - id: a\n    query: "fine"\n    expected: [a.md]\n   - id: b\n', encoding="utf-8")
    with pytest.raises(InputError) as raised:
        load_golden(golden)
    assert raised.value.line == 5 and "quote" not in (raised.value.hint or "")


def golden_text(queries: int) -> str:
    return "queries:\n" + "".join(
        f"  - id: q{n}\n    query: \"deploy the service number {n}\"\n    expected:\n      - path: a/{n}.md\n"
        f"        heading: Part {n}\n    tags: [en]\n"
        for n in range(queries)
    )


@pytest.mark.parametrize("queries", [1_000, 4_000])
def test_loading_a_golden_file_runs_one_cyclic_collection_at_most_whatever_its_size(tmp_path: Path, queries: int) -> None:
    # Nodes and queries hold no cycle: the collector, held off while they are built, walks them once
    # as it resumes (a young collection), not again each time they grow (measured: 84 collections
    # for 1,000 queries, 336 for 4,000).
    import gc

    path = tmp_path / "golden.yml"
    path.write_text(golden_text(queries), encoding="utf-8")
    collections: list[int] = []

    def counting(phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            collections.append(info["generation"])

    gc.collect()
    gc.callbacks.append(counting)
    try:
        golden = load_golden(path)
        loaded = len(collections)
        # The near miss: as many objects made with the collector running are collected over.
        nodes = [[str(n), (n,), {"n": n}] for n in range(20 * queries)]
    finally:
        gc.callbacks.remove(counting)
    assert [q.expected[0].line for q in golden.queries] == [5 + 6 * n for n in range(queries)]
    assert loaded <= 1
    assert len(collections) > 10 and len(nodes) == 20 * queries
    assert gc.isenabled()


def test_the_collector_runs_again_after_a_refused_golden_file_and_stays_off_when_it_was_off(tmp_path: Path) -> None:
    import gc

    assert "aliases" in error_of(tmp_path, "queries:\n  - &a {id: x, query: q, expected: [a.md]}\n  - *a\n").message
    assert gc.isenabled()
    gc.disable()
    try:
        load(tmp_path, golden_text(3))
        assert not gc.isenabled()
    finally:
        gc.enable()
