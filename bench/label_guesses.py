"""What the label checks' guesses cost, by the shape of the strings: wall-clock, paired.

    python bench/label_guesses.py [--headings 1500] [--rounds 3]

The red team's inputs: one note of N headings of 200 characters made of two-letter words, and
one mistyped `heading:` (the closest-headings guess reads every heading); N indexed paths of
120 characters of two-letter words, and two mistyped `path:` labels (the did-you-mean guess).
Each is timed against the same count and size made of ordinary words, in the same round, and
the medians and their ratio printed. A guess over one budget's worth of characters
(GUESS_BUDGET_CHARS) is timed too, which is the most one check can spend.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from scanner.golden.file import ExpectedEntry, GoldenQuery, GoldenSet
from scanner.golden.labels import SectionInfo, check_headings, check_paths
from scanner.golden.similarity import GUESS_BUDGET_CHARS, Guesses


def two_letter(rng: random.Random, chars: int) -> str:
    return " ".join(rng.choice(["ab", "ba", "aa", "bb"]) for _ in range(chars // 3))[:chars]


def words(rng: random.Random, chars: int) -> str:
    vocabulary = ["install", "upgrade", "cluster", "network", "storage", "rollback", "release", "secrets"]
    return " ".join(rng.choice(vocabulary) for _ in range(chars // 6))[:chars]


def golden(entries: list[ExpectedEntry]) -> GoldenSet:
    return GoldenSet("g.yml", "0" * 64, (GoldenQuery("q1", "find it", tuple(entries), (), 1),), None)


def heading_case(shape: Callable[[random.Random, int], str], count: int) -> Callable[[], object]:
    rng = random.Random(1)
    sections = {"n.md": [SectionInfo(shape(rng, 200), ()) for _ in range(count)]}
    entries = [ExpectedEntry("n.md", shape(rng, 200)[::-1], 1)]
    return lambda: check_headings(golden(entries), sections)


def path_case(shape: Callable[[random.Random, int], str], count: int) -> Callable[[], object]:
    rng = random.Random(1)
    indexed = {f"{shape(rng, 120).replace(' ', '-')}{n}.md" for n in range(count)}
    entries = [ExpectedEntry(f"{shape(rng, 120).replace(' ', '-')}.md", None, 1) for _ in range(2)]
    return lambda: check_paths(golden(entries), indexed)


def timed(case: Callable[[], object]) -> float:
    start = time.perf_counter()
    case()
    return time.perf_counter() - start


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--headings", type=int, default=1500)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(argv)
    for name, make in (("closest headings", heading_case), ("did you mean", path_case)):
        attack, near = make(two_letter, args.headings), make(words, args.headings)
        pairs = [(timed(attack), timed(near)) for _ in range(args.rounds)]
        a, b = statistics.median(p[0] for p in pairs), statistics.median(p[1] for p in pairs)
        print(f"{name}, {args.headings} strings: two-letter words {a:.3f} s, words {b:.3f} s, ratio {a / b:.2f}")
    width = 200
    candidates = [two_letter(random.Random(n), width) for n in range(GUESS_BUDGET_CHARS // width - 1)]
    spent = timed(lambda: Guesses().closest(two_letter(random.Random(0), width), candidates, 3, 0.5))
    print(f"one check's whole budget ({GUESS_BUDGET_CHARS:,} characters) in one guess: {spent:.3f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
