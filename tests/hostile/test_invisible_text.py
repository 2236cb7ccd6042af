"""What a reviewer reads is what is there.

File names, headings, titles and query ids come from the pull request. A right-to-left override
makes `invoice\u202efdp.md` display as `invoicedm.pdf`; a zero-width space makes two different
names display alike. Every renderer spells such characters out through one rule
(`untrusted_text.visible`), and text from the pull request never becomes a link or a mention.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from scanner.evaluation.records import LocatedFinding
from scanner.foundation.diagnostics import Diagnostic, DiagnosticCode
from scanner.foundation.untrusted_text import defused, is_invisible, shown, visible
from scanner.github.workflow import escape_markdown_text, format_annotation
from scanner.render.annotations import diagnostic_annotation, finding_annotation
from scanner.scan.quotes import Finding, QuotedQuery, QuoteLocation
from tests.conftest import write_tree
from tests.hostile.support import ANSWER, GOLDEN, run

HIDDEN = ["\u202e", "\u202d", "\u2066", "\u2069", "\u200b", "\u200d", "\u2060", "\ufeff", "\u00ad", "\u061c",
          "\u200e", "\u3164", "\ufe0f", "\U000e0041"]
"""Bidirectional overrides, isolates and marks, zero-width characters, the BOM, a soft hyphen, a
Hangul filler, a variation selector and a tag character."""
PLAIN = "café 日本語 한국어 ひらがな Ελληνικά emoji 🚀 <b>x</b> a_b"
"""The near miss: letters of every script, and punctuation, stay as they are."""


@pytest.mark.parametrize("char", HIDDEN, ids=[f"U+{ord(c):04X}" for c in HIDDEN])
def test_every_renderer_spells_out_an_invisible_character(char: str) -> None:
    name = f"invoice{char}fdp.md"
    spelled = f"\\u{ord(char):04x}" if ord(char) <= 0xFFFF else f"\\U{ord(char):08x}"
    assert is_invisible(char)
    assert visible(name) == f"invoice{spelled}fdp.md"
    assert char not in shown(name) and ast.literal_eval(shown(name)) == name  # the log, the text report
    assert char not in defused(f"cannot read {name}")
    markdown = escape_markdown_text(name)  # summary and PR comment
    assert char not in markdown and spelled.replace("\\", "\\\\") in markdown
    annotation = format_annotation(diagnostic_annotation(Diagnostic(DiagnosticCode.FILE_SKIPPED, f"links to {name}", name, 1), "."))
    message = annotation.split("::")[-1]
    assert char not in message and spelled in message


def test_letters_of_every_script_are_not_marked() -> None:
    assert visible(PLAIN) == PLAIN and shown(PLAIN) == PLAIN
    assert not any(is_invisible(char) for char in PLAIN)


@pytest.mark.parametrize(
    "text",
    ["https://evil.example/x", "HTTP://a.example", "ftp://a.example", "www.evil.example", "WWW.Evil.example",
     "mail me@evil.example", "@org/team please look"],
)
def test_pull_request_text_never_becomes_a_link_or_a_mention(text: str) -> None:
    markdown = escape_markdown_text(text)
    assert "://" not in markdown
    assert re.search(r"(?i)www\.", markdown) is None
    assert re.search(r"@[\w]", markdown) is None
    assert markdown.replace("\u200b", "").replace("\\", "") == text  # it still reads as written


def test_text_without_links_is_not_broken() -> None:
    assert escape_markdown_text("notes/setup.md: a: b // c") == "notes/setup.md: a: b // c"


def test_a_file_name_with_an_override_is_spelled_out_in_the_run_output(tmp_path: Path) -> None:
    kb = write_tree(tmp_path / "kb", {"a.md": ANSWER, ".kb-eval.yml": GOLDEN, "invoice\u202efdp.md": "\x00"})
    result = run(kb, "--no-history")
    assert "\u202e" not in result.stdout + result.stderr
    assert "invoice\\u202efdp.md" in result.stderr  # the skip warning names the file, visibly


CONTROLS = ["\x1b", "\x07", "\x08", "\x0b", "\x0c", "\x7f", "\x9b", "\x85"]
"""ESC (an ANSI sequence's start), BEL, backspace, the vertical tab and form feed, DEL, and the C1
CSI and NEL: each a terminal or a log viewer obeys."""


@pytest.mark.parametrize("char", CONTROLS, ids=[f"0x{ord(c):02X}" for c in CONTROLS])
def test_every_renderer_escapes_a_control_character_in_a_file_name(char: str) -> None:
    # A file name holding an ANSI escape reached the annotation line and the step summary raw.
    name = f"a{char}[2Kb.md"
    spelled = f"\\x{ord(char):02x}"
    assert visible(name) == f"a{spelled}[2Kb.md"
    markdown = escape_markdown_text(name)
    assert char not in markdown and spelled.replace("\\", "\\\\") in markdown
    for annotation in (
        diagnostic_annotation(Diagnostic(DiagnosticCode.FILE_SKIPPED, f"links to {name}", name, 1), "."),
        finding_annotation(_finding_in(name), "."),
    ):
        line = format_annotation(annotation)
        assert char not in line and spelled in line  # on the command's line, properties included
        assert annotation.properties.file is None  # a name spelled out names no file


def test_tabs_and_line_breaks_are_left_to_each_renderer_and_plain_names_are_placed() -> None:
    # The near miss: a summary turns a line break into <br>, an annotation into %0A; a plain name
    # keeps its place on the file.
    assert visible("a\tb\nc\r\n") == "a\tb\nc\r\n"
    assert escape_markdown_text("a\nb") == "a<br>b"
    annotation = finding_annotation(_finding_in("notes/plain.md"), ".")
    assert annotation.properties.file == "notes/plain.md"


def _finding_in(path: str) -> LocatedFinding:
    quoted = tuple(QuotedQuery(f"q{n}", None, 0, "body", None, None) for n in range(2))
    return LocatedFinding(Finding(path, quoted), tuple(QuoteLocation("body", 1, 1) for _ in quoted))
