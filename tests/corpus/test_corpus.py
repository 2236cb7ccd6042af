"""Walking the KB: what is indexed, what is skipped, and that every skip is said."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from scanner.corpus.kb_files import MAX_DOCUMENT_BYTES, compile_excludes
from scanner.corpus.parse_memo import ParseMemo, Remembered, blob_id, memo_key
from scanner.corpus.reader import read_corpus, read_given
from scanner.foundation.diagnostics import Diagnostics
from tests.conftest import write_tree


def paths(root: Path, exclude: tuple[str, ...] = ()) -> tuple[list[str], Diagnostics]:
    diagnostics = Diagnostics()
    corpus = read_corpus(root, exclude, diagnostics)
    return [d.path for d in corpus.documents], diagnostics


def test_markdown_and_text_files_are_indexed_recursively_with_slash_paths(tmp_path: Path) -> None:
    write_tree(tmp_path, {"a.md": "x", "b/c.markdown": "x", "b/d/e.txt": "x", "f.rst": "x", "g.MD": "x"})
    assert paths(tmp_path)[0] == ["a.md", "b/c.markdown", "b/d/e.txt", "g.MD"]


def test_dot_folders_are_skipped(tmp_path: Path) -> None:
    write_tree(tmp_path, {".git/x.md": "x", ".github/y.md": "x", "notes/.obsidian/z.md": "x", "ok.md": "x"})
    assert paths(tmp_path)[0] == ["ok.md"]


def test_excludes_match_names_at_any_depth_and_anchored_paths_from_the_root(tmp_path: Path) -> None:
    write_tree(tmp_path, {"drafts/a.md": "x", "x/drafts/b.md": "x", "keep/c.md": "x", "keep/d.tmp.md": "x"})
    assert paths(tmp_path, ("drafts", "*.tmp.md"))[0] == ["keep/c.md"]
    assert paths(tmp_path, ("x/drafts",))[0] == ["drafts/a.md", "keep/c.md", "keep/d.tmp.md"]
    assert paths(tmp_path, ("**/b.md",))[0] == ["drafts/a.md", "keep/c.md", "keep/d.tmp.md"]


def test_a_star_does_not_cross_folders() -> None:
    pattern = compile_excludes(["a/*.md"])
    assert pattern is not None
    assert pattern.fullmatch("a/x.md") and not pattern.fullmatch("a/b/x.md")


def test_symlinks_out_of_the_kb_are_not_followed_and_are_reported(tmp_path: Path) -> None:
    outside = write_tree(tmp_path / "outside", {"secret.md": "secret text"})
    kb = write_tree(tmp_path / "kb", {"inside.md": "x"})
    (kb / "leak.md").symlink_to(outside / "secret.md")
    (kb / "leakdir").symlink_to(outside)
    found, diagnostics = paths(kb)
    assert found == ["inside.md"]
    assert {(w.code, w.file) for w in diagnostics.items} == {("symlink-skipped", "leak.md"), ("symlink-skipped", "leakdir")}


def test_a_symlink_to_a_file_inside_the_kb_is_indexed_under_its_own_name(tmp_path: Path) -> None:
    kb = write_tree(tmp_path, {"real.md": "x"})
    (kb / "alias.md").symlink_to(kb / "real.md")
    assert paths(kb)[0] == ["alias.md", "real.md"]


def test_unreadable_content_is_skipped_with_a_warning_naming_the_file(tmp_path: Path) -> None:
    write_tree(tmp_path, {"latin1.md": b"caf\xe9", "nul.md": b"a\x00b", "ok.md": "fine"})
    with open(tmp_path / "big.md", "wb") as handle:
        handle.truncate(MAX_DOCUMENT_BYTES + 1)
    os.mkfifo(tmp_path / "pipe.md")
    found, diagnostics = paths(tmp_path)
    assert found == ["ok.md"]
    reasons = {w.file: w.message for w in diagnostics.items}
    assert set(reasons) == {"latin1.md", "nul.md", "big.md", "pipe.md"}
    assert "UTF-8" in reasons["latin1.md"] and "NUL" in reasons["nul.md"]
    assert "-byte cap" in reasons["big.md"] and "regular file" in reasons["pipe.md"]
    assert all(w.code == "file-skipped" for w in diagnostics.items)


def test_a_file_exactly_at_the_size_cap_is_still_indexed(tmp_path: Path) -> None:
    (tmp_path / "edge.md").write_bytes(b"a" * MAX_DOCUMENT_BYTES)
    assert paths(tmp_path)[0] == ["edge.md"]


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads files whatever their mode")
def test_an_unreadable_file_is_skipped_with_a_warning(tmp_path: Path) -> None:
    write_tree(tmp_path, {"locked.md": "x"})
    (tmp_path / "locked.md").chmod(0)
    found, diagnostics = paths(tmp_path)
    assert found == [] and diagnostics.items[0].file == "locked.md"


def test_parallel_reading_gives_the_same_documents_and_warnings_in_the_same_order(tmp_path: Path) -> None:
    files: dict[str, str | bytes] = {
        f"d{n % 7}/note-{n:04d}.md": f"---\ntitle: Note {n}\n---\n# Part {n}\ntext {n}\n## Sub\nmore" for n in range(600)
    }
    files.update({f"bad-{n}.md": b"\xff" for n in range(5)})
    files["broken.md"] = "---\ntitle: [\n---\nx"
    write_tree(tmp_path, files)
    one, many = Diagnostics(), Diagnostics()
    serial = read_corpus(tmp_path, (), one, workers=1)
    parallel = read_corpus(tmp_path, (), many, workers=2)
    assert len(serial.documents) == 601
    assert serial == parallel
    assert one.items == many.items and len(one.items) == 6


def test_with_a_memo_workers_send_the_same_documents_and_the_memo_holds_each_files_key(tmp_path: Path) -> None:
    files: dict[str, str | bytes] = {
        f"d{n % 7}/note-{n:04d}.md": f"---\ntitle: Note {n}\n---\n# Part {n}\ntext {n}\n## Sub\nmore" for n in range(600)
    }
    files["broken.md"] = "---\ntitle: [\n---\nx"
    write_tree(tmp_path, files)
    plain = read_corpus(tmp_path, (), Diagnostics(), workers=2)
    for workers in (1, 2):
        memo = ParseMemo()
        assert read_corpus(tmp_path, (), Diagnostics(), workers=workers, memo=memo) == plain
        # Every document read without a warning, under its path and bytes (a document with a
        # warning is not remembered: its messages would be the memo's words).
        expected = {
            memo_key(path, blob_id(text.encode() if isinstance(text, str) else text))
            for path, text in files.items() if path != "broken.md"
        }
        assert set(memo.entries) == expected
        # What the base needs of each: its size and section count, not the document.
        for d in plain.documents:
            if d.path != "broken.md":
                data = (tmp_path / d.path).read_bytes()
                assert memo.entries[memo_key(d.path, blob_id(data))] == Remembered(len(data), len(d.chunks))
                assert memo.sizes[blob_id(data)] == len(data)


def test_the_per_kb_caps_hold_for_files_another_reader_chose(tmp_path: Path) -> None:
    # A git revision's tree (scanner.git.tree) comes in as a source: the same caps as the walk.
    from scanner.corpus import reader as corpus
    from scanner.foundation.errors import InputError

    caps = corpus.CorpusCaps(files=2)
    two = [("a.md", b"# A\n"), ("b.md", b"# B\n")]
    assert len(list(corpus.read_given(tmp_path, iter(two), caps=caps))) == 2  # at the cap: read
    with pytest.raises(InputError, match="more than 2 indexable files"):
        list(corpus.read_given(tmp_path, iter([*two, ("c.md", b"# C\n")]), caps=caps))
    one_mib = [("a.md", b"a" * (2**20 // 2)), ("b.md", b"b" * (2**20 // 2))]
    assert len(list(corpus.read_given(tmp_path, iter(one_mib), caps=corpus.CorpusCaps(mib=1)))) == 2
    with pytest.raises(InputError, match="more than 1 MiB"):
        list(corpus.read_given(tmp_path, iter([*one_mib, ("c.md", b"c")]), caps=corpus.CorpusCaps(mib=1)))
    # A file the head's read holds counts as it was read there (its size, its sections), unread.
    held: list[tuple[str, bytes | Remembered]] = [("a.md", Remembered(2**20 // 2, 3)), one_mib[1]]
    assert len(list(corpus.read_given(tmp_path, iter(held), caps=corpus.CorpusCaps(mib=1)))) == 2
    with pytest.raises(InputError, match="more than 1 MiB"):
        list(corpus.read_given(tmp_path, iter([*held, ("c.md", b"c")]), caps=corpus.CorpusCaps(mib=1)))
    with pytest.raises(InputError, match="more than 3 sections"):
        list(corpus.read_given(tmp_path, iter(held), caps=corpus.CorpusCaps(sections=3)))


def test_files_another_reader_chose_are_read_in_path_order_and_the_folder_is_not_walked(tmp_path: Path) -> None:
    (tmp_path / "on-disk.md").write_text("# On disk\n")
    given = [("z.md", b"# Z\n"), ("a.md", b"# A\n")]
    assert [d.path for d in read_given(tmp_path, iter(given))] == ["a.md", "z.md"]
    # The near miss: the folder's own reader finds the file the given ones do not name.
    assert [d.path for d in read_corpus(tmp_path).documents] == ["on-disk.md"]


def test_files_given_in_path_order_are_parsed_as_they_come_and_none_is_held(tmp_path: Path) -> None:
    taken: list[str] = []

    def given() -> Iterator[tuple[str, bytes]]:
        for name in ("a.md", "b.md", "c.md"):
            taken.append(name)
            yield name, f"# {name}\n".encode()

    streamed = read_given(tmp_path, given(), in_path_order=True)
    assert next(streamed).path == "a.md" and taken == ["a.md"]  # the first before the second is read
    assert [d.path for d in streamed] == ["b.md", "c.md"]
    # The near miss: in another reader's order, every file is parsed before the first comes out.
    taken.clear()
    assert next(read_given(tmp_path, given())).path == "a.md" and taken == ["a.md", "b.md", "c.md"]
