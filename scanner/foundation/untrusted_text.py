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
import unicodedata

_INVISIBLE_LETTERS = frozenset("\u115f\u1160\u3164\uffa0\u2800")
"""Printable by Python's rules but blank on screen (Hangul fillers, the blank Braille pattern)."""


def is_invisible(char: str) -> bool:
    """A character that changes how text displays without showing itself: format characters
    (bidirectional overrides and isolates such as U+202E, zero-width spaces and joiners, the
    BOM, soft hyphens, tag characters), variation selectors, and blank letters. A file called
    `invoice\u202efdp.md` displays as `invoicedm.pdf`; `a\u200b.md` displays as `a.md`."""
    if char in _INVISIBLE_LETTERS:
        return True
    category = unicodedata.category(char)
    return category == "Cf" or (category == "Mn" and "VARIATION SELECTOR" in unicodedata.name(char, ""))


_LINE_CONTROLS = frozenset("\t\n\r")
"""Control characters each renderer handles itself (a summary's `<br>`, an annotation's `%0A`)."""


def is_control(char: str) -> bool:
    """A C0 or C1 control character other than tab and line breaks: ESC starts the ANSI sequences
    a log viewer obeys (`\\x1b[2K` erases the line before it, colours disguise text), and the
    C1 CSI (U+009B) does the same in one character."""
    return unicodedata.category(char) == "Cc" and char not in _LINE_CONTROLS


def visible(text: str) -> str:
    """The one rule for untrusted text a person reads (summary, PR comment, annotations, log):
    every invisible character is spelled as its escape (`\\u202e`), and every control character
    but tab and line breaks too (`\\x1b`), so what a reviewer reads is what is there and no
    terminal sequence reaches a log. Plain text is returned unchanged."""
    if text.isascii() and (text.isprintable() or not any(is_control(char) for char in text)):
        return text
    return "".join(
        f"\\x{ord(char):02x}" if is_control(char) else _spelled(char) if is_invisible(char) else char for char in text
    )


def _spelled(char: str) -> str:
    code = ord(char)
    return f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}"


_NEEDS_QUOTING = re.compile(r"^\s|\s$|^::|^['\"]|#{2}\[")
LEGACY_COMMAND = re.compile(r"#{2}\[")
"""Two '#' then '[': the runner's legacy command form, recognised anywhere in a line."""
LEGACY_COMMAND_TEXT = "#" * 2 + "["
"""What LEGACY_COMMAND matches, for `in` (a substring test is a tenth of the expression's search
over a 29 MB report); spelled like the expression, as no module but scanner/github writes a command."""


def shown(text: str) -> str:
    """A name or id: unchanged when plain, else as a one-line Python literal.

    Quoted when it holds anything not printable (line breaks, control characters, U+2028,
    lone surrogates) or invisible (`visible`), starts with `::`, holds `##[`, starts or ends with a space, or starts
    with a quote (so a quoted form is never mistaken for a plain one). `##[` is spelled
    `#\\x23[`. Reading the literal back (ast.literal_eval) gives the original text."""
    if text.isprintable() and not _NEEDS_QUOTING.search(text) and visible(text) == text:
        return text
    return _defuse_legacy(visible(repr(text)))


def defused(message: str) -> str:
    """A message composed by kb-eval that may quote untrusted text: every character that is
    not printable is escaped as in a Python literal, and `##[` is spelled `#\\x23[`, so the
    message stays on its line and holds no command. Plain messages are unchanged."""
    if message.isprintable() and LEGACY_COMMAND.search(message) is None and visible(message) == message:
        return message
    escaped = "".join(char if char.isprintable() else repr(char)[1:-1] for char in message)
    return _defuse_legacy(visible(escaped))


def _defuse_legacy(text: str) -> str:
    return LEGACY_COMMAND.sub(r"#\\x23[", text)
