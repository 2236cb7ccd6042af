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
import sqlite3
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Iterator

from .analysis import has_cjk, with_cjk_bigrams
from .corpus import Corpus

INDEXED_FIELDS = ("heading", "breadcrumb", "body")
"""Exactly the columns full-text search indexes, in FTS5 column order."""

WORD_TOKENIZER = "porter unicode61 remove_diacritics 2"
TRIGRAM_TOKENIZER = "trigram"


@dataclass(frozen=True, slots=True)
class IndexedChunk:
    """A chunk as the index holds it: what the searches ranked and the scan reads."""

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
    """An in-memory SQLite database; searches and the scan run inside one read snapshot."""

    def __init__(self, connection: sqlite3.Connection, snapshot: CorpusSnapshot, full_text: bool) -> None:
        self.connection = connection
        self.corpus = snapshot
        self.full_text = full_text

    @classmethod
    def build(cls, corpus: Corpus, *, full_text: bool = True) -> "Index":
        """`full_text=False` builds only the chunk table, for runs whose queries an external
        retriever answers: the quote scan still needs the indexed text."""
        connection = sqlite3.connect(":memory:", isolation_level=None, check_same_thread=False)
        connection.execute(
            "CREATE TABLE chunks (id INTEGER PRIMARY KEY, path TEXT NOT NULL,"
            " heading TEXT NOT NULL, breadcrumb TEXT NOT NULL, body TEXT NOT NULL)"
        )
        digest = hashlib.sha256()
        rows = []
        for document in corpus.documents:
            for chunk in document.chunks:
                rows.append((len(rows) + 1, chunk.path, chunk.heading, chunk.breadcrumb, chunk.body))
                for value in (chunk.path, chunk.heading, chunk.breadcrumb, chunk.body):
                    encoded = value.encode("utf-8", "surrogatepass")
                    # Length-prefixed, so no two different corpora share a digest by moving a seam.
                    digest.update(len(encoded).to_bytes(8, "big"))
                    digest.update(encoded)
        connection.execute("BEGIN")
        connection.executemany("INSERT INTO chunks VALUES (?, ?, ?, ?, ?)", rows)
        if full_text:
            # The word index holds the same three fields with CJK runs spelled as bigrams (see
            # analysis.py), so it is contentless; the trigram index reads the chunks table as is.
            connection.execute(
                "CREATE VIRTUAL TABLE fts_word USING fts5(heading, breadcrumb, body,"
                f" content='', tokenize='{WORD_TOKENIZER}')"
            )
            connection.executemany(
                "INSERT INTO fts_word(rowid, heading, breadcrumb, body) VALUES (?, ?, ?, ?)",
                (
                    (row[0], with_cjk_bigrams(row[2]), with_cjk_bigrams(row[3]), with_cjk_bigrams(row[4]))
                    if any(has_cjk(value) for value in row[2:]) else (row[0], row[2], row[3], row[4])
                    for row in rows
                ),
            )
            connection.execute(
                "CREATE VIRTUAL TABLE fts_trigram USING fts5(heading, breadcrumb, body,"
                f" content='chunks', content_rowid='id', tokenize='{TRIGRAM_TOKENIZER}')"
            )
            connection.execute(
                "INSERT INTO fts_trigram(rowid, heading, breadcrumb, body) SELECT id, heading, breadcrumb, body FROM chunks"
            )
        connection.execute("COMMIT")
        snapshot = CorpusSnapshot(len(corpus.documents), len(rows), "sha256:" + digest.hexdigest())
        return cls(connection, snapshot, full_text)

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
        cursor = self.connection.execute("SELECT id, path, heading, breadcrumb, body FROM chunks ORDER BY path, id")
        current: str | None = None
        group: list[IndexedChunk] = []
        for row in cursor:
            chunk = IndexedChunk(*row)
            if chunk.path != current:
                if group:
                    yield current, group  # type: ignore[misc]
                current, group = chunk.path, []
            group.append(chunk)
        if group:
            yield current, group  # type: ignore[misc]

    def search(
        self, table: str, expression: str, weights: tuple[float, float, float], depth: int
    ) -> list[tuple[int, str, str, float]]:
        """Rows (chunk id, path, heading, bm25 score with higher = better), best first.

        Ties in bm25 are broken by chunk id (path order), so a run is reproducible."""
        if table not in ("fts_word", "fts_trigram"):
            raise ValueError(table)
        w_heading, w_breadcrumb, w_body = (float(w) for w in weights)
        sql = (
            f"SELECT c.id, c.path, c.heading, -bm25({table}, {w_heading!r}, {w_breadcrumb!r}, {w_body!r}) AS s"
            f" FROM {table} JOIN chunks c ON c.id = {table}.rowid"
            f" WHERE {table} MATCH ? ORDER BY s DESC, c.id LIMIT ?"
        )
        return self.connection.execute(sql, (expression, depth)).fetchall()
