"""The SQLite index: one row per chunk, and two FTS5 indexes over the same three fields.

The `chunks` table is the single copy of the indexed text. The FTS5 tables are
external-content indexes over it, so the text the quote scan reads is, by
construction, the text full-text search ranks: the seed decision makes that
equality the scan's selection rule.

Two tokenizations of the same fields: `porter unicode61` (English stemming,
words split at spaces and punctuation) and `trigram` (substring matching for
Japanese and Chinese, which have no spaces). See `retrievers/builtin.py` for
how their rankings are combined.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import sqlite3
import tempfile
import weakref
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from itertools import groupby
from operator import itemgetter
from typing import NamedTuple

from .analysis import has_cjk, with_cjk_bigrams
from .documents import Corpus

INDEXED_FIELDS = ("heading", "breadcrumb", "body")
"""Exactly the columns full-text search indexes, in FTS5 column order."""

WORD_TOKENIZER = "porter unicode61 remove_diacritics 2"
TRIGRAM_TOKENIZER = "trigram"


class IndexedChunk(NamedTuple):
    """A chunk as the index holds it: what the searches ranked and the scan reads.

    A named tuple, so the scan can take SQLite's rows as they come (same field order) instead
    of building an object per chunk: at 100,000 chunks that was a tenth of the scan."""

    id: int
    path: str
    heading: str
    breadcrumb: str
    body: str


@dataclass(frozen=True, slots=True)
class CorpusSnapshot:
    documents: int
    chunks: int
    digest: str
    """sha256 over every indexed chunk's path and fields, in index order."""


class Index:
    """SQLite databases in a private temporary folder; searches and the scan run inside one read
    snapshot of the chunk table.

    On disk rather than in memory: the indexed text then lives in the page cache, not in the
    process, which keeps a 100,000-document KB inside the runner's memory. The chunk table is
    always built (the quote scan reads it, whatever retriever answers). Each FTS5 table is built
    the first time a search needs it, before the read snapshot starts: an English-only golden set
    never pays for the trigram index. The trigram index is a database of its own, so it can be
    built on the second core while the word index is built on the first; it is written once,
    before any search, and only read afterwards."""

    def __init__(self, folder: str, connection: sqlite3.Connection, snapshot: CorpusSnapshot) -> None:
        self.folder = folder
        self.connection = connection
        self.corpus = snapshot
        self._trigram: sqlite3.Connection | None = None
        self._built: set[str] = set()
        weakref.finalize(self, _remove_folder, folder, [connection])

    @classmethod
    def build(cls, corpus: Corpus) -> Index:
        folder = tempfile.mkdtemp(prefix="kb-eval-index-")
        connection = _connect(os.path.join(folder, "chunks.sqlite"))
        connection.execute(
            "CREATE TABLE chunks (id INTEGER PRIMARY KEY, path TEXT NOT NULL,"
            " heading TEXT NOT NULL, breadcrumb TEXT NOT NULL, body TEXT NOT NULL, cjk INTEGER NOT NULL)"
        )
        digest = hashlib.sha256()
        count = 0

        def rows() -> Iterator[tuple[int, str, str, str, str, int]]:
            # A generator, not a list: the chunk rows of a large KB are not held twice.
            nonlocal count
            for document in corpus.documents:
                for chunk in document.chunks:
                    breadcrumb = chunk.breadcrumb
                    cjk = has_cjk(chunk.heading) or has_cjk(breadcrumb) or has_cjk(chunk.body)
                    count += 1
                    for value in (chunk.path, chunk.heading, breadcrumb, chunk.body):
                        encoded = value.encode("utf-8", "surrogatepass")
                        # Length-prefixed, so no two different corpora share a digest by moving a seam.
                        digest.update(len(encoded).to_bytes(8, "big"))
                        digest.update(encoded)
                    yield count, chunk.path, chunk.heading, breadcrumb, chunk.body, int(cjk)

        connection.execute("BEGIN")
        connection.executemany("INSERT INTO chunks VALUES (?, ?, ?, ?, ?, ?)", rows())
        connection.execute("COMMIT")
        snapshot = CorpusSnapshot(len(corpus.documents), count, "sha256:" + digest.hexdigest())
        return cls(folder, connection, snapshot)

    def ensure_full_text(self, *tables: str) -> None:
        """Build the named FTS5 tables (`fts_word`, `fts_trigram`) that are not there yet;
        two at once are built in parallel."""
        wanted = [t for t in dict.fromkeys(tables) if t not in self._built]
        for table in wanted:
            if table not in ("fts_word", "fts_trigram"):
                raise ValueError(table)
        if "fts_trigram" in wanted and "fts_word" in wanted:
            # sqlite3 releases the GIL while a statement runs, so the two builds overlap.
            cjk_rows = self._cjk_rows()
            with ThreadPoolExecutor(max_workers=1) as pool:
                trigram = pool.submit(self._build_trigram, cjk_rows)
                self._build_word(cjk_rows)
                trigram.result()
        elif "fts_word" in wanted:
            self._build_word(self._cjk_rows())
        elif "fts_trigram" in wanted:
            self._build_trigram(self._cjk_rows())
        self._built.update(wanted)

    def _cjk_rows(self) -> list[tuple[int, str, str, str]]:
        return self.connection.execute("SELECT id, heading, breadcrumb, body FROM chunks WHERE cjk = 1").fetchall()

    def _build_word(self, cjk_rows: list[tuple[int, str, str, str]]) -> None:
        # The word index holds the same three fields with CJK runs spelled as bigrams (see
        # analysis.py), so it is contentless; only chunks holding CJK text are rewritten.
        connection = self.connection
        connection.execute("BEGIN")
        connection.execute(
            "CREATE VIRTUAL TABLE fts_word USING fts5(heading, breadcrumb, body,"
            f" content='', tokenize='{WORD_TOKENIZER}')"
        )
        connection.execute(
            "INSERT INTO fts_word(rowid, heading, breadcrumb, body)"
            " SELECT id, heading, breadcrumb, body FROM chunks WHERE cjk = 0"
        )
        connection.executemany(
            "INSERT INTO fts_word(rowid, heading, breadcrumb, body) VALUES (?, ?, ?, ?)",
            ((i, with_cjk_bigrams(h), with_cjk_bigrams(b), with_cjk_bigrams(t)) for i, h, b, t in cjk_rows),
        )
        connection.execute("COMMIT")

    def _build_trigram(self, rows: list[tuple[int, str, str, str]]) -> None:
        # Only chunks holding CJK text: the trigram index answers CJK queries, which cannot
        # match a chunk without CJK characters, and it costs several times the word index
        # to build; an English KB with a few Japanese notes pays for those notes only.
        connection = _connect(os.path.join(self.folder, "trigram.sqlite"))
        connection.execute("BEGIN")
        connection.execute(
            "CREATE VIRTUAL TABLE fts_trigram USING fts5(heading, breadcrumb, body,"
            f" content='', tokenize='{TRIGRAM_TOKENIZER}')"
        )
        connection.executemany("INSERT INTO fts_trigram(rowid, heading, breadcrumb, body) VALUES (?, ?, ?, ?)", rows)
        connection.execute("COMMIT")
        self._trigram = connection
        weakref.finalize(self, connection.close)

    def connection_for(self, table: str) -> sqlite3.Connection:
        """The connection whose database holds `table`."""
        if table == "fts_trigram":
            if self._trigram is None:
                raise ValueError("fts_trigram is not built")
            return self._trigram
        return self.connection

    @contextmanager
    def read_snapshot(self) -> Iterator[None]:
        """One read transaction: every search and the quote scan see the same index state."""
        self.connection.execute("BEGIN")
        try:
            yield
        finally:
            self.connection.execute("COMMIT")

    def chunks_by_document(self) -> Iterator[tuple[str, list[IndexedChunk]]]:
        """Every indexed chunk, grouped by document, in path order."""
        # Ids were given in path order (Index.build walks the sorted corpus): no sort needed.
        cursor = self.connection.execute("SELECT id, path, heading, breadcrumb, body FROM chunks ORDER BY id")
        for path, rows in groupby(cursor, key=itemgetter(1)):
            yield path, list(rows)

    def search(
        self, table: str, expression: str, weights: tuple[float, float, float], depth: int
    ) -> list[tuple[int, float]]:
        """(chunk id, bm25 score with higher = better), best first; the table must be built.

        Ties in bm25 are broken by chunk id (path order), so a run is reproducible. No join in
        this query: bm25() runs for every matching row, and paths are looked up for the few
        rows kept (`locate_chunks`), not for every match."""
        if table not in self._built:
            raise ValueError(f"{table} is not built")
        w_heading, w_breadcrumb, w_body = (float(w) for w in weights)
        sql = (
            f"SELECT rowid, bm25({table}, {w_heading!r}, {w_breadcrumb!r}, {w_body!r}) AS s"
            f" FROM {table} WHERE {table} MATCH ? ORDER BY s, rowid LIMIT ?"
        )
        rows = self.connection_for(table).execute(sql, (expression, depth))
        return [(chunk_id, -score) for chunk_id, score in rows]

    def locate_chunks(self, chunk_ids: list[int]) -> dict[int, tuple[str, str]]:
        """chunk id -> (path, heading)."""
        if not chunk_ids:
            return {}
        marks = ",".join("?" * len(chunk_ids))
        rows = self.connection.execute(f"SELECT id, path, heading FROM chunks WHERE id IN ({marks})", chunk_ids)
        return {chunk_id: (path, heading) for chunk_id, path, heading in rows}


def _connect(path: str) -> sqlite3.Connection:
    connection = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    # A private scratch database: nothing to recover after a crash, so no journal and no fsync.
    connection.execute("PRAGMA journal_mode = OFF")
    connection.execute("PRAGMA synchronous = OFF")
    connection.execute("PRAGMA cache_size = -65536")  # 64 MiB of page cache per connection
    return connection


def _remove_folder(folder: str, connections: list[sqlite3.Connection]) -> None:
    for connection in connections:
        connection.close()
    shutil.rmtree(folder, ignore_errors=True)
