"""Headings as the reader sees them, a path's "did you mean", and the label keys the loader reads."""

from __future__ import annotations

from pathlib import Path

import pytest

from scanner.foundation.errors import InputError
from scanner.golden.file import load_golden
from scanner.golden.headings import closest, closest_path, reader_heading


@pytest.mark.parametrize(
    ("markdown", "seen"),
    [
        ("`virtualenvs.in-project`", "virtualenvs.in-project"),
        ("The `--no-root`   option", "the --no-root option"),
        ("**Install** and _upgrade_", "install and upgrade"),
        ("[Options](#options) for ![the CLI](cli.png)", "options for the cli"),
        (r"Why \*not\* \[this\]", "why *not* [this]"),
        ("in_project and __init__ stay", "in_project and init stay"),
        ("`__init__` in code stays", "__init__ in code stays"),
        ("See <https://example.com> <br/>now", "see https://example.com now"),
        ("ÉTÉ  Straße", "été strasse"),
        ("~~old~~ new", "old new"),
    ],
)
def test_a_heading_compares_as_the_page_shows_it(markdown: str, seen: str) -> None:
    assert reader_heading(markdown) == seen


def test_near_misses_stay_different() -> None:
    assert reader_heading("Cache Directry") != reader_heading("Cache Directory")
    assert reader_heading("in_project") != reader_heading("in-project")
    assert reader_heading("`a*b`") == "a*b"  # a star inside code is the text, not emphasis


def test_closest_headings_are_named_best_first_or_the_first_ones_when_none_is_close() -> None:
    headings = ["Install", "Cache Directory", "`cache-dir`", "Usage"]
    assert closest("Cache Directry", headings)[0] == "Cache Directory"
    assert closest("zzzz", headings) == ["Install", "Cache Directory", "`cache-dir`"]


@pytest.mark.parametrize(
    ("written", "meant"),
    [
        ("docs/cli.md", "cli.md"),  # relative to the repository, not the KB
        ("./cli.md", "cli.md"),
        ("guide/./setup.md", "guide/setup.md"),
        ("guide\\setup.md", "guide/setup.md"),
        ("CLI.md", "cli.md"),
        ("gude/setup.md", "guide/setup.md"),  # a typo
        ("cli.mdd", "cli.md"),
    ],
)
def test_a_path_close_to_one_indexed_path_gets_it_suggested(written: str, meant: str) -> None:
    assert closest_path(written, {"cli.md", "guide/setup.md", "faq.md"}) == meant


def test_a_path_close_to_none_gets_no_suggestion() -> None:
    assert closest_path("changelog.md", {"cli.md", "guide/setup.md"}) is None


def write(tmp_path: Path, expected: str) -> Path:
    golden = tmp_path / "golden.yml"
    golden.write_text(f"queries:\n  - id: q\n    query: a question\n    expected:\n{expected}", encoding="utf-8")
    return golden




def test_parent_subsections_and_any_are_read(tmp_path: Path) -> None:
    golden = load_golden(write(tmp_path, (
        "      - {path: a.md, heading: Options, parent: Install, subsections: true}\n"
        "      - any:\n          - b.md\n          - {path: c.md, heading: X}\n"
    )))
    first, group = golden.queries[0].expected
    assert (first.parent, first.subsections, first.any_of) == ("Install", True, ())
    assert [m.path for m in group.members] == ["b.md", "c.md"] and group.line == 6
    assert group.any_of[1].heading == "X"


@pytest.mark.parametrize(
    ("expected", "field", "words"),
    [
        ("      - {path: a.md, parent: Install}\n", "expected[0].parent", "needs a `heading`"),
        ("      - {path: a.md, subsections: true}\n", "expected[0].subsections", "needs a `heading`"),
        ("      - {path: a.md, heading: X, subsections: 'yes'}\n", "expected[0].subsections", "true or false"),
        ("      - any: [a.md]\n", "expected[0].any", "two or more"),
        ("      - {any: [a.md, b.md], heading: X}\n", "expected[0].heading", "belongs to one of its members"),
        ("      - any: [a.md, {any: [b.md, c.md]}]\n", "any[1].any", "unknown key 'any'"),
    ],
)
def test_a_malformed_label_is_refused_naming_its_field(tmp_path: Path, expected: str, field: str, words: str) -> None:
    with pytest.raises(InputError) as raised:
        load_golden(write(tmp_path, expected))
    assert raised.value.field is not None and raised.value.field.endswith(field), raised.value.field
    assert words in str(raised.value)
