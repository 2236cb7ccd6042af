"""A parse-cache entry proves itself or is not used.

The cache folder is the pull request's input (restored from its own branch, or committed into
the workspace), so an entry is used only when it stands for exactly the bytes of the file it is
looked up for, within every cap that file would meet. Anything else is a miss: the file is parsed,
the run goes on, and one warning (however many entries) says the cache was not used for them.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

import scanner.corpus.reader
from scanner.corpus.parse_cache import Lookup, ParseCache, lookup, payload_bound
from scanner.corpus.reader import read_corpus
from scanner.foundation.diagnostics import Diagnostics
from tests.conftest import write_tree
from tests.hostile.bounded import in_capped_child

FILES = {"a.md": "# One\nrollback steps\n## Sub\nimage tags\n", "b.md": "---\ntitle: Two notes\n---\ntext\n"}


def _entries(cache_file: Path) -> dict[str, str]:
    with sqlite3.connect(cache_file) as connection:
        rows = dict(connection.execute("SELECT key, payload FROM documents"))
    connection.close()
    return rows


def _plant(cache_file: Path, payloads: dict[str, str]) -> None:
    with sqlite3.connect(cache_file) as connection:
        connection.executemany("UPDATE documents SET payload = ? WHERE key = ?", [(p, k) for k, p in payloads.items()])
    connection.close()


def _edit(payload: str, change: str) -> str:
    title, title_line, chunks, warnings = json.loads(payload)
    heading, parts, body, start, end, heading_line, body_start, lines = chunks[0]
    if change == "title":
        title = "Planted"
    elif change == "body":
        body = "text the file does not hold"
    elif change == "lone surrogate":
        body = body + "\ud800"
    elif change == "NUL":
        heading = heading + "\x00"
    elif change == "huge section count":
        chunks = [[heading, parts, "", start, end, heading_line, body_start, lines]] * 50_000
    elif change == "warning":
        warnings = [["file-skipped", "a message the entry wrote", 1]]
    elif change == "line past the file":
        end = 10_000
    elif change == "breadcrumb":
        parts = ["Planted"]
    if change != "huge section count":
        chunks[0] = [heading, parts, body, start, end, heading_line, body_start, lines]
    return json.dumps([title, title_line, chunks, warnings])  # a lone surrogate as JSON spells it: \\ud800


@pytest.fixture
def parse_calls(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    calls: list[str] = []
    real = scanner.corpus.reader._parse

    def counting(relative: str, data: bytes, diagnostics: Diagnostics):  # type: ignore[no-untyped-def]
        calls.append(relative)
        return real(relative, data, diagnostics)

    monkeypatch.setattr(scanner.corpus.reader, "_parse", counting)
    return calls


@pytest.mark.parametrize(
    "change",
    ["title", "body", "lone surrogate", "NUL", "huge section count", "warning", "line past the file", "breadcrumb"],
)
def test_an_entry_that_is_not_the_files_is_a_miss_with_one_warning(
    tmp_path: Path, parse_calls: list[str], change: str
) -> None:
    root, cache = write_tree(tmp_path / "kb", FILES), ParseCache(tmp_path / "cache")
    clean = read_corpus(root, (), workers=1, cache=cache)
    _plant(cache.path, {key: _edit(payload, change) for key, payload in _entries(cache.path).items()})
    parse_calls.clear()
    diagnostics = Diagnostics()
    again = in_capped_child(lambda: (read_corpus(root, (), diagnostics, workers=1, cache=cache), diagnostics, list(parse_calls)), limit_mib=1024)
    corpus, seen, parsed = again
    assert corpus == clean
    assert sorted(parsed) == ["a.md", "b.md"]
    assert [w.code for w in seen.items] == ["cache-ignored"]  # one warning for both entries
    assert "2 parse-cache entries" in seen.items[0].message


def test_an_entry_made_from_the_same_bytes_is_used(tmp_path: Path, parse_calls: list[str]) -> None:
    # The near miss: the entries kb-eval wrote (a frontmatter title, nested headings) prove themselves.
    root, cache = write_tree(tmp_path / "kb", FILES), ParseCache(tmp_path / "cache")
    clean = read_corpus(root, (), workers=1, cache=cache)
    parse_calls.clear()
    diagnostics = Diagnostics()
    assert read_corpus(root, (), diagnostics, workers=1, cache=cache) == clean
    assert parse_calls == [] and diagnostics.items == []


def test_an_entry_longer_than_its_file_could_make_is_refused_before_it_is_read(tmp_path: Path) -> None:
    # 1.4 million sections for a 33-byte note were 608 MB once parsed (300,000 here, ~8 MB of entry);
    # the length is checked in SQLite, before the row is read.
    root, cache = write_tree(tmp_path / "kb", {"a.md": "# One\nrollback steps for a note\n"}), ParseCache(tmp_path / "cache")
    read_corpus(root, (), workers=1, cache=cache)
    (key, payload), = _entries(cache.path).items()
    title, title_line, chunks, warnings = json.loads(payload)
    _plant(cache.path, {key: json.dumps([title, title_line, chunks * 300_000, warnings])})
    diagnostics = Diagnostics()
    # Refused by its length, in SQLite: the row's text is never handed to the JSON parser.
    data = (root / "a.md").read_bytes()
    connection = cache.open_for_reading()
    assert connection is not None
    assert lookup(connection, key, data) is Lookup.REFUSED and payload_bound(data) < 100_000
    connection.close()
    corpus = in_capped_child(lambda: read_corpus(root, (), diagnostics, workers=1, cache=cache), limit_mib=512, deadline=120)
    assert len(corpus.documents[0].chunks) == 1
