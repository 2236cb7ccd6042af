"""A parse-cache entry proves itself or is not used.

The cache folder is the pull request's input (restored from its own branch, or committed into
the workspace), so an entry is used only when it stands for exactly the bytes of the file it is
looked up for, within every cap that file would meet. Anything else is a miss: the file is parsed,
the run goes on, and one warning (however many entries) says the cache was not used for them.
"""

from __future__ import annotations

import dataclasses
import json
import sqlite3
from pathlib import Path

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

import scanner.corpus.reader
from scanner.corpus.markdown import split_lines
from scanner.corpus.parse_cache import Lookup, ParseCache, Proof, lookup, pack, payload_bound, proves_itself, unpack
from scanner.corpus.reader import build_document, read_corpus
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


QUOTING = {
    "notes.md": "# Notes\nintro\n## Quoted\nthe first golden query\nthe second golden query\n## After\ntext\n",
    "guide.md": "# Guide\n## Install\nrun the installer\n## Upgrade\nupgrade the cluster\n",
}


def _chunks_of(payload: str) -> tuple[list[object], list[list[object]]]:
    title, title_line, chunks, warnings = json.loads(payload)
    return [title, title_line, warnings], chunks


def _without_quoting_lines(payload: str) -> str:
    """The `Quoted` section cut before its two lines: they are in no section at all."""
    (title, title_line, warnings), chunks = _chunks_of(payload)
    for chunk in chunks:
        if chunk[0] == "Quoted":
            chunk[2], chunk[4] = "", chunk[3]  # empty body, ends on its heading line
    return json.dumps([title, title_line, chunks, warnings])


def _install_over_upgrade(payload: str) -> str:
    """`## Install` stretched over the next section's lines, which are then no section of their own."""
    (title, title_line, warnings), chunks = _chunks_of(payload)
    install = next((c for c in chunks if c[0] == "Install"), None)
    upgrade = next((c for c in chunks if c[0] == "Upgrade"), None)
    if install is None or upgrade is None:
        return payload
    install[2] = install[2] + "\n## Upgrade\n" + upgrade[2]
    install[4] = upgrade[4]
    chunks.remove(upgrade)
    return json.dumps([title, title_line, chunks, warnings])


@pytest.mark.parametrize("plant", [_without_quoting_lines, _install_over_upgrade], ids=["dropped-lines", "extended-section"])
def test_an_entry_whose_sections_are_not_the_parsers_cut_is_parsed_again_with_a_warning(
    tmp_path: Path, parse_calls: list[str], plant: object
) -> None:
    # Each entry holds only text of its own file, in order, and the right title: every check of
    # the bytes passes. Only the cut differs (a finding vanished, MRR rose from 0.667 to 1.0).
    root, cache = write_tree(tmp_path / "kb", QUOTING), ParseCache(tmp_path / "cache")
    clean = read_corpus(root, (), workers=1, cache=cache)
    assert callable(plant)
    clean_entries = list(_entries(cache.path).values())
    _plant(cache.path, {key: plant(payload) for key, payload in _entries(cache.path).items()})
    assert sum(a != b for a, b in zip(_entries(cache.path).values(), clean_entries, strict=True)) == 1
    parse_calls.clear()
    diagnostics = Diagnostics()
    assert read_corpus(root, (), diagnostics, workers=1, cache=cache) == clean
    planted = "notes.md" if plant is _without_quoting_lines else "guide.md"
    assert planted in parse_calls
    assert [w.code for w in diagnostics.items] == ["cache-ignored"]


FENCED_AND_SETEXT = {
    "fenced.md": "# Shell\n```sh\n# not a heading\n---\n```\n## Next\n~~~\n## inside\n~~~\ntext\n",
    "setext.md": "Title\n=====\nbody\n\nPart\n----\nmore\n",
    "front.md": "---\ntitle: A front title\n---\n\n# Head\ntext\n",
    "blank.md": "---\ntitle: Only a title\n---\n\n",
}


def test_kb_evals_own_entries_for_fences_and_frontmatter_are_used_without_a_parse(
    tmp_path: Path, parse_calls: list[str]
) -> None:
    # The near miss of the same kind: heading-like lines inside fences are not cuts, and the
    # entry that knows it is used as it is; a setext heading is decided by parsing, silently.
    root, cache = write_tree(tmp_path / "kb", FENCED_AND_SETEXT), ParseCache(tmp_path / "cache")
    clean = read_corpus(root, (), workers=1, cache=cache)
    parse_calls.clear()
    diagnostics = Diagnostics()
    assert read_corpus(root, (), diagnostics, workers=1, cache=cache) == clean
    assert parse_calls == ["setext.md"] and diagnostics.items == []


_LINES = st.sampled_from(
    ["# A", "## B", "### C #", "text", "", "   ", "---", "===", "```", "~~~", "````", "``` x`y", "    # code",
     "- item", "> quote", "title: T", "...", "# ", "####### seven", "\t# tab"]
)


@settings(max_examples=300, deadline=None)
@given(st.lists(_LINES, max_size=25), st.sampled_from(["\n", "\r\n", "\r"]))
def test_kb_evals_own_entry_for_any_lines_is_never_refused_and_a_proven_one_is_the_parse(
    lines: list[str], newline: str
) -> None:
    data = newline.join(lines).encode()
    diagnostics = Diagnostics()
    document = build_document("n.md", data.decode(), diagnostics)
    unpacked = unpack("n.md", pack(document, diagnostics.items))
    assert unpacked is not None and unpacked[0] == document
    proof = proves_itself("n.md", data, *unpacked)
    # Refused only when the parse warned (such a document is never cached), so kb-eval's own
    # entries never raise `cache-ignored`.
    assert (proof is Proof.REFUSED) == bool(diagnostics.items)


@settings(max_examples=300, deadline=None)
@given(st.lists(_LINES, min_size=1, max_size=25), st.data())
def test_an_entry_with_one_cut_moved_is_never_proven(lines: list[str], data: st.DataObject) -> None:
    text = "\n".join(lines)
    diagnostics = Diagnostics()
    document = build_document("n.md", text, diagnostics)
    chunks = list(document.chunks)
    assume(chunks and not diagnostics.items)
    n = data.draw(st.integers(0, len(chunks) - 1))
    shift = data.draw(st.sampled_from([-1, 1]))
    chunk = chunks[n]
    end = chunk.end_line + shift
    assume(chunk.body_start_line - 1 <= end <= len(split_lines(text)))
    source = split_lines(text)
    chunks[n] = dataclasses.replace(chunk, end_line=end, body="\n".join(source[chunk.body_start_line - 1 : end]))
    forged = dataclasses.replace(document, chunks=tuple(chunks))
    assert proves_itself("n.md", text.encode(), forged, []) is not Proof.PROVEN
