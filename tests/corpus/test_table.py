"""A KB read for the index comes as its chunk-table rows (scanner/corpus/table.py): the same table and
corpus digest as its documents give, with no Chunk built and no text encoded in the parent when
workers parse."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import scanner.corpus.table
from scanner.corpus.documents import Chunk, Document
from scanner.corpus.parse_cache import ParseCache
from scanner.corpus.parse_memo import ParseMemo
from scanner.corpus.reader import PARALLEL_MIN_FILES, read_corpus, read_folder
from scanner.corpus.table import TableDocument
from scanner.foundation.diagnostics import Diagnostics
from scanner.golden.file import ExpectedEntry, GoldenQuery, GoldenSet
from scanner.pipeline.evaluate import EvalOptions, head_side, plan_evaluation, prepare
from scanner.search.index import Index


def write_kb(root: Path, count: int) -> None:
    """`count` notes of every layout titles.py tells apart, some with warnings, some not UTF-8."""
    for n in range(count):
        kind = n % 6
        if kind == 0:  # frontmatter title and the same `# Title`: the title counted once
            text = f"---\ntitle: Note {n}\n---\n# Note {n}\n\ntext {n}\n\n## Setup\n\none\n\n### Détails\n\ntwo\n"
        elif kind == 1:  # a `# Title` enclosing the page, non-ASCII text
            text = f"# Überblick {n}\n\nSchlüssel {n}\n\n## Teil\n\nmehr 全文検索\n"
        elif kind == 2:  # a file-name title, text before the first heading, setext headings
            text = f"intro {n}\n\nPart\n====\nbody\n\nSub\n---\nlast\n"
        elif kind == 3:  # frontmatter only
            text = f"---\ntitle: Only {n}\n---\n"
        elif kind == 4:  # a title-only section, not scored, and a broken frontmatter (a warning)
            text = f"---\ntitle: [\n---\n# Kettle {n}\n\n## Kettle {n}\n\nboil\n"
        else:
            text = f"# A\n## B\n### C\nx {n}\n# A\n## B\ny\n"
        path = root / f"d{n % 7}" / f"note-{n:04d}.md"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    (root / "binary.md").write_bytes(b"\xff\xfe")


def table_of(index: Index) -> list[tuple[Any, ...]]:
    return index.connection.execute("SELECT * FROM chunks ORDER BY id").fetchall()


@pytest.mark.parametrize("count", [10, PARALLEL_MIN_FILES + 100])
def test_a_kb_read_as_rows_is_indexed_exactly_as_its_documents_are(tmp_path: Path, count: int) -> None:
    kb = tmp_path / "kb"
    write_kb(kb, count)
    expected_warnings = Diagnostics()
    documents = read_corpus(kb, (), expected_warnings, workers=1).documents
    expected = Index.build(documents)
    assert expected.corpus.chunks > 2 * count  # guards the comparison against an empty KB
    assert any(row[11] is not None for row in table_of(expected))  # a scored heading differs
    for workers in (1, 2):
        warnings = Diagnostics()
        rows = list(read_folder(kb, (), warnings, workers=workers, table=True))
        assert all(isinstance(document, TableDocument) for document in rows)
        index = Index.build(rows)
        assert index.corpus == expected.corpus
        assert table_of(index) == table_of(expected)
        assert warnings.items == expected_warnings.items
    # Through a parse cache (cold, then warm) and with a memo, the same.
    cache = ParseCache(tmp_path / "cache")
    for _ in range(2):
        memo, plain_memo = ParseMemo(), ParseMemo()
        index = Index.build(read_folder(kb, (), workers=2, cache=cache, memo=memo, table=True))
        assert index.corpus == expected.corpus and table_of(index) == table_of(expected)
        read_corpus(kb, (), workers=2, memo=plain_memo)
        assert memo.entries == plain_memo.entries and memo.entries


def test_a_document_and_its_rows_give_the_chunk_tables_text_and_lines() -> None:
    document = Document("a.md", "Title", 2, (
        Chunk("a.md", "Title", ("Title",), "", 4, 4, 4, 5, (2,)),
        Chunk("a.md", "Sub", ("Title", "Title"), "text é", 5, 6, 5, 6, (2, 4)),
    ))
    table = scanner.corpus.table.document_table(document)
    assert table.rows == [
        ("a.md", "Title", "Title", "", 4, 4, 4, 5, "2", "5", "", ""),
        ("a.md", "Sub", "Title > Title", "text é", 5, 6, 5, 6, "2,4", "5,5", None, "Title"),
    ]
    prefixed = [len(v.encode()).to_bytes(8, "big") + v.encode() for row in table.rows for v in row[:4]]
    assert table.digested == b"".join(prefixed)


def count_calls(monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    """Chunks built and values encoded for the digest in this process, from now on."""
    counts = {"chunks": 0, "encoded": 0}
    init, prefixed = Chunk.__init__, scanner.corpus.table.prefixed

    def counting_init(self: Chunk, *args: Any, **kwargs: Any) -> None:
        counts["chunks"] += 1
        init(self, *args, **kwargs)

    def counting_prefixed(value: str) -> bytes:
        counts["encoded"] += 1
        return prefixed(value)

    monkeypatch.setattr(Chunk, "__init__", counting_init)
    monkeypatch.setattr(scanner.corpus.table, "prefixed", counting_prefixed)
    return counts


@pytest.mark.parametrize("count", [10, PARALLEL_MIN_FILES * 2])
def test_reading_for_the_index_builds_no_chunk_and_encodes_each_value_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, count: int
) -> None:
    kb = tmp_path / "kb"
    write_kb(kb, count)
    counts = count_calls(monkeypatch)
    index = Index.build(read_folder(kb, (), workers=2, table=True))
    assert counts["chunks"] == 0
    # One encoding per path, heading and body, and per run of sections sharing a breadcrumb; in the
    # parent none at all when workers parse (from PARALLEL_MIN_FILES files).
    documents, runs = index.connection.execute(
        "SELECT COUNT(DISTINCT path), COUNT(*) FROM (SELECT path, breadcrumb, LAG(breadcrumb) OVER (PARTITION BY path"
        " ORDER BY id) AS before FROM chunks) WHERE before IS NULL OR before != breadcrumb"
    ).fetchone()
    assert counts["encoded"] == (0 if count >= PARALLEL_MIN_FILES else documents + runs + 2 * index.corpus.chunks)
    # The near miss: documents read as Chunks, then turned into rows here.
    counts.update(chunks=0, encoded=0)
    again = Index.build(read_corpus(kb, (), workers=2).documents)
    assert counts["chunks"] == again.corpus.chunks == index.corpus.chunks
    assert counts["encoded"] == documents + runs + 2 * index.corpus.chunks


@pytest.mark.parametrize("count", [10, PARALLEL_MIN_FILES * 2])
def test_a_run_reads_its_kb_into_the_index_without_a_chunk(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, count: int
) -> None:
    kb = tmp_path / "kb"
    write_kb(kb, count)
    golden = GoldenSet("golden.yml", "0" * 64, (GoldenQuery("q", "setup", (ExpectedEntry("d0/note-0000.md", None, 3),), (), 2),), None)
    options = EvalOptions(kb_path=kb)
    counts = count_calls(monkeypatch)
    diagnostics = Diagnostics()
    prepared = prepare(options, plan_evaluation(options, diagnostics, golden), head_side(options), diagnostics)
    assert prepared.index.corpus.documents == count
    assert counts["chunks"] == 0
