"""Split one Markdown document into sections: frontmatter, headings, bodies, line spans.

Pure: text in, records out. The runtime uses a line scanner rather than a full
CommonMark parser because only three block constructs decide where a section
starts (ATX headings, setext headings, fenced code), and a full parser costs
about fifty times more per byte, which dominates the run on a large KB. The
tests hold this scanner to markdown-it-py's CommonMark parse of headings on
generated documents, so the speed does not buy a different answer.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import NamedTuple

import yaml

from scanner.foundation.diagnostics import DiagnosticCode
from scanner.foundation.yaml_nodes import MAX_YAML_DEPTH, refuse_deep_nesting

BREADCRUMB_SEPARATOR = " > "

# -- budgets: what one file may cost is bounded by what it is, not by what it expands to ----------
# Measured with bench/peak_rss.py (docs/limits-and-safety.md has the table and the command).


MAX_SECTIONS_PER_DOCUMENT = 10_000
"""Headed sections one file is split into (plus the text before its first heading). Past this, later headings stay in the text of the last section
(nothing is dropped; a warning names the file and the line). Each section costs a few hundred bytes
of records and index rows however short it is: 8 MiB of `#` lines were 4 million sections and a
2.7 GB peak. The largest hand-written notes we know have hundreds of headings."""

MAX_BREADCRUMB_PART_CHARS = 200
"""Characters of the title, and of each enclosing heading, that go into a section's breadcrumb.
Every section repeats its breadcrumb (it is indexed and scanned per section), so a 40,000-character
title over 2,000 sections was 80 MB of text from a 57 KB file; capped, a breadcrumb is at most
7 x 200 characters. The section's own heading and the document's title are kept whole."""

MAX_FRONTMATTER_BYTES = 64 * 1024
"""Frontmatter parsed as YAML; a larger block keeps the file-name title, with a warning. Real
frontmatter is a few hundred bytes, and a YAML node costs ~100x its text in memory."""

# CommonMark: up to three spaces of indentation, 1-6 '#', then a space/tab or end of line.
# Only the opening is a regex: the rest is trimmed with str methods (see _atx_heading).
_ATX_OPENING = re.compile(r" {0,3}(#{1,6})(?=[ \t]|$)")
_ONLY_HASHES = re.compile(r"#+")
_SETEXT_UNDERLINE = re.compile(r" {0,3}(=+|-+)[ \t]*$")
_FENCE_OPEN = re.compile(r" {0,3}(`{3,}|~{3,})(.*)$")
_THEMATIC_BREAK = re.compile(r" {0,3}(?:(?:-[ \t]*){3,}|(?:\*[ \t]*){3,}|(?:_[ \t]*){3,})$")
# Lines that open another block, so they cannot be the text of a setext heading.
_NOT_PARAGRAPH = re.compile(r" {0,3}(?:>|[-+*](?:[ \t]|$)|\d{1,9}[.)](?:[ \t]|$)|<)")
# First characters that can open a block this scanner cares about (after up to 3 spaces).
_BLOCK_START = frozenset(" \t#`~=-*_>+<0123456789")
# After up to three spaces, the first character of each construct (the expressions above).
_FENCE_MARKERS = frozenset("`~")
_SETEXT_MARKERS = frozenset("=-")
_BREAK_MARKERS = frozenset("-*_")
_CONTAINER_MARKERS = frozenset(">-+*<")  # and any decimal digit (\d)
_BULLETS = frozenset("-+*")
_SPACE_OR_TAB = frozenset(" \t")
# Only \r\n, \r and \n end a line: str.splitlines() would also split on \x0b, \x1c, \u2028 ...,
# which editors and GitHub do not count, and annotations would land on the wrong line.
_LINE_BREAK = re.compile(r"\r\n|\r|\n")


class Section(NamedTuple):
    """One indexed chunk of a document, before it has a path.

    A named tuple: one is made per section of every file, and a frozen slotted dataclass's
    initialiser (a setattr per field) was a tenth of cutting a document into sections."""

    heading: str
    """Heading text without its markers, moved out of the body; empty for the text before the first heading."""
    level: int
    """1-6 for headings, 0 for the text before the first heading."""
    ancestors: tuple[tuple[str, int], ...]
    """Enclosing headings, outermost first, each with its 1-based source line."""
    body: str
    """The section's source lines after the heading, joined with '\\n', unchanged."""
    start_line: int
    """First source line of the section (the heading line, or the first body line)."""
    end_line: int
    """Last source line of the section."""
    heading_line: int | None
    """Line of the heading (its first line for a multi-line setext heading); None for the preamble."""
    body_start_line: int
    """Source line of the body's first line."""


@dataclass(frozen=True, slots=True)
class Frontmatter:
    title: str | None
    """The `title` value when it is a non-empty scalar, else None."""
    title_line: int | None
    first_line: int
    last_line: int
    """Line of the closing `---`."""


@dataclass(frozen=True, slots=True)
class ParsedDocument:
    frontmatter: Frontmatter | None
    sections: tuple[Section, ...]
    problems: tuple[tuple[int, DiagnosticCode, str], ...]
    """(line, diagnostic code, message) for broken or oversized frontmatter and for a section cap
    reached; the document is still indexed."""


def split_lines(text: str) -> list[str]:
    """Source lines; a final line break ends the last line rather than starting an empty one."""
    # Without a carriage return, only \n can end a line: str.split finds it with memchr, where the
    # regular expression tries its three alternatives at every character (a tenth of parsing).
    lines = text.split("\n") if "\r" not in text else _LINE_BREAK.split(text)
    if len(lines) > 1 and lines[-1] == "":
        lines.pop()
    return lines


def parse_document(text: str, title: str) -> ParsedDocument:
    """Parse a document; `title` is the fallback title (the file name without extension)."""
    text = text.removeprefix("\ufeff")
    lines = split_lines(text)
    problems: list[tuple[int, DiagnosticCode, str]] = []
    frontmatter, first_body = _parse_frontmatter(lines, problems)
    if frontmatter is not None and frontmatter.title is not None:
        title = frontmatter.title
    sections = _split_sections(lines, first_body, title, problems)
    if not sections and frontmatter is not None and frontmatter.title is not None:
        # A page that writes a title and nothing else is found by its title, as the same page
        # written as a lone `# Title` line is (corpus/titles.py): one empty section after the
        # frontmatter (no line of its own: the title's line belongs to the frontmatter).
        after = frontmatter.last_line + 1
        sections = [Section("", 0, (), "", after, after - 1, None, after)]
    return ParsedDocument(frontmatter, tuple(sections), tuple(problems))


def _parse_frontmatter(lines: list[str], problems: list[tuple[int, DiagnosticCode, str]]) -> tuple[Frontmatter | None, int]:
    """Return the frontmatter (if any) and the index of the first body line."""
    if not lines or lines[0].rstrip() != "---":
        return None, 0
    closing = next((i for i in range(1, len(lines)) if lines[i].rstrip() in ("---", "...")), None)
    if closing is None:
        # Without a closing line the block cannot be told apart from a thematic break
        # followed by text; indexing it all as body loses nothing.
        problems.append((1, DiagnosticCode.FRONTMATTER_INVALID, "frontmatter starts with '---' but is never closed; indexed as body text"))
        return None, 0
    block = "\n".join(lines[1:closing])
    title: str | None = None
    title_line: int | None = None
    if len(block.encode("utf-8", "surrogatepass")) > MAX_FRONTMATTER_BYTES:
        message = f"frontmatter is over {MAX_FRONTMATTER_BYTES} bytes and is not read; title taken from the file name"
        problems.append((1, DiagnosticCode.FRONTMATTER_INVALID, message))
        return Frontmatter(None, None, 1, closing + 1), closing + 1
    try:
        # Composed, never constructed: an alias is a shared node, so a 'billion laughs' block
        # costs what its text costs, and only the top-level `title` scalar is ever read.
        # Nesting is checked first on the event stream: libyaml's composer recurses in C, and a
        # block nested 100,000 deep crashed the whole run with SIGSEGV.
        if _may_nest_deeply(block):
            refuse_deep_nesting(block, _FRONTMATTER_LOADER)
        node = yaml.compose(block, Loader=_FRONTMATTER_LOADER)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = 2 + mark.line if mark is not None else 1
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        problems.append((line, DiagnosticCode.FRONTMATTER_INVALID, f"frontmatter is not valid YAML ({problem}); title taken from the file name"))
        node = None
    if isinstance(node, yaml.MappingNode):
        for key, value in node.value:
            if (
                isinstance(key, yaml.ScalarNode) and key.value == "title" and isinstance(value, yaml.ScalarNode)
                and value.value.strip() and value.tag != "tag:yaml.org,2002:null"
            ):
                title = " ".join(value.value.split())
                title_line = 2 + value.start_mark.line
    elif node is not None and not (isinstance(node, yaml.ScalarNode) and node.value == ""):
        problems.append((2, DiagnosticCode.FRONTMATTER_INVALID, "frontmatter is not a mapping; title taken from the file name"))
    return Frontmatter(title, title_line, 1, closing + 1), closing + 1


def _may_nest_deeply(block: str) -> bool:
    """Whether `block` needs the nesting check before it is composed (see _parse_frontmatter).

    Every collection opens at a character of its own: `[`, `{`, a `-` entry, or a `?` or `:` key
    indicator; so a block holding at most MAX_YAML_DEPTH of them cannot nest past it, and the
    check's parse, a second one of every frontmatter, is skipped. Not skipped when the composer
    itself could refuse the block (an alias, an anchor, a second document): the check's parse
    reads the whole block first, so a syntax error further on is what the warning names, and
    that stays so."""
    return (
        sum(map(block.count, "[{-?:")) > MAX_YAML_DEPTH
        or "*" in block or "&" in block or "---" in block or "..." in block
    )


# libyaml's composer when PyYAML was built with it (the wheels are): frontmatter is on every
# document, and the pure-Python scanner was the largest single cost of reading a KB.
_FRONTMATTER_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def fence_opening(line: str) -> str | None:
    """The marker run of the fence `line` opens (outside a fence), else None. A backtick fence
    whose info string holds a backtick is text (CommonMark)."""
    opening = _FENCE_OPEN.match(line)
    if opening is None or (opening.group(1)[0] == "`" and "`" in opening.group(2)):
        return None
    return opening.group(1)


def closes_fence(line: str, fence: str) -> bool:
    """Whether `line` closes the fence opened by the marker run `fence`."""
    # The closing marker is built once per fence, and a line shorter than it is not compared at
    # all: building `char * length` on every line was quadratic (a fence of 4 million backticks
    # over 2 million short lines took minutes).
    stripped = line.lstrip(" ")
    return (
        len(stripped) >= len(fence)
        and len(line) - len(stripped) <= 3
        and stripped.startswith(fence)
        and stripped.rstrip(" \t").strip(fence[0]) == ""
    )


def atx_heading(line: str) -> tuple[int, str] | None:
    """(level, text) when `line` is an ATX heading outside a fence, else None."""
    return _atx_heading(line)


def setext_underline(line: str) -> bool:
    """Whether `line` would underline a setext heading after a paragraph line."""
    return _SETEXT_UNDERLINE.match(line) is not None


def frontmatter_of(lines: list[str]) -> tuple[Frontmatter | None, int, list[tuple[int, DiagnosticCode, str]]]:
    """The frontmatter, the index of the first line after it, and its problems (as parse_document
    finds them)."""
    problems: list[tuple[int, DiagnosticCode, str]] = []
    frontmatter, first_body = _parse_frontmatter(lines, problems)
    return frontmatter, first_body, problems


def _atx_heading(line: str) -> tuple[int, str] | None:
    match = _ATX_OPENING.match(line)
    if match is None:
        return None
    # Trimmed with str methods, not `(.*?)[ \t]*$` and `[ \t]+#+$`: those backtrack through a run
    # of spaces from every position, quadratic in its length (a heading with 20,000 spaces inside
    # took 5 s, and the time grows with the square of the run).
    content = line[match.end() :].strip(" \t")
    if _ONLY_HASHES.fullmatch(content):
        content = ""
    else:
        # A closing run of '#' is markup only when a space separates it from the text (`# C#` keeps its '#').
        without_closing = content.rstrip("#")
        if without_closing != content and without_closing.endswith((" ", "\t")):
            content = without_closing
    return len(match.group(1)), content.strip()


def _split_sections(
    lines: list[str], start: int, title: str, problems: list[tuple[int, DiagnosticCode, str]] | None = None
) -> list[Section]:
    # Pass 1: find heading starts (index, level, text, number of lines the heading occupies).
    headings: list[tuple[int, int, str, int]] = []
    max_headings = MAX_SECTIONS_PER_DOCUMENT
    fence: str | None = None  # the opening fence's marker run: a closing fence starts with it
    paragraph_start: int | None = None
    fence_char = ""
    for i in range(start, len(lines)):
        line = lines[i]
        if not line:
            # A blank line ends a paragraph; in a fence it is code.
            if fence is None:
                paragraph_start = None
            continue
        first = line[0]
        if fence is not None:
            # Only a line starting with a space or the fence's own character can close it.
            if (first == fence_char or first == " ") and closes_fence(line, fence):
                fence = None
            continue
        if first not in _BLOCK_START:
            # Most lines are plain text: no heading, fence, rule or container starts with a
            # letter, so skip the regular expressions.
            if paragraph_start is None:
                paragraph_start = i
            continue
        if first in _BULLETS and line[1:2] in _SPACE_OR_TAB and (first != "-" or line.rstrip(" \t") != "-"):
            # A bullet list item ends a paragraph and opens nothing a section is cut at, which
            # the expressions below would find one by one (a lone `- ` may underline a heading).
            paragraph_start = None
            continue
        # Each construct opens with its own character after at most three spaces: a line is tried
        # only against those its first one can open (past three spaces, none).
        stripped = line.lstrip(" ")
        marker = stripped[:1] if len(line) - len(stripped) <= 3 else ""
        opening = fence_opening(line) if marker in _FENCE_MARKERS else None
        if opening is not None:
            fence, fence_char = opening, opening[0]
            paragraph_start = None
            continue
        atx = _atx_heading(line) if marker == "#" else None
        if atx is not None:
            if len(headings) >= max_headings:
                _note_section_cap(problems, i)
                break
            headings.append((i, atx[0], atx[1], 1))
            paragraph_start = None
            continue
        if not line.strip():
            paragraph_start = None
            continue
        underline = _SETEXT_UNDERLINE.match(line) if marker in _SETEXT_MARKERS else None
        if underline is not None and paragraph_start is not None:
            if len(headings) >= max_headings:
                _note_section_cap(problems, paragraph_start)
                break
            level = 1 if underline.group(1)[0] == "=" else 2
            text = " ".join(part.strip() for part in lines[paragraph_start:i])
            headings.append((paragraph_start, level, text, i - paragraph_start + 1))
            paragraph_start = None
            continue
        if (marker in _BREAK_MARKERS and _THEMATIC_BREAK.match(line)) or (
            (marker in _CONTAINER_MARKERS or marker.isdecimal()) and _NOT_PARAGRAPH.match(line)
        ):
            paragraph_start = None
            continue
        if paragraph_start is None:
            # An indented line cannot start a paragraph (it is code), but can continue one.
            if len(line) - len(line.lstrip(" \t")) >= 4 or line.startswith("\t"):
                continue
            paragraph_start = i

    # Pass 2: cut the lines into sections at the heading starts.
    sections: list[Section] = []
    first_heading = headings[0][0] if headings else len(lines)
    if start < first_heading:
        body_lines = lines[start:first_heading]
        if any(line.strip() for line in body_lines):
            sections.append(
                Section("", 0, (), "\n".join(body_lines), start + 1, first_heading, None, start + 1)
            )
    stack: list[tuple[int, str, int]] = []  # (level, text, line) of enclosing headings
    for n, (index, level, text, height) in enumerate(headings):
        end = headings[n + 1][0] if n + 1 < len(headings) else len(lines)
        while stack and stack[-1][0] >= level:
            stack.pop()
        ancestors = tuple((t, ln) for _, t, ln in stack)
        body_start = index + height
        sections.append(
            Section(
                heading=text,
                level=level,
                ancestors=ancestors,
                body="\n".join(lines[body_start:end]),
                start_line=index + 1,
                end_line=max(end, index + height),
                heading_line=index + 1,
                body_start_line=body_start + 1,
            )
        )
        stack.append((level, text, index + 1))
    return sections


def _note_section_cap(problems: list[tuple[int, DiagnosticCode, str]] | None, index: int) -> None:
    if problems is not None:
        message = (
            f"more than {MAX_SECTIONS_PER_DOCUMENT} sections: this heading and the rest of the file "
            "are indexed as part of the last section"
        )
        problems.append((index + 1, DiagnosticCode.SECTIONS_CAPPED, message))
