"""The parse cache never writes outside its folder, nor through a link, and a crafted entry is a miss.

The cache folder can come from the pull request (git stores symbolic links; a cache restored from
the PR's own branch is the PR's) while the container runs as root.
"""

from __future__ import annotations

import json
import os
import sqlite3
from pathlib import Path

import pytest

import scanner.corpus.parse_cache
from scanner.corpus.parse_cache import CACHE_FILE, ParseCache
from scanner.corpus.reader import read_corpus
from scanner.foundation.diagnostics import Diagnostics
from tests.conftest import Launch, write_tree
from tests.support.action_cases import KB, clean_workspace, observe, run_entrypoint
from tests.support.container import RunnerLayout, action_inputs, pull_request_event


def kb(root: Path) -> Path:
    return write_tree(root, {"a.md": "# One\nrollback steps\n", "b.md": "# Two\nimage tags\n"})


def codes(diagnostics: Diagnostics) -> list[str]:
    return [item.code for item in diagnostics.items]


def test_links_planted_at_the_cache_file_and_its_journal_are_replaced_not_followed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    outside = tmp_path / "outside"
    outside.mkdir()
    cache_folder = tmp_path / "cache"
    cache_folder.mkdir()
    for name in (CACHE_FILE, f"{CACHE_FILE}-journal", f"{CACHE_FILE}-wal", f".{CACHE_FILE}.{os.getpid()}.tmp"):
        (cache_folder / name).symlink_to(outside / f"target-of-{name}")
    diagnostics = Diagnostics()
    read_corpus(kb(tmp_path / "kb"), (), diagnostics, workers=1, cache=ParseCache(cache_folder))
    assert list(outside.iterdir()) == []
    assert (cache_folder / CACHE_FILE).is_file() and not (cache_folder / CACHE_FILE).is_symlink()
    assert "cache-not-saved" not in codes(diagnostics)


def test_a_cache_folder_that_is_a_link_is_not_written_through(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    outside = tmp_path.parent / f"{tmp_path.name}-outside"
    outside.mkdir()
    (tmp_path / "cache").symlink_to(outside, target_is_directory=True)
    diagnostics = Diagnostics()
    read_corpus(kb(tmp_path / "kb"), (), diagnostics, workers=1, cache=ParseCache(tmp_path / "cache"))
    assert list(outside.iterdir()) == []
    assert "cache-not-saved" in codes(diagnostics)


def test_a_link_higher_up_the_cache_path_is_not_written_through(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    outside = tmp_path.parent / f"{tmp_path.name}-outside2"
    outside.mkdir()
    (tmp_path / ".cache").symlink_to(outside, target_is_directory=True)
    diagnostics = Diagnostics()
    read_corpus(kb(tmp_path / "kb"), (), diagnostics, workers=1, cache=ParseCache(tmp_path / ".cache" / "kb-eval"))
    assert list(outside.iterdir()) == []
    assert "cache-not-saved" in codes(diagnostics)


def test_a_real_cache_folder_is_created_and_filled(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    diagnostics = Diagnostics()
    cache = ParseCache(tmp_path / ".cache" / "kb-eval")
    first = read_corpus(kb(tmp_path / "kb"), (), diagnostics, workers=1, cache=cache)
    assert cache.path.is_file() and "cache-not-saved" not in codes(diagnostics)
    assert read_corpus(tmp_path / "kb", (), workers=1, cache=cache) == first
    assert [p.name for p in cache.path.parent.iterdir()] == [CACHE_FILE]  # no temporary file left


def _rewrite_payloads(cache_file: Path, payload: str) -> None:
    with sqlite3.connect(cache_file) as connection:
        connection.execute("UPDATE documents SET payload = ?", (payload,))
    connection.close()


@pytest.mark.parametrize(
    "payload",
    ["[" * 100_000 + "]" * 100_000, json.dumps(["t", 1, [], []]) + " " * 2000],
    ids=["nested 100,000 deep", "longer than the cap"],
)
def test_a_crafted_cache_entry_is_a_miss_not_a_crash(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, payload: str
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(scanner.corpus.parse_cache, "MAX_PAYLOAD_CHARS", 1000)
    cache = ParseCache(tmp_path / "cache")
    clean = read_corpus(kb(tmp_path / "kb"), (), workers=1, cache=cache)
    _rewrite_payloads(cache.path, payload)
    assert read_corpus(tmp_path / "kb", (), workers=1, cache=cache) == clean


def test_the_action_hands_the_cache_folder_and_file_to_the_workspace_owner(launch: Launch, tmp_path: Path) -> None:
    if os.geteuid() != 0:
        pytest.skip("chown to another user needs root (the container runs as root)")
    layout = RunnerLayout(tmp_path)
    layout.write_event(pull_request_event())
    clean_workspace(layout.workspace)
    os.chown(layout.workspace, 1001, 127)  # the runner user owns the checkout on GitHub
    observed = observe(run_entrypoint(launch, layout, action_inputs({"kb-path": KB, "cache-dir": ".cache/kb-eval"})))
    assert observed.returncode == 0
    for path in (".cache", ".cache/kb-eval", f".cache/kb-eval/{CACHE_FILE}"):
        status = os.lstat(layout.workspace / path)
        assert (status.st_uid, status.st_gid) == (1001, 127), path
