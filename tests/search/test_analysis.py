"""How text is cut into terms: the fast paths give what the word pattern gives."""

from __future__ import annotations

import string

from hypothesis import given
from hypothesis import strategies as st

from scanner.search.analysis import DROPPED, WORD, Analyzer, tokens

ASCII = st.text(alphabet=st.characters(min_codepoint=0, max_codepoint=127), max_size=80)


@given(ASCII)
def test_ascii_text_is_cut_where_the_word_pattern_cuts_it(text: str) -> None:
    assert tokens(text) == WORD.findall(text.lower())


def test_every_ascii_character_that_is_not_a_letter_or_digit_separates_words() -> None:
    separators = [chr(c) for c in range(128) if not chr(c).isalnum()]
    assert "_" in separators and "\x1c" in separators  # underscore, and a character split() alone would keep
    assert tokens("A".join(separators) + "b9") == ["a"] * (len(separators) - 1) + ["b9"]
    assert tokens(string.ascii_letters + string.digits) == [string.ascii_lowercase * 2 + string.digits]


def test_text_with_one_character_past_ascii_is_cut_by_the_word_pattern() -> None:
    # The near miss of the fast path: é is a letter, so it joins the word around it.
    assert tokens("Café_au lait") == ["café", "au", "lait"]


def test_each_distinct_token_is_analysed_once_however_often_it_is_written() -> None:
    analyzer = Analyzer()
    seen: list[str] = []
    terms = analyzer.terms

    def counted(token: str) -> list[str]:
        seen.append(token)
        return terms(token)

    analyzer.terms = counted  # type: ignore[method-assign]
    first = list(analyzer.index_ids("Indexing the index; indexing later " * 50))
    again = list(analyzer.index_ids("INDEXING index"))
    assert sorted(seen) == ["index", "indexing", "later", "the"]
    assert first[:5] == [first[0], DROPPED, first[2], first[0], first[4]]  # `the` is a stopword
    assert first[0] == first[2] != first[4]  # indexing and index share a stem; later does not
    assert again == [first[0], first[0]]
    assert analyzer.vocabulary == {"index": first[0], "later": first[4]}
