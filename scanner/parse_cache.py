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

import hashlib
import json
import os
import sqlite3
from pathlib import Path
from typing import Any

from .diagnostics import Diagnostic, Diagnostics
from .documents import Chunk, Document

PARSER_VERSION = "1"
"""Bump when chunking or frontmatter handling changes what a file parses into."""

CACHE_FILE = "kb-eval-parse-cache.sqlite"


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
            [
                [c.heading, list(c.breadcrumb_parts), c.body, c.start_line, c.end_line, c.heading_line,
                 c.body_start_line, list(c.breadcrumb_lines)]
                for c in document.chunks
            ],
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
                Chunk(
                    relative, _str(heading), tuple(_str(p) for p in parts), _str(body), _int(start), _int(end),
                    None if heading_line is None else _int(heading_line), _int(body_start),
                    tuple(_int(n) for n in lines),
                )
                for heading, parts, body, start, end, heading_line, body_start, lines in chunks
            ),
        )
        notes = [Diagnostic(_str(code), _str(message), relative, None if line is None else _int(line))
                 for code, message, line in warnings]
    except (ValueError, TypeError):
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

    def open_for_reading(self) -> sqlite3.Connection | None:
        if not self.path.is_file() or self.path.is_symlink():
            return None
        connection: sqlite3.Connection | None = None
        try:
            # The file may come from an untrusted cache entry: read-only, no schema-defined code,
            # page sanity checks, an integrity check, and the two plain tables we wrote, or nothing.
            connection = sqlite3.connect(f"file:{self.path}?mode=ro", uri=True, check_same_thread=False)
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
        """Write exactly this run's entries (stale ones go), atomically."""
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            temporary = self.path.with_name(f".{CACHE_FILE}.{os.getpid()}.tmp")
            if temporary.exists():
                temporary.unlink()
            connection = sqlite3.connect(temporary)
            with connection:
                connection.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT)")
                connection.execute("INSERT INTO meta VALUES ('parser_version', ?)", (PARSER_VERSION,))
                connection.execute("CREATE TABLE documents (key TEXT PRIMARY KEY, payload TEXT NOT NULL)")
                connection.executemany("INSERT INTO documents VALUES (?, ?)", entries.items())
            connection.close()
            os.replace(temporary, self.path)
        except (OSError, sqlite3.Error) as error:
            diagnostics.warn("cache-not-saved", f"the parse cache could not be written ({error}); the next run parses every file", str(self.path))


def lookup(connection: sqlite3.Connection | None, key: str) -> str | None:
    if connection is None:
        return None
    try:
        row = connection.execute("SELECT payload FROM documents WHERE key = ?", (key,)).fetchone()
    except sqlite3.Error:
        return None
    return row[0] if row is not None and isinstance(row[0], str) else None
