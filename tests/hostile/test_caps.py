"""Budgets: what one file and one KB may cost is bounded by what is read, not by what it expands to.

Each cap is tested at the limit (read as before) and one past it (capped or refused), with the cap
lowered by monkeypatch so the files stay tiny; bench/peak_rss.py measures the real caps.
"""

from __future__ import annotations

from pathlib import Path

import pytest

import scanner.corpus.markdown
import scanner.corpus.reader
from scanner.corpus.documents import Document
from scanner.corpus.markdown import MAX_BREADCRUMB_PART_CHARS, MAX_FRONTMATTER_BYTES
from scanner.corpus.reader import (
    DEFAULT_MAX_FILES,
    DEFAULT_MAX_MIB,
    DEFAULT_MAX_POSTINGS,
    DEFAULT_MAX_SECTIONS,
    CorpusCaps,
    build_document,
    read_corpus,
)
from scanner.foundation.diagnostics import Diagnostics
from scanner.foundation.errors import ExitCode, InputError
from scanner.search.index import Index
from tests.conftest import run_cli, write_tree
from tests.hostile.support import GOLDEN


def document(text: str, name: str = "x.md") -> tuple[list[tuple[str, str, int | None]], Document]:
    diagnostics = Diagnostics()
    built = build_document(name, text, diagnostics)
    return [(d.code, d.message, d.line) for d in diagnostics.items], built


# -- per file: sections ---------------------------------------------------------------------------


def test_headings_past_the_section_cap_stay_in_the_last_section_with_a_warning(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(scanner.corpus.markdown, "MAX_SECTIONS_PER_DOCUMENT", 3)
    diagnostics = Diagnostics()
    doc = build_document("x.md", "intro\n# 1\na\n# 2\nb\n# 3\nc\n# 4\nd\n# 5\ne\n", diagnostics)
    assert [c.heading for c in doc.chunks] == ["", "1", "2", "3"]
    assert doc.chunks[-1].body == "c\n# 4\nd\n# 5\ne"  # nothing dropped
    assert doc.chunks[-1].end_line == 11
    [warning] = diagnostics.items
    assert (warning.code, warning.file, warning.line) == ("sections-capped", "x.md", 8)


def test_exactly_the_section_cap_is_split_as_before(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(scanner.corpus.markdown, "MAX_SECTIONS_PER_DOCUMENT", 3)
    diagnostics = Diagnostics()
    doc = build_document("x.md", "# 1\na\n# 2\nb\n# 3\nc\n", diagnostics)
    assert [c.heading for c in doc.chunks] == ["1", "2", "3"] and diagnostics.items == []


def test_a_setext_heading_past_the_cap_is_capped_too(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(scanner.corpus.markdown, "MAX_SECTIONS_PER_DOCUMENT", 1)
    diagnostics = Diagnostics()
    doc = build_document("x.md", "# 1\na\n\nTwo\n===\nb\n", diagnostics)
    assert [c.heading for c in doc.chunks] == ["1"] and doc.chunks[0].body == "a\n\nTwo\n===\nb"
    assert [(d.code, d.line) for d in diagnostics.items] == [("sections-capped", 4)]


# -- per file: breadcrumbs ------------------------------------------------------------------------


def test_a_huge_title_is_cut_in_every_breadcrumb_but_kept_whole_as_the_title() -> None:
    title = "t" * 40_000
    _, doc = document(f"---\ntitle: {title}\n---\n" + "## \n" * 50 + "# " + "h" * 5000 + "\n### deep\n")
    assert doc.title == title
    chunks = doc.chunks
    assert all(len(part) <= MAX_BREADCRUMB_PART_CHARS for c in chunks for part in c.breadcrumb_parts)
    assert chunks[-1].breadcrumb_parts == ("t" * MAX_BREADCRUMB_PART_CHARS, "h" * MAX_BREADCRUMB_PART_CHARS)
    assert chunks[-2].heading == "h" * 5000  # a section's own heading is whole


def test_a_title_at_the_breadcrumb_cap_is_whole_in_the_breadcrumb() -> None:
    title = "t" * MAX_BREADCRUMB_PART_CHARS
    _, doc = document(f"---\ntitle: {title}\n---\n# a\n")
    assert doc.chunks[0].breadcrumb == title


def test_the_index_holds_the_breadcrumb_the_quote_scan_reads(tmp_path: Path) -> None:
    write_tree(tmp_path, {"x.md": "---\ntitle: " + "t" * 1000 + "\n---\n# A\nbody\n# B\nbody\n"})
    corpus = read_corpus(tmp_path, workers=1)
    index = Index.build(corpus.documents)
    stored = [row[3] for row in index.connection.execute("SELECT id, path, heading, breadcrumb FROM chunks ORDER BY id")]
    assert stored == [chunk.breadcrumb for chunk in corpus.documents[0].chunks]
    assert all(len(value) == MAX_BREADCRUMB_PART_CHARS for value in stored)


# -- per file: frontmatter ------------------------------------------------------------------------


def _frontmatter_of_size(size: int) -> str:
    filler = "c: " + "x" * (size - len("title: Kept\n") - len("c: "))
    block = "title: Kept\n" + filler
    assert len(block) == size
    return f"---\n{block}\n---\n# A\nalpha\n"


def test_frontmatter_at_the_cap_is_read() -> None:
    problems, doc = document(_frontmatter_of_size(MAX_FRONTMATTER_BYTES))
    assert problems == [] and doc.title == "Kept"


def test_frontmatter_past_the_cap_is_not_parsed_and_the_title_is_the_file_name() -> None:
    problems, doc = document(_frontmatter_of_size(MAX_FRONTMATTER_BYTES + 1))
    assert doc.title == "x"
    assert [(code, line) for code, _, line in problems] == [("frontmatter-invalid", 1)]
    assert [c.heading for c in doc.chunks] == ["A"]


# -- per corpus -----------------------------------------------------------------------------------


def test_one_file_past_the_file_count_cap_stops_the_run_naming_it(tmp_path: Path) -> None:
    write_tree(tmp_path, {f"n{i}.md": "# a\n" for i in range(4)})
    with pytest.raises(InputError) as caught:
        read_corpus(tmp_path, workers=1, caps=CorpusCaps(files=3))
    assert "more than 3 indexable files" in caught.value.message and "n3.md" in caught.value.message
    assert caught.value.field == "--kb-path" and "--exclude" in (caught.value.hint or "")
    assert "--max-files" in (caught.value.hint or "")


def test_files_at_the_count_cap_are_read(tmp_path: Path) -> None:
    write_tree(tmp_path, {f"n{i}.md": "# a\n" for i in range(3)})
    assert len(read_corpus(tmp_path, workers=1, caps=CorpusCaps(files=3)).documents) == 3


@pytest.mark.parametrize(("sizes", "refused"), [((2**19, 2**19), False), ((2**19, 2**19 + 1), True)])
def test_the_byte_cap_counts_every_file(tmp_path: Path, sizes: tuple[int, int], refused: bool) -> None:
    write_tree(tmp_path, {"a.md": b"a" * sizes[0], "b.md": b"b" * sizes[1]})
    if refused:
        with pytest.raises(InputError, match="more than 1 MiB; stopped at b.md"):
            read_corpus(tmp_path, workers=1, caps=CorpusCaps(mib=1))
    else:
        assert len(read_corpus(tmp_path, workers=1, caps=CorpusCaps(mib=1)).documents) == 2


@pytest.mark.parametrize(("sections", "refused"), [(5, False), (6, True)])
def test_the_section_cap_counts_every_document(tmp_path: Path, sections: int, refused: bool) -> None:
    write_tree(tmp_path, {"a.md": "# a\n# b\n# c\n", "b.md": "# d\n" * (sections - 3)})
    if refused:
        with pytest.raises(InputError, match="more than 5 sections; stopped at b.md"):
            read_corpus(tmp_path, workers=1, caps=CorpusCaps(sections=5))
    else:
        assert sum(len(d.chunks) for d in read_corpus(tmp_path, workers=1, caps=CorpusCaps(sections=5)).documents) == 5


def test_the_section_cap_holds_with_parallel_workers(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(scanner.corpus.reader, "PARALLEL_MIN_FILES", 10)
    write_tree(tmp_path, {f"n{i:02}.md": "# a\n# b\n" for i in range(30)})
    with pytest.raises(InputError, match="more than 50 sections; stopped at n25.md"):
        read_corpus(tmp_path, workers=2, caps=CorpusCaps(sections=50))


def test_a_kb_over_a_cap_is_exit_2_from_the_cli_and_the_setting_raises_it(tmp_path: Path) -> None:
    kb = write_tree(tmp_path / "kb", {".kb-eval.yml": GOLDEN, "a.md": "# Alpha\nalpha beta\n", "b.md": "", "c.md": ""})
    result = run_cli("--kb-path", kb, "--no-history", "--max-files", "2")
    assert result.code == ExitCode.BAD_INPUT and "more than 2 indexable files" in result.stderr
    assert run_cli("--kb-path", kb, "--no-history", "--max-files", "3").code == ExitCode.OK
    assert "Traceback" not in result.stderr


def test_the_default_caps_refuse_no_kb_the_earlier_fixed_caps_let_in() -> None:
    # Before they were settings: 200,000 files, 512 MiB, 1,500,000 sections.
    assert DEFAULT_MAX_FILES >= 200_000 and DEFAULT_MAX_MIB >= 512 and DEFAULT_MAX_SECTIONS >= 1_500_000
    # And they hold each other's worth of the bench's notes (4.6 KB and 11 sections a document):
    # the file cap is not reached long after the byte cap, nor the section cap before the file cap.
    assert DEFAULT_MAX_MIB * 2**20 >= 0.95 * DEFAULT_MAX_FILES * 4_600
    assert DEFAULT_MAX_SECTIONS >= 0.95 * DEFAULT_MAX_FILES * 11
    # Nor the postings cap before the file cap: 17,188,754 postings at 20,000 of those notes
    # (bench/term_memory.py counts them), 860 a document.
    assert DEFAULT_MAX_POSTINGS >= DEFAULT_MAX_FILES * 860
