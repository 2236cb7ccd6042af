"""Read a knowledge base folder into documents and their chunks.

This is the only module that touches the KB's files. Everything it cannot
read is a recorded skip (a `Diagnostic` naming the file), never a silent drop
and never a stopped run: a pull request can put anything into the tree.
"""

from __future__ import annotations

import itertools
import marshal
import os
import sqlite3
import stat
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, NamedTuple, TypeVar, overload

from scanner.corpus.documents import Chunk, ChunkFields, Corpus, Document, HeldDocument
from scanner.corpus.kb_files import MAX_DOCUMENT_BYTES, KbFiles, shown, skipped_file
from scanner.corpus.markdown import MAX_BREADCRUMB_PART_CHARS, ParsedDocument, parse_document
from scanner.corpus.parse_cache import Lookup, ParseCache, Proof, cache_key, lookup, pack, proves_itself, unpack
from scanner.corpus.parse_memo import ParseMemo, Remembered, blob_id
from scanner.corpus.table import TableDocument, document_table, table_document
from scanner.foundation.diagnostics import Diagnostic, DiagnosticCode, Diagnostics
from scanner.foundation.errors import InputError
from scanner.foundation.files import FileRefused, LinkPolicy, read_capped
from scanner.foundation.progress import progress
from scanner.foundation.workers import ordered_map, worker_pool

RUNNER_MIB = 16 * 1024
"""A GitHub-hosted runner's memory (4 cores, 16 GiB): what the default caps are derived for."""
RUNNER_RESERVE_MIB = 2 * 1024
"""Left to the runner's own processes and the workflow's other steps."""
PULL_REQUEST_MEMORY_RATIO = 1.4
"""Peak memory of a pull request's run (head and base, `--baseline-ref`) over one run's, with 1% of
the documents edited: 1.36x and 1.38x at 100,000 bench documents (1,144 and 1,163 against 841
and 842 MiB, two runs of `python bench/base_and_head.py --docs 100000 --queries 225 --changed 1000
--repeat 1 --memory`, load 3.4-7.1, docs/pull-request-loop.md), 1.33x at 10,000 (the paired median
of --repeat 3: 1.33, 1.33, 1.37; 229 against 172 MiB), rounded up. The head and the base read one copy of the golden terms' postings; what the base
adds is its own: the tree's listing, its index of the changed documents, its search, and the
head's pages it writes to. A base reading anew up to BASE_ANEW_SHARE
adds at most a tenth more, taken from RUNNER_RESERVE_MIB."""
BASE_ANEW_SHARE = 0.1
"""Of max-files and max-mib, what a pull request's base may read and analyse anew (the files the
pull request changed; the others are the head's), so that whatever a pull request rewrites or
deletes its run stays within PULL_REQUEST_MEMORY_RATIO. Past it the run goes on without the
comparison (revision-unavailable), the head evaluated."""
BENCH_KIB_PER_DOCUMENT = 9.24
"""Peak memory (PSS of every process of one run) per document of the bench KB (bench/generate.py:
4.6 KB and 11 sections a document): 902 MiB at 100,000 documents (bench/lean.py --docs 100000
--queries 225, docs/performance.md), the analysis holding each posting once."""
BENCH_BYTES_PER_DOCUMENT = 4_600
BENCH_SECTIONS_PER_DOCUMENT = 11
RUN_MEMORY_MIB = (RUNNER_MIB - RUNNER_RESERVE_MIB) / PULL_REQUEST_MEMORY_RATIO
"""What one evaluation may hold at the default caps, so that a pull request's run fits the runner."""


def _round(value: float) -> int:
    """`value` to its two leading digits (1,048,576 -> 1,000,000; 4,387 -> 4,400): a cap people can read."""
    digits: int = 10 ** max(0, len(str(int(value))) - 2)
    return round(value / digits) * digits


DEFAULT_MAX_FILES = _round(RUN_MEMORY_MIB * 1024 / BENCH_KIB_PER_DOCUMENT)
"""Indexable files in one KB (the `max-files` setting): the documents of the bench's kind that
RUN_MEMORY_MIB holds (a larger runner raises it; docs/limits-and-safety.md says what each costs). Past it the run stops (exit 2) before anything is read, naming the first
file over the cap. Stopping, not skipping: metrics over whichever files happened to come first
would silently differ from the KB's, and a pull request adding files that sort early could push
real documents out of the evaluation and move the gate."""

DEFAULT_MAX_MIB = _round(DEFAULT_MAX_FILES * BENCH_BYTES_PER_DOCUMENT / 2**20)
"""MiB of all indexable files together (the `max-mib` setting; sizes from stat(), checked before
reading): as many bytes as DEFAULT_MAX_FILES documents of the bench's size, with the same refusal."""

DEFAULT_MAX_SECTIONS = _round(DEFAULT_MAX_FILES * BENCH_SECTIONS_PER_DOCUMENT)
"""Sections of all documents together (the `max-sections` setting). A section costs memory however
little text it holds, so this bounds what the byte cap cannot (many short headings). Checked as
documents are parsed; the run stops (exit 2) at the document that crosses it."""


BYTES_PER_POSTING = 10.5
"""Peak memory (PSS of every process of one run) per posting, a word in a section in one scoring
layer: 1,711,168 postings and 82 MiB at 2,000 bench documents, 6,790,202 and 133 MiB at 8,000
(bench/term_memory.py; 9.4 in a second run, the larger kept). 8 of those bytes are kept (a chunk
id and a score); the bench's notes have 860 postings a document, so this is most of
BENCH_KIB_PER_DOCUMENT."""
BYTES_PER_WORD = 310.5
"""Peak memory per distinct word beyond its postings (the analyser's cache of words and the
vocabulary, in the process that analysed it and in the merged vocabulary): 400,000 and 1,200,000
random words, 154 and 399 MiB (bench/term_memory.py --words 400000,1200000; 296 and 241 in
earlier runs, the largest kept: dictionaries grow in doublings)."""
ANALYSIS_PROCESSES = 4
"""Processes that analyse at once on a hosted runner (search.index.MAX_ANALYSIS_WORKERS, one per
core): each holds a vocabulary of its own."""

DEFAULT_MAX_POSTINGS = _round(RUN_MEMORY_MIB * 2**20 / BYTES_PER_POSTING)
"""Postings of the built-in search's index, every layer together (the `max-postings` setting): what
RUN_MEMORY_MIB holds at BYTES_PER_POSTING, which the bench's notes at DEFAULT_MAX_FILES stay under
(860 a document). This, not the bytes, is what grows when words do not repeat: every word of
random text is a new posting. Counted as the postings are built, by every analysis process
together, so memory never grows past it before the run stops (exit 2)."""

DEFAULT_MAX_TERMS = _round(RUN_MEMORY_MIB * 2**20 / 4 / (ANALYSIS_PROCESSES * BYTES_PER_WORD))
"""Distinct words (before stemming, stopwords and CJK bigrams included) one analysis process may
hold, and the merged vocabulary's terms (the `max-terms` setting): every process at the cap at
once holds a quarter of RUN_MEMORY_MIB. The bench's notes have 55,412 at 20,000 documents. Checked
before a word is added, so the dictionaries never grow past it."""


@dataclass(frozen=True, slots=True)
class CorpusCaps:
    """How large a KB one run reads; past a cap the run stops (exit 2) naming the file and the setting."""

    files: int = DEFAULT_MAX_FILES
    """Indexable files (`max-files`)."""
    mib: int = DEFAULT_MAX_MIB
    """MiB of all indexable files together (`max-mib`)."""
    sections: int = DEFAULT_MAX_SECTIONS
    """Sections of all documents together (`max-sections`)."""

    postings: int = DEFAULT_MAX_POSTINGS
    """Postings of the built-in search's index, all layers together (`max-postings`)."""
    terms: int = DEFAULT_MAX_TERMS
    """Distinct words analysed by one process, and in the merged vocabulary (`max-terms`)."""

    @property
    def bytes(self) -> int:
        return self.mib * 2**20


PARALLEL_MIN_FILES = 500
"""Below this many files one process reads the KB: starting workers costs more than it saves."""
READ_TASK_FILES = 500
"""Files a reading worker parses per task, at most."""
READ_TASKS_IN_FLIGHT = 2
"""Tasks per worker submitted ahead of the one being consumed: the parsed documents waiting for
the index are at most READ_TASK_FILES x this x workers, whatever the KB's size."""


def read_corpus(
    root: Path,
    exclude: Sequence[str] = (),
    diagnostics: Diagnostics | None = None,
    *,
    workers: int | None = None,
    cache: ParseCache | None = None,
    memo: ParseMemo | None = None,
    caps: CorpusCaps = CorpusCaps(),
) -> Corpus:
    """Every document of the KB folder at once (see read_folder); for callers that need them all."""
    return Corpus(tuple(read_folder(root, exclude, diagnostics, workers=workers, cache=cache, memo=memo, caps=caps)))


@overload
def read_folder(
    root: Path, exclude: Sequence[str] = (), diagnostics: Diagnostics | None = None, *, workers: int | None = None,
    cache: ParseCache | None = None, memo: ParseMemo | None = None, caps: CorpusCaps = CorpusCaps(),
    table: Literal[False] = False,
) -> Iterator[Document]: ...


@overload
def read_folder(
    root: Path, exclude: Sequence[str] = (), diagnostics: Diagnostics | None = None, *, workers: int | None = None,
    cache: ParseCache | None = None, memo: ParseMemo | None = None, caps: CorpusCaps = CorpusCaps(),
    table: Literal[True],
) -> Iterator[TableDocument]: ...


def read_folder(
    root: Path,
    exclude: Sequence[str] = (),
    diagnostics: Diagnostics | None = None,
    *,
    workers: int | None = None,
    cache: ParseCache | None = None,
    memo: ParseMemo | None = None,
    caps: CorpusCaps = CorpusCaps(),
    table: bool = False,
) -> Iterator[Document | TableDocument]:
    """Walk `root`, then read and parse every indexable file under it, yielding documents in path order.

    A generator, so a caller that indexes each document as it comes (Index.build) never holds the
    whole parsed KB: at 10,000 documents that was 130 MiB of the run's peak. Files are parsed in
    path order, so documents and warnings come out identical whatever the number of workers.

    Parsing is split over `workers` processes (default: one per CPU) when there are enough
    files. With a `cache`, a file whose path and bytes were parsed by an earlier run is not parsed
    again (the cache is saved when the generator is exhausted). With a `memo`, every document
    parsed without a warning is remembered by its path and bytes (its size and section count: a
    pull request's base is read after its head, and most of its files are the same). With `table`,
    each document comes as its chunk-table rows (table.py), for Index.build: no Chunk is made
    unless a cache entry needs one."""
    diagnostics = diagnostics if diagnostics is not None else Diagnostics()
    files = _files_within_caps(root, exclude, diagnostics, caps)
    workers = workers if workers is not None else (os.cpu_count() or 1)
    if cache is not None:
        _warn_unreadable_cache(cache, diagnostics)
    tally = _Tally(root, caps, diagnostics, memo, keep_entries=cache is not None)
    # The memo needs each file's blob id, which the worker that read the bytes computes (a
    # worker's memo would be lost with the worker, so entries are remembered here, in the
    # parent). Only the cache needs the entry's JSON: for the memo alone a worker's document
    # travels as marshal data (10,000 bench documents, read and written to the index: 3.75 s
    # with the JSON, 2.9 s without, 2.4 s with no memo; one run each).
    keyed = packing = cache is not None
    blobbing = memo is not None
    # With a warm cache, reading from it in one process is faster than shipping its entries
    # through worker processes (measured: 3.5 s serial vs 7.8 s with two workers at 10,000 files).
    warm_cache = cache is not None and cache.is_file()
    # Reading is written to the index as it goes, so this count is the run's progress until then.
    with progress("read", total=len(files), unit="files") as tick:
        if workers > 1 and len(files) >= PARALLEL_MIN_FILES and not warm_cache:
            with worker_pool(workers, _open_worker_cache, (cache, keyed, packing, blobbing, table)) as pool:
                try:
                    chunk = min(max(1, len(files) // (workers * 8)), READ_TASK_FILES)
                    results = ordered_map(pool, _read_in_worker, files, chunk, READ_TASKS_IN_FLIGHT * workers)
                    yield from tally.take(results, tick)
                except BaseException:
                    # Past a cap, or the consumer stopped: the files not yet parsed are not parsed at all.
                    pool.shutdown(wait=True, cancel_futures=True)
                    raise
        else:
            connection = cache.open_for_reading() if cache is not None else None
            try:
                yield from tally.take(
                    (_read_one(relative, absolute, connection, keyed, packing, blobbing, table) for relative, absolute in files),
                    tick,
                )
            finally:
                if connection is not None:
                    connection.close()
    if cache is not None:
        _save_cache(cache, tally, diagnostics)


@overload
def read_given(
    root: Path, source: Iterable[tuple[str, bytes | Remembered]], diagnostics: Diagnostics | None = None, *,
    caps: CorpusCaps = CorpusCaps(), in_path_order: bool = False, table: Literal[False] = False,
) -> Iterator[Document | HeldDocument]: ...


@overload
def read_given(
    root: Path, source: Iterable[tuple[str, bytes | Remembered]], diagnostics: Diagnostics | None = None, *,
    caps: CorpusCaps = CorpusCaps(), in_path_order: bool = False, table: Literal[True],
) -> Iterator[TableDocument | HeldDocument]: ...


def read_given(
    root: Path,
    source: Iterable[tuple[str, bytes | Remembered]],
    diagnostics: Diagnostics | None = None,
    *,
    caps: CorpusCaps = CorpusCaps(),
    in_path_order: bool = False,
    table: bool = False,
) -> Iterator[Document | TableDocument | HeldDocument]:
    """Parse the (KB-relative path, bytes) pairs another reader chose (scanner.git.tree, by
    scanner.corpus.kb_files' rules, with the per-file limits applied), yielding documents in path
    order, under the same per-KB caps as the folder's. `root` is what a refusal names. A file
    given as what the head's read remembered of it (the memo's entry for its path and bytes) is
    neither read nor parsed: it comes out as a HeldDocument, for an index that takes it from the
    head's (scanner.search.index.Reuse). With `in_path_order` (the pairs come sorted by path),
    each document is yielded as it is parsed, never held: a pull request's base may parse every
    file anew. With `table`, a parsed document comes as its chunk-table rows (see read_folder)."""
    diagnostics = diagnostics if diagnostics is not None else Diagnostics()
    tally = _Tally(root, caps, diagnostics, memo=None, keep_entries=False)
    with progress("read", total=None, unit="files") as tick:
        parsed = tally.take((_read_given(relative, data, table) for relative, data in capped(root, source, caps)), tick)
        if in_path_order:
            yield from parsed
            return
        # Another reader's order is its own (a git tree's): these are sorted here, and held.
        read = list(parsed)
    yield from sorted(read, key=lambda document: document.path)


def _files_within_caps(
    root: Path, exclude: Sequence[str], diagnostics: Diagnostics, caps: CorpusCaps
) -> list[tuple[str, str]]:
    """The folder's indexable files in path order (the walk's is folder by folder; the index's chunk
    ids follow path order), refused before any is read when they are over the file or byte cap."""
    # One past the cap is enough to refuse: a tree of millions of files is not listed whole.
    files = list(itertools.islice(_indexable_files(root, exclude, diagnostics), caps.files + 1))
    _check_corpus_size(root, files, caps)
    files.sort()
    return files


def _warn_unreadable_cache(cache: ParseCache, diagnostics: Diagnostics) -> None:
    if not os.path.lexists(cache.path):
        return
    probe = cache.open_for_reading()
    if probe is None:
        diagnostics.warn(
            DiagnosticCode.CACHE_IGNORED, "the parse cache is unreadable or from another kb-eval version; every file is parsed",
            str(cache.path),
        )
    else:
        probe.close()


def _save_cache(cache: ParseCache, tally: _Tally, diagnostics: Diagnostics) -> None:
    if tally.refused_entries:
        # One warning however many: a planted cache must not flood the log or the summary.
        diagnostics.warn(
            DiagnosticCode.CACHE_IGNORED,
            f"{tally.refused_entries} parse-cache entries did not match the files they were looked up for and were "
            "not used; those files were parsed",
            str(cache.path),
        )
    cache.save(tally.entries, diagnostics)


@dataclass
class _Tally:
    """What reading adds up as documents come: their sections against the cap, their warnings,
    the cache entries to save and the ones refused, the memo's entries."""

    root: Path
    caps: CorpusCaps
    diagnostics: Diagnostics
    memo: ParseMemo | None
    keep_entries: bool
    sections: int = 0
    refused_entries: int = 0
    entries: dict[str, str] = field(default_factory=dict)

    @overload
    def take(
        self, results: Iterable[_ReadResult | _WorkerResult], tick: Callable[[], None]
    ) -> Iterator[Document | TableDocument]: ...

    @overload
    def take(
        self, results: Iterable[_ReadResult | _GivenResult], tick: Callable[[], None]
    ) -> Iterator[Document | TableDocument | HeldDocument]: ...

    def take(
        self, results: Iterable[_ReadResult | _GivenResult | _WorkerResult], tick: Callable[[], None]
    ) -> Iterator[Document | TableDocument | HeldDocument]:
        # Consumed as they arrive: holding every worker's payload until the end would double
        # the peak memory of reading a large KB.
        for document, warnings, entry, refused, blob in results:
            tick()
            self.refused_entries += refused
            self.diagnostics.items.extend(warnings)
            if entry is not None and self.keep_entries:
                self.entries[entry[0]] = entry[1]
            if isinstance(document, _Packed):
                document = document.unpacked()
            elif isinstance(document, _PackedRows):
                document = TableDocument(document.path, *marshal.loads(document.payload))
            if document is not None:
                sections = len(document.chunks) if isinstance(document, Document) else document.sections
                self.sections += sections
                if self.sections > self.caps.sections:
                    raise over_cap(
                        self.root, document.path, f"the KB has more than {self.caps.sections} sections", "max-sections"
                    )
                if self.memo is not None and blob is not None and not warnings and not isinstance(document, HeldDocument):
                    self.memo.remember(document.path, blob[0], blob[1], sections)
                yield document


_Data = TypeVar("_Data", bound=bytes | Remembered)


def capped(root: Path, source: Iterable[tuple[str, _Data]], caps: CorpusCaps) -> Iterator[tuple[str, _Data]]:
    """The per-KB file and byte caps for files another reader chose (a git revision's tree): the
    same refusal as the folder walk's, so a pull request cannot slip a huge corpus in as its base.
    A file the memo remembers counts the size it had when the head read it."""
    total = 0
    for count, (relative, data) in enumerate(source, start=1):
        total += data.size if isinstance(data, Remembered) else len(data)
        if count > caps.files:
            raise over_cap(root, relative, f"the KB has more than {caps.files} indexable files", "max-files")
        if total > caps.bytes:
            raise over_cap(root, relative, f"the KB's files add up to more than {caps.mib} MiB", "max-mib")
        yield relative, data


def _check_corpus_size(root: Path, files: Sequence[tuple[str, str]], caps: CorpusCaps) -> None:
    """Refuse a KB over the file or byte cap before any file is read."""
    if len(files) > caps.files:
        raise over_cap(root, files[caps.files][0], f"the KB has more than {caps.files} indexable files", "max-files")
    total = 0
    for relative, absolute in files:
        try:
            total += os.stat(absolute).st_size
        except OSError:
            continue  # reading it will record the skip
        if total > caps.bytes:
            raise over_cap(root, relative, f"the KB's files add up to more than {caps.mib} MiB", "max-mib")


def over_cap(root: Path, relative: str, what: str, setting: str) -> InputError:
    """The refusal of a KB past a corpus cap: the file where it stopped, and the setting that raises it."""
    return InputError(
        f"{what}; stopped at {shown(relative)} rather than evaluate part of it",
        file=str(root),
        field="--kb-path",
        hint=f"leave generated or vendored folders out with --exclude GLOB, point --kb-path at the notes only, "
        f"or raise --{setting} on a runner with the memory for it (docs/limits-and-safety.md)",
    )


class _Packed(NamedTuple):
    """A worker's document on its way to the parent.

    Slotted dataclasses pickle slowly (measured: ~5 s to pickle and load 51 MB of documents, as
    long as parsing them). With a parse cache the parent needs the cache entry's JSON anyway, so
    that is what travels; otherwise the fields travel as marshal data, which is loaded without the
    checks an entry from a (possibly hostile) cache file needs: this one was made a moment ago by
    our own worker."""

    path: str
    payload: str | bytes

    @classmethod
    def of(cls, document: Document, entry: tuple[str, str] | None) -> _Packed:
        if entry is not None and entry[1]:
            return cls(document.path, entry[1])
        fields = (
            document.title, document.title_line,
            tuple(c.flattened() for c in document.chunks),
        )
        return cls(document.path, marshal.dumps(fields))

    def unpacked(self) -> Document:
        if isinstance(self.payload, str):
            unpacked = unpack(self.path, self.payload)
            if unpacked is None:  # pragma: no cover - we packed it ourselves a moment ago
                raise RuntimeError(f"a worker's document for {self.path!r} does not unpack")
            return unpacked[0]
        path = self.path
        title, title_line, chunks = marshal.loads(self.payload)
        # marshal gives back the tuples Chunk.flattened made, in its order: the chunks are built
        # from them as they are, without Chunk.of's call and copies (a list of them, not a
        # generator: a fifth of this process's time unpacking was these per-chunk calls).
        return Document(path, title, title_line, tuple([Chunk(path, *fields) for fields in chunks]))


class _PackedRows(NamedTuple):
    """A worker's TableDocument on its way to the parent: its digest's bytes and its rows, as marshal data."""

    path: str
    payload: bytes


_ReadResult = tuple[Document | TableDocument | None, list[Diagnostic], tuple[str, str] | None, bool, tuple[str, int] | None]
"""(document or None, its warnings, its cache entry (key, JSON; the JSON "" when no cache needs it)
or None, whether a cache entry was refused, its git blob id and size when the parse memo needs them)."""
_GivenResult = tuple[HeldDocument, list[Diagnostic], None, bool, None]
"""A file the head's index holds, given by what the memo remembered of it."""
_WorkerResult = tuple[_Packed | _PackedRows | None, list[Diagnostic], tuple[str, str] | None, bool, tuple[str, int] | None]
"""A _ReadResult as a worker sends it: the document packed."""


class _WorkerState(NamedTuple):
    """What a worker process reads every file with, set once when the worker starts."""

    connection: sqlite3.Connection | None
    keyed: bool
    packing: bool
    blobbing: bool
    table: bool


_WORKER = [_WorkerState(None, False, False, False, False)]
"""The worker's state (one per process: set by _open_worker_cache in each worker)."""


def _open_worker_cache(cache: ParseCache | None, keyed: bool, packing: bool, blobbing: bool, table: bool) -> None:
    _WORKER[0] = _WorkerState(cache.open_for_reading() if cache is not None else None, keyed, packing, blobbing, table)


def _read_in_worker(item: tuple[str, str]) -> _WorkerResult:
    state = _WORKER[0]
    document, warnings, entry, refused, blob = _read_one(
        item[0], item[1], state.connection, state.keyed, state.packing, state.blobbing, state.table
    )
    # Dataclasses travel back to the parent as the cache's JSON: pickling slotted dataclasses cost
    # as much as parsing (measured: ~5 s to pickle and load 51 MB of documents).
    if document is None:
        return None, warnings, entry, refused, blob
    if isinstance(document, TableDocument):
        return _PackedRows(document.path, marshal.dumps((document.digested, document.rows))), warnings, entry, refused, blob
    return _Packed.of(document, entry), warnings, entry, refused, blob


def _read_one(
    relative: str, absolute: str, connection: sqlite3.Connection | None, caching: bool, packing: bool = True,
    blobbing: bool = False, table: bool = False,
) -> _ReadResult:
    """One file, from the cache when an entry there proves it was made from these bytes. With
    `caching`, its entry is its key and, with `packing`, the cache's JSON of it (else ""). With
    `blobbing`, the bytes' git blob id and size for the parse memo. With `table`, the document as
    its chunk-table rows."""
    local = Diagnostics()
    data = _read_bytes(relative, absolute, local)
    if data is None:
        return None, local.items, None, False, None
    blob = (blob_id(data), len(data)) if blobbing else None
    key = cache_key(relative, data) if caching else ""
    found = lookup(connection, key, data) if caching else Lookup.MISSING
    cached = unpack(relative, found) if isinstance(found, str) else None
    proof = proves_itself(relative, data, *cached) if cached is not None else Proof.REFUSED
    if cached is not None and proof is Proof.PROVEN and isinstance(found, str):
        return document_table(cached[0]) if table else cached[0], cached[1], (key, found), False, blob
    if table and not caching:
        return _parse_table(relative, data, local), local.items, None, False, blob
    document = _parse(relative, data, local)
    # A document with warnings is not cached: an entry's messages would be the entry's words.
    entry = (
        (key, pack(document, local.items) if packing else "") if caching and document is not None and not local.items
        else None
    )
    # An entry the proof could not decide is kb-eval's own when it is what the parse gave.
    agrees = proof is Proof.UNDECIDED and cached is not None and cached == (document, local.items)
    made = document_table(document) if table and document is not None else document
    return made, local.items, entry, (isinstance(found, str) and not agrees) or found is Lookup.REFUSED, blob


def _read_given(relative: str, data: bytes | Remembered, table: bool = False) -> _ReadResult | _GivenResult:
    """One file given as bytes, parsed (with `table`, into its chunk-table rows); or as what the
    memo remembered of it, held by the head's index (no warnings: the memo remembers only files
    parsed without one)."""
    if isinstance(data, Remembered):
        return HeldDocument(relative, data.sections), [], None, False, None
    local = Diagnostics()
    return (_parse_table if table else _parse)(relative, data, local), local.items, None, False, None


def build_document(relative: str, text: str, diagnostics: Diagnostics) -> Document:
    """Turn one file's text into a Document (pure apart from the warnings it records)."""
    title, title_line, chunks = document_fields(relative, text, diagnostics)
    return Document(relative, title, title_line, tuple([Chunk(relative, *fields) for fields in chunks]))


def build_table(relative: str, text: str, diagnostics: Diagnostics) -> TableDocument:
    """Turn one file's text into its chunk-table rows: build_document's, without its Chunks."""
    return table_document(relative, *document_fields(relative, text, diagnostics))


def document_fields(relative: str, text: str, diagnostics: Diagnostics) -> tuple[str, int, list[ChunkFields]]:
    """One file's title, the title's line and its chunks' flat fields (`Chunk.flattened`'s form)."""
    stem = relative.rsplit("/", 1)[-1]
    stem = stem.rsplit(".", 1)[0] if "." in stem else stem
    parsed: ParsedDocument = parse_document(text, stem)
    for line, code, problem in parsed.problems:
        diagnostics.warn(code, problem, relative, line)
    frontmatter = parsed.frontmatter
    if frontmatter is not None and frontmatter.title is not None:
        title, title_line = frontmatter.title, frontmatter.title_line or 1
    else:
        title, title_line = stem, 1
    # Breadcrumb parts are cut once per heading, not per section, and shared by every section
    # under it (see MAX_BREADCRUMB_PART_CHARS for why they are cut at all).
    short_title = _breadcrumb_part(title)
    chunks: list[ChunkFields] = [
        (
            section.heading, (short_title, *(_breadcrumb_part(text) for text, _ in section.ancestors)), section.body,
            section.start_line, section.end_line, section.heading_line, section.body_start_line,
            (title_line, *(line for _, line in section.ancestors)),
        )
        for section in parsed.sections
    ]
    return title, title_line, chunks


def _breadcrumb_part(text: str) -> str:
    return text if len(text) <= MAX_BREADCRUMB_PART_CHARS else text[:MAX_BREADCRUMB_PART_CHARS]


def _indexable_files(
    root: Path, exclude: Sequence[str], diagnostics: Diagnostics
) -> Iterable[tuple[str, str]]:
    rules = KbFiles.excluding(exclude)
    real_root = os.path.realpath(root)
    # Paths stay strings: a Path per file, built here and again in the worker that unpickles it,
    # was a fifth of listing 20,000 files.
    for folder, relative_folder, dirnames, filenames, links in _walk(str(root), _walk_error(root, diagnostics)):
        dirnames[:] = [
            name for name in sorted(dirnames)
            if rules.enters_folder(relative_folder + name, is_link=name in links, diagnostics=diagnostics)
        ]
        for name in sorted(filenames):
            relative = relative_folder + name
            if not rules.is_candidate(relative):
                continue
            absolute = os.path.join(folder, name)
            if rules.holds_file(relative, diagnostics, link_leaves_kb=name in links and _leaves(real_root, absolute)):
                yield relative, absolute


def _leaves(real_root: str, absolute: str) -> bool:
    """A symbolic link whose target is outside the KB (a link inside it is read as its target)."""
    try:
        if not stat.S_ISLNK(os.lstat(absolute).st_mode):
            return False
    except OSError:  # a path past PATH_MAX (ENAMETOOLONG), or gone: reading it names the skip
        return False
    target = os.path.realpath(absolute)
    return os.path.commonpath([real_root, target]) != real_root


def _walk(
    root: str, onerror: Callable[[OSError], None]
) -> Iterator[tuple[str, str, list[str], list[str], set[str]]]:
    """os.walk(root, followlinks=False), top-down, without recursion: (folder, its path under
    `root` with `/` separators and a final `/` ("" for `root`), dirnames, filenames, the names
    among both that are symbolic links).

    os.walk recurses once per folder level (Python 3.11), so a tree ~1,000 folders deep, which a
    pull request can commit, raised RecursionError and stopped the run. An explicit stack has no
    depth limit; a path past PATH_MAX fails its scandir with ENAMETOOLONG and becomes a recorded
    skip through `onerror`. The caller prunes `dirnames` in place, as with os.walk. Which names
    are links comes from the listing (no lstat per file or folder: 43,000 of them for 20,000
    files in 11,700 folders), as the path under `root` comes from the walk (no relpath)."""
    pending = [(root, "")]
    while pending:
        folder, relative = pending.pop()
        dirnames: list[str] = []
        filenames: list[str] = []
        links: set[str] = set()
        try:
            with os.scandir(folder) as entries:
                for entry in entries:
                    try:
                        is_dir = entry.is_dir()  # follows links, as os.walk does when listing
                    except OSError:
                        is_dir = False
                    try:
                        if entry.is_symlink():
                            links.add(entry.name)
                    except OSError:
                        pass  # gone since the listing: reading it names the skip
                    (dirnames if is_dir else filenames).append(entry.name)
        except OSError as error:
            onerror(error)
            continue
        yield folder, relative, dirnames, filenames, links
        # Reversed onto the stack, so folders are visited in the order the caller left them.
        pending.extend(
            (os.path.join(folder, name), f"{relative}{name}/") for name in reversed(dirnames) if name not in links
        )


def _walk_error(root: Path, diagnostics: Diagnostics) -> Callable[[OSError], None]:
    def record(error: OSError) -> None:
        name = shown(os.path.relpath(error.filename, root).replace(os.sep, "/")) if error.filename else str(root)
        diagnostics.warn(DiagnosticCode.FOLDER_SKIPPED, f"folder cannot be read ({error.strerror}); its files are not indexed", name)

    return record


def _read_bytes(relative: str, absolute: str, diagnostics: Diagnostics) -> bytes | None:
    # A link inside the KB is read as its target: the walk already kept links inside the KB.
    try:
        return read_capped(absolute, MAX_DOCUMENT_BYTES, LinkPolicy.FOLLOW)
    except FileRefused as refused:
        skipped_file(relative, refused.reason, diagnostics)
        return None


def _parse(relative: str, data: bytes, diagnostics: Diagnostics) -> Document | None:
    text = _text(relative, data, diagnostics)
    return build_document(relative, text, diagnostics) if text is not None else None


def _parse_table(relative: str, data: bytes, diagnostics: Diagnostics) -> TableDocument | None:
    text = _text(relative, data, diagnostics)
    return build_table(relative, text, diagnostics) if text is not None else None


def _text(relative: str, data: bytes, diagnostics: Diagnostics) -> str | None:
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        diagnostics.warn(DiagnosticCode.FILE_SKIPPED, f"not valid UTF-8 (byte {error.start}); not indexed", relative)
        return None
    if "\x00" in text:
        diagnostics.warn(DiagnosticCode.FILE_SKIPPED, "contains NUL bytes (binary data?); not indexed", relative)
        return None
    return text
