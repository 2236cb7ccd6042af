"""Headings as the reader sees them, a path's "did you mean", and the label keys the loader reads."""

from __future__ import annotations

from pathlib import Path

import pytest

from scanner.foundation.errors import InputError
from scanner.golden.file import ExpectedEntry, GoldenQuery, GoldenSet, load_golden
from scanner.golden.headings import PathGuesser, closest, reader_heading
from scanner.golden.labels import SectionInfo, check_headings
from tests.support.counting import CallCounter


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
    assert PathGuesser({"cli.md", "guide/setup.md", "faq.md"}).guess(written) == meant


def test_a_page_named_without_its_folder_is_found_by_its_name_when_only_one_page_has_it() -> None:
    guesser = PathGuesser({"reference/images.md", "reference/tables.md", "setup/index.md", "blog/index.md"})
    assert guesser.guess("images.md") == "reference/images.md"
    assert guesser.guess("guides/Images.md") == "reference/images.md"
    # The near miss: two pages share the name, and neither is guessed.
    assert guesser.guess("index.md") is None


def test_a_path_close_to_none_gets_no_suggestion() -> None:
    assert PathGuesser({"cli.md", "guide/setup.md"}).guess("changelog.md") is None


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


def test_a_group_carries_one_grade_for_the_answer_it_is(tmp_path: Path) -> None:
    graded = load_golden(write(tmp_path, "      - any: [a.md, b.md]\n        grade: 3\n")).queries[0].expected[0]
    assert graded.grade == 3 and [m.path for m in graded.members] == ["a.md", "b.md"]
    plain = load_golden(write(tmp_path, "      - any: [a.md, b.md]\n")).queries[0].expected[0]
    assert plain.grade == 1


@pytest.mark.parametrize(
    ("expected", "field", "words"),
    [
        ("      - {path: a.md, parent: Install}\n", "expected[0].parent", "needs a `heading`"),
        ("      - {path: a.md, subsections: true}\n", "expected[0].subsections", "needs a `heading`"),
        ("      - {path: a.md, heading: X, subsections: 'yes'}\n", "expected[0].subsections", "true or false"),
        ("      - any: [a.md]\n", "expected[0].any", "two or more"),
        ("      - {any: [a.md, b.md], heading: X}\n", "expected[0].heading", "belongs to one of its members"),
        ("      - any: [a.md, {any: [b.md, c.md]}]\n", "any[1].any", "unknown key 'any'"),
        ("      - any: [a.md, {path: b.md, grade: 2}]\n", "any[1].grade", "unknown key 'grade'"),
        ("      - {any: [a.md, b.md], grade: 2.5}\n", "expected[0].grade", "whole number"),
    ],
)
def test_a_malformed_label_is_refused_naming_its_field(tmp_path: Path, expected: str, field: str, words: str) -> None:
    with pytest.raises(InputError) as raised:
        load_golden(write(tmp_path, expected))
    assert raised.value.field is not None and raised.value.field.endswith(field), raised.value.field
    assert words in str(raised.value)


def _golden(entries: list[ExpectedEntry]) -> GoldenSet:
    queries = tuple(GoldenQuery(f"q{n}", "a question", (e,), (), e.line) for n, e in enumerate(entries))
    return GoldenSet("golden.yml", "0" * 64, queries, None)


def test_checking_many_labels_against_a_long_document_costs_their_sum_not_their_product(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """10,000 wrong headings against one 2,000-section document: each section's heading is brought
    to the reader's form once, not once per label (that product took 571 s)."""
    from scanner.golden import labels

    counter = CallCounter(monkeypatch, labels, "reader_heading")
    document = [SectionInfo(f"Section `{i}`", ("Top",)) for i in range(2_000)]
    wrong = [ExpectedEntry("d.md", f"Wrong {i}", i + 1, parent="Top" if i % 2 else None) for i in range(10_000)]
    warnings = check_headings(_golden(wrong), {"d.md": document})
    assert len(warnings) == 10_000
    assert counter.calls <= 2 * 2 * len(document) + 2 * len(wrong)
    assert "closest headings there" in warnings[0].message
    assert "closest headings there" not in warnings[-1].message and "it has 2000 headings" in warnings[-1].message


def test_a_heading_of_a_megabyte_is_named_cut_in_the_warning() -> None:
    document = [SectionInfo("H" * 1_000_000 + "x", ())]
    [warning] = check_headings(_golden([ExpectedEntry("d.md", "H" * 500_000, 1)]), {"d.md": document})
    assert len(warning.message) < 1_000 and "…" in warning.message
    [near] = check_headings(_golden([ExpectedEntry("d.md", "Setup", 1)]), {"d.md": [SectionInfo("Set up", ())]})
    assert "'Setup'" in near.message and "'Set up'" in near.message  # short headings are named whole
