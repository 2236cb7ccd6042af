"""Cost linear in what is read, counted: the quick twins of tests/hostile/test_linear_cost.py.

Each test counts the steps (Python lines run and C functions called, tests/support/counting.py)
of a case on a small input and on one GROWTH times larger, or counts the calls of the function
whose repetition was the quadratic cost. A count does not change with the load on the machine, so
these can be exact where the timed twins need wide margins. What one C call does inside (a
regular expression backtracking, a long `str.startswith`) is one step here: the timed twins,
marked slow, keep watching that part.
"""

from __future__ import annotations

import tracemalloc
from collections.abc import Callable

import pytest

from scanner.corpus.documents import Chunk
from scanner.corpus.markdown import parse_document
from scanner.golden.file import ExpectedEntry, GoldenQuery
from scanner.golden.headings import reader_heading
from scanner.retrievers.base import Hit
from scanner.scan import quotes
from scanner.scan.quotes import MIN_QUOTE_CHARS, Needle, QuoteScanner, drop_explained_matches, locate, normalise, scan
from scanner.search import analysis
from scanner.search.analysis import Analyzer
from scanner.search.index import IndexedChunk
from tests.hostile.test_linear_cost import ANALYSIS_SHAPES, HEADING_SHAPES, SPLITTING_SHAPES, _chain, _golden, _letters
from tests.support.counting import CallCounter, steps

SMALL = 4_000
"""Characters of the small input: the counts are exact, so a small input shows a product of two
sizes as plainly as a large one does in time."""
GROWTH = 4
LINEAR = GROWTH * 1.5
"""The bound on (steps of the large input) / (steps of the small one): linear cost counts about
GROWTH, a product of two sizes GROWTH squared."""


def growth(case: Callable[[int], Callable[[], object]]) -> float:
    """Steps of `case(GROWTH * SMALL)` over steps of `case(SMALL)`."""
    return steps(case(GROWTH * SMALL)) / steps(case(SMALL))


def test_the_step_count_tells_a_product_of_two_sizes_from_their_sum() -> None:
    # The guard against every test below passing vacuously: a quadratic loop counts GROWTH squared.
    def pairs(size: int) -> Callable[[], object]:
        return lambda: sum(1 for a in range(size // 40) for b in range(size // 40) if a == b)

    def single(size: int) -> Callable[[], object]:
        return lambda: sum(1 for a in range(size // 40) if a >= 0)

    assert growth(pairs) > GROWTH**2 * 0.9
    assert growth(single) < LINEAR


@pytest.mark.parametrize(("marker", "line"), [("`", "a\n"), ("~", "a\n"), ("~", "~\n"), ("`", "`\n")])
def test_a_long_fence_opening_over_many_short_lines_is_parsed_in_steps_linear_in_the_text(marker: str, line: str) -> None:
    def fenced(size: int) -> Callable[[], object]:
        # A fence opened by a third of the text in marker characters, then a third in short lines.
        third = size // 3
        text = marker * third + "\n" + line * (third // len(line))
        return lambda: parse_document(text, "t")

    assert growth(fenced) < LINEAR


def test_queries_that_are_suffixes_of_one_another_are_scanned_in_steps_linear_in_the_text() -> None:
    # At every character of a run of `a` every chain query ends: hundreds of reports per character
    # unless the found ones stop being reported.
    scanner = QuoteScanner(_golden([*_chain(300), "b" * MIN_QUOTE_CHARS]))

    def run_of_a(size: int) -> Callable[[], object]:
        chunks = [IndexedChunk(1, "a.md", "", "", "a" * size)]
        return lambda: scanner.matches_in_document(chunks)

    assert growth(run_of_a) < LINEAR
    assert len(scanner.matches_in_document([IndexedChunk(1, "a.md", "", "", "a" * SMALL)])) == 300  # every one found


def _needles(texts: list[str]) -> list[Needle]:
    return [Needle(text, _golden([text])[0], n, frozenset()) for n, text in enumerate(texts)]


def test_many_matched_queries_in_one_document_are_explained_in_steps_linear_in_their_number() -> None:
    # Pairwise containment tests grew with the number of matches squared.
    def matched(size: int) -> Callable[[], object]:
        flat = _needles([f"{n:06d}" * 10 for n in range(size // 20)])  # none inside another
        return lambda: drop_explained_matches(flat)

    assert growth(matched) < LINEAR
    chain = _needles(_chain(100))
    assert drop_explained_matches(chain) == [chain[-1]]  # the near miss: only the longest is kept
    assert len(drop_explained_matches(_needles([f"{n:06d}" * 10 for n in range(200)]))) == 200


def test_locating_many_quotations_in_one_section_takes_the_steps_of_locating_one() -> None:
    queries = [f"golden query number {n:04d} here" for n in range(200)]
    body = _letters(GROWTH * SMALL) + "\n" + "\n".join(queries)  # every quotation after the whole section
    chunk = Chunk("a.md", "", ("a",), body, 1, 2 + len(queries), None, 1, (1,))
    every, one = [normalise(query) for query in queries], [normalise(queries[-1])]
    # Locating 200 quotations costs what locating one does, plus a little per quotation.
    assert steps(lambda: locate(chunk, "body", every)) < 1.2 * steps(lambda: locate(chunk, "body", one))
    located = locate(chunk, "body", every)
    assert [location.line for location in located] == list(range(2, 2 + len(queries)))


def test_many_documents_quoting_queries_with_many_labels_match_the_labels_once_per_query(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Matching a query's list against its labels once per quoting document grew with documents x labels.
    texts = ["how do I roll back a database migration", "which tag do container images get"]
    many = tuple(ExpectedEntry(f"e{n}.md", f"Heading {n}", n + 3) for n in range(2_000))
    queries = [GoldenQuery(f"q{n}", text, many, (), 1) for n, text in enumerate(texts)]
    documents = [(f"d{n:03d}.md", [IndexedChunk(n + 1, f"d{n:03d}.md", "", "", " ".join(texts))]) for n in range(100)]
    returned = {f"q{n}": [Hit(rank, f"d{rank:03d}.md", "", 1.0) for rank in range(1, 101)] for n in range(2)}
    judgments = CallCounter(monkeypatch, quotes, "Judgments")
    found = scan(documents, queries, returned)
    assert judgments.calls == len(queries)
    assert len(found) == 100 and all(len(f.quoted) == 2 for f in found)  # the near miss: every one still reported
    assert found[0].quoted[0].rank_in_top_k is None and found[1].quoted[0].rank_in_top_k == 1


@pytest.mark.parametrize("shape", sorted(HEADING_SHAPES))
def test_a_heading_is_brought_to_the_readers_form_in_steps_linear_in_its_length(shape: str) -> None:
    assert growth(lambda size: lambda: reader_heading(HEADING_SHAPES[shape](size))) < LINEAR
    assert reader_heading("Use `a  b` and [the *docs*](x.md) or ``c`d``") == "use a b and the docs or c`d"


@pytest.mark.parametrize("shape", sorted(ANALYSIS_SHAPES))
def test_analysis_of_one_long_token_takes_steps_linear_in_its_length(shape: str) -> None:
    assert growth(lambda size: lambda: list(Analyzer().index_ids(ANALYSIS_SHAPES[shape](size)))) < LINEAR


BATCHED_SHAPES: dict[str, Callable[[int], list[str]]] = {
    "one CJK run": lambda size: ["中" * size],
    "texts of two Han characters, each new": lambda size: [chr(0x4E00 + n) + chr(0x4E01 + n) for n in range(0, size, 2)],
    "texts of two Han characters, all the same": lambda size: ["中文"] * (size // 2),
    "texts of kana and Latin alternating": lambda size: ["aの" * 20] * (size // 40),
}


@pytest.mark.parametrize("shape", sorted(BATCHED_SHAPES))
def test_analysis_of_texts_in_batches_takes_steps_linear_in_the_texts(shape: str) -> None:
    assert growth(lambda size: lambda: list(Analyzer().index_ids_of(BATCHED_SHAPES[shape](size)))) < LINEAR


def test_analysis_in_batches_holds_one_batch_of_arrays_however_much_text_it_is_given() -> None:
    # Counted in bytes (tracemalloc sees numpy's buffers): the arrays of one batch of Han text, the
    # worst case (two tokens a character), whether it is given one batch or thirty.
    pool = ["".join(chr(0x4E00 + (7 * n + c) % 300) for c in range(60)) for n in range(50)]
    analyzer = Analyzer()
    list(analyzer.index_ids_of(pool))  # every token already known: what grows is the batch's alone

    def peak(batches: float) -> int:
        texts = [pool[n % len(pool)] for n in range(int(batches * analysis.BATCH_CHARACTERS / 61))]
        tracemalloc.start()
        try:
            for _ in analyzer.index_ids_of(texts):
                pass
            return tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()

    one = peak(1)
    assert peak(30) < 1.1 * one
    assert peak(0.5) < 0.6 * one  # the near miss: below a batch, the arrays grow with the text
    assert one < 150 * analysis.BATCH_CHARACTERS  # 8.6 MiB measured at 2**16 characters


@pytest.mark.parametrize("shape", sorted(SPLITTING_SHAPES))
def test_section_splitting_takes_steps_linear_in_the_text_for_every_shape(shape: str) -> None:
    assert growth(lambda size: lambda: parse_document(SPLITTING_SHAPES[shape](size), "t")) < LINEAR

