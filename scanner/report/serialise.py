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

from scanner.foundation.untrusted_text import LEGACY_COMMAND

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
    # through the whole text (2 s of a 29 MB report), and the characters are rarely there.
    for character, escape in _LINE_BREAKS_ESCAPED:
        if character in text:
            text = text.replace(character, escape)
    return LEGACY_COMMAND.sub(r"#\\u0023[", text)


_JOINED_PIECES = 1 << 16
"""Pieces of the indented encoding joined into one part."""


def _indented(document: object) -> list[str]:
    """json.dumps(document, ensure_ascii=False, indent=2, allow_nan=False), in parts.

    With an indent, json encodes in Python, piece by piece (a key, a separator, a number), and
    dumps joins the list of every piece at the end: for a 29 MB report that list of millions of
    small strings was 200 MiB, the peak of a run with 10,000 queries. Joined a batch at a time,
    only a batch's pieces are alive at once."""
    encoder = json.JSONEncoder(ensure_ascii=False, indent=2, allow_nan=False)
    parts: list[str] = []
    batch: list[str] = []
    for piece in encoder.iterencode(document):
        batch.append(piece)
        if len(batch) >= _JOINED_PIECES:
            parts.append("".join(batch))
            batch.clear()
    parts.append("".join(batch))
    return parts
