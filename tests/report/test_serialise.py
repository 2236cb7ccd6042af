"""The one serialiser: what it writes decodes to what it was given, and no line of it holds a line
break a log reader splits at or a legacy workflow command."""

from __future__ import annotations

import json
import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from scanner.report import serialise as serialise_module
from scanner.report.serialise import serialise

HOSTILE = st.lists(st.sampled_from(list("#[a \n\x85\u2028\u2029\\\"") + ["##[", "###["]), max_size=20).map("".join)


@given(st.lists(HOSTILE, max_size=4), st.booleans())
def test_any_text_is_written_without_a_raw_line_break_or_command_and_read_back_as_it_was(texts: list[str], compact: bool) -> None:
    document = {"texts": texts, "keys": {text: len(text) for text in texts}}
    written = serialise(document, compact=compact)
    assert json.loads(written) == document
    assert "##[" not in written
    assert not any(character in written for character in "\x85\u2028\u2029")


def test_each_escape_is_the_json_escape_of_its_character() -> None:
    written = serialise(["###[x", "a\x85b\u2028c\u2029d"], compact=True)
    assert written == '["##\\u0023[x","a\\u0085b\\u2028c\\u2029d"]\n'


@given(st.lists(st.dictionaries(HOSTILE, st.one_of(HOSTILE, st.lists(HOSTILE, max_size=3), st.integers()), max_size=3),
                max_size=3))
def test_the_report_is_json_dumps_indented_text_whatever_the_parts_it_is_escaped_in(documents: list[object]) -> None:
    # Parts of one piece each: every seam of the encoding is a seam between parts.
    reference = json.dumps(documents, ensure_ascii=False, indent=2, allow_nan=False)
    for character in "\x85\u2028\u2029":
        reference = reference.replace(character, f"\\u{ord(character):04x}")
    reference = reference.replace("##[", "#\\u0023[") + "\n"
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(serialise_module, "_JOINED_PIECES", 1)
        assert serialise(documents) == reference
    assert serialise(documents) == reference


SCALARS = st.one_of(HOSTILE, st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False, allow_infinity=False))
KEYS = st.one_of(HOSTILE, st.integers(), st.floats(allow_nan=False, allow_infinity=False), st.booleans(), st.none())
VALUES = st.recursive(
    SCALARS,
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.lists(inner, max_size=3).map(tuple),
                            st.dictionaries(KEYS, inner, max_size=3)),
    max_leaves=12,
)


@given(VALUES)
def test_every_kind_of_value_and_key_is_written_as_json_dumps_writes_it(document: object) -> None:
    reference = json.dumps(document, ensure_ascii=False, indent=2, allow_nan=False)
    for character in "\x85\u2028\u2029":
        reference = reference.replace(character, f"\\u{ord(character):04x}")
    assert serialise(document) == reference.replace("##[", "#\\u0023[") + "\n"


@pytest.mark.parametrize("value", [float("nan"), float("inf"), {float("-inf"): 1}, {(1, 2): 1}, {1: object()}])
def test_what_json_dumps_refuses_is_refused_and_a_finite_neighbour_is_written(value: object) -> None:
    with pytest.raises((ValueError, TypeError)) as refused:
        json.dumps(value, indent=2, allow_nan=False)
    with pytest.raises(refused.type):
        serialise(value)
    # The near miss: the largest finite float and a tuple value are written as json writes them.
    assert serialise([1.7976931348623157e308, (1, 2)]) == json.dumps([1.7976931348623157e308, [1, 2]], indent=2) + "\n"


class _CountingPattern:
    def __init__(self, pattern: re.Pattern[str]) -> None:
        self.pattern, self.calls = pattern, 0

    def sub(self, replacement: str, text: str) -> str:
        self.calls += 1
        return self.pattern.sub(replacement, text)


@pytest.mark.parametrize("queries", [10, 1_000])
def test_a_report_without_a_command_is_not_searched_for_one_by_the_regular_expression(
    monkeypatch: pytest.MonkeyPatch, queries: int
) -> None:
    counting = _CountingPattern(serialise_module.LEGACY_COMMAND)
    monkeypatch.setattr(serialise_module, "LEGACY_COMMAND", counting)
    document = {"per_query": [{"id": f"q{n}", "query": f"# deploy [{n}]", "score": n / 7} for n in range(queries)]}
    assert serialise(document) == json.dumps(document, ensure_ascii=False, indent=2) + "\n"
    assert counting.calls == 0
    # The near miss: one query holding the command, wherever it is, is escaped by it.
    document["per_query"][queries // 2]["query"] = "say ##[error]"
    written = serialise(document)
    assert counting.calls >= 1
    assert "##[" not in written and json.loads(written) == document


@pytest.mark.parametrize("queries", [10, 1_000])
def test_a_key_the_rows_repeat_is_encoded_once_per_level_not_once_per_row(
    monkeypatch: pytest.MonkeyPatch, queries: int
) -> None:
    encoded: list[str] = []
    string = serialise_module._string

    def counting(text: str) -> str:
        encoded.append(text)
        return string(text)

    monkeypatch.setattr(serialise_module, "_string", counting)
    hit = {"rank": 1, "path": "a.md", "heading": "Intro", "score": 0.5}
    document = {"per_query": [{"id": f"q{n}", "top_k": [hit, {**hit, "rank": 2}]} for n in range(queries)]}
    assert serialise(document) == json.dumps(document, ensure_ascii=False, indent=2) + "\n"
    # Each row's id and its hits' paths and headings, and each key once: per_query at level 0, id
    # and top_k at 2, a hit's four at 4.
    assert len(encoded) == queries * (1 + 2 * 2) + 1 + 2 + 4
    # The near miss: a key of another level is encoded again there.
    encoded.clear()
    assert serialise({"id": "x", "a": {"id": "y"}}) == json.dumps({"id": "x", "a": {"id": "y"}}, indent=2) + "\n"
    assert encoded.count("id") == 2
