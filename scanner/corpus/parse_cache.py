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
import secrets
import sqlite3
import stat
import urllib.parse
from pathlib import Path
from typing import Any

from scanner.corpus.documents import Chunk, Document
from scanner.corpus.markdown import (
    MAX_BREADCRUMB_PART_CHARS,
    MAX_FRONTMATTER_BYTES,
    MAX_SECTIONS_PER_DOCUMENT,
    split_lines,
)
from scanner.foundation.diagnostics import Diagnostic, DiagnosticCode, Diagnostics

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


def proves_itself(relative: str, data: bytes, document: Document, warnings: list[Diagnostic]) -> bool:
    """Whether a cache entry stands for exactly these bytes, within the caps the file would meet.

    The entry is the pull request's input too (restored from its own branch, or planted in the
    workspace), so nothing in it is taken on trust: every body must be exactly the file's lines
    it claims, every heading must be text of its own lines, every breadcrumb part the (capped)
    title or an earlier heading, the title the file name or words of its frontmatter, the line
    numbers in order and inside the file, and the sections within the per-file cap. Text the file
    does not hold (a lone surrogate, a NUL, another note's text) cannot pass. Entries with
    warnings are not trusted at all: their messages would be the entry's words, not kb-eval's.
    Linear in the file, without the line scanner or YAML, which are what the cache saves."""
    if warnings:
        return False
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    if "\x00" in text:
        return False
    lines = split_lines(text.removeprefix("\ufeff"))
    chunks = document.chunks
    if len(chunks) > MAX_SECTIONS_PER_DOCUMENT + 1 or not _title_is_the_files(relative, document, lines):
        return False
    headings: dict[int, str] = {}
    previous_end = 0
    for n, chunk in enumerate(chunks):
        if not (
            chunk.path == relative and previous_end < chunk.start_line <= chunk.body_start_line <= chunk.end_line + 1
            and chunk.end_line <= len(lines)
        ):
            return False
        if chunk.heading_line is None:
            if n != 0 or chunk.heading or chunk.body_start_line != chunk.start_line:
                return False
        elif chunk.heading_line != chunk.start_line or chunk.body_start_line == chunk.start_line or chunk.heading not in " ".join(part.strip() for part in lines[chunk.start_line - 1 : chunk.body_start_line - 1]):
            return False
        if chunk.body != "\n".join(lines[chunk.body_start_line - 1 : chunk.end_line]):
            return False
        parts, at = chunk.breadcrumb_parts, chunk.breadcrumb_lines
        if not (1 <= len(parts) == len(at) <= _MAX_BREADCRUMB_PARTS) or (parts[0], at[0]) != (
            document.title[:MAX_BREADCRUMB_PART_CHARS], document.title_line
        ):
            return False
        if any(headings.get(line, None) != part for part, line in zip(parts[1:], at[1:], strict=True)):
            return False
        if chunk.heading_line is not None:
            headings[chunk.heading_line] = chunk.heading[:MAX_BREADCRUMB_PART_CHARS]
        previous_end = chunk.end_line
    return True


def _title_is_the_files(relative: str, document: Document, lines: list[str]) -> bool:
    stem = relative.rsplit("/", 1)[-1]
    stem = stem.rsplit(".", 1)[0] if "." in stem else stem
    if document.title == stem and document.title_line == 1:
        return True
    # A frontmatter title: its words, as the parser joins them, within the block's own text from
    # its line (a quoted or escaped title may not be; then the file is parsed again, never wrong).
    title = document.title
    if not lines or lines[0].rstrip() != "---" or not title or title != " ".join(title.split()):
        return False
    if len(title) > MAX_FRONTMATTER_BYTES or not 2 <= document.title_line <= min(len(lines), MAX_FRONTMATTER_BYTES):
        return False
    block: list[str] = []
    for line in lines[document.title_line - 1 :]:
        if line.rstrip() in ("---", "..."):
            return title in " ".join(" ".join(block).split())
        block.append(line)
    return False


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
        on the way to the folder inside the working directory; the database is built in memory and
        its bytes written to a new file created with O_CREAT|O_EXCL|O_NOFOLLOW under an unguessable
        name (SQLite itself never opens a path here, nor creates its journal beside one); and that
        file is renamed over the cache file, which replaces a link planted there instead of
        writing through it."""
        folder = self.path.parent
        temporary: Path | None = None
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
            temporary = folder / f".{CACHE_FILE}.{secrets.token_hex(8)}.tmp"
            flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
            fd = os.open(temporary, flags, 0o644)
            with os.fdopen(fd, "wb") as handle:
                handle.write(data)
            os.replace(temporary, self.path)
            temporary = None
        except (OSError, sqlite3.Error, _LinkedFolder) as error:
            diagnostics.warn(DiagnosticCode.CACHE_NOT_SAVED, f"the parse cache could not be written ({error}); the next run parses every file", str(self.path))
        finally:
            if temporary is not None:
                try:
                    os.unlink(temporary)
                except OSError:
                    pass


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
