"""File contents a pull request can commit: encodings, line endings, sizes, pathological Markdown."""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

import pytest

from scanner.corpus.reader import MAX_DOCUMENT_BYTES
from tests.conftest import write_tree
from tests.hostile.support import ANSWER, GOLDEN, documents, run_json, top_paths, warnings

MIB = 1024 * 1024


@pytest.fixture
def kb(tmp_path: Path) -> Path:
    return write_tree(tmp_path / "kb", {".kb-eval.yml": GOLDEN, "a.md": ANSWER})


def bytes_read(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The size of every os.read during the test (foundation/files.py reads a document with it)."""
    sizes: list[int] = []
    original = os.read

    def counting(fd: int, size: int) -> bytes:
        data = original(fd, size)
        sizes.append(len(data))
        return data

    monkeypatch.setattr(os, "read", counting)
    return sizes


def chunks_of(report: dict, path: str) -> list[dict]:  # type: ignore[type-arg]
    return [hit for q in report["per_query"] for hit in q["top_k"] if hit["path"] == path]


def test_bytes_that_are_not_utf8_skip_the_file_naming_the_byte_offset(kb: Path) -> None:
    (kb / "latin1.md").write_bytes(b"# Caf\xe9\nalpha beta\n")
    _, report = run_json(kb)
    assert documents(report) == 1 and warnings(report) == [("file-skipped", "latin1.md")]
    assert report["warnings"][0]["message"] == "not valid UTF-8 (byte 5); not indexed"


def test_a_utf16_file_with_its_bom_is_skipped_as_not_utf8(kb: Path) -> None:
    (kb / "utf16.md").write_bytes("# Alpha beta\n".encode("utf-16"))
    _, report = run_json(kb)
    assert warnings(report) == [("file-skipped", "utf16.md")]


def test_a_utf8_bom_is_dropped_so_the_first_heading_is_still_a_heading(kb: Path) -> None:
    (kb / "bom.md").write_bytes(b"\xef\xbb\xbf# Bommed\nalpha beta\n")
    _, report = run_json(kb)
    assert documents(report) == 2 and warnings(report) == []
    assert [hit["heading"] for hit in chunks_of(report, "bom.md")] == ["Bommed"]


def test_nul_bytes_skip_the_file_as_binary(kb: Path) -> None:
    (kb / "nul.md").write_bytes(b"# N\nalpha\x00beta\n")
    _, report = run_json(kb)
    assert warnings(report) == [("file-skipped", "nul.md")]
    assert report["warnings"][0]["message"] == "contains NUL bytes (binary data?); not indexed"


@pytest.mark.parametrize("newline", ["\r\n", "\r", "\n"], ids=["crlf", "lone-cr", "lf"])
def test_every_line_ending_splits_headings_and_counts_lines_alike(kb: Path, newline: str) -> None:
    text = newline.join(["# One", "alpha beta", "", "# Two", "x", "alpha beta gamma delta", ""])
    (kb / "endings.md").write_bytes(text.encode())
    golden = (
        "queries:\n"
        "  - {id: q1, query: alpha beta gamma delta, expected: [a.md]}\n"
        "  - {id: q2, query: epsilon zeta eta theta, expected: [a.md]}\n"
    )
    (kb / ".kb-eval.yml").write_text(golden, encoding="utf-8")
    (kb / "quote.md").write_bytes(newline.join(["# Q", "", "x", "", "", "alpha beta gamma delta and", "then epsilon zeta eta theta", ""]).encode())
    _, report = run_json(kb)
    assert sorted({hit["heading"] for hit in chunks_of(report, "endings.md")}) == ["One", "Two"]
    # The quote scan's line numbers count \r\n, \r and \n as one line break each.
    [finding] = report["findings"]
    assert finding["path"] == "quote.md"
    assert [(q["line"], q["column"]) for q in finding["quoted"]] == [(6, 1), (7, 6)]


def test_a_200_mb_sparse_file_is_skipped_by_its_size_without_being_read(kb: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with open(kb / "huge.md", "wb") as handle:
        handle.truncate(200 * MIB)
    read = bytes_read(monkeypatch)
    _, report = run_json(kb)
    assert sum(read) < MIB  # the golden file and a.md: reading the zeros to refuse them as NUL would be 200 MiB
    assert documents(report) == 1 and warnings(report) == [("file-skipped", "huge.md")]
    assert report["warnings"][0]["message"] == (
        f"file is {200 * MIB} bytes, over the {MAX_DOCUMENT_BYTES}-byte cap; not indexed"
    )


def test_a_file_that_is_one_50_mb_line_is_skipped_by_its_size(kb: Path) -> None:
    (kb / "line.md").write_bytes(b"alpha beta " * (50 * MIB // 11))
    _, report = run_json(kb)
    assert documents(report) == 1 and warnings(report) == [("file-skipped", "line.md")]


@pytest.mark.slow  # a real-size twin of tests/hostile/test_linear_steps.py's counted shapes
def test_a_single_line_just_under_the_cap_is_indexed_in_bounded_time(kb: Path) -> None:
    line = b"alpha beta gamma delta " * ((MAX_DOCUMENT_BYTES - 1) // 23)
    (kb / "line.md").write_bytes(line.ljust(MAX_DOCUMENT_BYTES - 1, b"x"))
    started = time.perf_counter()
    _, report = run_json(kb)
    assert time.perf_counter() - started < 20  # measured ~2 s (bench/peak_rss.py line_under_cap)
    assert documents(report) == 2 and warnings(report) == [] and "line.md" in top_paths(report)


@pytest.mark.slow  # timed: the backtracking was inside a regular expression, where steps are not counted
def test_a_heading_that_is_mostly_one_run_of_spaces_is_parsed_in_linear_time(kb: Path) -> None:
    # The ATX regexes backtracked through the run from every position: 5 s for 20,000 spaces,
    # and the time grows with the square of the run: (1 MiB / 20,000)² ≈ 2,700 times that here.
    (kb / "spaces.md").write_text("# alpha" + " " * MIB + "beta #\nbody\n", encoding="utf-8")
    started = time.perf_counter()
    _, report = run_json(kb)
    assert time.perf_counter() - started < 10
    assert [hit["heading"] for hit in chunks_of(report, "spaces.md")] == ["alpha" + " " * MIB + "beta"]


@pytest.mark.slow
def test_100000_tiny_files_are_all_indexed(kb: Path) -> None:
    # 99,999 and a.md: 100,000 files, far under the file cap (test_caps.py holds one more than a cap to the refusal).
    for folder in range(100):
        sub = kb / f"d{folder:02}"
        sub.mkdir()
        for n in range(1000 if folder else 999):
            fd = os.open(sub / f"n{n:03}.md", os.O_WRONLY | os.O_CREAT, 0o644)
            os.write(fd, b"# t\nw\n")
            os.close(fd)
    try:
        started = time.perf_counter()
        _, report = run_json(kb)
        assert time.perf_counter() - started < 90  # measured ~13 s in-process on 2 cores
        assert documents(report) == 100_000 and report["corpus"]["chunks"] == 100_000 and warnings(report) == []
    finally:
        # Removed here, not by pytest's retention cleanup at the start of a later (fast) run.
        shutil.rmtree(kb)


def test_10000_headings_in_one_file_become_10000_chunks(kb: Path) -> None:
    (kb / "many.md").write_text("".join(f"## Heading {n}\nbody {n}\n" for n in range(10_000)), encoding="utf-8")
    _, report = run_json(kb)
    assert documents(report) == 2 and report["corpus"]["chunks"] == 10_001


def test_headings_100_kb_long_are_indexed_whole_and_searchable(kb: Path) -> None:
    long_heading = "zebra " * 17_000  # ~100 KB
    (kb / "long.md").write_text(f"# {long_heading}\n## {long_heading}\nalpha beta\n", encoding="utf-8")
    _, report = run_json(kb)
    assert documents(report) == 2 and report["corpus"]["chunks"] == 3
    assert [hit["heading"] for hit in chunks_of(report, "long.md")] == [long_heading.strip()]


def test_unterminated_frontmatter_is_indexed_as_body_with_a_warning_on_line_1(kb: Path) -> None:
    (kb / "open.md").write_text("---\ntitle: never closed\n# Heading\nalpha beta\n", encoding="utf-8")
    _, report = run_json(kb)
    assert documents(report) == 2
    assert [(w["code"], w["file"], w["line"]) for w in report["warnings"] if w["file"] == "open.md"] == [
        ("frontmatter-invalid", "open.md", 1)
    ]
    assert [hit["heading"] for hit in chunks_of(report, "open.md")] == ["Heading"]


def test_an_unterminated_code_fence_runs_to_the_end_and_hides_the_headings_after_it(kb: Path) -> None:
    (kb / "fence.md").write_text("# Before\nalpha beta\n```\n# not a heading\nalpha beta\n", encoding="utf-8")
    _, report = run_json(kb)
    assert report["corpus"]["chunks"] == 2 and warnings(report) == []
    assert [hit["heading"] for hit in chunks_of(report, "fence.md")] == ["Before"]


def test_a_frontmatter_billion_laughs_is_composed_as_shared_nodes_and_costs_nothing(kb: Path) -> None:
    # Frontmatter is composed with aliases as shared nodes (never expanded) and only `title` is read.
    laughs = ['title: Laughs', 'a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    laughs += [f"{chr(98 + n)}: &{chr(98 + n)} [{','.join(['*' + chr(97 + n)] * 9)}]" for n in range(8)]
    (kb / "bomb.md").write_text("---\n" + "\n".join(laughs) + "\n---\n# Bomb\nalpha beta\n", encoding="utf-8")
    _, report = run_json(kb)  # its cost is counted in tests/corpus/test_chunking.py
    assert documents(report) == 2 and warnings(report) == []
    assert [hit["heading"] for hit in chunks_of(report, "bomb.md")] == ["Bomb"]


@pytest.mark.parametrize(("nesting", "line", "why"), [
    ("[" * 100_000 + "]" * 100_000, 1, "is over 65536 bytes and is not read"),
    ("{a: " * 100_000 + "}" * 100_000, 1, "is over 65536 bytes and is not read"),
    ("[" * 30_000 + "]" * 30_000, 3, "nested more than 50 levels deep"),
    ("[" * 51 + "]" * 51, 3, "nested more than 50 levels deep"),
], ids=["sequence-100000", "mapping-100000", "sequence-30000", "sequence-51"])
def test_deeply_nested_frontmatter_is_refused_with_a_warning_and_the_document_is_still_indexed(
    kb: Path, nesting: str, line: int, why: str
) -> None:
    # libyaml's composer recursed in C: 100,000 levels crashed the process (SIGSEGV) before the fix;
    # that block is now over the frontmatter size cap, so a 60 KB one checks the nesting guard.
    (kb / "bomb.md").write_text(f"---\ntitle: x\nnest: {nesting}\n---\n# Bomb\nalpha beta\n", encoding="utf-8")
    _, report = run_json(kb)
    assert documents(report) == 2
    assert [(w["code"], w["file"], w["line"]) for w in report["warnings"] if w["file"] == "bomb.md"] == [
        ("frontmatter-invalid", "bomb.md", line)
    ]
    assert why in report["warnings"][0]["message"]
    assert [hit["heading"] for hit in chunks_of(report, "bomb.md")] == ["Bomb"]


def test_frontmatter_nested_50_levels_is_read(kb: Path) -> None:
    (kb / "deep.md").write_text("---\ntitle: Kept\nnest: " + "[" * 49 + "]" * 49 + "\n---\nalpha beta\n", encoding="utf-8")
    _, report = run_json(kb)
    assert warnings(report) == []
    assert [hit["heading"] for hit in chunks_of(report, "deep.md")] == [None]


def test_a_frontmatter_tag_that_would_construct_an_object_is_never_constructed(kb: Path, tmp_path: Path) -> None:
    marker = tmp_path / "pwned"
    (kb / "tag.md").write_text(
        f'---\ntitle: !!python/object/apply:os.system ["touch {marker}"]\n---\n# Tagged\nalpha beta\n',
        encoding="utf-8",
    )
    _, report = run_json(kb)
    assert not marker.exists()
    assert documents(report) == 2 and warnings(report) == []  # a title that is not text: the file name is used
    assert [hit["heading"] for hit in chunks_of(report, "tag.md")] == ["Tagged"]
