"""Cost linear in what is read, for every class of input a pull request controls.

Each test times an adversarial input against an ordinary one of the same size, in a child
process under a memory cap and a deadline (tests/hostile/bounded.py), and bounds the ratio. The
inputs are small on purpose: a quadratic case shows as a ratio of tens at this size, in seconds,
where at the caps it took minutes or hours. The near miss beside each attack checks that the
ordinary construct still parses as before.
"""

from __future__ import annotations

from scanner.corpus.markdown import parse_document
from tests.hostile.bounded import cost_ratio

RATIO = 6.0
"""How much slower than ordinary text of the same size an adversarial input may be. Linear cases
measure 0.5-3; the quadratic ones they guard against measured 15-300 at these sizes."""

SIZE = 600_000
"""Characters of each input: large enough for a product of two sizes to show, small enough that
the quadratic version of a case still finishes within the deadline."""


def _prose(size: int) -> str:
    line = "An ordinary sentence of prose about searching a knowledge base.\n"
    return line * (size // len(line))


def _fenced(marker: str, opener: int, line: str) -> str:
    """A fence opened by `opener` marker characters (padded to SIZE // 3 with an info string),
    then SIZE // 3 characters of short lines."""
    third = SIZE // 3
    return marker * opener + "a" * (third - opener) + "\n" + line * (third // len(line))


def test_a_long_fence_opening_over_many_short_lines_parses_in_linear_time() -> None:
    # The baseline has the same lines under a three-character fence: only the marker's length differs.
    for marker, line in (("`", "a\n"), ("~", "a\n"), ("~", "~\n"), ("`", "`\n")):
        attack, baseline = _fenced(marker, SIZE // 3, line), _fenced(marker, 3, line)
        ratio = cost_ratio(lambda: parse_document(attack, "t"), lambda: parse_document(baseline, "t"))
        assert ratio < RATIO, (marker, line, ratio)


def test_a_fence_still_hides_headings_until_a_closing_run_at_least_as_long() -> None:
    text = "````\n# not a heading\n```\n# still code\n  `````  \n# Heading\nbody\n"
    sections = parse_document(text, "t").sections
    assert [s.heading for s in sections] == ["", "Heading"]
    assert parse_document("~~~\n# code\n```\n# code\n~~~\n# Out\n", "t").sections[-1].heading == "Out"
