"""A cache of parsed documents, keyed by each file's path and bytes, kept between runs.

`--cache-dir DIR` (for `actions/cache`) lets an unchanged KB skip Markdown and frontmatter
parsing: a file is still read and hashed, but a file whose path and bytes were parsed before
is taken from the cache. The cache is disposable: one that cannot be opened, is corrupt, or
was written by another parser version is replaced, with a warning, never a stopped run.

The cache is untrusted input (a pull request's job can save its own cache entry). Entries are
JSON, not pickle, so loading one cannot run code; an entry of the wrong shape is a miss; and
the key is the hash of the file's own path and bytes, so an entry can only ever stand for the
file content it claims.
"""

from __future__ import annotations

import enum
import hashlib
import json
import os
import re
import sqlite3
import stat
import urllib.parse
from pathlib import Path
from typing import Any

from scanner.corpus.documents import Chunk, Document
from scanner.corpus.markdown import (
    MAX_BREADCRUMB_PART_CHARS,
    MAX_SECTIONS_PER_DOCUMENT,
    atx_heading,
    closes_fence,
    fence_opening,
    frontmatter_of,
    setext_underline,
    split_lines,
)
from scanner.foundation.diagnostics import Diagnostic, DiagnosticCode, Diagnostics
from scanner.foundation.errors import InputError
from scanner.foundation.files import write_atomically

PARSER_VERSION = "2"
"""Bump when chunking or frontmatter handling changes what a file parses into."""

CACHE_FILE = "kb-eval-parse-cache.sqlite"

MAX_PAYLOAD_CHARS = 64 * 1024 * 1024
"""A cache entry longer than this is a miss, never loaded: a restored cache is untrusted, and one
crafted row could otherwise hold gigabytes. kb-eval's own entry for an 8 MiB document is at most
a few times its size (the text once, plus per section a breadcrumb of at most MAX_BREADCRUMB_CHARS)."""


_MAX_BREADCRUMB_PARTS = 7  # the title and six enclosing heading levels
_ESCAPED = 6  # JSON spells a control character in six characters (\u0001)


def payload_bound(data: bytes) -> int:
    """The longest entry `pack` writes for a file of these bytes: its text (escaped), plus per
    section a breadcrumb of at most seven capped parts and a few numbers. A longer entry is a
    miss before it is parsed: a 36 MB entry for a 33-byte note was 1.4 million sections, 608 MB."""
    sections = min(data.count(b"\n") + data.count(b"\r") + 1, MAX_SECTIONS_PER_DOCUMENT + 1)
    per_section = _MAX_BREADCRUMB_PARTS * (_ESCAPED * MAX_BREADCRUMB_PART_CHARS + 16) + 160
    return min(_ESCAPED * len(data) + sections * per_section + 256, MAX_PAYLOAD_CHARS)


class Proof(enum.Enum):
    """What checking a cache entry against its file's bytes decided."""

    PROVEN = "proven"
    """The entry is what parsing these bytes gives: used, the file is not parsed."""
    REFUSED = "refused"
    """The entry is not what parsing gives (or not what kb-eval caches): parsed, `cache-ignored`."""
    UNDECIDED = "undecided"
    """The file has a construct only the line scanner decides (a setext underline after text):
    parsed, and the entry compared with the parse (`cache-ignored` only when they differ)."""


_CANDIDATE = re.compile(r"^ {0,3}(?:#{1,6}(?:[ \t]|$)|```|~~~|=+[ \t]*$|-+[ \t]*$)", re.MULTILINE)
"""Lines that may open or close a fence, be an ATX heading or underline a setext heading: only
these decide where the line scanner cuts a file (scanner/corpus/markdown.py)."""


def proves_itself(relative: str, data: bytes, document: Document, warnings: list[Diagnostic]) -> Proof:
    """Whether a cache entry is exactly what parsing these bytes would give.

    The entry is the pull request's input too (restored from its own branch, or planted in the
    workspace), so nothing in it is taken on trust: its title must be the frontmatter's (composed
    again: YAML is not what the cache saves) or the file name; its sections must be cut at exactly
    the headings the line scanner finds, no more and no fewer, with every line of the file in the
    section the parser puts it in; every body exactly those lines, every breadcrumb the title and
    the headings that enclose it. A dropped line or a section stretched over the next heading
    would change the numbers or hide a finding. Entries with warnings are not trusted at all:
    their messages would be the entry's words, not kb-eval's. Linear in the file: the lines that
    can decide a cut are found by one regular expression, and only they are looked at."""
    if warnings:
        return Proof.REFUSED
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return Proof.REFUSED
    if "\x00" in text:
        return Proof.REFUSED
    lines = split_lines(text.removeprefix("\ufeff"))
    chunks = document.chunks
    if len(chunks) > MAX_SECTIONS_PER_DOCUMENT + 1:
        return Proof.REFUSED
    frontmatter, first_body, problems = frontmatter_of(lines)
    if problems:
        return Proof.REFUSED
    if frontmatter is not None and frontmatter.title is not None:
        title, title_line = frontmatter.title, frontmatter.title_line or 1
    else:
        stem = relative.rsplit("/", 1)[-1]
        title, title_line = (stem.rsplit(".", 1)[0] if "." in stem else stem), 1
    if (document.title, document.title_line) != (title, title_line):
        return Proof.REFUSED
    headings = _headings(lines, first_body)
    if headings is None:
        return Proof.UNDECIDED
    if len(headings) > MAX_SECTIONS_PER_DOCUMENT:
        return Proof.REFUSED  # the parse warns (sections-capped), and such a document is not cached
    expected = _cut(lines, first_body, headings, frontmatter is not None and frontmatter.title is not None)
    claimed = [
        (c.path, c.heading, c.start_line, c.end_line, c.heading_line, c.body_start_line, c.breadcrumb_lines)
        for c in chunks
    ]
    if claimed != [(relative, *cut, (title_line, *above)) for *cut, above in expected]:
        return Proof.REFUSED
    for chunk in chunks:
        if chunk.body != "\n".join(lines[chunk.body_start_line - 1 : chunk.end_line]):
            return Proof.REFUSED
        parts = chunk.breadcrumb_parts
        # The lines are the enclosing headings' (checked above); the parts must be their text, capped.
        wanted = (title[:MAX_BREADCRUMB_PART_CHARS], *(headings[line][1][:MAX_BREADCRUMB_PART_CHARS] for line in chunk.breadcrumb_lines[1:]))
        if parts != wanted:
            return Proof.REFUSED
    return Proof.PROVEN


def _headings(lines: list[str], first_body: int) -> dict[int, tuple[int, str]] | None:
    """{line: (level, text)} of every heading the line scanner finds from `first_body` on, or None
    when a line might underline a setext heading (whether it does depends on the paragraph above
    it, which only the scanner follows). Fences are followed exactly, with the scanner's rules."""
    rest = "\n".join(lines[first_body:])
    found: dict[int, tuple[int, str]] = {}
    fence: str | None = None
    index, position = first_body, 0
    for match in _CANDIDATE.finditer(rest):
        index += rest.count("\n", position, match.start())
        position = match.start()
        line = lines[index]
        if fence is not None:
            if closes_fence(line, fence):
                fence = None
            continue
        opening = fence_opening(line)
        if opening is not None:
            fence = opening
            continue
        atx = atx_heading(line)
        if atx is not None:
            found[index + 1] = atx
        elif setext_underline(line) and index > first_body and lines[index - 1].strip():
            return None
    return found


def _cut(
    lines: list[str], first_body: int, headings: dict[int, tuple[int, str]], frontmatter_title: bool
) -> list[tuple[str, int, int, int | None, int, tuple[int, ...]]]:
    """(heading, start, end, heading line, body start, enclosing heading lines) of each section the
    parser cuts at these (ATX, one-line) headings: parse_document's second pass, per heading."""
    starts = sorted(headings)
    sections: list[tuple[str, int, int, int | None, int, tuple[int, ...]]] = []
    first_heading = starts[0] - 1 if starts else len(lines)
    if first_body < first_heading and "\n".join(lines[first_body:first_heading]).strip():
        sections.append(("", first_body + 1, first_heading, None, first_body + 1, ()))
    stack: list[tuple[int, int]] = []  # (level, line) of the enclosing headings
    for n, line in enumerate(starts):
        level, heading = headings[line]
        end = starts[n + 1] - 1 if n + 1 < len(starts) else len(lines)
        while stack and stack[-1][0] >= level:
            stack.pop()
        sections.append((heading, line, max(end, line), line, line + 1, tuple(at for _, at in stack)))
        stack.append((level, line))
    if not sections and frontmatter_title:
        after = first_body + 1
        sections.append(("", after, after - 1, None, after, ()))
    return sections


def cache_key(relative: str, data: bytes) -> str:
    digest = hashlib.sha256(relative.encode("utf-8", "surrogatepass"))
    digest.update(b"\x00")
    digest.update(data)
    return digest.hexdigest()


def pack(document: Document, warnings: list[Diagnostic]) -> str:
    return json.dumps(
        [
            document.title,
            document.title_line,
            [c.flattened() for c in document.chunks],
            [[w.code, w.message, w.line] for w in warnings],
        ],
        ensure_ascii=False,
    )


def unpack(relative: str, payload: str) -> tuple[Document, list[Diagnostic]] | None:
    """None when the entry is not exactly the shape `pack` writes."""
    try:
        title, title_line, chunks, warnings = json.loads(payload)
        document = Document(
            relative,
            _str(title),
            _int(title_line),
            tuple(
                Chunk.of(relative, (
                    _str(heading), tuple(_str(p) for p in parts), _str(body), _int(start), _int(end),
                    None if heading_line is None else _int(heading_line), _int(body_start),
                    tuple(_int(n) for n in lines),
                ))
                for heading, parts, body, start, end, heading_line, body_start, lines in chunks
            ),
        )
        notes = [Diagnostic(DiagnosticCode(_str(code)), _str(message), relative, None if line is None else _int(line))
                 for code, message, line in warnings]
    except (ValueError, TypeError, RecursionError, MemoryError):  # RecursionError: a crafted, deeply nested entry
        return None
    return document, notes


def _str(value: Any) -> str:
    if not isinstance(value, str):
        raise TypeError(value)
    return value


def _int(value: Any) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise TypeError(value)
    return value


class ParseCache:
    """One SQLite file in the cache folder. Workers read it; the parent writes it once."""

    def __init__(self, folder: Path) -> None:
        self.path = folder / CACHE_FILE

    def is_file(self) -> bool:
        """A regular file, not a link to one; False for any path that cannot be examined (too long,
        a loop of links, a folder that cannot be read): the cache is then a miss, never a stop."""
        try:
            return stat.S_ISREG(os.lstat(self.path).st_mode)
        except (OSError, ValueError):
            return False

    def open_for_reading(self) -> sqlite3.Connection | None:
        if not self.is_file():
            return None
        connection: sqlite3.Connection | None = None
        try:
            # The file may come from an untrusted cache entry: read-only, no schema-defined code,
            # page sanity checks, an integrity check, and the two plain tables we wrote, or nothing.
            uri = f"file:{urllib.parse.quote(str(self.path))}?mode=ro"
            connection = sqlite3.connect(uri, uri=True, check_same_thread=False)
            connection.execute("PRAGMA trusted_schema = OFF")
            connection.execute("PRAGMA cell_size_check = ON")
            schema = set(connection.execute("SELECT type, name FROM sqlite_master").fetchall())
            plain_tables = {
                ("table", "documents"), ("index", "sqlite_autoindex_documents_1"),
                ("table", "meta"), ("index", "sqlite_autoindex_meta_1"),
            }
            if schema != plain_tables or connection.execute("PRAGMA quick_check").fetchall() != [("ok",)]:
                connection.close()
                return None
            row = connection.execute("SELECT value FROM meta WHERE key = 'parser_version'").fetchone()
            if row is None or row[0] != PARSER_VERSION:
                connection.close()
                return None
            return connection
        except sqlite3.Error:
            if connection is not None:
                connection.close()
            return None

    def save(self, entries: dict[str, str], diagnostics: Diagnostics) -> None:
        """Write exactly this run's entries (stale ones go), atomically, and never through a link.

        The folder can come from the pull request (git stores symbolic links, and a cache restored
        from the PR's branch is the PR's), and the container runs as root. So: no link is followed
        on the way to the folder inside the working directory; the database is built in memory
        (SQLite itself never opens a path here, nor creates its journal beside one); and its bytes
        are written by the one writer of kb-eval's files (`write_atomically`: a new file under an
        unguessable name, renamed over the cache file, which replaces a link planted there instead
        of writing through it)."""
        folder = self.path.parent
        try:
            _refuse_linked_folders(folder)
            folder.mkdir(parents=True, exist_ok=True)
            _refuse_linked_folders(folder)  # a link swapped in while the folders were made
            connection = sqlite3.connect(":memory:")
            with connection:
                connection.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT)")
                connection.execute("INSERT INTO meta VALUES ('parser_version', ?)", (PARSER_VERSION,))
                connection.execute("CREATE TABLE documents (key TEXT PRIMARY KEY, payload TEXT NOT NULL)")
                connection.executemany("INSERT INTO documents VALUES (?, ?)", entries.items())
            data = connection.serialize()
            connection.close()
            write_atomically(self.path, data, "parse cache")
        except (OSError, sqlite3.Error, _LinkedFolder, InputError) as error:
            why = error.message if isinstance(error, InputError) else str(error)
            diagnostics.warn(DiagnosticCode.CACHE_NOT_SAVED, f"the parse cache could not be written ({why}); the next run parses every file", str(self.path))


class _LinkedFolder(Exception):
    pass


def _refuse_linked_folders(folder: Path) -> None:
    """Raise _LinkedFolder when a folder on the way to `folder`, inside the working directory, is
    a symbolic link (lstat: the link itself, never its target). Folders above the working
    directory are the machine's (e.g. /tmp being a link), not the pull request's."""
    absolute = Path(os.path.abspath(folder))
    here = Path(os.getcwd())
    if absolute != here and here not in absolute.parents:
        return
    current = here
    for part in absolute.relative_to(here).parts:
        current = current / part
        try:
            status = os.lstat(current)
        except FileNotFoundError:
            return  # nothing from here down exists yet: mkdir creates real folders
        if stat.S_ISLNK(status.st_mode):
            raise _LinkedFolder(f"{current} is a symbolic link; the cache is not written through it")


class Lookup(enum.Enum):
    MISSING = "missing"
    """No entry for this path and these bytes: an ordinary miss."""
    REFUSED = "refused"
    """An entry that does not prove itself (too long, malformed, or not these bytes'): re-parsed."""


def lookup(connection: sqlite3.Connection | None, key: str, data: bytes) -> str | Lookup:
    """The entry for `key`, or why there is none. Its length is checked inside SQLite, before
    the row is read, against what `pack` could have written for `data`."""
    if connection is None:
        return Lookup.MISSING
    try:
        row = connection.execute(
            "SELECT length(payload) <= ?, CASE WHEN length(payload) <= ? THEN payload END FROM documents WHERE key = ?",
            (payload_bound(data), payload_bound(data), key),
        ).fetchone()
    except sqlite3.Error:
        return Lookup.REFUSED
    if row is None:
        return Lookup.MISSING
    return row[1] if row[0] == 1 and isinstance(row[1], str) else Lookup.REFUSED
