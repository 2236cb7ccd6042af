"""The index: documents streamed into the chunk table in path order, chunks read back with their
source lines, and the analysis split over worker processes giving exactly one process's postings."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import tempfile
from array import array
from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np
import pytest

from scanner.corpus.documents import Document
from scanner.corpus.reader import build_document
from scanner.foundation.diagnostics import Diagnostics
from scanner.foundation.errors import InputError
from scanner.retrievers.builtin import BuiltinRetriever
from scanner.search import bm25 as bm25_module
from scanner.search import index as index_module
from scanner.search.bm25 import Postings, SpilledPostings, merge_postings
from scanner.search.index import Index

WORDS = ["kettle", "stove", "pan", "rollback", "image", "migration", "ranking", "section", "index", "query", "answer", "note"]
CJK = ["全文検索", "日本語の文書", "中文检索", "索引を作る", "问题回答"]


def documents(count: int) -> tuple[Document, ...]:
    """Varied English and CJK sections, so the worker ranges hold different vocabularies."""
    texts = {}
    for n in range(count):
        words = " ".join(WORDS[(n * k) % len(WORDS)] for k in range(1, 2 + n % 9))
        texts[f"d{n % 5}/note-{n:03d}.md"] = (
            f"---\ntitle: Note {n} {WORDS[n % len(WORDS)]}\n---\n# {WORDS[(n + 3) % len(WORDS)]} {n}\n{words}\n"
            f"## {CJK[n % len(CJK)]}\n{CJK[(n * 7) % len(CJK)]} {words} {n % 13}\n"
        )
    return tuple(build_document(path, text, Diagnostics()) for path, text in sorted(texts.items()))


def postings_by_term(index: Index, postings: Postings) -> dict[str, tuple[list[int], list[float]]]:
    out = {}
    for term, term_id in index.analyzer.vocabulary.items():
        if term_id + 1 < len(postings.start):
            lo, hi = postings.start[term_id], postings.start[term_id + 1]
            out[term] = (postings.chunks[lo:hi].tolist(), postings.tf[lo:hi].tolist())
    return out


def test_analysis_in_worker_processes_gives_the_postings_and_rankings_of_one_process(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    corpus = documents(240)
    serial = Index.build(corpus, analysis_workers=1)
    parallel = Index.build(corpus, analysis_workers=3)
    merged_parts = []
    real_place = index_module.place_spilled

    def spy(parts: list[tuple[np.ndarray, SpilledPostings]], size: int) -> Postings:
        merged_parts.append(len(parts))
        return real_place(parts, size)

    monkeypatch.setattr(index_module, "PARALLEL_MIN_CHUNKS", 1)
    monkeypatch.setattr(index_module, "place_spilled", spy)
    layers = [(2.0, 1.5, 1.0), (0.0, 1.0, 0.0)]  # BM25F and the breadcrumb alone, in one pass
    one = serial._postings(layers)
    many = parallel._postings(layers)
    assert merged_parts == [3, 3]  # one merge per layer; the serial index never merged
    assert set(parallel.analyzer.vocabulary) == set(serial.analyzer.vocabulary)
    for layer in range(len(layers)):
        assert postings_by_term(parallel, many[layer]) == postings_by_term(serial, one[layer])
        assert many[layer].lengths.tolist() == one[layer].lengths.tolist()
    assert one[1].lengths.tolist() != one[0].lengths.tolist()
    for query in ["kettle stove", "rollback image 7", "全文検索の索引", "中文检索 问题", "note ranking answer"]:
        a = BuiltinRetriever(serial).search(query, 20)
        b = BuiltinRetriever(parallel).search(query, 20)
        assert a and [(h.path, h.heading, h.score) for h in a] == [(h.path, h.heading, h.score) for h in b]


def test_merging_maps_each_parts_terms_onto_one_vocabulary_in_chunk_order() -> None:
    # Part one (chunks 0-1) knows terms [x, y]; part two (chunks 2-3) knows [y, z, x].
    part_one = Postings(
        start=np.array([0, 2, 3]), chunks=np.array([0, 1, 1], dtype=np.int32),
        tf=np.array([1, 2, 3], dtype=np.float32), lengths=np.array([5, 6], dtype=np.float32),
    )
    part_two = Postings(
        start=np.array([0, 1, 2, 4]), chunks=np.array([0, 1, 0, 1], dtype=np.int32),
        tf=np.array([4, 5, 6, 7], dtype=np.float32), lengths=np.array([7, 8], dtype=np.float32),
    )
    x, y, z = 0, 1, 2
    merged = merge_postings([(np.array([x, y]), part_one), (np.array([y, z, x]), part_two)], 3)
    assert merged.start.tolist() == [0, 4, 6, 7]
    assert merged.chunks.tolist() == [0, 1, 2, 3, 1, 2, 3]  # x: 0, 1 (part one), 2, 3 (part two)
    assert merged.tf.tolist() == [1, 2, 6, 7, 3, 4, 5]
    assert merged.lengths.tolist() == [5, 6, 7, 8]


def test_sections_whose_breadcrumbs_read_the_same_keep_their_own_breadcrumb_lines_and_the_digest_covers_each() -> None:
    # Two `# Setup` headings: their subsections' breadcrumbs are the same text at other lines.
    text = "# Setup\n## A\none\n## B\ntwo\n# Setup\n## A\nthree\n"
    documents = [build_document("a.md", text, Diagnostics()), build_document("b.md", "# Other\nfour\n", Diagnostics())]
    index = Index.build(documents)
    chunks = [chunk for document in documents for chunk in document.chunks]
    assert [index.chunk(n) for n in range(1, len(chunks) + 1)] == chunks
    assert [c.breadcrumb_lines for c in chunks[:5]] == [(1,), (1, 1), (1, 1), (1,), (1, 6)]
    expected = hashlib.sha256()
    for chunk in chunks:
        for value in (chunk.path, chunk.heading, chunk.breadcrumb, chunk.body):
            encoded = value.encode("utf-8")
            expected.update(len(encoded).to_bytes(8, "big") + encoded)
    assert index.corpus.digest == "sha256:" + expected.hexdigest()


_WRITE_MEMORY = """
import sys
from scanner.corpus.reader import build_document
from scanner.foundation.diagnostics import Diagnostics
from scanner.search.index import Index

def rss_kib():
    with open("/proc/self/status") as status:
        return next(int(line.split()[1]) for line in status if line.startswith("VmRSS:"))

body = "\\n\\n".join(f"## Part {p}\\n\\n" + f"word{p} " * 150 for p in range(8))
documents = [build_document(f"notes/{n:05d}.md", f"# Note {n}\\n\\n{body}\\n", Diagnostics()) for n in range(int(sys.argv[1]))]
before = rss_kib()
index = Index.build(documents)
assert index.corpus.chunks == 9 * len(documents)
print(rss_kib() - before)
"""


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads the resident size from /proc")
def test_writing_the_chunk_table_holds_the_same_memory_for_four_times_the_sections() -> None:
    # The table's rows go to the file as they are written; SQLite's memory is its 8 MiB cache.
    # With 64 KiB pages it grew with the rows: about 47 MiB more for the larger corpus here.
    grown = [
        int(subprocess.run([sys.executable, "-c", _WRITE_MEMORY, str(documents)], capture_output=True, text=True,
                           timeout=120, check=True).stdout)
        for documents in (2_000, 8_000)
    ]
    assert grown[1] - grown[0] < 12 * 1024, grown  # KiB; 54,000 more sections of about 900 bytes
    index = Index.build([build_document("a.md", "# A\nalpha\n", Diagnostics())])
    assert index.connection.execute("PRAGMA cache_size").fetchone() == (-8192,)  # KiB, not pages


def test_a_chunk_is_read_back_with_its_source_lines_as_it_was_indexed() -> None:
    text = (
        "---\ntitle: Ops > runbook ユニコード\n---\nintro line\n\n# Deploy > steps\nfirst\n\n## Roll back\n"
        "body one\nbody two\n\nSetext heading\n--------------\nunder it\n"
    )
    document = build_document("ops/run.md", text, Diagnostics())
    index = Index.build([document])
    assert len(document.chunks) == 4
    for position, chunk in enumerate(document.chunks, start=1):
        assert index.chunk(position) == chunk
    assert document.chunks[0].heading_line is None  # the part before the first heading
    assert len(document.chunks[2].breadcrumb_parts) == 2 and " > " in document.chunks[2].breadcrumb_parts[1]
    with pytest.raises(KeyError):
        index.chunk(5)


def test_documents_out_of_path_order_are_refused_before_ids_are_misassigned() -> None:
    a, b = (build_document(path, "# H\ntext\n", Diagnostics()) for path in ("a.md", "b.md"))
    assert Index.build([a, b]).corpus.chunks == 2
    with pytest.raises(RuntimeError, match="out of path order"):
        Index.build([b, a])
    with pytest.raises(RuntimeError, match="out of path order"):
        Index.build([a, a])


def test_stopwords_are_neither_postings_nor_part_of_a_chunks_length() -> None:
    with_stopwords = build_document("x.md", "# The kettle\nthe kettle is on the stove\n", Diagnostics())
    without = build_document("y.md", "# Kettle\nkettle stove\n", Diagnostics())
    index = Index.build([with_stopwords, without], analysis_workers=1)
    (postings,) = index._postings([(2.0, 2.0, 1.0)])
    assert postings.lengths[0] == postings.lengths[1]
    assert not {"the", "is", "on"} & set(index.analyzer.vocabulary)


def test_a_build_stopped_part_way_leaves_no_index_folder_behind(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))

    def stopped() -> Iterator[Document]:
        yield build_document("a.md", "# A\ntext\n", Diagnostics())
        raise InputError("the KB has more than 1 indexable files", field="--kb-path")

    with pytest.raises(InputError):
        Index.build(stopped())
    assert not list(tmp_path.glob("kb-eval-index-*"))
    index = Index.build([build_document("a.md", "# A\ntext\n", Diagnostics())])
    assert list(tmp_path.glob("kb-eval-index-*")) and index.corpus.chunks == 1  # kept while it lives


def test_a_breadcrumb_repeated_by_the_sections_under_one_heading_is_analysed_once() -> None:
    sections = "".join(f"### Step {n}\nturn the kettle {n}\n" for n in range(6))
    page = build_document("a.md", f"# Guide\n## Install\n{sections}", Diagnostics())
    index = Index.build([page], analysis_workers=1)
    analysed: list[str] = []
    analyse = index.analyzer.index_ids_of

    def counted(texts: Sequence[str]) -> Iterator[array[int]]:
        analysed.extend(texts)
        return analyse(texts)

    index.analyzer.index_ids_of = counted  # type: ignore[method-assign]
    (postings,) = index._postings([(1.0, 1.0, 1.0)])
    crumbs = [text for text in analysed if "Install" in text]
    # The Install section's heading, then the six steps' breadcrumb (the title counted once), once.
    assert crumbs == ["Install", "Guide > Install"]
    # The near miss: each step's own heading and body differ, so each is analysed.
    assert sum(1 for text in analysed if text.startswith("Step")) == 6
    # Every section still counts the breadcrumb's words: `install` is in the seven sections under it.
    install = index.analyzer.vocabulary["instal"]
    assert int(postings.start[install + 1] - postings.start[install]) == 7


def test_every_process_s_postings_are_placed_from_files_a_batch_at_a_time_and_the_files_are_gone_after(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import os

    corpus = documents(600)
    serial = Index.build(corpus, analysis_workers=1)
    parallel = Index.build(corpus, analysis_workers=2)
    monkeypatch.setattr(index_module, "PARALLEL_MIN_CHUNKS", 1)
    monkeypatch.setattr(bm25_module, "BATCH_TOKENS", 256)
    read: list[tuple[str, int]] = []
    batches = bm25_module._spilled_batches

    def spy(path: str) -> Iterator[tuple[np.ndarray, Postings]]:
        for present, batch in batches(path):
            read.append((path, len(batch.chunks)))
            yield present, batch

    monkeypatch.setattr(bm25_module, "_spilled_batches", spy)
    (one,) = serial._postings([(2.0, 1.5, 1.0)])
    (many,) = parallel._postings([(2.0, 1.5, 1.0)])
    files = {path for path, _ in read}
    assert len(files) == 2 and all(path.startswith(parallel.folder) for path in files)  # the parent's share too
    # Read back one batch at a time: never more than a batch's postings (at most its tokens) at once.
    assert len(read) > 20 and max(size for _, size in read) <= 256 + 200
    assert sum(size for _, size in read) == len(many.chunks)
    assert sorted(os.listdir(parallel.folder)) == ["chunks.sqlite"]
    assert postings_by_term(parallel, many) == postings_by_term(serial, one)
    assert many.lengths.tolist() == one.lengths.tolist()


def test_the_sections_of_a_few_documents_are_read_without_reading_the_rest_of_the_table() -> None:
    # SQLite's virtual-machine steps, counted: reading two documents' sections costs the same
    # however many other documents the table holds (a `path IN (...)` read every row).
    def steps(size: int) -> int:
        index = Index.build(documents(size), analysis_workers=1)
        counted = [0]

        def step() -> int:
            counted[0] += 1
            return 0

        index.connection.set_progress_handler(step, 1)
        asked = ["d0/note-000.md", "d1/note-001.md", "absent.md"]
        sections, titles = index.sections(asked), index.titles_and_headings(asked)
        index.connection.set_progress_handler(None, 1)
        assert sorted(sections) == sorted(titles) == ["d0/note-000.md", "d1/note-001.md"]
        assert [heading for heading, _, _, _ in sections["d1/note-001.md"]] == [f"{WORDS[4]} 1", CJK[1]]
        return counted[0]

    assert steps(400) <= steps(100) * 1.2


_PAGE_CACHE = """
import os, random
from scanner.corpus.reader import build_document
from scanner.foundation.diagnostics import Diagnostics
from scanner.foundation.workers import release_free_memory
from scanner.search.index import Index

def resident_kib():
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * (os.sysconf("SC_PAGE_SIZE") // 1024)

rng = random.Random(3)
words = ["".join(rng.choice("abcdefghij") for _ in range(7)) for _ in range(5000)]
documents = [
    build_document(f"d{n:04d}.md", "".join(f"## S{s}\\n" + " ".join(rng.choices(words, k=600)) + "\\n" for s in range(8)),
                   Diagnostics())
    for n in range(400)
]
index = Index.build(documents)
del documents
for _ in index.chunks_by_document():  # the table read through, as the quote scan reads it
    pass
release_free_memory()
steps = []
for _ in range(2):
    before = resident_kib()
    index.release_page_cache()
    release_free_memory()
    steps.append(before - resident_kib())
print(*steps)
"""


@pytest.mark.skipif(not os.path.exists("/proc/self/statm"), reason="reads /proc")
def test_releasing_the_page_cache_gives_back_the_megabytes_a_read_through_the_table_filled() -> None:
    ran = subprocess.run(
        [sys.executable, "-c", _PAGE_CACHE], capture_output=True, text=True, check=True,
        cwd=Path(__file__).resolve().parents[2],
    )
    first, again = map(int, ran.stdout.split())
    # A table of about 20 MiB read through fills the 8 MiB cache: most of it goes back.
    assert first >= 4 * 1024
    # The near miss: nothing read since, releasing again gives back almost nothing.
    assert again < 1024
