"""Cost linear in what is read, for every class of input a pull request controls.

Each test times an adversarial input against an ordinary one of the same size, in a child
process under a memory cap and a deadline (tests/hostile/bounded.py), and bounds the ratio. The
inputs are small on purpose: a quadratic case shows as a ratio of tens at this size, in seconds,
where at the caps it took minutes or hours. The near miss beside each attack checks that the
ordinary construct still parses as before.

Every timed test here is in the slow suite: tests/hostile/test_linear_steps.py counts the steps of
the same cases in the quick suite, and these timings watch what a count cannot see (the work
inside one C call: a regular expression, the Aho-Corasick automaton, a string search).
"""

from __future__ import annotations

import random

import pytest

from scanner.corpus.documents import Chunk
from scanner.corpus.markdown import parse_document
from scanner.golden.file import ExpectedEntry, GoldenQuery
from scanner.golden.headings import reader_heading
from scanner.retrievers.base import Hit
from scanner.scan.quotes import (
    MIN_QUOTE_CHARS,
    Needle,
    QuoteScanner,
    best_expected_rank,
    drop_explained_matches,
    first_occurrences,
    locate,
    normalise,
    scan,
)
from scanner.search.analysis import Analyzer
from scanner.search.index import IndexedChunk
from tests.hostile.bounded import cost_ratio, cost_ratios, costs

TIMED = pytest.mark.slow
"""Wall-clock ratios, on a shared machine: in the full suite only, beside their counted twins."""

RATIO = 6.0
"""How much slower than ordinary text of the same size an adversarial input may be. Linear cases
measure 0.5-3; the quadratic ones they guard against measured 15-300 at these sizes."""

HEADING_RATIO = 2 * RATIO
"""A heading of backslash escapes reads at 6-7.5 times prose of its size, linearly (its steps grow
four times with four times the text: test_linear_steps.py); the backtracking this guards against
grew with the cube of the run, thousands of times prose at this size."""

SIZE = 600_000
"""Characters of each input: large enough for a product of two sizes to show, small enough that
the quadratic version of a case still finishes within the deadline."""

GROWTH = 4
"""For the scaling tests: the large input is this many times the small one, so linear cost shows
a ratio near 4 and a product of two sizes near 16. Both inputs are larger than a CPU cache
(SCALING_SIZE): below that, the small one ran from cache at a fifth of the cost per byte, and
a linear case measured 44."""
SCALING_SIZE = 1_200_000
NOISE_FLOOR_S = 0.25
"""A scaling ratio counts only when the large input takes at least this long: a linear shape at
SCALING_SIZE takes milliseconds (where a shared machine's noise is the ratio), a product of two
sizes at that size takes seconds."""


def _prose(size: int) -> str:
    line = "An ordinary sentence of prose about searching a knowledge base.\n"
    return line * (size // len(line))


def _fenced(marker: str, opener: int, line: str) -> str:
    """A fence opened by `opener` marker characters (padded to SIZE // 3 with an info string),
    then SIZE // 3 characters of short lines."""
    third = SIZE // 3
    return marker * opener + "a" * (third - opener) + "\n" + line * (third // len(line))


@TIMED
def test_a_long_fence_opening_over_many_short_lines_parses_in_linear_time() -> None:
    # The baseline has the same lines under a three-character fence: only the marker's length differs.
    for marker, line in (("`", "a\n"), ("~", "a\n"), ("~", "~\n"), ("`", "`\n")):
        attack, baseline = _fenced(marker, SIZE // 3, line), _fenced(marker, 3, line)
        ratio = cost_ratio(
            lambda attack=attack: parse_document(attack, "t"),  # type: ignore[misc]
            lambda baseline=baseline: parse_document(baseline, "t"),  # type: ignore[misc]
        )
        assert ratio < RATIO, (marker, line, ratio)


def test_a_fence_still_hides_headings_until_a_closing_run_at_least_as_long() -> None:
    text = "````\n# not a heading\n```\n# still code\n  `````  \n# Heading\nbody\n"
    sections = parse_document(text, "t").sections
    assert [s.heading for s in sections] == ["", "Heading"]
    assert parse_document("~~~\n# code\n```\n# code\n~~~\n# Out\n", "t").sections[-1].heading == "Out"


# -- quote scanning and locating ------------------------------------------------------------------

def _golden(texts: list[str]) -> list[GoldenQuery]:
    return [GoldenQuery(f"q{n}", text, (), (), n + 1) for n, text in enumerate(texts)]


def _chain(count: int) -> list[str]:
    """Queries that are suffixes of one another: at every character of a run of `a`, every one
    of them ends there."""
    return ["a" * (MIN_QUOTE_CHARS + n) for n in range(count)]


def _letters(size: int, seed: int = 1) -> str:
    generator = random.Random(seed)
    return "".join(generator.choice("ab ") for _ in range(size))


@TIMED
def test_queries_that_are_suffixes_of_one_another_scan_in_linear_time() -> None:
    scanner = QuoteScanner(_golden([*_chain(300), "b" * MIN_QUOTE_CHARS]))
    attack = [IndexedChunk(1, "a.md", "", "", "a" * SIZE)]  # every chain query ends at every character
    baseline = [IndexedChunk(1, "a.md", "", "", _letters(SIZE))]
    assert cost_ratio(lambda: scanner.matches_in_document(attack), lambda: scanner.matches_in_document(baseline)) < RATIO
    assert len(scanner.matches_in_document(attack)) == 300  # the near miss: every one is still found


def test_first_occurrences_agrees_with_str_find() -> None:
    generator = random.Random(7)
    for _ in range(200):
        distinct = {"".join(generator.choice("ab") for _ in range(generator.randint(1, 6))) for _ in range(20)}
        words = dict(enumerate(sorted(distinct)))
        text = "".join(generator.choice("ab") for _ in range(generator.randint(0, 300)))
        expected = {n: text.find(word) for n, word in words.items() if word in text}
        assert first_occurrences(words, text) == expected


@TIMED
def test_many_matched_queries_in_one_document_are_explained_in_linear_time() -> None:
    # 600 matched wordings, each inside the next, against 6 of the same total length: pairwise
    # containment tests grew with the number of matches squared.
    def needles(texts: list[str]) -> list[Needle]:
        return [Needle(text, _golden([text])[0], n, frozenset()) for n, text in enumerate(texts)]

    chain = needles(_chain(600))
    # Aperiodic text: pyahocorasick walks the whole failure chain at every character, so a long
    # periodic wording (`000000...`) is slow for a reason of its own (docs/limits-and-safety.md).
    generator = random.Random(3)
    few = needles(["".join(generator.choice("abcdefgh") for _ in range(sum(map(len, _chain(600))) // 6)) for _ in range(6)])
    assert cost_ratio(lambda: drop_explained_matches(chain), lambda: drop_explained_matches(few)) < RATIO
    assert drop_explained_matches(chain) == [chain[-1]]  # the near miss: only the longest is kept
    flat = needles([f"{n:06d}" * 50 for n in range(600)])  # none inside another: all kept
    assert len(drop_explained_matches(flat)) == 600


@TIMED
def test_a_section_quoting_many_queries_is_read_once_to_locate_them() -> None:
    queries = [f"golden query number {n:04d} here" for n in range(200)]
    body = _letters(SIZE) + "\n" + "\n".join(queries)  # every quotation after the whole section
    chunk = Chunk("a.md", "", ("a",), body, 1, 2 + len(queries), None, 1, (1,))
    one = [normalise(queries[-1])]
    every = [normalise(query) for query in queries]
    assert cost_ratio(lambda: locate(chunk, "body", every), lambda: locate(chunk, "body", one)) < RATIO
    located = locate(chunk, "body", every)
    assert [location.line for location in located] == list(range(2, 2 + len(queries)))
    assert {location.column for location in located} == {1}


@TIMED
def test_many_documents_quoting_queries_with_many_labels_cost_the_labels_once_per_query() -> None:
    # 1,000 documents each quoting two queries with 20,000 expected entries each: matching the
    # queries' lists against their labels once per quoting document grew with documents x labels.
    # Against that product the scan costs what reading the documents and one match per query cost.
    texts = ["how do I roll back a database migration", "which tag do container images get"]
    many = tuple(ExpectedEntry(f"e{n}.md", f"Heading {n}", n + 3) for n in range(20_000))

    def queries(expected: tuple[ExpectedEntry, ...]) -> list[GoldenQuery]:
        return [GoldenQuery(f"q{n}", text, expected, (), 1) for n, text in enumerate(texts)]

    documents = [(f"d{n:04d}.md", [IndexedChunk(n + 1, f"d{n:04d}.md", "", "", " ".join(texts))]) for n in range(1_000)]
    returned = {f"q{n}": [Hit(rank, f"d{rank:04d}.md", "", 1.0) for rank in range(1, 101)] for n in range(2)}
    labelled, plain = queries(many), queries(many[:1])

    def inherent() -> None:
        # What the scan must do in any case: read the documents, and match each query's list
        # against its labels once.
        scan(documents, plain, returned)
        for query in labelled:
            best_expected_rank(returned[query.id], query)

    assert cost_ratio(lambda: scan(documents, labelled, returned), inherent) < RATIO
    found = scan(documents, labelled, returned)
    assert len(found) == 1_000 and all(len(f.quoted) == 2 for f in found)  # the near miss: every one still reported
    assert found[0].quoted[0].rank_in_top_k is None and found[1].quoted[0].rank_in_top_k == 1


HEADING_SHAPES = {
    "a run of backticks": lambda size: "`" * size,
    "backtick runs of growing length": lambda size: "".join("`" * n + "a" for n in range(1, 1100))[:size],
    "open brackets": lambda size: "[" * size,
    "links never closed": lambda size: "[a](" * (size // 4),
    "escapes": lambda size: "\\" * size,
}


@TIMED
@pytest.mark.parametrize("shape", sorted(HEADING_SHAPES))
def test_a_heading_is_brought_to_the_readers_form_in_linear_time(shape: str) -> None:
    # A heading (a KB page's or a label's) is read as the page shows it before it is compared; a
    # regular expression that backtracked took seconds for a thousand backticks, growing with the cube.
    text = HEADING_SHAPES[shape](SIZE)
    assert cost_ratio(lambda: reader_heading(text), lambda: reader_heading(_prose(len(text)))) < HEADING_RATIO
    # The near miss: ordinary inline code, links and emphasis still read as before.
    assert reader_heading("Use `a  b` and [the *docs*](x.md) or ``c`d``") == "use a b and the docs or c`d"


# -- analysis -------------------------------------------------------------------------------------

ANALYSIS_SHAPES = {
    "one word": lambda size: "a" * size,
    "one word with a suffix to stem": lambda size: "ab" * (size // 2 - 5) + "ingly",
    "one CJK run": lambda size: "中" * size,
    "CJK and Latin alternating": lambda size: "a中" * (size // 2),
}


def _distinct_words(size: int) -> str:
    """The ordinary text that costs analysis the most per character: every word new."""
    return " ".join(f"w{n}" for n in range(size // 6))[:size]


@TIMED
def test_analysis_of_one_long_token_costs_no_more_than_ordinary_text_of_its_size() -> None:
    # A product of two sizes (a word against its length, a run against its characters) at this
    # size would be hundreds of times the baseline; linear shapes measure 0.2-3.
    baseline = _distinct_words(SIZE)
    attacks = {name: shape(SIZE) for name, shape in ANALYSIS_SHAPES.items()}
    ratios = cost_ratios({name: lambda attack=attack: list(Analyzer().index_ids(attack))  # type: ignore[misc]
                          for name, attack in attacks.items()},
                         lambda: list(Analyzer().index_ids(baseline)), deadline=240.0)
    assert set(ratios) == set(ANALYSIS_SHAPES)
    assert all(ratio < RATIO for ratio in ratios.values()), ratios


@TIMED
def test_analysis_in_batches_of_texts_shaped_against_it_costs_no_more_than_ordinary_text_of_their_size() -> None:
    # The batches' numpy work (a sort a batch) that the counted twin sees as one step: each shape
    # cut into texts of 600 characters, the size of a long section, against ordinary text cut alike.
    def texts(text: str) -> list[str]:
        return [text[at : at + 600] for at in range(0, len(text), 600)]

    baseline = texts(_distinct_words(SIZE))
    attacks = {name: texts(shape(SIZE)) for name, shape in ANALYSIS_SHAPES.items()}
    attacks["Han characters, 20,000 different bigrams"] = texts("".join(chr(0x4E00 + n % 20_000) for n in range(SIZE)))
    ratios = cost_ratios({name: lambda attack=attack: list(Analyzer().index_ids_of(attack))  # type: ignore[misc]
                          for name, attack in attacks.items()},
                         lambda: list(Analyzer().index_ids_of(baseline)), deadline=240.0)
    assert set(ratios) == {*ANALYSIS_SHAPES, "Han characters, 20,000 different bigrams"}
    assert all(ratio < RATIO for ratio in ratios.values()), ratios


# -- section splitting ----------------------------------------------------------------------------

SPLITTING_SHAPES = {
    "empty headings": lambda size: "#\n" * (size // 2),
    "nested headings": lambda size: "".join(f"{'#' * (n % 6 + 1)} heading {n}\n" for n in range(size // 16)),
    "setext headings over long paragraphs": lambda size: ("a line of text\n" * 50 + "===\n") * (size // 754),
    "rules that almost are": lambda size: ("- " * (size // 8) + "x\n") * 4,
    "spaces inside a heading": lambda size: "# a" + " " * (size - 6) + "b\n",
    "list and quote markers": lambda size: "> 1. - + * <x\n" * (size // 14),
    "indented lines": lambda size: "    code\n" * (size // 9),
    "a fence per line": lambda size: "```\n" * (size // 4),
}


@TIMED
def test_section_splitting_cost_grows_linearly_with_the_text_for_every_shape() -> None:
    for name, shape in SPLITTING_SHAPES.items():
        small, large = shape(SCALING_SIZE // GROWTH), shape(SCALING_SIZE)
        seconds, base = costs(lambda large=large: parse_document(large, "t"),  # type: ignore[misc]
                              lambda small=small: parse_document(small, "t"))  # type: ignore[misc]
        assert seconds / base < GROWTH * 2.5 or seconds < NOISE_FLOOR_S, (name, seconds, base)
