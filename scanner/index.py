"""The index: the chunk table in SQLite, and BM25 postings analysed from that same table.

The `chunks` table is the single copy of the indexed text. The postings (`bm25.py`) are
computed from its rows, so the text the quote scan reads is, by construction, the text search
ranks: the seed decision makes that equality the scan's selection rule.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import sqlite3
import tempfile
import weakref
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from itertools import groupby
from operator import itemgetter
from typing import NamedTuple

from .analysis import Analyzer
from .bm25 import Bm25Parameters, Bm25Scorer, Postings, PostingsBuilder
from .documents import Corpus
from .progress import progress

INDEXED_FIELDS = ("heading", "breadcrumb", "body")
"""Exactly the fields search indexes, in field-weight order."""


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
    """The chunk table in a private temporary SQLite database; searches and the scan run inside one
    read snapshot of it.

    On disk rather than in memory: the indexed text then lives in the page cache, not in the
    process, which keeps a 100,000-document KB inside the runner's memory. The chunk table is
    always built (the quote scan reads it, whatever retriever answers); the postings are built
    the first time a search needs them, before the read snapshot starts."""

    def __init__(self, folder: str, connection: sqlite3.Connection, snapshot: CorpusSnapshot) -> None:
        self.folder = folder
        self.connection = connection
        self.corpus = snapshot
        self.analyzer = Analyzer()
        """Its vocabulary holds every term of the built scorers; queries are analysed with it."""
        self._scorers: dict[tuple[tuple[float, float, float], Bm25Parameters], Bm25Scorer] = {}
        weakref.finalize(self, _remove_folder, folder, [connection])

    @classmethod
    def build(cls, corpus: Corpus) -> Index:
        folder = tempfile.mkdtemp(prefix="kb-eval-index-")
        connection = _connect(os.path.join(folder, "chunks.sqlite"))
        connection.execute(
            "CREATE TABLE chunks (id INTEGER PRIMARY KEY, path TEXT NOT NULL,"
            " heading TEXT NOT NULL, breadcrumb TEXT NOT NULL, body TEXT NOT NULL)"
        )
        digest = hashlib.sha256()
        count = 0

        def rows() -> Iterator[tuple[int, str, str, str, str]]:
            # A generator, not a list: the chunk rows of a large KB are not held twice.
            nonlocal count
            for document in corpus.documents:
                for chunk in document.chunks:
                    breadcrumb = chunk.breadcrumb
                    count += 1
                    for value in (chunk.path, chunk.heading, breadcrumb, chunk.body):
                        encoded = value.encode("utf-8", "surrogatepass")
                        # Length-prefixed, so no two different corpora share a digest by moving a seam.
                        digest.update(len(encoded).to_bytes(8, "big"))
                        digest.update(encoded)
                    yield count, chunk.path, chunk.heading, breadcrumb, chunk.body

        connection.execute("BEGIN")
        connection.executemany("INSERT INTO chunks VALUES (?, ?, ?, ?, ?)", rows())
        connection.execute("COMMIT")
        snapshot = CorpusSnapshot(len(corpus.documents), count, "sha256:" + digest.hexdigest())
        return cls(folder, connection, snapshot)

    def scorer(self, weights: tuple[float, float, float], parameters: Bm25Parameters) -> Bm25Scorer:
        """The BM25 scorer for these field weights and parameters, analysed on first use (an external
        retriever never pays for it) from the chunk table itself: search ranks exactly the text the
        quote scan reads. Built once per combination."""
        key = (weights, parameters)
        if key not in self._scorers:
            if parameters.per_field:
                one_each = [tuple(1.0 if f == g else 0.0 for g in range(len(weights))) for f in range(len(weights))]
                fields = [self._postings(w) for w, boost in zip(one_each, weights) if boost > 0]
                self._scorers[key] = Bm25Scorer(fields, parameters, [w for w in weights if w > 0])
            else:
                self._scorers[key] = Bm25Scorer([self._postings(weights)], parameters)
        return self._scorers[key]

    def _postings(self, weights: tuple[float, ...]) -> Postings:
        """One pass over the chunk table: each field's terms counted `weight` times (fields of
        weight 0 left out)."""
        used = [f for f, w in enumerate(weights) if w > 0]
        builder = PostingsBuilder(self.corpus.chunks, [weights[f] for f in used])
        analyze = self.analyzer.index_ids
        rows = self.connection.execute("SELECT heading, breadcrumb, body FROM chunks ORDER BY id")
        with progress("indexed", total=self.corpus.chunks, unit="sections") as tick:
            for row in rows:
                builder.add([analyze(row[f]) for f in used])
                tick()
        return builder.finish(len(self.analyzer.vocabulary))

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
