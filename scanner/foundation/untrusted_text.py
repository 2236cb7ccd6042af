"""Untrusted text (file names, query ids, headings, messages quoting them) as printed for people.

The GitHub runner reads stdout and stderr line by line and runs a line that
starts with `::` (after whitespace) as a workflow command, and `##[cmd]` anywhere
in a line as the legacy form. File names and golden ids come from the pull
request and can hold line breaks, so printed raw, a file called
`x<newline>::add-mask::...` becomes a command. The JSON report keeps every such
string exact (JSON escapes line breaks); the lines we render for people use
these two functions.
"""

from __future__ import annotations

import re

_NEEDS_QUOTING = re.compile(r"^\s|\s$|^::|^['\"]|#{2}\[")
LEGACY_COMMAND = re.compile(r"#{2}\[")
"""Two '#' then '[': the runner's legacy command form, recognised anywhere in a line."""


def shown(text: str) -> str:
    """A name or id: unchanged when plain, else as a one-line Python literal.

    Quoted when it holds anything not printable (line breaks, control characters, U+2028,
    lone surrogates), starts with `::`, holds `##[`, starts or ends with a space, or starts
    with a quote (so a quoted form is never mistaken for a plain one). `##[` is spelled
    `#\\x23[`. Reading the literal back (ast.literal_eval) gives the original text."""
    if text.isprintable() and not _NEEDS_QUOTING.search(text):
        return text
    return _defuse_legacy(repr(text))


def defused(message: str) -> str:
    """A message composed by kb-eval that may quote untrusted text: every character that is
    not printable is escaped as in a Python literal, and `##[` is spelled `#\\x23[`, so the
    message stays on its line and holds no command. Plain messages are unchanged."""
    if message.isprintable() and LEGACY_COMMAND.search(message) is None:
        return message
    escaped = "".join(char if char.isprintable() else repr(char)[1:-1] for char in message)
    return _defuse_legacy(escaped)


def _defuse_legacy(text: str) -> str:
    return LEGACY_COMMAND.sub(r"#\\x23[", text)
