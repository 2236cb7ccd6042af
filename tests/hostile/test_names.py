"""File and folder names a pull request can commit: each is indexed under its exact name.

Decision (NFC vs NFD): paths are compared as the exact code points the file system
returns, like git does; kb-eval never normalises Unicode in paths. Two files whose
names differ only in normalisation are two documents, and a golden path matches
the one spelled the same way. A golden path that matches no file on disk gets the
`expected-not-in-corpus` warning, which is how a normalisation mismatch shows up.
"""

from __future__ import annotations

import os
import unicodedata
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.conftest import write_tree
from tests.hostile.support import ANSWER, GOLDEN, documents, run_json, top_paths, warnings

ODD_NAMES = [
    "with space.md",
    "100%.md",
    "100%25 encoded %0A.md",
    "a,b.md",
    "c:d.md",
    "e::f.md",
    "::set-output name=x::y.md",
    "line\nbreak.md",
    "carriage\rreturn.md",
    "-rf.md",
    "--golden.md",
    "tab\there.md",
    "quote'\".md",
    "back\\slash.md",
    "emoji 🙂.md",
    "日本語.md",
]


def make_deep(root: Path, name: str, depth: int, text: bytes) -> None:
    """Folders `depth` deep, made relative to open folder descriptors so no path is ever
    longer than one name (the full path may be past PATH_MAX)."""
    fd = os.open(root, os.O_RDONLY)
    try:
        for _ in range(depth):
            os.mkdir(name, dir_fd=fd)
            child = os.open(name, os.O_RDONLY, dir_fd=fd)
            os.close(fd)
            fd = child
        leaf = os.open("deep.md", os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=fd)
        os.write(leaf, text)
        os.close(leaf)
    finally:
        os.close(fd)


def remove_deep(root: Path, name: str, depth: int) -> None:
    """Undo make_deep bottom-up. shutil.rmtree (and so pytest's tmp_path cleanup) recurses per
    level in Python 3.11 and fails on 1,100 levels, leaving the tree behind."""
    fds = [os.open(root, os.O_RDONLY)]
    try:
        for _ in range(depth):
            fds.append(os.open(name, os.O_RDONLY, dir_fd=fds[-1]))
        os.unlink("deep.md", dir_fd=fds[-1])
        while len(fds) > 1:
            os.close(fds.pop())
            os.rmdir(name, dir_fd=fds[-1])
    finally:
        for fd in fds:
            os.close(fd)


@pytest.fixture
def deep_tree(tmp_path: Path) -> Iterator[Callable[[str, int], Path]]:
    """make(name, depth) -> the KB folder, with `deep.md` at the bottom; removed afterwards."""
    made: list[tuple[Path, str, int]] = []

    def make(name: str, depth: int) -> Path:
        kb = write_tree(tmp_path / "kb", {".kb-eval.yml": GOLDEN, "a.md": ANSWER})
        make_deep(kb, name, depth, b"# Deep\nalpha beta\n")
        made.append((kb, name, depth))
        return kb

    yield make
    for kb, name, depth in made:
        remove_deep(kb, name, depth)


def test_odd_file_names_are_each_indexed_under_their_exact_name(tmp_path: Path) -> None:
    kb = write_tree(tmp_path / "kb", {".kb-eval.yml": GOLDEN, "a.md": ANSWER})
    for name in ODD_NAMES:
        (kb / name).write_text("# Odd\nalpha beta\n", encoding="utf-8")
    _, report = run_json(kb, "--limit", "50")
    assert documents(report) == len(ODD_NAMES) + 1
    assert warnings(report) == []
    assert sorted(top_paths(report)) == sorted(["a.md", *ODD_NAMES])


def test_names_differing_only_in_unicode_normalisation_are_two_documents_matched_exactly(tmp_path: Path) -> None:
    nfc, nfd = unicodedata.normalize("NFC", "café.md"), unicodedata.normalize("NFD", "café.md")
    assert nfc != nfd
    golden = (
        "queries:\n"
        f"  - {{id: nfc, query: alpha only, expected: [{nfc}]}}\n"
        f"  - {{id: nfd-text, query: beta only, expected: [{nfc}]}}\n"
    )
    kb = write_tree(tmp_path / "kb", {".kb-eval.yml": golden, nfc: "# A\nalpha only\n", nfd: "# B\nbeta only\n"})
    _, report = run_json(kb, "--k", "1", "--limit", "1")
    assert documents(report) == 2
    assert {hit["path"] for q in report["per_query"] for hit in q["top_k"]} == {nfc, nfd}
    by_id = {q["id"]: q for q in report["per_query"]}
    assert by_id["nfc"]["top_k"][0]["path"] == nfc and by_id["nfc"]["metrics"]["reciprocal_rank"] == 1.0
    # The NFD file answers the second query, but the golden file names the NFC one: no credit.
    assert by_id["nfd-text"]["top_k"][0]["path"] == nfd and by_id["nfd-text"]["metrics"]["reciprocal_rank"] == 0.0


def test_a_golden_path_in_nfc_for_a_file_named_in_nfd_is_reported_as_not_in_the_corpus(tmp_path: Path) -> None:
    nfc, nfd = unicodedata.normalize("NFC", "café.md"), unicodedata.normalize("NFD", "café.md")
    golden = f"queries:\n  - {{id: q, query: alpha only, expected: [{nfc}, b.md]}}\n"
    kb = write_tree(tmp_path / "kb", {".kb-eval.yml": golden, nfd: "# A\nalpha only\n", "b.md": "# B\nbeta\n"})
    _, report = run_json(kb)
    [warning] = report["warnings"]
    assert (warning["code"], warning["line"]) == ("expected-not-in-corpus", 2)
    # The guess is spelled in escapes: both spellings look alike on screen.
    assert ascii(nfd) in warning["message"] and "other Unicode code points" in warning["message"]
    assert report["per_query"][0]["metrics"]["reciprocal_rank"] == 0.0


@pytest.mark.parametrize("name", ["a" * 252 + ".md", "é" * 126 + ".md"], ids=["ascii", "two-byte"])
def test_a_name_of_255_bytes_is_indexed(tmp_path: Path, name: str) -> None:
    assert len(name.encode("utf-8")) == 255
    kb = write_tree(tmp_path / "kb", {".kb-eval.yml": GOLDEN, "a.md": ANSWER, name: "# Long\nalpha beta\n"})
    _, report = run_json(kb)
    assert documents(report) == 2 and name in top_paths(report)


def test_a_name_that_is_not_valid_utf8_is_skipped_with_a_warning_showing_it_escaped(tmp_path: Path) -> None:
    kb = write_tree(tmp_path / "kb", {".kb-eval.yml": GOLDEN, "a.md": ANSWER})
    with open(os.path.join(os.fsencode(kb), b"caf\xe9.md"), "wb") as handle:
        handle.write(b"# Latin-1 name\nalpha beta\n")
    _, report = run_json(kb)
    assert documents(report) == 1
    assert warnings(report) == [("file-skipped", "caf\\xe9.md")]


def test_a_tree_200_folders_deep_is_indexed(deep_tree: Callable[[str, int], Path]) -> None:
    kb = deep_tree("d", 200)
    _, report = run_json(kb)
    assert documents(report) == 2 and "d/" * 200 + "deep.md" in top_paths(report)


def test_a_tree_1100_folders_deep_is_indexed_without_running_out_of_stack(
    deep_tree: Callable[[str, int], Path],
) -> None:
    # os.walk recursed per level and raised RecursionError here (exit 3) before the fix.
    kb = deep_tree("d", 1100)
    _, report = run_json(kb)
    assert documents(report) == 2 and "d/" * 1100 + "deep.md" in top_paths(report)


def test_folders_past_path_max_are_skipped_with_one_warning_naming_the_folder(
    deep_tree: Callable[[str, int], Path],
) -> None:
    name = "n" * 40
    kb = deep_tree(name, 200)  # 200 x 41 bytes: twice PATH_MAX (4096)
    _, report = run_json(kb)
    assert documents(report) == 1
    [(code, folder)] = warnings(report)
    assert code == "folder-skipped"
    assert folder is not None and folder.startswith(name + "/") and set(folder.split("/")) == {name}
    assert len(os.path.join(kb, folder).encode()) >= 4096 - 41  # the walk went as deep as the OS allows
    assert "File name too long" in report["warnings"][0]["message"]
