"""Listing a KB folder costs one listing per folder and one stat per file (its size, for the byte
cap): whether an entry is a symbolic link comes from the listing, and a file's path under the KB
from the walk, so neither an lstat nor a relpath is spent per file or folder."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from scanner.corpus import reader
from scanner.corpus.reader import CorpusCaps, read_corpus
from scanner.foundation.diagnostics import Diagnostics


def counted(monkeypatch: pytest.MonkeyPatch, calls: dict[str, int], module: Any, name: str) -> None:
    original: Callable[..., Any] = getattr(module, name)

    def counting(*args: Any, **kwargs: Any) -> Any:
        calls[name] += 1
        return original(*args, **kwargs)

    monkeypatch.setattr(module, name, counting)


def write_kb(root: Path, count: int) -> Path:
    """`count` notes in 30 folders, a link to a note inside the KB, one to a file outside, one to a folder."""
    kb = root / "kb"
    for n in range(count):
        folder = kb / f"f{n % 10}" / f"g{n % 3}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"note-{n}.md").write_text(f"# Note {n}\n", encoding="utf-8")
    (root / "outside.md").write_text("# Outside\n", encoding="utf-8")
    (kb / "inside-link.md").symlink_to(kb / "f0" / "g0" / "note-0.md")
    (kb / "outside-link.md").symlink_to(root / "outside.md")
    (kb / "folder-link").symlink_to(kb / "f1", target_is_directory=True)
    return kb


def test_listing_a_kb_spends_no_lstat_or_relpath_per_file_or_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    spent = []
    for count in (10, 1000):
        kb = write_kb(tmp_path / str(count), count)
        calls = {"lstat": 0, "relpath": 0, "stat": 0}
        counted(monkeypatch, calls, os, "lstat")
        counted(monkeypatch, calls, os, "stat")
        counted(monkeypatch, calls, os.path, "relpath")
        diagnostics = Diagnostics()
        files = reader._files_within_caps(kb, (), diagnostics, CorpusCaps())
        monkeypatch.undo()
        # Every note and the link inside the KB; the link out of it and the folder link skipped.
        assert len(files) == count + 1 and ("inside-link.md", str(kb / "inside-link.md")) in files
        assert sorted(d.file for d in diagnostics.items) == ["folder-link", "outside-link.md"]
        assert calls["relpath"] == 0
        assert calls["stat"] == len(files)  # the byte cap's sizes
        spent.append(calls["lstat"])
        # The documents read from that listing are the ones the walk kept.
        assert len(read_corpus(kb, (), Diagnostics(), workers=1).documents) == count + 1
    # Only the root and the two file links are looked at again (os.path.realpath's lstat of each
    # part of their paths): as many at 10 files as at 1,000.
    assert spent[0] == spent[1] > 0
