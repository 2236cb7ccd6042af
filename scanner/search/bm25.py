"""A BM25 scorer over the chunk fields, as sparse arrays: one posting list per term, scores precomputed.

Why not SQLite FTS5 any more: FTS5 computes bm25() for every row matching any OR term before
ORDER BY ... LIMIT, about 140 ms a query at 100,000 chunks; here a query adds a few
precomputed posting slices into one score array, well under a millisecond at that size
(docs/performance.md).

Scoring (BM25F in its simple form, as Lucene's BM25 with a per-field boost):
- a term's weighted frequency in a chunk is sum over fields of weight(field) * count(term, field);
- the chunk's length is the same weighted sum of its fields' lengths (in terms);
- score(term, chunk) = idf(term) * tf * (k1 + 1) / (tf + k1 * (1 - b + b * length / mean length)),
  idf(term) = ln(1 + (N - df + 0.5) / (df + 0.5)) with df the chunks holding the term in any field;
- a query's score for a chunk is the sum over its terms of query count * score(term, chunk): a
  word the question repeats counts as often as it is written.
- a field with a share in `Bm25Parameters.alone` (by default the breadcrumb, a quarter) has that
  share of its weight taken out of the sums above and scored as its own BM25 over that field
  alone, added to the BM25F score.
Ties are broken by chunk position (path order), so a run is reproducible.
"""

from __future__ import annotations

import os
from array import array
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple, Protocol

import numpy as np
import numpy.typing as npt


@dataclass(frozen=True, slots=True)
class Bm25Parameters:
    k1: float = 1.5
    """Term-frequency saturation (bm25s's default; Lucene's is 1.2). Chosen on the real collections
    (ADR 0006, `bench/quality_table.py --sweep`): with the default weights, 1.5 was
    best or within 0.004 of the best on four of the six collections."""
    b: float = 0.75
    """Length normalisation; Lucene's and bm25s's default. 0.4 lost 0.01-0.02 on CISI and JSQuAD."""
    per_field: bool = False
    """False: one BM25 over the weighted sum of the fields (BM25F). True: BM25 per field, each with
    its own idf and length normalisation, the weighted scores summed (what Lucene and tantivy
    do for a query over several fields)."""
    alone: tuple[float, float, float] = (0.0, 0.125, 0.0)
    """With BM25F: the share of each field's weight (heading, breadcrumb, body) that is scored as
    that field's own BM25 (its own idf, length normalisation and saturation) and added to the
    BM25F score; the rest of the weight stays inside BM25F. Default: an eighth of the breadcrumb's
    (the page's title and parent headings), so weights 2,3.5,1 mean BM25F 2/3.0625/1 plus 0.4375 x
    the breadcrumb's own BM25. Why: in BM25F a title match is one more occurrence that saturates
    with the body's, so a long passage that repeats a word outranks the passage whose title
    names it; scored alone, a title match is evidence of its own, as in tantivy's per-field
    scoring, which led on CMRC 2018. Every field alone lost on JSQuAD and Cranfield. Chosen with
    the breadcrumb weight on eight collections in three title layouts (docs/search-quality.md)."""
    alone_beside_text: bool = True
    """A field's own BM25 is added only to chunks that hold text in another field. A chunk that is
    nothing but its title already has the title scored on its own inside BM25F (its length is the
    title's); a second score would count that title twice and lift every title-only page above
    the pages whose text answers (ADR 0006: CACM, half of whose records are titles)."""


@dataclass(frozen=True, slots=True)
class Postings:
    """Weighted term frequencies in compressed-row form: the chunks holding term t are
    chunks[start[t]:start[t + 1]] (ascending), with tf[...] the term's weighted count in each."""

    start: npt.NDArray[np.int64]
    chunks: npt.NDArray[np.int32]
    tf: npt.NDArray[np.float32]
    lengths: npt.NDArray[np.float32]
    """Every chunk's weighted length (in terms)."""


class FieldRun(NamedTuple):
    """One field of consecutive chunks: their term ids end to end (int32 bytes), each chunk's
    count of them, and where each chunk's start (offsets[i], and offsets[-1] the total)."""

    ids: bytes
    lengths: list[int]
    offsets: list[int]


BATCH_TOKENS = 1 << 15
"""Tokens analysed before they are folded into (term, chunk, tf) triples: bounds the memory of the
raw token stream (about 50 bytes a token while folding, 1.6 MiB a batch) whatever the corpus size.
Measured at 1,000 bench documents: about 4 MiB less peak memory than 1 << 17 (median of five runs),
and the same analysis time within 2%."""


class PostingsBuilder:
    """Collects the term ids of each chunk's fields, chunk by chunk in position order, into Postings.

    Memory is what made this shape: tokens are folded batch by batch into unique (term, chunk)
    triples of 12 bytes, and the final term order is made by a counting sort into preallocated
    arrays (8 bytes a posting) instead of a sort over 64-bit keys."""

    def __init__(
        self, n_chunks: int, weights: Sequence[float], on_postings: Callable[[int], None] | None = None,
        spill: str | None = None,
    ) -> None:
        """`on_postings` is told how many postings each fold adds (at most BATCH_TOKENS tokens'
        worth), before the next batch is read: a cap on postings is checked as they grow. With
        `spill` (a file path), each folded batch is written there instead of kept (finish_spilled)."""
        self._on_postings = on_postings
        self._spill = spill
        if spill is not None:
            open(spill, "wb").close()  # opened per batch below: no handle outlives a refusal
        self._df = np.zeros(0, dtype=np.int64)
        """With `spill`: each term's postings so far (what placing the batches needs first)."""
        self._weights = [np.float32(w) for w in weights]
        self._tokens = [array("i") for _ in weights]
        self._lengths = [array("i") for _ in weights]
        self._first_chunk = 0
        self._buffered = 0
        self._batches: list[tuple[npt.NDArray[np.int64], Postings]] = []
        self._chunk_lengths = np.zeros(n_chunks, dtype=np.float32)

    def add(self, fields: Sequence[Iterable[int]]) -> None:
        """The next chunk's term ids, one iterable per field (in the order of the weights); a negative
        id (a stopword) is left out of the postings and of the chunk's length."""
        runs = []
        for term_ids in fields:
            ids = array("i", term_ids)
            runs.append(FieldRun(ids.tobytes(), [len(ids)], [0, len(ids)]))
        self.extend(runs, 0, 1)
        if self._buffered >= BATCH_TOKENS:
            self._fold()

    def fold_points(self, lengths: Sequence[Sequence[int]]) -> list[int]:
        """Where `add` would fold if the next chunks were added one by one with these token counts
        (a sequence per field, a count per chunk): the positions, among them, of the chunks after
        which it would (its buffer reaches BATCH_TOKENS), for a caller adding them in runs."""
        ends = np.cumsum(np.sum([np.asarray(field, dtype=np.int64) for field in lengths], axis=0))
        points: list[int] = []
        # Tokens buffered after chunk i, with no fold before it: ends[i] - since.
        since = -self._buffered
        while (at := int(np.searchsorted(ends, BATCH_TOKENS + since, side="left"))) < len(ends):
            points.append(at)
            since = int(ends[at])
        return points

    def extend(self, fields: Sequence[FieldRun], start: int, stop: int) -> None:
        """Chunks start..stop-1 of the runs (one per field, in the order of the weights), added as
        `add` adds them, with no fold: the caller folds where fold_points says."""
        for tokens, lengths, run in zip(self._tokens, self._lengths, fields):
            tokens.frombytes(run.ids[4 * run.offsets[start] : 4 * run.offsets[stop]])
            lengths.extend(run.lengths[start:stop])
            self._buffered += run.offsets[stop] - run.offsets[start]

    def fold(self) -> None:
        """Fold the tokens added since the last fold (`add` does it when its buffer is full)."""
        self._fold()

    def _fold(self) -> None:
        count = len(self._lengths[0]) - self._first_chunk if self._lengths else 0
        if count == 0:
            return
        stride = np.int64(count)
        fields = np.int64(len(self._weights))
        keys = []
        for field, (tokens, lengths, weight) in enumerate(zip(self._tokens, self._lengths, self._weights)):
            per_chunk = np.frombuffer(lengths, dtype=np.int32)[self._first_chunk :]
            ids = np.frombuffer(tokens, dtype=np.int32)
            local = np.repeat(np.arange(count, dtype=np.int64), per_chunk)
            kept = ids >= 0
            ids, local = ids[kept], local[kept]
            self._chunk_lengths[self._first_chunk : self._first_chunk + count] += (
                np.bincount(local, minlength=count).astype(np.float32) * weight
            )
            # (term, chunk) with the field below it: one sort, not np.unique's argsort, brings
            # each (term, chunk) together with its fields in order, as the fields were added.
            keys.append((ids.astype(np.int64) * stride + local) * fields + field)
        ordered = np.sort(np.concatenate(keys))
        pairs = ordered // fields
        new_pair = np.empty(len(pairs), dtype=bool)
        new_pair[:1] = True
        np.not_equal(pairs[1:], pairs[:-1], out=new_pair[1:])
        unique = pairs[new_pair]
        if self._on_postings is not None:
            self._on_postings(len(unique))
        # Each pair's weights summed in the order bincount took them before: field by field, so
        # the same float64 sums to the last bit.
        weights = np.array(self._weights, dtype=np.float32)[ordered % fields]
        tf = np.bincount(np.cumsum(new_pair) - 1, weights=weights).astype(np.float32)
        # The batch as a part for merge_postings: its terms in order (sorted, so each one's
        # postings are one run, in chunk order) and chunk positions from its first chunk.
        # `unique` is sorted, so its terms are too: each term's run found by comparing neighbours,
        # not by np.unique, which sorts them again.
        terms = unique // stride
        new_term = np.empty(len(terms), dtype=bool)
        new_term[:1] = True
        np.not_equal(terms[1:], terms[:-1], out=new_term[1:])
        present = terms[new_term]
        counts = np.diff(np.append(np.flatnonzero(new_term), len(terms)))
        start = np.concatenate(([0], np.cumsum(counts))).astype(np.int64)
        batch_lengths = self._chunk_lengths[self._first_chunk : self._first_chunk + count]
        batch = Postings(start, (unique % stride).astype(np.int32), tf, batch_lengths)
        if self._spill is None:
            self._batches.append((present, batch))
        else:
            if len(present) and present[-1] >= len(self._df):
                self._df = np.concatenate((self._df, np.zeros(max(int(present[-1]) + 1, 2 * len(self._df)) - len(self._df),
                                                              dtype=np.int64)))
            self._df[present] += counts
            with open(self._spill, "ab") as file:
                _write_batch(file, present, batch)
        self._tokens = [array("i") for _ in self._weights]
        self._first_chunk = len(self._lengths[0])
        self._buffered = 0

    def finish(self, vocabulary_size: int) -> Postings:
        """The batches placed in term order (merge_postings' counting sort): 8 bytes a posting,
        instead of a sort over 64-bit keys."""
        self._fold()
        batches, self._batches = self._batches, []
        return merge_postings(batches, vocabulary_size)

    def finish_spilled(self, vocabulary_size: int) -> SpilledPostings:
        """With `spill`: the batches as written, each term's count and each chunk's length, for
        place_spilled (which reads them back one batch at a time)."""
        if self._spill is None:
            raise RuntimeError("finish_spilled without a spill file")
        self._fold()
        df = np.zeros(vocabulary_size, dtype=np.int64)
        df[: len(self._df)] = self._df[:vocabulary_size]
        return SpilledPostings(self._spill, df, self._chunk_lengths)


@dataclass(frozen=True, slots=True)
class SpilledPostings:
    """A PostingsBuilder's batches in a file, as folded, for place_spilled. Postings placed from
    them go straight to their place in the index: a process's own postings and the merge of the
    processes' were two more copies of every posting held at once (the analysis's peak)."""

    path: str
    df: npt.NDArray[np.int64]
    """Each of the builder's term ids: its postings."""
    lengths: npt.NDArray[np.float32]
    """Every chunk's weighted length (in terms)."""


def _write_batch(file: Any, present: npt.NDArray[np.int64], batch: Postings) -> None:
    file.write(np.array([len(present), len(batch.chunks), len(batch.lengths)], dtype=np.int64).tobytes())
    for array_ in (present, batch.start, batch.chunks, batch.tf):
        file.write(array_.tobytes())


def _read_array(file: Any, dtype: type[np.generic], count: int) -> npt.NDArray[Any]:
    size = np.dtype(dtype).itemsize * count
    data = file.read(size)
    if len(data) != size:
        raise RuntimeError(f"{file.name} ends inside a batch")
    return np.frombuffer(data, dtype=dtype)


def _spilled_batches(path: str) -> Iterator[tuple[npt.NDArray[np.int64], Postings]]:
    """The batches _write_batch wrote to `path`, one at a time, as (terms, Postings)."""
    with open(path, "rb") as file:
        while True:
            header = file.read(24)
            if not header:
                return
            terms, postings, chunks = (int(n) for n in np.frombuffer(header, dtype=np.int64))
            present = _read_array(file, np.int64, terms)
            start = _read_array(file, np.int64, terms + 1)
            yield present, Postings(start, _read_array(file, np.int32, postings), _read_array(file, np.float32, postings),
                                    np.zeros(chunks, dtype=np.float32))


def _placement(
    df: npt.NDArray[np.int64],
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int32], npt.NDArray[np.float32], npt.NDArray[np.int64]]:
    """For postings counted per term (`df`): each term's first position, the empty chunk and tf
    arrays they are placed into, and each term's next free position."""
    start = np.concatenate(([0], np.cumsum(df))).astype(np.int64)
    total = int(start[-1])
    return start, np.empty(total, dtype=np.int32), np.empty(total, dtype=np.float32), start[:-1].copy()


def place_spilled(parts: list[tuple[npt.NDArray[np.int64], SpilledPostings]], vocabulary_size: int) -> Postings:
    """One Postings from builders' spilled batches over consecutive chunk ranges, each builder with
    its own term ids (parts[i][0] maps builder i's ids onto the index's): merge_postings of every
    batch of every part in order, reading one batch at a time. Each file is removed once placed.
    The postings and their order are those of merge_postings over the builders' own finish()."""
    df = np.zeros(vocabulary_size, dtype=np.int64)
    for mapping, part in parts:
        df[mapping[: len(part.df)]] += part.df
    start, chunks, tf, filled = _placement(df)
    del df
    first_chunk = 0
    for mapping, part in parts:
        for present, batch in _spilled_batches(part.path):
            _place(batch, mapping[present], first_chunk, filled, chunks, tf)
            first_chunk += len(batch.lengths)
        os.remove(part.path)
    lengths = [part.lengths for _, part in parts]
    joined = np.concatenate(lengths) if lengths else np.zeros(0, dtype=np.float32)
    return Postings(start, chunks, tf, joined.astype(np.float32))


MERGE_BLOCK = 1 << 20
"""Postings placed at a time while merging: the index arithmetic costs about 40 bytes a posting,
which over a whole part (tens of millions of postings at 100,000 documents) was the run's peak."""


def merge_postings(parts: list[tuple[npt.NDArray[np.int64], Postings]], vocabulary_size: int) -> Postings:
    """One Postings from parts built over consecutive chunk ranges, each with its own term ids.

    Part i's local term t is global term parts[i][0][t]; its chunk positions count from the
    part's first chunk. A counting sort by global term, parts in chunk order, keeps each term's
    postings in ascending chunk order (what Bm25Scorer and its tie rule expect). The list is
    emptied as the parts are placed, so a part's memory is freed as soon as it is merged (when
    the caller holds no other reference to it)."""
    df = np.zeros(vocabulary_size, dtype=np.int64)
    for mapping, part in parts:
        df[mapping[: len(part.start) - 1]] += np.diff(part.start)  # a part's mapping has no repeats
    start, chunks, tf, filled = _placement(df)
    del df
    first_chunk = 0
    lengths = []
    parts.reverse()  # popped from the end, in chunk order
    while parts:
        mapping, part = parts.pop()
        _place(part, mapping, first_chunk, filled, chunks, tf)
        first_chunk += len(part.lengths)
        lengths.append(part.lengths)
        del part
    joined = np.concatenate(lengths) if lengths else np.zeros(0, dtype=np.float32)
    return Postings(start, chunks, tf, joined.astype(np.float32))


def _place(
    part: Postings, mapping: npt.NDArray[np.int64], first_chunk: int, filled: npt.NDArray[np.int64],
    chunks: npt.NDArray[np.int32], tf: npt.NDArray[np.float32],
) -> None:
    """A part's postings into `chunks` and `tf` at each global term's next free slots (`filled`,
    advanced past them); its term t is global term mapping[t], its chunks count from `first_chunk`."""
    local_df = np.diff(part.start)
    first_term = 0
    while first_term < len(local_df):
        # Whole terms, about MERGE_BLOCK postings (a longer term alone).
        lo = int(part.start[first_term])
        last_term = int(np.searchsorted(part.start, lo + MERGE_BLOCK, side="right")) - 1
        last_term = min(max(last_term, first_term + 1), len(local_df))
        hi = int(part.start[last_term])
        terms = np.repeat(np.arange(first_term, last_term), local_df[first_term:last_term])
        # A local term's postings are one run; each lands at the global term's next free slots.
        positions = filled[mapping[terms]] + (np.arange(lo, hi) - part.start[terms])
        chunks[positions] = part.chunks[lo:hi] + first_chunk
        tf[positions] = part.tf[lo:hi]
        first_term = last_term
    filled[mapping[: len(local_df)]] += local_df


COUNT_BLOCK = 1 << 22
"""Postings counted at a time by postings_per_chunk."""


def postings_per_chunk(chunks: npt.NDArray[np.int32], n_chunks: int) -> npt.NDArray[np.int64]:
    """How many of `chunks` (postings' chunk positions) name each chunk. A block at a time: bincount
    copies its input to 64-bit integers first, which over every posting at once (87 million at
    100,000 bench documents) was 660 MiB held for a moment, the peak of a pull request's run."""
    counts = np.zeros(n_chunks, dtype=np.int64)
    for lo in range(0, len(chunks), COUNT_BLOCK):
        counts += np.bincount(chunks[lo : lo + COUNT_BLOCK], minlength=n_chunks)
    return counts


@dataclass(frozen=True, slots=True)
class KeptAnalysis:
    """A layer's Postings kept for an index that will reuse them (DerivedPostings); only `terms`'
    postings when they are known beforehand."""

    postings: Postings
    total: int
    """Every posting of the layer, counted before any term was left out (an upper bound of what a
    reusing index takes, which the corpus cap is checked against first)."""
    per_chunk: npt.NDArray[np.int64] | None = None
    """Each chunk's postings, counted before any term was left out; None while `postings` still
    holds every posting (they are counted from them when asked: count_of)."""
    terms: frozenset[int] | None = None
    """The terms whose postings are kept; None: every term."""

    @classmethod
    def of(cls, postings: Postings) -> KeptAnalysis:
        return cls(postings, len(postings.chunks))

    def sharing(self, terms: frozenset[int]) -> KeptAnalysis:
        """The postings of `terms` alone, read from these very arrays (no copy): whoever else holds
        them must leave those terms' chunks and tf as they are (Bm25Scorer's `shared`)."""
        return KeptAnalysis(self.postings, self.total, self.per_chunk, terms)

    def count_of(self, chunks: npt.NDArray[np.int64]) -> int:
        """How many postings the chunks at these positions have (before any term was left out).
        Counted over every posting when first asked: a reusing index asks only when the donor's
        total and its own new postings together would pass the corpus cap."""
        return int(self._per_chunk()[chunks].sum())

    def _per_chunk(self) -> npt.NDArray[np.int64]:
        if self.per_chunk is not None:
            return self.per_chunk
        return postings_per_chunk(self.postings.chunks, len(self.postings.lengths))

    def only(self, terms: frozenset[int]) -> KeptAnalysis:
        """The postings of `terms` alone, in the same term ids (every other term's are empty); each
        chunk's count of every posting is taken first, while they are all here."""
        postings = self.postings
        per_chunk = self._per_chunk()
        known = np.array(sorted(t for t in terms if t + 1 < len(postings.start)), dtype=np.int64)
        df = np.zeros(len(postings.start) - 1, dtype=np.int64)
        df[known] = postings.start[known + 1] - postings.start[known]
        start = np.concatenate(([0], np.cumsum(df))).astype(np.int64)
        lo = postings.start[known]
        lengths = df[known]
        ends = np.cumsum(lengths)
        taken = np.arange(int(lengths.sum())) + np.repeat(lo - (ends - lengths), lengths)
        kept = Postings(start, postings.chunks[taken], postings.tf[taken], postings.lengths)
        return KeptAnalysis(kept, self.total, per_chunk, terms)


@dataclass(frozen=True, slots=True)
class DerivedPostings:
    """Another corpus's postings read through a donor's, never laid out whole: the donor's chunks
    that `kept_to` maps (donor position -> position here, -1: not here) keep their postings and
    lengths, the chunks analysed anew (`new`, in the same term ids, at positions
    `new_to[local position]`) are added, and everything else of the donor is left out. Both maps
    must be increasing (path order on both sides).

    A chunk's postings and length are a function of its own text (PostingsBuilder), so a term's
    postings here (`term`) are those an analysis of the whole corpus would give, up to the
    numbering of the terms. A pull request's base is its head with a few documents changed: its
    search reads the head's postings of the terms it is asked, and the work and the memory it
    adds grow with those terms' postings and the chunks changed, not with the corpus.

    They are read in the donor's numbering extended by the new chunks (`union_parts`: the donor's
    positions, then the new chunks' after them, `to_base` mapping both here), so a term's
    postings are the donor's own slice with the new ones after it: mapping every posting to its
    position here, and merging the new ones in, was most of a base's search (Bm25Scorer maps only
    the chunks it ranks)."""

    donor: Postings
    to_base: npt.NDArray[np.int32]
    """The donor's chunk positions and then the new chunks' (`new`'s local positions, after the
    donor's), each mapped to its position here; -1 for a donor's chunk that is not here. One
    array for every layer of a corpus (to_base_of, made once by the index)."""
    new: Postings
    lengths: npt.NDArray[np.float32]
    """Every chunk's weighted length here."""
    asked: frozenset[int] | None = None
    """The donor's terms whose postings it kept (KeptAnalysis.terms): None, every term."""

    @staticmethod
    def to_base_of(kept_to: npt.NDArray[np.int32], new_to: npt.NDArray[np.int64]) -> npt.NDArray[np.int32]:
        """`to_base` from the donor's chunks' positions here (-1: not here) and the new chunks'."""
        return np.concatenate([kept_to, new_to]).astype(np.int32)

    @classmethod
    def of(cls, donor: KeptAnalysis, to_base: npt.NDArray[np.int32], new: Postings, size: int) -> DerivedPostings:
        postings = donor.postings
        donors = len(postings.lengths)
        kept_to, new_to = to_base[:donors], to_base[donors:]
        lengths = np.zeros(size, dtype=np.float32)
        moved = np.flatnonzero(kept_to >= 0)
        lengths[kept_to[moved]] = postings.lengths[moved]
        lengths[new_to] = new.lengths
        return cls(postings, to_base, new, lengths, donor.terms)

    @property
    def union_lengths(self) -> npt.NDArray[np.float32]:
        """Every chunk's weighted length in the union numbering (a donor's chunk not here too)."""
        return np.concatenate([self.donor.lengths, self.new.lengths])

    def union_parts(self, term: int) -> tuple[tuple[npt.NDArray[np.int32], npt.NDArray[np.float32]], ...]:
        """The chunks holding `term` in the union numbering (`to_base`), with its weighted count in
        each: the donor's postings (a slice of its arrays, chunks not here among them), then the
        new chunks' (after every donor's), each part ascending and left out when empty."""
        donor, new = self.donor, self.new
        if self.asked is not None and term + 1 < len(donor.start) and term not in self.asked:
            # Its postings were not kept: the donor was told which terms would be asked for.
            raise RuntimeError(f"term {term} was not kept by the index this one reuses")
        parts: list[tuple[npt.NDArray[np.int32], npt.NDArray[np.float32]]] = []
        if term + 1 < len(donor.start) and donor.start[term + 1] > donor.start[term]:
            lo, hi = int(donor.start[term]), int(donor.start[term + 1])
            parts.append((donor.chunks[lo:hi], donor.tf[lo:hi]))
        if term + 1 < len(new.start) and new.start[term + 1] > new.start[term]:
            lo, hi = int(new.start[term]), int(new.start[term + 1])
            parts.append((new.chunks[lo:hi] + np.int32(len(donor.lengths)), new.tf[lo:hi]))
        return tuple(parts)

    def term(self, term: int) -> tuple[npt.NDArray[np.int32], npt.NDArray[np.float32]]:
        """The chunks here holding `term`, ascending, and its weighted count in each."""
        return _in_base(self.to_base, self.union_parts(term))


def _in_base(
    to_base: npt.NDArray[np.int32], parts: Sequence[tuple[npt.NDArray[np.int32], npt.NDArray[Any]]]
) -> tuple[npt.NDArray[np.int32], npt.NDArray[Any]]:
    """Postings in a union numbering (DerivedPostings) as positions here, ascending, with their
    values; the chunks that are not here left out."""
    if not parts:
        return np.zeros(0, dtype=np.int32), np.zeros(0, dtype=np.float32)
    chunks = np.concatenate([chunks for chunks, _ in parts])
    values = np.concatenate([values for _, values in parts])
    here = to_base[chunks]
    kept = here >= 0
    order = np.argsort(here[kept], kind="stable")
    return here[kept][order], values[kept][order]


SPARSE_SCORES_BELOW = 16
"""A query whose postings are fewer than a sixteenth of the chunks is scored per chunk it touches
(a sort of its postings) instead of over an array of every chunk (a pass over all of them)."""

JOINED_POSTINGS_AT_MOST = 1 << 20
"""A common-word query's postings are joined and widened (16 bytes each, 16 MiB at most) for one
bincount up to this many; past it, each term's are added into the scores on their own, so no query
holds more (a common-word query at 100,000 bench documents has 5.6 million: 90 MiB joined)."""


class Bm25Scorer:
    """Postings with their precomputed BM25 contributions (impacts), in the same layout, as layers
    whose scores add up: BM25F over the weighted fields, plus the fields scored alone."""

    def __init__(
        self, layers: Sequence[Postings | DerivedPostings], parameters: Bm25Parameters, boosts: Sequence[float] = (1.0,),
        masks: Sequence[npt.NDArray[np.bool_] | None] | None = None, *, consume: bool = False,
        shared: frozenset[int] | None = None,
    ) -> None:
        """With `consume`, each layer's tf array becomes its impacts (nothing else may read the
        layers' tf afterwards): the impacts then need no memory of their own. `shared` (with
        `consume`) names terms whose tf stays as it is, for another reader of the same arrays (a
        pull request's base, KeptAnalysis): their impacts are computed when a query asks for
        them, a bounded number kept (SHARED_CACHE_POSTINGS), so the arrays are held once.

        Each layer is BM25-scored on its own (its own idf and length normalisation), multiplied
        by its boost; a chunk's score is the sum over layers. One layer with weighted fields is
        BM25F; one layer per field is per-field BM25 (Lucene's and tantivy's multi-field query).

        Layers are kept apart rather than merged into one posting list: a merge sorts every
        posting (seconds and twice the memory at 100,000 chunks), while a query reads a few
        short slices per layer either way. A layer of DerivedPostings is scored term by term as
        queries ask for its terms, with the same arithmetic, so to the same bits; their scores
        are summed in the layers' union numbering (DerivedPostings.union_parts), and only the
        chunks ranked are mapped to their positions (`to_base`)."""
        chunks = len(layers[0].lengths) if layers else 0
        # A chunk without a single term in any layer can never be found; it is left out of the
        # collection statistics (N and mean length), so that a section holding nothing search
        # scores (titles.scored_fields: a title-only section) weighs on no other chunk's score.
        present = np.zeros(chunks, dtype=bool)
        for layer in layers:
            present |= layer.lengths > 0
        counted = int(present.sum())
        derived = [layer for layer in layers if isinstance(layer, DerivedPostings)]
        if derived and (len(derived) < len(layers) or any(
            not np.array_equal(layer.to_base, derived[0].to_base) for layer in derived[1:]
        )):
            raise ValueError("derived layers are scored together, in one union numbering")
        self.to_base: npt.NDArray[np.int32] | None = derived[0].to_base if derived else None
        """The positions of the union numbering the scores are summed in (derived layers); None:
        the positions themselves."""
        self.size = chunks if self.to_base is None else len(self.to_base)
        self.layers: list[_ScoredLayer] = []
        for layer, boost, mask in zip(layers, boosts, masks or [None] * len(layers), strict=True):
            if isinstance(layer, DerivedPostings):
                self.layers.append(_DerivedLayer(layer, counted, parameters, np.float32(boost), mask))
                continue
            keep = shared if consume else None
            impacts = _impacts(layer, counted, parameters, layer.tf if consume else None, float(boost), mask, keep)
            if keep is None:
                self.layers.append(_PrecomputedLayer(layer.start, layer.chunks, impacts))
            else:
                self.layers.append(_SharedLayer(layer, keep, counted, parameters, np.float32(boost), mask))

    def postings_of(self, layer: int, term: int) -> tuple[npt.NDArray[np.int32], npt.NDArray[np.float32]]:
        """The chunk positions holding `term` in this layer, ascending, and its impact in each."""
        parts = self.layers[layer].term_parts(term)
        if self.to_base is None:
            return parts[0] if parts else (np.zeros(0, dtype=np.int32), np.zeros(0, dtype=np.float32))
        return _in_base(self.to_base, parts)

    def forget_impacts(self) -> None:
        """Drop the impacts kept between queries (shared and derived layers): a term asked after
        this is computed again, to the same bits."""
        for layer in self.layers:
            if isinstance(layer, _ImpactsOnDemand):
                layer.forget()

    def top(self, query: Sequence[tuple[int, float]], depth: int) -> list[tuple[int, float]]:
        """(chunk position, score) of the best `depth` chunks with a positive score, best first."""
        if depth <= 0 or not query or self.size == 0:
            return []
        # Each term's postings as they are (slices), held until they are known to be many: a query
        # whose postings are more than JOINED_POSTINGS_AT_MOST has them added, term by term, into
        # an array of every chunk's score, and dropped; joining them all held all of them twice
        # more, widened (16 bytes a posting: about 90 MiB for a common-word query at 100,000
        # bench documents, the peak of a pull request's base). A term's chunks are distinct, so
        # each chunk's sum takes its terms' impacts in the same order either way, to the same bits.
        held: list[tuple[npt.NDArray[np.int32], npt.NDArray[np.float32], float]] = []
        count = 0
        scores: npt.NDArray[np.float64] | None = None
        sample: npt.NDArray[np.int32] | None = None  # the shortest postings of `depth` chunks or more
        for layer in self.layers:
            for term, weight in query:
                # A term's postings in parts with distinct chunks (a derived layer's donor's and new
                # ones): each chunk's sum still takes the term's impact once, in the same order.
                for chunks, impacts in layer.term_parts(term):
                    if len(chunks) >= depth and (sample is None or len(chunks) < len(sample)):
                        sample = chunks
                    if scores is not None:
                        _add_impacts(scores, chunks, impacts, weight)
                        continue
                    held.append((chunks, impacts, weight))
                    count += len(chunks)
                    if count > JOINED_POSTINGS_AT_MOST:
                        scores = np.zeros(self.size, dtype=np.float64)
                        for held_chunks, held_impacts, held_weight in held:
                            _add_impacts(scores, held_chunks, held_impacts, held_weight)
                        held = []
        candidates: npt.NDArray[Any]
        candidate_scores: npt.NDArray[Any]
        if scores is None:
            if not held:
                return []
            # Up to JOINED_POSTINGS_AT_MOST, the postings are joined and widened in one pass:
            # bincount takes platform integers and float64 weights (a weight of 1 leaves the
            # impacts as they are; another multiplies them in float64, as the sums are made;
            # float32 to float64 is exact). For a common-word query, term by term cost 1.6 times
            # the CPU of this join (10,000 queries at 20,000 bench documents: 15.1 s against 9.5).
            hit = np.concatenate([chunks for chunks, _, _ in held], dtype=np.intp)
            weights = np.concatenate(
                [impacts if weight == 1.0 else impacts * np.float64(weight) for _, impacts, weight in held],
                dtype=np.float64,
            )
            if count * SPARSE_SCORES_BELOW >= self.size:
                # float64 already: asarray only tells the type checker
                scores = np.asarray(np.bincount(hit, weights=weights, minlength=self.size), dtype=np.float64)
            else:
                # Few postings against many chunks: sum per chunk touched, not over an array of
                # every chunk (at 200,000 sections that array was most of a rare-term query's
                # time). The sums add the same numbers in the same order as bincount's, so the
                # scores are equal to the last bit, and the touched chunks come out ascending,
                # as flatnonzero's do.
                touched, inverse = _distinct(hit)
                sums = np.bincount(inverse, weights=weights, minlength=len(touched))
                positive = sums > 0
                candidates, candidate_scores = touched[positive], sums[positive]
        if scores is not None:
            candidates = _candidates(scores, sample, depth)
            candidate_scores = scores[candidates]
        if len(candidates) > depth:
            # The depth-th best score; every chunk at or above it is a candidate, ties included.
            threshold = np.partition(candidate_scores, len(candidates) - depth)[len(candidates) - depth]
            above = candidate_scores >= threshold
            candidates, candidate_scores = candidates[above], candidate_scores[above]
        if self.to_base is not None:
            # Positions only now: a chunk not here has no impact, so none is a candidate.
            candidates = self.to_base[candidates]
        order = np.lexsort((candidates, -candidate_scores))[:depth]
        return [(int(c), float(s)) for c, s in zip(candidates[order], candidate_scores[order])]


def _candidates(
    scores: npt.NDArray[np.float64], sample: npt.NDArray[np.int32] | None, depth: int
) -> npt.NDArray[np.intp]:
    """The chunks, ascending, among which the best `depth` with a positive score are: every chunk at
    or above a floor when one is known, else every positive one. The floor is the depth-th best
    score among `sample` (distinct chunks, `depth` or more: one term's postings), so no higher than
    the depth-th best of all, and every chunk that can rank is kept. A common-word query gives
    tens of thousands of positive chunks and the floor a few hundred: taking them all, and then
    partitioning their scores, was a fifth of the search's CPU at 10,000 queries."""
    if sample is not None and len(sample) >= depth:
        sampled = scores[sample]
        floor = np.partition(sampled, len(sampled) - depth)[len(sampled) - depth]
        if floor > 0:
            return np.flatnonzero(scores >= floor)
    return np.flatnonzero(scores > 0)


def _distinct(hit: npt.NDArray[np.intp]) -> tuple[npt.NDArray[np.intp], npt.NDArray[np.intp]]:
    """np.unique(hit, return_inverse=True): the distinct chunks ascending, and each posting's place
    among them. `hit` is each term's postings one after another, each ascending: a stable sort
    (timsort) merges those runs, where np.unique's quicksort sorts them again from scratch (half
    the time of a few-posting query's join)."""
    order = np.argsort(hit, kind="stable")
    ordered = hit[order]
    first = np.empty(len(ordered), dtype=bool)
    first[:1] = True
    np.not_equal(ordered[1:], ordered[:-1], out=first[1:])
    inverse = np.empty(len(hit), dtype=np.intp)
    inverse[order] = np.cumsum(first) - 1
    return ordered[first], inverse


def _add_impacts(
    scores: npt.NDArray[np.float64], chunks: npt.NDArray[np.int32], impacts: npt.NDArray[np.float32], weight: float
) -> None:
    """Add one term's impacts (times the query's `weight` in float64, unless 1) to its chunks' scores:
    the chunks are distinct, so each score takes one addition, as bincount makes it."""
    scores[chunks] += impacts if weight == 1.0 else impacts * np.float64(weight)


Part = tuple[npt.NDArray[np.int32], npt.NDArray[np.float32]]
"""Chunk positions, ascending and distinct, and a term's impact in each."""


class _ScoredLayer(Protocol):
    def term_parts(self, term: int) -> tuple[Part, ...]:
        """The chunk positions holding `term` and its impact in each, in parts of distinct
        chunks, each ascending (none for a term this layer does not hold)."""
        ...


class _PrecomputedLayer(NamedTuple):
    """A layer's postings with every impact computed (a tuple, as the layers were before derived
    ones: what the benches and the cap tests count)."""

    start: npt.NDArray[np.int64]
    chunks: npt.NDArray[np.int32]
    impacts: npt.NDArray[np.float32]

    def term_parts(self, term: int) -> tuple[Part, ...]:
        # A term added to the vocabulary after this layer has no postings here.
        if term >= len(self.start) - 1 or self.start[term + 1] == self.start[term]:
            return ()
        lo, hi = int(self.start[term]), int(self.start[term + 1])
        return ((self.chunks[lo:hi], self.impacts[lo:hi]),)


class _ImpactsOnDemand:
    """Impacts computed when a query first asks for a term, by _impacts' arithmetic over a corpus's
    statistics (N, mean length, the term's df), so to the same bits; the most recently asked kept
    up to `budget` postings (a query set repeats its words). A term asked again after it was
    dropped is computed again."""

    def __init__(
        self, norm: npt.NDArray[np.float32], n_chunks: int, parameters: Bm25Parameters, boost: np.float32,
        mask: npt.NDArray[np.bool_] | None, budget: int,
    ) -> None:
        self.n_chunks = n_chunks
        self.k1 = np.float32(parameters.k1)
        self.norm = norm
        self.boost = boost
        self.mask = mask
        self.budget = budget
        self._terms: OrderedDict[int, tuple[Part, ...]] = OrderedDict()
        """term -> its parts with their impacts, the most recently asked last."""
        self._cached = 0
        """Postings in `_terms`, at most `budget` (beyond one term's)."""
        self.computed = 0
        """Postings whose impacts were computed on a query's demand (what the cache saves)."""

    def _known(self, term: int) -> tuple[Part, ...] | None:
        known = self._terms.get(term)
        if known is not None:
            self._terms.move_to_end(term)
        return known

    def _idf(self, df: int) -> np.float32:
        """One term's idf over this layer's N, as _impacts computes it for every term."""
        return np.float32(_idf(np.array([df], dtype=np.int64), self.n_chunks)[0])

    def _impacts_of(
        self, chunks: npt.NDArray[np.int32], tf: npt.NDArray[np.float32], idf: np.float32,
        zeroed: npt.NDArray[np.bool_] | None = None,
    ) -> npt.NDArray[np.float32]:
        """One term's impacts over these postings (`zeroed`: each posting's mask, gathered
        already; else the layer's mask gathered here)."""
        impacts = _one_term_impacts(idf, chunks, tf, self.norm, self.k1)
        if self.boost != 1:  # times 1 leaves every float as it is
            impacts *= self.boost
        if zeroed is not None:
            impacts *= zeroed
        elif self.mask is not None:
            impacts *= self.mask[chunks]
        return impacts

    def _keep(self, term: int, parts: tuple[Part, ...]) -> tuple[Part, ...]:
        postings = sum(len(chunks) for chunks, _ in parts)
        self.computed += postings
        while self._terms and self._cached + postings > self.budget:
            _, dropped = self._terms.popitem(last=False)
            self._cached -= sum(len(chunks) for chunks, _ in dropped)
        self._terms[term] = parts
        self._cached += postings
        return parts

    def forget(self) -> None:
        self._terms.clear()
        self._cached = 0

    @property
    def cached_bytes(self) -> int:
        """Bytes of impacts kept between queries."""
        return sum(impacts.nbytes for parts in self._terms.values() for _, impacts in parts)


class _SharedLayer(_ImpactsOnDemand):
    """A layer whose arrays another reader shares (Bm25Scorer's `shared`): every term's impacts
    were written over its tf except the shared terms', whose impacts are computed on demand, the
    most recent kept up to SHARED_CACHE_POSTINGS. Their chunks are the arrays' own slices: only
    impacts are made."""

    def __init__(
        self, postings: Postings, shared: frozenset[int], n_chunks: int, parameters: Bm25Parameters,
        boost: np.float32, mask: npt.NDArray[np.bool_] | None,
    ) -> None:
        norm = _norm(postings.lengths, _mean_length(postings.lengths, n_chunks), parameters)
        super().__init__(norm, n_chunks, parameters, boost, mask, SHARED_CACHE_POSTINGS)
        self.start, self.chunks, self.values = postings.start, postings.chunks, postings.tf
        self.shared = shared

    def term_parts(self, term: int) -> tuple[Part, ...]:
        if term >= len(self.start) - 1 or self.start[term + 1] == self.start[term]:
            return ()
        lo, hi = int(self.start[term]), int(self.start[term + 1])
        chunks = self.chunks[lo:hi]
        if term not in self.shared:
            return ((chunks, self.values[lo:hi]),)
        known = self._known(term)
        if known is not None:
            return known
        return self._keep(term, ((chunks, self._impacts_of(chunks, self.values[lo:hi], self._idf(hi - lo))),))


SHARED_CACHE_POSTINGS = 1 << 22
"""Postings of shared terms whose impacts a layer keeps between queries (4 bytes each, at most 16
MiB a layer). The head of a pull request asks every golden query's terms, most of its postings for
the bench's queries: at 20,000 bench documents and 10,000 queries (14.9 of 17.2 million postings
shared) its searches took 0.98x the CPU of a plain index's at this budget, 1.18x at 1 << 20, 1.26x
at 1 << 18 (in process, process time). A plain run shares nothing and never computes one."""


class _DerivedLayer(_ImpactsOnDemand):
    """A layer of DerivedPostings in their union numbering, each term's impacts computed on demand
    over this corpus's statistics, the most recent kept up to DERIVED_CACHE_POSTINGS. A donor's
    chunk that is not here is among a term's postings with an impact of 0, and left out of its
    df: every other impact is the same bits as over the postings laid out here."""

    def __init__(
        self, postings: DerivedPostings, n_chunks: int, parameters: Bm25Parameters, boost: np.float32,
        mask: npt.NDArray[np.bool_] | None,
    ) -> None:
        donors = len(postings.donor.lengths)
        here = postings.to_base[:donors] >= 0
        union_mask = None
        if mask is not None:
            union_mask = mask[postings.to_base]
            union_mask[:donors] &= here  # -1 read the last chunk's
        mean = _mean_length(postings.lengths, n_chunks)
        super().__init__(
            _norm(postings.union_lengths, mean, parameters), n_chunks, parameters, boost, union_mask,
            DERIVED_CACHE_POSTINGS,
        )
        self.here = here
        """Whether each donor's chunk is here."""
        self.postings = postings

    def term_parts(self, term: int) -> tuple[Part, ...]:
        known = self._known(term)
        if known is not None:
            return known
        parts = self.postings.union_parts(term)
        if not parts:
            return ()
        donors = len(self.here)
        # Only the donor's part holds chunks that are not here (the new ones are after its).
        first, tf = parts[0]
        present = self.here[first] if first[0] < donors else None
        missing = 0 if present is None else len(first) - int(np.count_nonzero(present))
        idf = self._idf(sum(len(chunks) for chunks, _ in parts) - missing)
        zeroed = present if missing and self.mask is None else None
        computed = [(first, self._impacts_of(first, tf, idf, zeroed))]
        computed += [(chunks, self._impacts_of(chunks, new_tf, idf)) for chunks, new_tf in parts[1:]]
        return self._keep(term, tuple(computed))


DERIVED_CACHE_POSTINGS = 1 << 18
"""Postings whose impacts a derived layer keeps between queries (4 bytes each, 1 to 2 MiB: a new
chunk's position is kept beside its impact). Keeping every term's, the golden queries' terms were
as many postings again as the head kept for them; at 10,000 bench documents and 225 queries (the
base's child, in process): 88 MiB of private memory and 0.43 s of CPU to answer with no bound, 76
MiB and 0.53 s at 1 << 20, 67 MiB and 0.59 s here. A term asked again after it was dropped is computed again, to the same bits."""


def _impacts(
    postings: Postings, n_chunks: int, parameters: Bm25Parameters, out: npt.NDArray[np.float32] | None = None,
    boost: float = 1.0, mask: npt.NDArray[np.bool_] | None = None, keep: frozenset[int] | None = None,
) -> npt.NDArray[np.float32]:
    """BM25 of every posting: idf(term) * tf * (k1 + 1) / (tf + k1 * (1 - b + b * length / mean)),
    with `n_chunks` the chunks that count (N) and the mean length taken over them, times `boost`,
    times `mask` of the chunk (0 where it is False). Written into `out` if given, which may be
    postings.tf itself: a block's impacts are computed from its tf before they are stored over it;
    the postings of the terms in `keep` are then left as they are (their tf)."""
    start = postings.start
    df = np.diff(start)
    idf = _idf(df, n_chunks)
    norm = _norm(postings.lengths, _mean_length(postings.lengths, n_chunks), parameters)
    k1 = np.float32(parameters.k1)
    impacts = np.empty(len(postings.chunks), dtype=np.float32) if out is None else out
    terms = len(df)
    kept = sorted(term for term in keep or () if term < terms)
    # A term kept with KEPT_SKIPPED_FROM postings or more is not computed at all: the blocks are
    # laid between such terms. A lighter one is computed with its block and left out when the
    # block is written, a slice at a time.
    skipped = [term for term in kept if df[term] >= KEPT_SKIPPED_FROM]
    light = np.array([term for term in kept if df[term] < KEPT_SKIPPED_FROM], dtype=np.int64)
    # Block by block of whole terms (about MERGE_BLOCK postings): the temporaries are a block's,
    # not three more arrays the size of the postings (12 bytes a posting at 20,000 bench
    # documents, traced); written over the tf (`out`), the impacts add nothing to the postings'
    # 8 bytes. Each element is computed by the same float32 operations, so equal to the last bit.
    for first_term, stop in _between(skipped, terms):
        while first_term < stop:
            lo = int(start[first_term])
            last_term = int(np.searchsorted(start, lo + MERGE_BLOCK, side="right")) - 1
            last_term = min(max(last_term, first_term + 1), stop)
            hi = int(start[last_term])
            block = _term_impacts(
                idf[first_term:last_term], df[first_term:last_term], postings.chunks[lo:hi], postings.tf[lo:hi], norm,
                k1,
            )
            block *= np.float32(boost)  # the same float32 products as over the whole array, a block at a time
            if mask is not None:
                block *= mask[postings.chunks[lo:hi]]
            at = lo
            inside = light[np.searchsorted(light, first_term) : np.searchsorted(light, last_term)]
            for term in inside.tolist():
                impacts[at : start[term]] = block[at - lo : start[term] - lo]
                at = int(start[term + 1])
            impacts[at:hi] = block[at - lo :]
            first_term = last_term
    return impacts


KEPT_SKIPPED_FROM = 1 << 12
"""Postings from which a kept term's impacts are not computed with its block only to be left out."""


def _between(cuts: list[int], terms: int) -> Iterator[tuple[int, int]]:
    """The runs of terms (first, stop) between the `cuts` (ascending), which belong to none."""
    first = 0
    for cut in cuts:
        if cut > first:
            yield first, cut
        first = cut + 1
    if first < terms:
        yield first, terms


def _idf(df: npt.NDArray[np.int64], n_chunks: int) -> npt.NDArray[np.float32]:
    return np.log1p((n_chunks - df + 0.5) / (df + 0.5)).astype(np.float32)


def _mean_length(lengths: npt.NDArray[np.float32], n_chunks: int) -> float:
    """The mean of every chunk's length over the `n_chunks` that count (a float64 sum, in order)."""
    return float(lengths.sum(dtype=np.float64)) / n_chunks if n_chunks else 0.0


def _norm(lengths: npt.NDArray[np.float32], mean: float, parameters: Bm25Parameters) -> npt.NDArray[np.float32]:
    """k1 * (1 - b + b * length / mean) of every chunk."""
    k1, b = np.float32(parameters.k1), np.float32(parameters.b)
    return k1 * (np.float32(1) - b + b * lengths / np.float32(mean if mean > 0 else 1.0))


def _saturation(
    chunks: npt.NDArray[np.int32], tf: npt.NDArray[np.float32], norm: npt.NDArray[np.float32], k1: np.float32
) -> npt.NDArray[np.float32]:
    """tf * (k1 + 1) / (tf + norm) of each posting, in float32."""
    saturation = norm[chunks]
    saturation += tf
    np.divide(tf * (k1 + 1), saturation, out=saturation)
    return saturation


def _one_term_impacts(
    idf: np.float32, chunks: npt.NDArray[np.int32], tf: npt.NDArray[np.float32], norm: npt.NDArray[np.float32],
    k1: np.float32,
) -> npt.NDArray[np.float32]:
    """_term_impacts of one term's postings, without laying its idf out: the same float32 products."""
    impacts = _saturation(chunks, tf, norm, k1)
    impacts *= idf
    return impacts


def _term_impacts(
    idf: npt.NDArray[np.float32], df: npt.NDArray[np.int64], chunks: npt.NDArray[np.int32],
    tf: npt.NDArray[np.float32], norm: npt.NDArray[np.float32], k1: np.float32,
) -> npt.NDArray[np.float32]:
    """The impacts of postings laid out term after term (`df` of each), element by element, so a
    term's are the same bits whether it is computed alone, in a block or with every other."""
    impacts = np.repeat(idf, df)
    impacts *= _saturation(chunks, tf, norm, k1)
    return impacts
