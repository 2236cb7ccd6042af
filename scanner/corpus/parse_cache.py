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
import secrets
import sqlite3
import stat
import urllib.parse
from pathlib import Path
from typing import Any

from scanner.corpus.documents import Chunk, Document
from scanner.foundation.diagnostics import Diagnostic, DiagnosticCode, Diagnostics

PARSER_VERSION = "2"
"""Bump when chunking or frontmatter handling changes what a file parses into."""

CACHE_FILE = "kb-eval-parse-cache.sqlite"

MAX_PAYLOAD_CHARS = 64 * 1024 * 1024
"""A cache entry longer than this is a miss, never loaded: a restored cache is untrusted, and one
crafted row could otherwise hold gigabytes. kb-eval's own entry for an 8 MiB document is at most
a few times its size (the text once, plus per section a breadcrumb of at most MAX_BREADCRUMB_CHARS)."""


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
    except (ValueError, TypeError, RecursionError):  # RecursionError: a crafted, deeply nested entry
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


def lookup(connection: sqlite3.Connection | None, key: str) -> str | None:
    if connection is None:
        return None
    try:
        row = connection.execute(
            "SELECT payload FROM documents WHERE key = ? AND length(payload) <= ?", (key, MAX_PAYLOAD_CHARS)
        ).fetchone()
    except sqlite3.Error:
        return None
    return row[0] if row is not None and isinstance(row[0], str) else None
