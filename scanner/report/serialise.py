"""The one JSON serialiser: every file kb-eval writes (report, baseline, history) and its stdout JSON.

Paths and ids from the pull request may hold what a log reader takes for a
line break or a command: json.dumps escapes C0 controls but leaves U+0085,
U+2028 and U+2029 raw, and `##[` anywhere in a line is a legacy workflow
command to the runner. Each is written as a JSON escape instead (`#` as
\\u0023 before `[`), so any JSON reader decodes the same text and no line of
the output holds a break or a command. These characters occur only inside
strings, and no JSON escape sequence contains one, so the rewrite cannot cut
an escape.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from json.encoder import encode_basestring as _string  # json's own (C) string encoder
from typing import Any

from scanner.foundation.untrusted_text import LEGACY_COMMAND, LEGACY_COMMAND_TEXT

_LINE_BREAKS_ESCAPED = (("\x85", "\\u0085"), ("\u2028", "\\u2028"), ("\u2029", "\\u2029"))


def serialise(document: object, *, compact: bool = False) -> str:
    """JSON text ending in a newline; `compact` for one-line history entries.

    `allow_nan=False`: a NaN that slipped through is a crash here, not an invalid file downstream.
    """
    if compact:
        parts = [json.dumps(document, ensure_ascii=False, separators=(",", ":"), allow_nan=False)]
    else:
        parts = _indented(document)
    # Escaped part by part: a part ends where a piece of the encoding ends (a string literal's
    # closing quote, a number, a bracket, a separator), never inside `##[`.
    return "".join([_escaped(part) for part in parts] + ["\n"])


def _escaped(text: str) -> str:
    # Searched for before replacing: str.translate with a table went character by character
    # through the whole text (2 s of a 29 MB report), and the characters are rarely there; the
    # command's regular expression, which matches `##[` and nothing else, took 0.3 s of CPU over
    # that report where `in` takes 0.02.
    for character, escape in _LINE_BREAKS_ESCAPED:
        if character in text:
            text = text.replace(character, escape)
    if LEGACY_COMMAND_TEXT not in text:
        return text
    return LEGACY_COMMAND.sub(r"#\\u0023[", text)


_JOINED_PIECES = 1 << 16
"""Pieces of the indented encoding joined into one part."""


def _indented(document: object) -> list[str]:
    """json.dumps(document, ensure_ascii=False, indent=2, allow_nan=False), in parts.

    With an indent, json encodes in Python, piece by piece, each piece passed up through one
    generator per level of nesting, and dumps joins the list of every piece at the end: for a
    29 MB report that list of millions of small strings was 200 MiB, the peak of a run with 10,000
    queries. Here pieces are appended by one recursive function (no generators: 1.8 s to 1.1 s for
    that report) and joined a batch at a time, so only a batch's pieces are alive at once. The
    text is json's to the byte (tests/report/test_serialise.py compares them); a part ends at the
    end of a value or a key, never inside a string."""
    parts: list[str] = []
    pieces: list[str] = []
    append = pieces.append
    # A scalar of exactly these types is written by one call found by its type (a subclass, such as
    # an IntEnum, goes through _scalar, in json's order of checks).
    written: dict[type, Callable[[Any], str]] = {
        str: _string, float: _finite_float, int: int.__repr__, bool: _bool, type(None): _null,
    }
    keys: dict[int, dict[str, tuple[str, str]]] = {}
    """Per level, a key's pieces as the first and as a later key of an object: a report's rows
    repeat the same keys (a hit's four in each of 100,000 hits), encoded once each."""

    def key_pieces(key: object, level: int) -> tuple[str, str]:
        if not isinstance(key, str):  # 1, 1.0 and True are one key to a dict, three to json
            encoded = "\n" + "  " * (level + 1) + _string(_key(key)) + ": "
            return encoded, "," + encoded
        known = keys.setdefault(level, {})
        pieces_of = known.get(key)
        if pieces_of is None:
            encoded = "\n" + "  " * (level + 1) + _string(key) + ": "
            pieces_of = (encoded, "," + encoded)
            if len(known) < _KEYS_KEPT:
                known[key] = pieces_of
        return pieces_of

    def encode(value: object, level: int) -> None:
        if isinstance(value, str):
            append(_string(value))
        elif isinstance(value, (list, tuple)):
            if not value:
                append("[]")
                return
            inner = "\n" + "  " * (level + 1)
            append("[")
            separator = inner
            for item in value:
                append(separator)
                separator = "," + inner
                scalar = written.get(type(item))
                if scalar is not None:
                    append(scalar(item))
                else:
                    encode(item, level + 1)
                if len(pieces) >= _JOINED_PIECES:
                    parts.append("".join(pieces))
                    pieces.clear()
            append("\n" + "  " * level + "]")
        elif isinstance(value, dict):
            if not value:
                append("{}")
                return
            append("{")
            later = False
            for key, item in value.items():
                append(key_pieces(key, level)[later])
                later = True
                scalar = written.get(type(item))
                if scalar is not None:
                    append(scalar(item))
                else:
                    encode(item, level + 1)
                if len(pieces) >= _JOINED_PIECES:
                    parts.append("".join(pieces))
                    pieces.clear()
            append("\n" + "  " * level + "}")
        else:
            append(_scalar(value))

    encode(document, 0)
    parts.append("".join(pieces))
    return parts


_KEYS_KEPT = 4096
"""Distinct keys kept per level (their encoded pieces): far more than a report's records have, and a
bound for an object keyed by the pull request's data."""


def _finite_float(value: float) -> str:
    if not math.isfinite(value):
        raise ValueError("Out of range float values are not JSON compliant: " + repr(value))
    return float.__repr__(value)


def _bool(value: bool) -> str:
    return "true" if value else "false"


def _null(value: None) -> str:
    return "null"


def _scalar(value: object) -> str:
    """A value that is neither a string nor a container, as json writes it (in json's order of
    checks: an int subclass such as an IntEnum is its number)."""
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, int):
        return int.__repr__(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError("Out of range float values are not JSON compliant: " + repr(value))
        return float.__repr__(value)
    raise TypeError(f"Object of type {value.__class__.__name__} is not JSON serializable")


def _key(key: object) -> str:
    """A key that is not a string, as json writes it."""
    if isinstance(key, (float, bool)) or key is None or isinstance(key, int):
        return _scalar(key)
    raise TypeError(f"keys must be str, int, float, bool or None, not {key.__class__.__name__}")
