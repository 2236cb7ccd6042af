"""The one serialiser: what it writes decodes to what it was given, and no line of it holds a line
break a log reader splits at or a legacy workflow command."""

from __future__ import annotations

import json

from hypothesis import given
from hypothesis import strategies as st

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
