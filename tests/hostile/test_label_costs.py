"""What the label checks cost is linear in what is read, whatever the strings are made of: counted.

A mistyped `heading:` names the closest headings of its document, a mistyped `path:` the indexed
path it most likely meant. Each guess reads the strings once (golden/similarity.py), and one
check's guesses share one budget of characters. Counted in steps (tests/support/counting.py) on
a small and a large input, and against the near miss of the same size made of ordinary words:
with difflib, 1,500 headings of two-letter words took 86 s where words took 6 s.
"""

from __future__ import annotations

import random
from collections.abc import Callable

import pytest

import scanner.golden.similarity
from scanner.golden.file import ExpectedEntry, GoldenQuery, GoldenSet
from scanner.golden.labels import SectionInfo, check_headings, check_paths
from scanner.golden.similarity import Guesses
from tests.support.counting import steps

SMALL = 30
"""Headings (or paths) of the small input; the large one has GROWTH times as many."""
GROWTH = 4
LINEAR = GROWTH * 1.5
SAME_SIZE = 2.0
"""Steps of the two-letter input over those of the word input of the same size: equal work per
character read counts about 1; difflib's shape-dependent ratio counted tens."""
CHARS = 200


def _two_letter(rng: random.Random) -> str:
    return " ".join(rng.choice(["ab", "ba", "aa", "bb"]) for _ in range(CHARS // 3))[:CHARS]


def _words(rng: random.Random) -> str:
    words = ["install", "upgrade", "cluster", "network", "storage", "rollback", "release", "secrets"]
    return " ".join(rng.choice(words) for _ in range(CHARS // 6))[:CHARS]


def _golden(entries: list[ExpectedEntry]) -> GoldenSet:
    return GoldenSet("g.yml", "0" * 64, (GoldenQuery("q1", "find it", tuple(entries), (), 1),), None)


def _mistyped_heading(shape: Callable[[random.Random], str]) -> Callable[[int], Callable[[], object]]:
    def case(count: int) -> Callable[[], object]:
        rng = random.Random(count)
        sections = {"n.md": [SectionInfo(shape(rng), ()) for _ in range(count)]}
        wanted = shape(rng)[::-1]  # no heading of the document: a guess over all of them
        golden = _golden([ExpectedEntry("n.md", wanted, 1)])
        return lambda: check_headings(golden, sections)

    return case


def _mistyped_paths(shape: Callable[[random.Random], str]) -> Callable[[int], Callable[[], object]]:
    def case(count: int) -> Callable[[], object]:
        rng = random.Random(count)
        indexed = {f"{shape(rng).replace(' ', '-')[:120]}{n}.md" for n in range(count)}
        wanted = [ExpectedEntry(f"{shape(rng).replace(' ', '-')[:120]}.md", None, 1) for _ in range(2)]
        return lambda: check_paths(_golden(wanted), indexed)

    return case


def test_the_closest_headings_cost_grows_with_the_headings_read_not_their_square() -> None:
    case = _mistyped_heading(_two_letter)
    assert steps(case(GROWTH * SMALL)) / steps(case(SMALL)) < LINEAR


def test_headings_of_two_letter_words_cost_what_headings_of_words_of_the_same_size_cost() -> None:
    # The near miss of the same size: ordinary words, the same number of headings and characters.
    assert steps(_mistyped_heading(_two_letter)(SMALL * GROWTH)) < SAME_SIZE * steps(_mistyped_heading(_words)(SMALL * GROWTH))


def test_did_you_mean_over_paths_of_two_letter_words_costs_what_word_paths_cost() -> None:
    two_letter, words = _mistyped_paths(_two_letter), _mistyped_paths(_words)
    assert steps(two_letter(GROWTH * SMALL)) / steps(two_letter(SMALL)) < LINEAR
    assert steps(two_letter(SMALL * GROWTH)) < SAME_SIZE * steps(words(SMALL * GROWTH))


def test_every_guess_of_a_check_draws_on_one_budget_and_the_warnings_stay(monkeypatch: pytest.MonkeyPatch) -> None:
    # 20 mistyped headings over a document of 100 headings of 197 characters: each guess reads
    # 19,709 characters (the headings and its own 9), so a budget of 100,000 pays for five.
    rng = random.Random(1)
    sections = {"n.md": [SectionInfo(_two_letter(rng), ()) for _ in range(100)]}
    entries = [ExpectedEntry("n.md", f"missing {n}", n + 1) for n in range(20)]
    monkeypatch.setattr(scanner.golden.similarity, "GUESS_BUDGET_CHARS", 100_000)
    warnings = check_headings(_golden(entries), sections)
    assert len(warnings) == 20  # every wrong label is warned about
    guessed = [w for w in warnings if "closest headings there" in w.message]
    assert len(guessed) == 5
    assert all("it has 100 headings" in w.message for w in warnings if w not in guessed)


def test_a_guess_the_budget_cannot_pay_for_reads_nothing() -> None:
    guesses = Guesses(budget=1_000)
    assert guesses.closest("x" * 10, ["y" * 10] * 200, 3, 0.5) is None and guesses.spent == 0
    assert guesses.closest("x" * 10, ["x" * 10] * 50, 3, 0.5) == ["x" * 10] * 3 and guesses.spent == 510


def test_a_guess_still_finds_the_typo_and_the_closest_heading() -> None:
    sections = {"n.md": [SectionInfo("Cache Directory", ()), SectionInfo("Install", ())]}
    [warning] = check_headings(_golden([ExpectedEntry("n.md", "Cache Directry", 1)]), sections)
    assert "closest headings there: 'Cache Directory'" in warning.message
    [warning], _ = check_paths(_golden([ExpectedEntry("gude/setup.md", None, 1)]), {"guide/setup.md", "faq.md"})
    assert "did you mean 'guide/setup.md'" in warning.message
