"""The index: the chunk table in SQLite, and BM25 postings analysed from that same table.

The `chunks` table is the single copy of the indexed text. The postings (`bm25.py`) are
computed from its rows, so the text the quote scan reads is, by construction, the text search
ranks: the seed decision makes that equality the scan's selection rule.
"""

from __future__ import annotations

import bisect
import multiprocessing
import os
import shutil
import sqlite3
import tempfile
import weakref
from array import array
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from itertools import accumulate, chain, groupby
from operator import itemgetter
from typing import Any, NamedTuple, cast

import numpy as np

from scanner.corpus.documents import Chunk, Document, HeldDocument
from scanner.corpus.markdown import BREADCRUMB_SEPARATOR
from scanner.corpus.reader import CorpusCaps
from scanner.corpus.table import TableDocument, document_table
from scanner.foundation.progress import progress
from scanner.foundation.workers import worker_pool
from scanner.search.analysis import Analyzer, IndexCapExceeded
from scanner.search.bm25 import (
    Bm25Parameters,
    Bm25Scorer,
    DerivedPostings,
    FieldRun,
    KeptAnalysis,
    Postings,
    PostingsBuilder,
    SpilledPostings,
    place_spilled,
)
from scanner.search.corpus_digest import CorpusDigest, KeptShares

DEFAULT_CAPS = CorpusCaps()
"""The corpus caps' defaults (the settings' own)."""

INDEXED_FIELDS = ("heading", "breadcrumb", "body")
"""Exactly the fields search indexes, in field-weight order."""

_SCORED_COLUMNS = {
    "heading": "COALESCE(scored_heading, heading)",
    "breadcrumb": "COALESCE(scored_breadcrumb, breadcrumb)",
    "body": "body",
}
"""What search analyses for each field: the heading and breadcrumb with the page's title counted
once (titles.scored_fields), stored only where they differ from the text as written."""


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
class Reuse:
    """Another index whose rows and analysis a new index takes over for its HeldDocuments.

    A pull request's base differs from its head in the few documents the pull request changed:
    the base's index takes the head's chunk-table rows and analysed chunks (postings and
    lengths) for every other document (a HeldDocument: the same path and bytes, so the same
    chunks) and parses and analyses only the changed ones, then computes its own collection
    statistics, so its rankings and scores are those of an index built from scratch. The rows
    taken are read where the donor's table holds them (attached), so the reusing index holds its
    donor, and the donor's folder must outlive it."""

    index: Index
    """Built with `donor` (and `keep_analysis`, and analysed, for its analysis to be taken)."""
    take_analyzer: bool = False
    """Take the donor's analyzer as it is instead of a copy: where the donor analyses and searches no
    more (a forked child's copy of the head), copying its vocabulary only doubled it (8 MiB for the
    bench's 55,000 terms, a fifth of what a pull request's base adds at 10,000 documents)."""


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

    def __init__(
        self, folder: str, connection: sqlite3.Connection, snapshot: CorpusSnapshot, paths: frozenset[str],
        analysis_workers: int | None = None, *, order: Sequence[str] = (), starts: Sequence[int] = (),
        caps: CorpusCaps = DEFAULT_CAPS,
    ) -> None:
        self.folder = folder
        self.caps = caps
        """Its analysis stops (IndexCapExceeded) past `caps.postings` postings or `caps.terms` words."""
        self.connection = connection
        self.corpus = snapshot
        self.paths = paths
        """Every indexed document's path."""
        self.analysis_workers = min(analysis_workers or os.cpu_count() or 1, MAX_ANALYSIS_WORKERS)
        """Processes that analyse the chunk table when it has PARALLEL_MIN_CHUNKS or more (one per CPU)."""
        self.analyzer = Analyzer()
        """Its vocabulary holds every term of the built scorers; queries are analysed with it."""
        self._scorers: dict[tuple[tuple[float, float, float], Bm25Parameters], Bm25Scorer] = {}
        self._order = list(order)
        """Every document's path, in chunk order (path order)."""
        self._starts = array("q", starts)
        """The chunk position of each document of `_order`'s first chunk, then the chunk count."""
        self.keep_analysis = False
        """Keep each analysis's Postings (`_kept`) for an index that reuses them (Reuse)."""
        self._kept: dict[tuple[tuple[float, ...], ...], list[KeptAnalysis]] = {}
        self._kept_terms: frozenset[str] | None = None
        """keep_only_terms' terms: an analysis after it keeps only theirs."""
        self._reused: _Reused | None = None
        self._donor_terms: int | None = None
        """The donor's vocabulary size when this index's analyzer was copied from it (Reuse)."""
        self._digest_shares: KeptShares | None = None
        """Each document's share of the corpus digest, when built as a donor (Index.build)."""
        self._layout: _Layout | None = None
        """Where the rows of a reusing index are (Reuse): the donor's table holds those taken from it;
        None: this index's own table holds every row."""
        weakref.finalize(self, _remove_folder, folder, [connection])

    @classmethod
    def build(
        cls, documents: Iterable[Document | TableDocument | HeldDocument], *, analysis_workers: int | None = None,
        reuse: Reuse | None = None, keep_analysis: bool = False, donor: bool = False, caps: CorpusCaps = DEFAULT_CAPS,
    ) -> Index:
        """Index documents as they come, in path order (the order read_folder and read_given yield): each is written to
        the chunk table and dropped, so the parsed KB is never held whole. The table keeps each
        chunk's source lines too, so a finding is located from it (Index.chunk).

        With `reuse`, the HeldDocuments are taken from its index, rows and analysis (Reuse); a
        HeldDocument that index does not hold, as many chunks, is a kb-eval bug. With
        `keep_analysis`, this index keeps its own analysis for one that reuses it; with `donor`,
        each document's share of its corpus digest, for one that reuses its rows (Reuse needs it)."""
        if reuse is not None and reuse.index._digest_shares is None:
            raise RuntimeError("an index reused was not built as a donor")
        folder = tempfile.mkdtemp(prefix="kb-eval-index-")
        connection = _connect(os.path.join(folder, "chunks.sqlite"))
        connection.execute(
            "CREATE TABLE chunks (id INTEGER PRIMARY KEY, path TEXT NOT NULL,"
            " heading TEXT NOT NULL, breadcrumb TEXT NOT NULL, body TEXT NOT NULL,"
            " start_line INTEGER NOT NULL, end_line INTEGER NOT NULL, heading_line INTEGER,"
            " body_start_line INTEGER NOT NULL, breadcrumb_lines TEXT NOT NULL, breadcrumb_part_lengths TEXT NOT NULL,"
            " scored_heading TEXT, scored_breadcrumb TEXT)"
        )
        digest = CorpusDigest(os.path.join(folder, "digest-shares") if donor else None)
        count = 0
        paths: list[str] = []
        starts: list[int] = []
        giver = reuse.index if reuse is not None else None
        shares = giver._digest_shares if giver is not None else None
        # (first position in the donor, first position here, chunks) of each document reused, and
        # (first position here, chunks) of each document analysed here.
        moved: list[tuple[int, int, int]] = []
        fresh: list[tuple[int, int]] = []

        def rows() -> Iterator[tuple[object, ...]]:
            nonlocal count
            for document in documents:
                if paths and document.path <= paths[-1]:
                    # Chunk ids are positions in path order (chunks_by_document, the postings).
                    raise RuntimeError(f"documents out of path order: {document.path!r} after {paths[-1]!r}")
                paths.append(document.path)
                starts.append(count)
                if isinstance(document, HeldDocument):
                    at = giver._document_at(document.path) if giver is not None else None
                    if giver is None or shares is None or at is None:
                        raise RuntimeError(f"{document.path!r} is held by no index this one reuses")
                    found = giver._document_chunks_at(at)
                    if found[1] != document.sections:
                        raise RuntimeError(f"{document.path!r} is held by no index this one reuses")
                    if found[1]:
                        moved.append((found[0], count, found[1]))
                    count += found[1]
                    # Its share of the digest is the donor's, the same bytes.
                    digest.add_kept(shares, at)
                    continue  # its rows are the donor's, read where they are
                table = document if isinstance(document, TableDocument) else document_table(document)
                rows = table.rows
                # The digest: each value length-prefixed (no two different corpora share a digest
                # by moving a seam), a document's values given to it at once. The rows hold them so.
                digest.add(table.digested)
                if not rows:
                    continue
                fresh.append((count, len(rows)))
                for row in rows:
                    count += 1
                    yield (count, *row)

        try:
            if giver is not None:
                connection.execute("ATTACH DATABASE ? AS donor", (os.path.join(giver.folder, "chunks.sqlite"),))
            connection.execute("BEGIN")
            connection.executemany("INSERT INTO chunks VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", rows())
            connection.execute("COMMIT")
            if giver is not None and not moved:
                connection.execute("DETACH DATABASE donor")
            hexdigest, kept_shares = digest.finish()
        except BaseException:
            # Reading stopped part-way (a corpus cap, an interrupt): the half-written table goes
            # with it, as a finished index's does when it is dropped.
            digest.close()
            _remove_folder(folder, [connection])
            raise
        snapshot = CorpusSnapshot(len(paths), count, hexdigest)
        starts.append(count)
        index = cls(folder, connection, snapshot, frozenset(paths), analysis_workers, order=paths, starts=starts, caps=caps)
        index.keep_analysis = keep_analysis
        index._digest_shares = kept_shares
        if giver is not None and moved:
            runs = _joined_moves(moved)
            index._reused = _Reused(giver, runs, _joined(fresh), reuse is not None and reuse.take_analyzer)
            # The donor's rows of the documents taken are read where they are (not copied: at
            # 100,000 bench documents the copy was 1.8 s of a pull request's base, py-spy).
            index._layout = _Layout.of(runs, _joined(fresh))
        return index

    def _document_chunks(self, path: str) -> tuple[int, int] | None:
        """(position of the first chunk, chunk count) of the document at `path`, if indexed."""
        at = self._document_at(path)
        return None if at is None else self._document_chunks_at(at)

    def _document_at(self, path: str) -> int | None:
        """The document's place in index order, if indexed."""
        at = bisect.bisect_left(self._order, path)
        return at if at < len(self._order) and self._order[at] == path else None

    def _document_chunks_at(self, at: int) -> tuple[int, int]:
        return self._starts[at], self._starts[at + 1] - self._starts[at]

    def path_of(self, chunk_id: int) -> str:
        """The path of the document holding this chunk (ids start at 1)."""
        at = max(0, bisect.bisect_right(self._starts, max(chunk_id - 1, 0)) - 1)
        return self._order[min(at, len(self._order) - 1)] if self._order else ""

    def release_page_cache(self) -> None:
        """Free the chunk table's page cache (up to its 8 MiB, refilled as the table is read again).
        Before a pull request's fork: the head's scan fills it anew, so the pages it held at the fork
        would otherwise be copied for the head and left unused in the base's child."""
        self.connection.execute("PRAGMA shrink_memory")

    def release_analysis(self) -> None:
        """Drop the Postings kept for a reusing index (this process will build none)."""
        self.keep_analysis = False
        self._kept.clear()

    def keep_only_terms(self, terms: Iterable[str]) -> None:
        """Of the analysis kept for a reusing index, only the postings of these terms: a pull
        request's base asks for its golden queries' terms alone (the head's), so the rest need not
        outlive the head's scorer. Told before an analysis, that analysis keeps only these, and
        its scorer writes the impacts over the term counts (the head's peak is then a plain
        run's) except for these terms', which both read from the same arrays. The reusing index
        refuses, as a kb-eval bug, a term left out here. Told the same
        terms again (the pipeline tells the head before its analysis and when the base starts),
        nothing is copied: a copy of what is kept is the size of what is kept."""
        asked = frozenset(terms)
        if asked == self._kept_terms:
            return
        self._kept_terms = asked
        ids = self._kept_ids()
        if any(part.terms is not None and not ids <= part.terms for parts in self._kept.values() for part in parts):
            # Only the terms told before the analysis still hold their counts (the scorer wrote
            # its impacts over the others'): more terms now is a kb-eval bug.
            raise RuntimeError("keep_only_terms asked for terms the analysis did not keep")
        self._kept = {key: [part.only(ids) for part in parts] for key, parts in self._kept.items()}

    def _kept_ids(self) -> frozenset[int]:
        vocabulary = self.analyzer.vocabulary
        return frozenset(vocabulary[term] for term in self._kept_terms or () if term in vocabulary)

    def chunk(self, chunk_id: int) -> Chunk:
        """The chunk with this id, with its source lines, as it was indexed."""
        row = next(self._select(
            "path, heading, breadcrumb, body, start_line, end_line, heading_line, body_start_line,"
            " breadcrumb_lines, breadcrumb_part_lengths", chunk_id - 1, chunk_id,
        ), None) if 0 < chunk_id <= self.corpus.chunks else None
        if row is None:
            raise KeyError(chunk_id)
        path, heading, breadcrumb, body, start, end, heading_line, body_start, lines, lengths = row
        parts, offset = [], 0
        for length in map(int, lengths.split(",")):
            parts.append(breadcrumb[offset : offset + length])
            offset += length + len(BREADCRUMB_SEPARATOR)
        return Chunk(
            path=path, heading=heading, breadcrumb_parts=tuple(parts), body=body, start_line=start, end_line=end,
            heading_line=heading_line, body_start_line=body_start,
            breadcrumb_lines=tuple(map(int, lines.split(","))),
        )

    def scorer(self, weights: tuple[float, float, float], parameters: Bm25Parameters) -> Bm25Scorer:
        """The BM25 scorer for these field weights and parameters, analysed on first use (an external
        retriever never pays for it) from the chunk table itself: search ranks exactly the text the
        quote scan reads. Built once per combination."""
        key = (weights, parameters)
        if key not in self._scorers:
            if parameters.per_field:
                fields = self._postings([_only(f, len(weights)) for f, boost in enumerate(weights) if boost > 0])
                self._scorers[key] = Bm25Scorer(
                    fields, parameters, [w for w in weights if w > 0], consume=self._consumes(), shared=self._shared()
                )
            else:
                # Each field's weight is split: its `alone` share scored as the field's own BM25,
                # the rest inside BM25F (bm25.Bm25Parameters.alone).
                inside = tuple(w * (1 - share) for w, share in zip(weights, parameters.alone))
                alone = [(f, w * share) for f, (w, share) in enumerate(zip(weights, parameters.alone)) if w * share > 0]
                layers = self._postings([inside] + [_only(f, len(weights)) for f, _ in alone])
                masks: list[np.ndarray | None] = [None]
                for (field, _), layer in zip(alone, layers[1:]):
                    # Text in another field: the weighted length beyond this field's own share.
                    other = layers[0].lengths - np.float32(inside[field]) * layer.lengths
                    smallest = min((w for f, w in enumerate(inside) if f != field and w > 0), default=1.0)
                    masks.append(other > smallest / 2 if parameters.alone_beside_text else None)
                self._scorers[key] = Bm25Scorer(
                    layers, parameters, [1.0] + [boost for _, boost in alone], masks, consume=self._consumes(),
                    shared=self._shared(),
                )
        return self._scorers[key]

    def _consumes(self) -> bool:
        """Whether a scorer may write its impacts over the analysis's term counts: not while a
        reusing index will read them all (kept whole, keep_only_terms not told first)."""
        return not self.keep_analysis or self._kept_terms is not None

    def _shared(self) -> frozenset[int] | None:
        """The terms whose term counts a scorer leaves for a reusing index (keep_only_terms told
        before the analysis): that index reads the scorer's own arrays, so no posting is held twice."""
        return self._kept_ids() if self.keep_analysis and self._kept_terms is not None else None

    def _postings(self, layers: Sequence[tuple[float, ...]]) -> Sequence[Postings | DerivedPostings]:
        """Postings for each layer (a weight per field; a field of weight 0 is left out of that
        layer), in one pass over the chunk table: each field is analysed once, whatever the number
        of layers. By worker processes over consecutive chunk ranges when the KB is large enough,
        merged into one vocabulary here; in this process otherwise. With a donor's analysis
        (Reuse), only the chunks not taken from it are analysed, and the postings are read through
        the donor's (DerivedPostings)."""
        used = [f for f in range(len(INDEXED_FIELDS)) if any(layer[f] > 0 for layer in layers)]
        job = _AnalysisJob(
            os.path.join(self.folder, "chunks.sqlite"), tuple(_SCORED_COLUMNS[INDEXED_FIELDS[f]] for f in used),
            tuple(tuple(layer[f] for f in used) for layer in layers), self.caps.postings, self.caps.terms,
        )
        key = tuple(layers)
        total = self.corpus.chunks
        reused = self._reused
        donated = reused.donor._kept.get(key) if reused is not None else None
        if reused is not None and donated is not None and self._donor_terms is None and not self.analyzer.vocabulary:
            # The donor's vocabulary, so the chunks analysed here get the term ids of the postings
            # reused. Copied at the first analysis, when the donor's is complete for what it kept.
            donor_analyzer = reused.donor.analyzer
            self.analyzer = donor_analyzer if reused.take_analyzer else donor_analyzer.copy()
            self._donor_terms = len(self.analyzer.vocabulary)
        # A term id means the same term on both sides only below the size copied.
        usable = donated is not None and self._donor_terms is not None and all(
            len(part.postings.start) - 1 <= self._donor_terms for part in donated
        )
        with progress("indexed", total=total, unit="sections") as tick:
            if reused is None or donated is None or not usable:
                # Every chunk analysed here, by processes reading this index's own table.
                self._take_rows()
                postings = self._analyse(job, [(0, total)], tick)
            else:
                return self._derive(job, reused, donated, tick)
        if self.keep_analysis:
            kept = [KeptAnalysis.of(part) for part in postings]
            # Told the terms first: the very arrays the scorer is given, whose term counts it
            # leaves as they are for these terms (Bm25Scorer's `shared`); a copy of them was the
            # size of what is kept (about half the postings for the bench's golden queries).
            self._kept[key] = kept if self._kept_terms is None else [part.sharing(self._kept_ids()) for part in kept]
        return postings

    def _take_rows(self) -> None:
        """The donor's rows this index reads where they are, copied into its own table (at their
        positions here): for an analysis of the whole table, which the donor's did not provide."""
        layout, self._layout = self._layout, None
        if layout is None:
            return
        self.connection.execute("BEGIN")
        for table, shift, lo, hi in layout.pieces(0, self.corpus.chunks):
            if table == _DONOR_TABLE:
                self.connection.execute(
                    f"INSERT INTO {_OWN_TABLE} SELECT id + ?, path, heading, breadcrumb, body, start_line, end_line,"
                    " heading_line, body_start_line, breadcrumb_lines, breadcrumb_part_lengths, scored_heading,"
                    f" scored_breadcrumb FROM {_DONOR_TABLE} WHERE id > ? AND id <= ?",
                    (shift, lo, hi),
                )
        self.connection.execute("COMMIT")

    def _derive(
        self, job: _AnalysisJob, reused: _Reused, donated: list[KeptAnalysis], tick: Callable[[int], None]
    ) -> list[DerivedPostings]:
        """The postings of this corpus through the donor's, analysing only the chunks not reused."""
        fresh = reused.fresh
        new = self._analyse(job, [(first, first + count) for first, count in fresh], tick)
        new_to = np.concatenate([np.arange(first, first + count) for first, count in fresh] or [np.zeros(0, np.int64)])
        kept_to = np.full(reused.donor.corpus.chunks, -1, dtype=np.int32)
        for donor_first, first, count in reused.moved:
            kept_to[donor_first : donor_first + count] = np.arange(first, first + count)
        tick(sum(count for _, _, count in reused.moved))
        to_base = DerivedPostings.to_base_of(kept_to, new_to)
        derived = [
            DerivedPostings.of(old, to_base, part, self.corpus.chunks) for old, part in zip(donated, new, strict=True)
        ]
        # The postings taken over, as the base holds them: counted chunk by chunk only when the
        # donor's whole count and the new ones together would pass the cap.
        added = sum(len(part.chunks) for part in new)
        if sum(part.total for part in donated) + added > self.caps.postings:
            kept = np.flatnonzero(kept_to >= 0)
            if sum(part.count_of(kept) for part in donated) + added > self.caps.postings:
                raise IndexCapExceeded("max-postings", self.caps.postings, self.corpus.chunks)
        return derived

    def _analyse(self, job: _AnalysisJob, ranges: list[tuple[int, int]], tick: Callable[[int], None]) -> list[Postings]:
        """Postings of the chunks at these position ranges ([first, last), increasing), their
        chunk positions counted from 0 over the ranges in order: by worker processes over
        consecutive shares when they hold enough chunks, merged into one vocabulary here; in this
        process otherwise."""
        total = sum(last - first for first, last in ranges)
        workers = self.analysis_workers
        if workers < 2 or total < PARALLEL_MIN_CHUNKS:
            return job.run(ranges, self.analyzer, self.connection, tick, _PostingsCount())
        shares = _shares(ranges, workers)
        vocabulary = self.analyzer.vocabulary
        # One count of postings for every process: each posting is built in exactly one of them,
        # so their sum is the index's, and every process stops once it crosses the cap.
        count = _PostingsCount(_shared_counter())
        # This process analyses the first share itself while workers-1 processes do the others:
        # as fast as a worker per share, one process's memory less.
        with worker_pool(workers - 1, _share_postings_count, (count.shared,)) as pool:
            answers = pool.map(job.run_in_worker, shares[1:])
            own = job.spilled(shares[0], self.analyzer, self.connection, tick, count)
            # Already in this vocabulary: its own terms map to themselves.
            parts = [(np.arange(len(own[0].df), dtype=np.int64), own)]
            for share, (terms, part) in zip(shares[1:], answers):
                mapping = np.fromiter(
                    (vocabulary.setdefault(term, len(vocabulary)) for term in terms), dtype=np.int64, count=len(terms)
                )
                if len(vocabulary) > job.max_words:
                    # Each process held at most the cap; together they may hold more distinct words.
                    raise IndexCapExceeded("max-terms", job.max_words, share[-1][1] if share else 0)
                parts.append((mapping, part))
                tick(sum(last - first for first, last in share))
        # Each layer's batches placed straight into the index's arrays, a batch at a time.
        return [place_spilled([(mapping, part[layer]) for mapping, part in parts], len(vocabulary))
                for layer in range(len(job.layers))]

    @contextmanager
    def read_snapshot(self) -> Iterator[None]:
        """One read transaction: every search and the quote scan see the same index state."""
        self.connection.execute("BEGIN")
        try:
            yield
        finally:
            self.connection.execute("COMMIT")

    def chunks_by_document(self, skip: frozenset[str] = frozenset()) -> Iterator[tuple[str, list[IndexedChunk]]]:
        """Every indexed chunk, grouped by document, in path order; the documents `skip` names are
        not read at all (a pull request's base scans only the documents it changed)."""
        # Ids were given in path order (Index.build walks the sorted corpus): no sort needed.
        columns = "path, heading, breadcrumb, body"
        if not skip:
            wanted = [(0, self.corpus.chunks)]
        else:
            wanted = _joined([
                (self._starts[at], self._starts[at + 1] - self._starts[at])
                for at, path in enumerate(self._order) if path not in skip and self._starts[at + 1] > self._starts[at]
            ])
        cursors = (self._select(columns, first, first + count, with_id=True) for first, count in wanted)
        for path, rows in groupby(chain.from_iterable(cursors), key=itemgetter(1)):
            # SQLite's rows as they come, in IndexedChunk's field order (no object built per chunk).
            yield path, cast("list[IndexedChunk]", list(rows))

    def locate_chunks(
        self, chunk_ids: list[int], *, parents: bool = True
    ) -> dict[int, tuple[str, str, tuple[str, ...] | None]]:
        """chunk id -> (path, heading, the enclosing headings outermost first, without the title;
        None unless `parents`)."""
        found: dict[int, tuple[str, str, tuple[str, ...] | None]] = {}
        columns = "path, heading, breadcrumb, breadcrumb_part_lengths" if parents else "path, heading"
        for table, here in self._tables_of(chunk_ids):
            ids = list(here)
            for start in range(0, len(ids), _SQL_BATCH):
                batch = ids[start : start + _SQL_BATCH]
                marks = ",".join("?" * len(batch))
                rows = self.connection.execute(f"SELECT id, {columns} FROM {table} WHERE id IN ({marks})", batch)
                if not parents:
                    found.update((here[there], (path, heading, None)) for there, path, heading in rows)
                    continue
                found.update(
                    (here[there], (path, heading, _parents(crumb, lengths)))
                    for there, path, heading, crumb, lengths in rows
                )
        return found

    def _select(self, columns: str, first: int, last: int, *, with_id: bool = False) -> Iterator[tuple[Any, ...]]:
        """`columns` of the chunks after position `first` up to `last`, in chunk order (their ids
        here first, `with_id`), wherever their rows are."""
        return _select(self.connection, self._layout, columns, first, last, with_id=with_id)

    def _tables_of(self, chunk_ids: Iterable[int]) -> list[tuple[str, dict[int, int]]]:
        """(table, its row id -> chunk id here) of each table holding some of these chunks."""
        if self._layout is None:
            return [(_OWN_TABLE, {chunk_id: chunk_id for chunk_id in chunk_ids})]
        tables: dict[str, dict[int, int]] = {}
        for chunk_id in chunk_ids:
            if 0 < chunk_id <= self.corpus.chunks:
                table, shift = self._layout.at(chunk_id - 1)
                tables.setdefault(table, {})[chunk_id - shift] = chunk_id
        return list(tables.items())

    def sections(self, paths: Iterable[str]) -> dict[str, list[tuple[str, tuple[str, ...], int | None, bool]]]:
        """path -> each section of that document in order: (heading, enclosing headings outermost
        first without the title, the heading's source line, whether search scores it: a section
        holding nothing but the page's title is not, titles.py). Only the paths asked for are read."""
        found: dict[str, list[tuple[str, tuple[str, ...], int | None, bool]]] = {}
        rows = self._rows_of(paths, "path, heading, breadcrumb, breadcrumb_part_lengths, heading_line, scored_breadcrumb")
        for path, heading, crumb, lengths, line, scored in rows:
            # An unscored section's scored breadcrumb is empty; every other one holds the title.
            found.setdefault(path, []).append((heading, _parents(crumb, lengths), line, scored != ""))
        return found

    def _rows_of(self, paths: Iterable[str], columns: str) -> Iterator[tuple[Any, ...]]:
        """`columns` of the chunk-table rows of the indexed documents at `paths`, in chunk order.

        Read by chunk id, each run of adjacent documents in one statement: ids are positions in
        path order, so a document's rows are one id range (`_document_chunks`), which the table's
        key finds. `path IN (...)` has no index to use and read the whole table once per 500 paths
        asked for (the answers of 10,000 queries: seconds of the run)."""
        ranges = sorted(found for path in set(paths) if (found := self._document_chunks(path)) is not None and found[1])
        for first, count in _joined(ranges):
            yield from self._select(columns, first, first + count)

    def titles_and_headings(self, paths: Iterable[str]) -> dict[str, list[str]]:
        """path -> the page's title as written (the breadcrumb's first part), then each heading of
        the page that differs from it, in order. Only the paths asked for are read."""
        found: dict[str, list[str]] = {}
        for path, heading, crumb, lengths in self._rows_of(paths, "path, heading, breadcrumb, breadcrumb_part_lengths"):
            texts = found.setdefault(path, [crumb[: int(lengths.split(",")[0])]])
            if heading and heading not in texts:
                texts.append(heading)
        return found


_SQL_BATCH = 500
"""Chunk ids per `IN (...)`: under SQLite's bound-parameter limit."""


def _parents(breadcrumb: str, lengths: str) -> tuple[str, ...]:
    """The breadcrumb's parts after the document title: the headings enclosing a section."""
    parts, offset = [], 0
    for length in map(int, lengths.split(",")):
        parts.append(breadcrumb[offset : offset + length])
        offset += length + len(BREADCRUMB_SEPARATOR)
    return tuple(parts[1:])


PARALLEL_MIN_CHUNKS = 5_000
"""Below this many chunks one process analyses them: starting a worker and merging vocabularies
costs more than the second core saves. At 1,000 bench documents (11,052 chunks) the split was
already faster than one process (bench/speed_table.py)."""

ROWS_BATCH_CHARACTERS = 1 << 19
"""Characters of chunk-table rows analysed together: several analysis batches (BATCH_CHARACTERS) of
the text past ASCII when a fifth of it is, as in the bench KB; at most 2 MiB of text held."""


def _rows_of_batch(rows: sqlite3.Cursor) -> list[tuple[str, ...]]:
    """The next rows, up to about ROWS_BATCH_CHARACTERS of text (one row at least), analysed together."""
    batch: list[tuple[str, ...]] = []
    held = 0
    while held < ROWS_BATCH_CHARACTERS and (more := rows.fetchmany(ROWS_FETCHED)):
        batch += more
        held += sum(map(len, chain.from_iterable(more)))
    return batch


ROWS_FETCHED = 64
"""Rows taken from the cursor at a time (a batch ends at most this many rows past its characters)."""

MAX_ANALYSIS_WORKERS = 4
"""Each worker holds its share of the postings and a vocabulary; more than a few add memory, not speed."""


@dataclass(frozen=True, slots=True)
class _Reused:
    """What a built index takes from its donor (Reuse): the documents moved and those analysed here."""

    donor: Index
    moved: list[tuple[int, int, int]]
    """(first chunk position in the donor, first chunk position here, chunk count) of each run of
    documents taken (adjacent on both sides)."""
    fresh: list[tuple[int, int]]
    """(first chunk position here, chunk count) of each run of documents analysed here."""
    take_analyzer: bool = False
    """Reuse.take_analyzer."""


_OWN_TABLE = "main.chunks"
_DONOR_TABLE = "donor.chunks"


@dataclass(frozen=True, slots=True)
class _Layout:
    """Where a reusing index's rows are: runs of chunk positions, each in its own table (the chunks
    analysed here, at their ids) or in the donor's (the documents taken, at the donor's ids)."""

    firsts: list[int]
    """Each run's first position here, ascending."""
    tables: list[str]
    shifts: list[int]
    """Chunk id here minus row id in the run's table."""

    @classmethod
    def of(cls, moved: list[tuple[int, int, int]], fresh: list[tuple[int, int]]) -> _Layout:
        runs = sorted(
            [(first, _DONOR_TABLE, first - donor_first) for donor_first, first, _ in moved]
            + [(first, _OWN_TABLE, 0) for first, _ in fresh]
        )
        return cls([first for first, _, _ in runs], [table for _, table, _ in runs], [shift for _, _, shift in runs])

    def at(self, position: int) -> tuple[str, int]:
        """(table, shift) of the run holding the chunk at `position`."""
        run = max(bisect.bisect_right(self.firsts, position) - 1, 0)
        return self.tables[run], self.shifts[run]

    def pieces(self, first: int, last: int) -> Iterator[tuple[str, int, int, int]]:
        """(table, shift, lo, hi): the chunks after position `first` up to `last` are, run by run,
        that table's rows of ids lo+1..hi."""
        run = max(bisect.bisect_right(self.firsts, first) - 1, 0)
        while first < last and run < len(self.firsts):
            end = self.firsts[run + 1] if run + 1 < len(self.firsts) else last
            stop = min(end, last)
            if stop > first:
                shift = self.shifts[run]
                yield self.tables[run], shift, first - shift, stop - shift
                first = stop
            run += 1


def _select(
    connection: sqlite3.Connection, layout: _Layout | None, columns: str, first: int, last: int,
    *, with_id: bool = False,
) -> Iterator[tuple[Any, ...]]:
    """`columns` of the chunks after position `first` up to `last`, in chunk order, from the tables
    `layout` says (this connection's own table when None); their ids here first, `with_id`. Each
    table's cursor is read as it comes (no generator of ours between SQLite and the caller)."""
    select = f"SELECT {'id + ?, ' if with_id else ''}{columns} FROM {{}} WHERE id > ? AND id <= ? ORDER BY id"

    def cursor(table: str, shift: int, lo: int, hi: int) -> sqlite3.Cursor:
        return connection.execute(select.format(table), (shift, lo, hi) if with_id else (lo, hi))

    if layout is None:
        return cursor(_OWN_TABLE, 0, first, last)
    return chain.from_iterable(cursor(*piece) for piece in layout.pieces(first, last))


def _joined_moves(moved: list[tuple[int, int, int]]) -> list[tuple[int, int, int]]:
    """(donor first, first here, count) runs with the ones adjacent on both sides joined."""
    joined: list[tuple[int, int, int]] = []
    for donor_first, first, count in moved:
        if joined and joined[-1][0] + joined[-1][2] == donor_first and joined[-1][1] + joined[-1][2] == first:
            joined[-1] = (joined[-1][0], joined[-1][1], joined[-1][2] + count)
        else:
            joined.append((donor_first, first, count))
    return joined


def _joined(runs: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """(first, count) runs with the adjacent ones joined: one query per run of changed documents."""
    joined: list[tuple[int, int]] = []
    for first, count in runs:
        if joined and joined[-1][0] + joined[-1][1] == first:
            joined[-1] = (joined[-1][0], joined[-1][1] + count)
        else:
            joined.append((first, count))
    return joined


def _shares(ranges: Sequence[tuple[int, int]], parts: int) -> list[list[tuple[int, int]]]:
    """`ranges` cut into `parts` consecutive shares of about the same number of chunks."""
    total = sum(last - first for first, last in ranges)
    cuts = [total * i // parts for i in range(1, parts)]
    shares: list[list[tuple[int, int]]] = [[]]
    seen = 0
    for first, last in ranges:
        while cuts and seen + (last - first) > cuts[0]:
            middle = first + cuts.pop(0) - seen
            if middle > first:
                shares[-1].append((first, middle))
            seen += middle - first
            first = middle
            shares.append([])
        if last > first:
            shares[-1].append((first, last))
        seen += last - first
    shares.extend([] for _ in range(parts - len(shares)))
    return shares


@dataclass(frozen=True, slots=True)
class _AnalysisJob:
    """Analyse chunk position ranges of the chunk table into one Postings per layer (chunk
    positions counted from 0 over the ranges in order)."""

    database: str
    columns: tuple[str, ...]
    """Every field some layer uses (as the SQL expression that reads it), each analysed once."""
    layers: tuple[tuple[float, ...], ...]
    """Per layer, a weight per column (0: not in this layer)."""
    max_postings: int
    """Stop past this many postings, every layer and every process together (`max-postings`)."""
    max_words: int
    """Stop when one process's analyser would hold more distinct words than this (`max-terms`)."""

    def run(
        self, ranges: Sequence[tuple[int, int]], analyzer: Analyzer, connection: sqlite3.Connection,
        tick: Callable[[int], None], count: _PostingsCount,
    ) -> list[Postings]:
        """One Postings per layer, held in this process."""
        builders = self._build(ranges, analyzer, connection, tick, count, None)
        try:
            return [builder.finish(len(analyzer.vocabulary)) for builder in builders]
        except IndexCapExceeded as over:
            raise IndexCapExceeded(over.setting, over.cap, ranges[-1][1] if ranges else 0) from None

    def spilled(
        self, ranges: Sequence[tuple[int, int]], analyzer: Analyzer, connection: sqlite3.Connection,
        tick: Callable[[int], None], count: _PostingsCount,
    ) -> list[SpilledPostings]:
        """Per layer, the postings' batches written beside the chunk table as they are folded
        (bm25.place_spilled reads them): this process holds a batch, not its share's postings."""
        first = ranges[0][0] if ranges else 0
        folder = os.path.dirname(self.database)
        stems = [os.path.join(folder, f"share-{first}-layer-{layer}.postings") for layer in range(len(self.layers))]
        builders = self._build(ranges, analyzer, connection, tick, count, stems)
        try:
            return [builder.finish_spilled(len(analyzer.vocabulary)) for builder in builders]
        except IndexCapExceeded as over:
            raise IndexCapExceeded(over.setting, over.cap, ranges[-1][1] if ranges else 0) from None

    def _build(
        self, ranges: Sequence[tuple[int, int]], analyzer: Analyzer, connection: sqlite3.Connection,
        tick: Callable[[int], None], count: _PostingsCount, spills: list[str] | None,
    ) -> list[PostingsBuilder]:
        fields = [[c for c, weight in enumerate(layer) if weight > 0] for layer in self.layers]
        total = sum(last - first for first, last in ranges)
        cap = self.max_postings

        def counted(added: int) -> None:
            if count.add(added) > cap:
                raise IndexCapExceeded("max-postings", cap)

        builders = [
            PostingsBuilder(total, [w for w in layer if w > 0], counted, spills[at] if spills is not None else None)
            for at, layer in enumerate(self.layers)
        ]
        analyzer.max_words = self.max_words
        # Chunk ids are positions + 1.
        query = f"SELECT {', '.join(self.columns)} FROM chunks WHERE id > ? AND id <= ? ORDER BY id"
        for first, last in ranges:
            chunk_id = first  # the last chunk added
            rows = connection.execute(query, (first, last))
            while batch := _rows_of_batch(rows):
                chunk_id = self._add_batch(batch, analyzer, builders, fields, chunk_id)
                tick(len(batch))
        return builders

    @staticmethod
    def _add_batch(
        batch: list[tuple[str, ...]], analyzer: Analyzer, builders: list[PostingsBuilder], fields: list[list[int]],
        chunk_id: int,
    ) -> int:
        """The batch's chunks (rows after chunk `chunk_id`) analysed and added to the builders,
        which fold where adding them one by one would have: a refusal names the same chunk, and the
        postings are the same. The id of the batch's last chunk."""
        # Each distinct text of the batch analysed once, in the order of the rows: sections under
        # one heading repeat their breadcrumb, and many bodies are empty.
        slot_of = {text: slot for slot, text in enumerate(dict.fromkeys(chain.from_iterable(batch)))}
        analysed: list[array[int]] = []
        refused: IndexCapExceeded | None = None
        try:
            # One by one: the texts analysed before a refusal are kept, to add their rows.
            for ids in analyzer.index_ids_of(list(slot_of)):
                analysed.append(ids)  # noqa: PERF402
        except IndexCapExceeded as over:
            refused = over
        # Column by column, each chunk's slots; the chunks added are those before the first row
        # holding a text the analysis did not reach (all of them, unless it refused).
        columns = [list(map(slot_of.__getitem__, column)) for column in zip(*batch)]
        complete = len(batch)
        if refused is not None:
            complete = next(row for row in range(len(batch)) if any(column[row] >= len(analysed) for column in columns))
        sizes = list(map(len, analysed))
        runs = []
        for column in columns:
            taken = column[:complete]
            lengths = list(map(sizes.__getitem__, taken))
            runs.append(FieldRun(b"".join(map(analysed.__getitem__, taken)), lengths, list(accumulate(lengths, initial=0))))
        # Folds in the order adding chunk by chunk makes them (row, then builder): the postings
        # cap is crossed at the same fold.
        layers = [[runs[c] for c in used] for used in fields]
        folds = sorted(
            (point, at) for at, builder in enumerate(builders)
            for point in builder.fold_points([run.lengths for run in layers[at]])
        )
        added = [0] * len(builders)
        for point, at in folds:
            builders[at].extend(layers[at], added[at], point + 1)
            added[at] = point + 1
            try:
                builders[at].fold()
            except IndexCapExceeded as over:
                raise IndexCapExceeded(over.setting, over.cap, chunk_id + point + 1) from None
        for at, builder in enumerate(builders):
            builder.extend(layers[at], added[at], complete)
        if refused is not None:
            raise IndexCapExceeded(refused.setting, refused.cap, chunk_id + complete + 1)
        return chunk_id + complete

    def run_in_worker(self, ranges: Sequence[tuple[int, int]]) -> tuple[list[str], list[SpilledPostings]]:
        """In a worker process: its own read-only connection and vocabulary; the terms come back
        in id order, for the parent to map onto its vocabulary, and the postings as files
        (spilled), not pickled through the pool's pipe: pickled, a share's postings were held
        four times at once, the peak of a run's memory."""
        connection = sqlite3.connect(f"file:{self.database}?mode=ro", uri=True)
        try:
            analyzer = Analyzer()
            postings = self.spilled(ranges, analyzer, connection, lambda _: None, _PostingsCount(_WORKER_COUNT[0]))
        finally:
            connection.close()
        return list(analyzer.vocabulary), postings


class _PostingsCount:
    """Postings built so far: in this process alone, or shared by the analysis processes."""

    def __init__(self, shared: Any = None) -> None:
        self.shared = shared
        """A multiprocessing.Value('q') every analysis process adds to, or None."""
        self._own = 0

    def add(self, postings: int) -> int:
        """Add `postings`; the total so far."""
        if self.shared is None:
            self._own += postings
            return self._own
        with self.shared.get_lock():
            self.shared.value += postings
            return int(self.shared.value)


def _shared_counter() -> Any:
    context = multiprocessing.get_context("fork") if "fork" in multiprocessing.get_all_start_methods() else None
    return (context or multiprocessing).Value("q", 0)


_WORKER_COUNT: list[Any] = [None]
"""The shared count of postings, in an analysis worker (set when the worker starts)."""


def _share_postings_count(shared: Any) -> None:
    _WORKER_COUNT[0] = shared


def _connect(path: str) -> sqlite3.Connection:
    connection = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    # A private scratch database: nothing to recover after a crash, so no journal and no fsync.
    connection.execute("PRAGMA journal_mode = OFF")
    connection.execute("PRAGMA synchronous = OFF")
    # 8 MiB of page cache: the table is written once in id order and read in id order, which the
    # operating system's file cache serves as well; a larger cache only adds to the run's memory
    # (64 MiB was a fifth of the peak at 10,000 documents).
    connection.execute("PRAGMA cache_size = -8192")
    # SQLite's default 4 KiB pages. 64 KiB pages wrote and read the table about a fifth faster, but
    # held memory growing with the table while it was written (about 6 KiB a bench document, the
    # cache's 8 MiB notwithstanding): at 10,000 documents, 221 MiB held when the pull request's base
    # starts instead of 166.
    return connection


def _remove_folder(folder: str, connections: list[sqlite3.Connection]) -> None:
    for connection in connections:
        connection.close()
    shutil.rmtree(folder, ignore_errors=True)


def _only(field: int, count: int) -> tuple[float, ...]:
    """Field weights that count one field once and leave the others out."""
    return tuple(1.0 if f == field else 0.0 for f in range(count))
