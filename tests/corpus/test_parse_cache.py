"""The parse cache: an unchanged file is not parsed again, and a bad cache never changes the answer."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

import scanner.corpus.reader
from scanner.corpus.parse_cache import CACHE_FILE, ParseCache
from scanner.corpus.reader import read_corpus
from scanner.foundation.diagnostics import Diagnostics
from tests.conftest import golden_yaml, run_cli, write_tree


@pytest.fixture
def parse_calls(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    calls: list[str] = []
    original = scanner.corpus.reader.build_document

    def counting(relative, text, diagnostics):  # type: ignore[no-untyped-def]
        calls.append(relative)
        return original(relative, text, diagnostics)

    monkeypatch.setattr(scanner.corpus.reader, "build_document", counting)
    return calls


def kb(root: Path) -> Path:
    return write_tree(root, {
        "a.md": "---\ntitle: Alpha\n---\n# One\nrollback steps\n## Two\nmore",
        "b.md": "---\ntitle: [broken\n---\n# Beta\ncontainer image tags",
        "c.md": "plain text only",
    })


def test_a_second_run_parses_only_the_files_that_changed_and_reads_the_same_corpus(tmp_path: Path, parse_calls: list[str]) -> None:
    root, cache = kb(tmp_path / "kb"), ParseCache(tmp_path / "cache")
    first_warnings, second_warnings = Diagnostics(), Diagnostics()
    first = read_corpus(root, (), first_warnings, workers=1, cache=cache)
    assert sorted(parse_calls) == ["a.md", "b.md", "c.md"]
    parse_calls.clear()
    (root / "c.md").write_text("plain text, edited", encoding="utf-8")
    second = read_corpus(root, (), second_warnings, workers=1, cache=cache)
    # b.md has a warning: a document with warnings is not cached (an entry's messages would be
    # the entry's words), so it is parsed every run.
    assert parse_calls == ["b.md", "c.md"]
    assert second.documents[:2] == first.documents[:2]
    assert second.documents[2].chunks[0].body == "plain text, edited"
    # The frontmatter warning of b.md is the parse's own, as in the first run.
    assert [(w.code, w.file) for w in second_warnings.items] == [(w.code, w.file) for w in first_warnings.items] == [("frontmatter-invalid", "b.md")]


def test_a_renamed_file_is_parsed_again_because_its_title_and_paths_depend_on_the_name(tmp_path: Path, parse_calls: list[str]) -> None:
    root, cache = write_tree(tmp_path / "kb", {"old-name.md": "# H\nx"}), ParseCache(tmp_path / "cache")
    read_corpus(root, (), workers=1, cache=cache)
    (root / "old-name.md").rename(root / "new-name.md")
    parse_calls.clear()
    corpus = read_corpus(root, (), workers=1, cache=cache)
    assert parse_calls == ["new-name.md"] and corpus.documents[0].chunks[0].breadcrumb == "new-name"


@pytest.mark.parametrize("damage", ["garbage", "wrong shape", "other version"])
def test_a_damaged_or_foreign_cache_is_a_miss_never_a_wrong_document(tmp_path: Path, parse_calls: list[str], damage: str) -> None:
    root, cache = kb(tmp_path / "kb"), ParseCache(tmp_path / "cache")
    clean = read_corpus(root, (), workers=1, cache=cache)
    path = tmp_path / "cache" / CACHE_FILE
    if damage == "garbage":
        path.write_bytes(b"not a database at all")
    else:
        with sqlite3.connect(path) as connection:
            if damage == "wrong shape":
                connection.execute("UPDATE documents SET payload = ?", (json.dumps(["t", 0, [["x"]], []]),))
            else:
                connection.execute("UPDATE meta SET value = 'old'")
        connection.close()
    parse_calls.clear()
    warnings = Diagnostics()
    again = read_corpus(root, (), warnings, workers=1, cache=cache)
    assert again == clean
    assert sorted(parse_calls) == ["a.md", "b.md", "c.md"]


def test_the_cli_report_is_the_same_with_and_without_the_cache(tmp_path: Path) -> None:
    root = kb(tmp_path / "kb")
    (root / ".kb-eval.yml").write_text(golden_yaml(("q", "rollback steps", ["a.md"])), encoding="utf-8")
    plain = run_cli("--kb-path", root, "--no-history", "--format", "json").json()
    cold = run_cli("--kb-path", root, "--no-history", "--format", "json", "--cache-dir", tmp_path / "c").json()
    warm = run_cli("--kb-path", root, "--no-history", "--format", "json", "--cache-dir", tmp_path / "c").json()
    drop = lambda r: {k: v for k, v in r.items() if k != "timestamp"}
    assert drop(plain) == drop(cold) == drop(warm)


def test_parallel_workers_read_and_fill_the_cache_like_one_process(tmp_path: Path) -> None:
    root = write_tree(tmp_path / "kb", {f"n{i:03d}.md": f"---\ntitle: T{i}\n---\n# H{i}\nbody {i}" for i in range(520)})
    cache = ParseCache(tmp_path / "cache")
    serial = read_corpus(root, (), workers=1)
    cold = read_corpus(root, (), workers=2, cache=cache)
    warm = read_corpus(root, (), workers=2, cache=cache)
    assert serial == cold == warm


def test_a_cache_file_with_extra_schema_objects_is_not_opened(tmp_path: Path, parse_calls: list[str]) -> None:
    root, cache = kb(tmp_path / "kb"), ParseCache(tmp_path / "cache")
    read_corpus(root, (), workers=1, cache=cache)
    with sqlite3.connect(tmp_path / "cache" / CACHE_FILE) as connection:
        connection.execute("CREATE VIEW sneaky AS SELECT 1")
    connection.close()
    assert cache.open_for_reading() is None
    parse_calls.clear()
    read_corpus(root, (), workers=1, cache=cache)
    assert sorted(parse_calls) == ["a.md", "b.md", "c.md"]
    assert cache.open_for_reading() is not None  # the run rewrote a clean cache
