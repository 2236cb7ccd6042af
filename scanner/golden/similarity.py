"""How close two strings look, in time linear in their lengths, within one budget per check.

A warning about a mistyped label names what the golden file most likely meant (the closest
headings of the document, the indexed path of a typo). difflib's ratio, used for that before,
costs up to the product of the two lengths and depends on the strings' shape: 1,500 two-letter
headings and one mistyped `heading:` took 86 s. Here closeness is the Dice coefficient of the
two strings' character bigrams (counted with repetition): twice the shared bigrams over all
bigrams, 1.0 for equal strings, computed in one pass over each string. And every guess of one
check draws on one budget of characters (`Guesses`): past it, warnings are still given, without
a guess, so the work of a golden file of mistyped labels is bounded whatever they are.
"""

from __future__ import annotations

import operator
from collections import Counter
from collections.abc import Sequence

GUESS_BUDGET_CHARS = 1_000_000
"""Characters one check may read for its guesses (the wanted string and every candidate, per
guess): the closest headings of every mistyped `heading:`, or the did-you-mean of every mistyped
`path:`. `python bench/label_guesses.py` reads one whole budget in one guess in about 0.35 s on
the 2-core machine (0.3 microseconds a character, the same for two-letter words and for words),
so a check spends at most that on guesses, whatever the labels and the strings are. A guess over
2,000 paths of 40 characters reads 80,000: twelve such guesses fit."""


def bigrams(text: str) -> Counter[str]:
    """The character bigrams of `text`, with repetition; a one-character string is its own."""
    if len(text) < 2:
        return Counter((text,)) if text else Counter()
    return Counter(map(operator.add, text, text[1:]))  # pairs joined in C: a third of a slice per pair


def likeness(wanted: Counter[str], wanted_total: int, candidate: str) -> float:
    """The Dice coefficient of `wanted` (bigrams(w), and their total) and `candidate`'s bigrams:
    linear in the candidate's length."""
    other = bigrams(candidate)
    total = wanted_total + sum(other.values())
    if total == 0:
        return 1.0
    shared = sum(min(count, wanted.get(gram, 0)) for gram, count in other.items())
    return 2 * shared / total


class Guesses:
    """Closeness guesses made by one check, within one budget of characters read."""

    def __init__(self, budget: int | None = None) -> None:
        self.remaining = GUESS_BUDGET_CHARS if budget is None else budget
        self.spent = 0
        """Characters read so far (what the cost tests count)."""

    def closest(self, wanted: str, candidates: Sequence[str], count: int, cutoff: float) -> list[str] | None:
        """Up to `count` candidates at least `cutoff` alike with `wanted`, best first (ties in the
        candidates' order); None when what is left of the budget cannot pay for this guess (the
        caller then warns without one)."""
        cost = len(wanted) + sum(len(candidate) for candidate in candidates)
        if cost > self.remaining:
            return None
        self.remaining -= cost
        self.spent += cost
        profile = bigrams(wanted)
        total = sum(profile.values())
        scored = []
        for index, candidate in enumerate(candidates):
            size = max(len(candidate) - 1, 1 if candidate else 0)
            # The Dice coefficient is at most 2 * min / (sum) of the two sizes: skip what cannot reach it.
            if total + size and 2 * min(total, size) / (total + size) < cutoff:
                continue
            score = likeness(profile, total, candidate)
            if score >= cutoff:
                scored.append((-score, index, candidate))
        scored.sort()
        return [candidate for _, _, candidate in scored[:count]]
