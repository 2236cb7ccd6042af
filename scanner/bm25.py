"""A BM25 scorer over the chunk fields, as sparse arrays: one posting list per term, scores precomputed.

Why not SQLite FTS5 any more: FTS5 computes bm25() for every row matching any OR term before
ORDER BY ... LIMIT, about 140 ms a query at 100,000 chunks (issue 16); here a query adds a few
precomputed posting slices into one score array, well under a millisecond at that size
(docs/performance.md).

Scoring (BM25F in its simple form, as Lucene's BM25 with a per-field boost):
- a term's weighted frequency in a chunk is sum over fields of weight(field) * count(term, field);
- the chunk's length is the same weighted sum of its fields' lengths (in terms);
- score(term, chunk) = idf(term) * tf * (k1 + 1) / (tf + k1 * (1 - b + b * length / mean length)),
  idf(term) = ln(1 + (N - df + 0.5) / (df + 0.5)) with df the chunks holding the term in any field;
- a query's score for a chunk is the sum over its terms of query count * score(term, chunk): a
  word the question repeats counts as often as it is written.
Ties are broken by chunk position (path order), so a run is reproducible.
"""

from __future__ import annotations

from array import array
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt


@dataclass(frozen=True, slots=True)
class Bm25Parameters:
    k1: float = 1.5
    """Term-frequency saturation (bm25s's default; Lucene's is 1.2). Chosen on the real collections
    (docs/search-quality.md, `bench/quality_table.py --sweep`): with the default weights, 1.5 was
    best or within 0.004 of the best on four of the six collections."""
    b: float = 0.75
    """Length normalisation; Lucene's and bm25s's default. 0.4 lost 0.01-0.02 on CISI and JSQuAD."""
    per_field: bool = False
    """False: one BM25 over the weighted sum of the fields (BM25F). True: BM25 per field, each with
    its own idf and length normalisation, the weighted scores summed (what Lucene and tantivy
    do for a query over several fields)."""


@dataclass(frozen=True, slots=True)
class FieldPostings:
    """What analysis produced for one field, independent of weights and BM25 parameters.

    (term, chunk) pairs sorted by term then chunk, with their counts; and every chunk's length."""

    terms: npt.NDArray[np.int32]
    chunks: npt.NDArray[np.int32]
    counts: npt.NDArray[np.float32]
    lengths: npt.NDArray[np.float32]


BATCH_TOKENS = 1 << 20
"""Tokens analysed before they are folded into (term, chunk, count) triples: bounds the memory of
the raw token stream (8 bytes a token while folding) whatever the corpus size."""


class PostingsBuilder:
    """Collects one field's term ids chunk by chunk (chunks in position order) into FieldPostings."""

    def __init__(self, n_chunks: int) -> None:
        self._stride = max(n_chunks, 1)
        self._tokens = array("i")
        self._lengths = array("i")
        self._first_chunk = 0
        self._keys: list[npt.NDArray[np.int64]] = []
        self._counts: list[npt.NDArray[np.float32]] = []

    def add(self, term_ids: Iterable[int]) -> None:
        """The next chunk's term ids, in order."""
        before = len(self._tokens)
        self._tokens.extend(term_ids)
        self._lengths.append(len(self._tokens) - before)
        if len(self._tokens) >= BATCH_TOKENS:
            self._fold()

    def _fold(self) -> None:
        lengths = np.frombuffer(self._lengths, dtype=np.int32)[self._first_chunk :]
        chunks = np.repeat(np.arange(self._first_chunk, self._first_chunk + len(lengths), dtype=np.int64), lengths)
        keys = np.frombuffer(self._tokens, dtype=np.int32).astype(np.int64) * self._stride + chunks
        unique, counts = np.unique(keys, return_counts=True)
        self._keys.append(unique)
        self._counts.append(counts.astype(np.float32))
        self._tokens = array("i")
        self._first_chunk = len(self._lengths)

    def finish(self) -> FieldPostings:
        self._fold()
        keys = np.concatenate(self._keys)
        counts = np.concatenate(self._counts)
        self._keys, self._counts = [], []
        # Each batch is sorted, and batches hold disjoint chunks: one stable sort orders by term, then chunk.
        order = np.argsort(keys, kind="stable")
        keys, counts = keys[order], counts[order]
        return FieldPostings(
            terms=(keys // self._stride).astype(np.int32),
            chunks=(keys % self._stride).astype(np.int32),
            counts=counts,
            lengths=np.frombuffer(self._lengths, dtype=np.int32).astype(np.float32),
        )


class Bm25Scorer:
    """Posting lists in compressed-row form: the chunks of term t are chunks[start[t]:start[t+1]],
    with their precomputed BM25 contributions in impacts[...]."""

    def __init__(
        self, fields: Sequence[FieldPostings], weights: Sequence[float], parameters: Bm25Parameters, vocabulary_size: int
    ) -> None:
        n_chunks = len(fields[0].lengths) if fields else 0
        self.size = n_chunks
        stride = max(n_chunks, 1)
        if parameters.per_field:
            parts = [(f, _impacts(f.terms, f.chunks, f.counts, f.lengths, n_chunks, vocabulary_size, parameters) * np.float32(w))
                     for f, w in zip(fields, weights) if w > 0]
            keys = np.concatenate([f.terms.astype(np.int64) * stride + f.chunks for f, _ in parts])
            values = np.concatenate([v for _, v in parts])
            unique, inverse = np.unique(keys, return_inverse=True)
            del keys
            self.impacts = np.bincount(inverse, weights=values).astype(np.float32)
        else:
            keys = np.concatenate([f.terms.astype(np.int64) * stride + f.chunks for f in fields])
            weighted = np.concatenate([f.counts * np.float32(w) for f, w in zip(fields, weights)])
            unique, inverse = np.unique(keys, return_inverse=True)
            tf = np.bincount(inverse, weights=weighted).astype(np.float32)
            del keys, weighted, inverse
            lengths = sum((f.lengths * np.float32(w) for f, w in zip(fields, weights)), np.zeros(n_chunks, np.float32))
            terms = (unique // stride).astype(np.int32)
            chunks = (unique % stride).astype(np.int32)
            self.impacts = _impacts(terms, chunks, tf, lengths, n_chunks, vocabulary_size, parameters)
        terms = unique // stride
        self.chunks = (unique % stride).astype(np.int32)
        del unique
        self.start = np.concatenate(([0], np.cumsum(np.bincount(terms, minlength=vocabulary_size)))).astype(np.int64)

    def top(self, query: Sequence[tuple[int, float]], depth: int) -> list[tuple[int, float]]:
        """(chunk position, score) of the best `depth` chunks with a positive score, best first."""
        if depth <= 0 or not query or self.size == 0:
            return []
        terms = np.fromiter((t for t, _ in query), dtype=np.int64, count=len(query))
        weights = np.fromiter((w for _, w in query), dtype=np.float64, count=len(query))
        lo, hi = self.start[terms], self.start[terms + 1]
        lengths = hi - lo
        total = int(lengths.sum())
        if total == 0:
            return []
        # Every posting of every query term in one gather (a few array operations whatever the
        # number of terms): position i of the concatenation belongs to term j, at lo[j] + offset.
        ends = np.cumsum(lengths)
        postings = np.arange(total) + np.repeat(lo - (ends - lengths), lengths)
        scores = np.bincount(
            self.chunks[postings], weights=self.impacts[postings] * np.repeat(weights, lengths), minlength=self.size
        )
        candidates = np.flatnonzero(scores > 0)
        if len(candidates) > depth:
            # The depth-th best score; every chunk at or above it is a candidate, ties included.
            threshold = np.partition(scores[candidates], len(candidates) - depth)[len(candidates) - depth]
            candidates = candidates[scores[candidates] >= threshold]
        order = np.lexsort((candidates, -scores[candidates]))[:depth]
        return [(int(c), float(scores[c])) for c in candidates[order]]


def _impacts(
    terms: npt.NDArray[np.int32], chunks: npt.NDArray[np.int32], tf: npt.NDArray[np.float32],
    lengths: npt.NDArray[np.float32], n_chunks: int, vocabulary_size: int, parameters: Bm25Parameters,
) -> npt.NDArray[np.float32]:
    """BM25 of every (term, chunk) pair, each pair listed once."""
    mean = float(lengths.mean()) if n_chunks else 0.0
    df = np.bincount(terms, minlength=vocabulary_size)
    idf = np.log1p((n_chunks - df + 0.5) / (df + 0.5)).astype(np.float32)
    k1, b = np.float32(parameters.k1), np.float32(parameters.b)
    norm = k1 * (np.float32(1) - b + b * lengths / np.float32(mean if mean > 0 else 1.0))
    return (idf[terms] * tf * (k1 + 1) / (tf + norm[chunks])).astype(np.float32)
