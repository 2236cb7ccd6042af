"""How text is cut into terms: the fast paths give what the word pattern gives."""

from __future__ import annotations

import string
from collections import Counter
from unittest.mock import patch

from hypothesis import given
from hypothesis import strategies as st

from scanner.search import analysis
from scanner.search.analysis import DROPPED, WORD, Analyzer, IndexCapExceeded, tokens

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


# -- texts analysed in batches (Analyzer.index_ids_of) ---------------------------------------------

MIXED = st.text(
    alphabet=st.sampled_from(
        list("abcXYZ09 _.-\n") + list("のがアイウ") + list("한국어") + list("中文检索日本") + list("ｱｲｳﾟ")
        + ["\uf900", "\ufaff", "\u3400", "\u4dbf", "\u30ff", "\u3040", "\ud7af", "\uff66", "\uff9f", "\uff65", "\uffa0"]
        + ["\ud800", "\udfff", "İ", "ß", "é", "\U0002000b", "\u3000"]
    ),
    max_size=40,
)
"""Kana, hangul, Han (and the ends of each range, and the characters just outside them), half-width
katakana, compatibility ideographs, lone surrogates, a character outside the BMP, and 'İ', whose
lower-case form is two characters."""


def _sequential(texts: list[str], cap: int | None = None) -> tuple[list[list[int]], dict[str, int], int | None]:
    """What index_ids gives text by text: each text's ids, the vocabulary, and the text refused at."""
    analyzer = Analyzer()
    analyzer.max_words = cap
    found: list[list[int]] = []
    try:
        for text in texts:
            found.append(list(analyzer.index_ids(text)))
    except IndexCapExceeded:
        return found, analyzer.vocabulary, len(found)
    return found, analyzer.vocabulary, None


def _batched(texts: list[str], cap: int | None = None) -> tuple[list[list[int]], dict[str, int], int | None]:
    analyzer = Analyzer()
    analyzer.max_words = cap
    found: list[list[int]] = []
    try:
        for ids in analyzer.index_ids_of(texts):
            found.append(list(ids))
    except IndexCapExceeded:
        return found, analyzer.vocabulary, len(found)
    return found, analyzer.vocabulary, None


@given(st.lists(MIXED, max_size=12), st.sampled_from([8, 30, 1 << 18]))
def test_texts_analysed_in_batches_get_the_ids_one_at_a_time_analysis_gives_in_the_same_vocabulary(
    texts: list[str], batch: int
) -> None:
    # Small batches put batch boundaries between the texts, and make some texts too large for one.
    with patch.object(analysis, "BATCH_CHARACTERS", batch):
        ids, vocabulary, _ = _batched(texts)
    expected_ids, expected_vocabulary, _ = _sequential(texts)
    # The same terms in the same order of ids; each text's ids the same, repeats counted.
    assert list(vocabulary.items()) == list(expected_vocabulary.items())
    assert [Counter(found) for found in ids] == [Counter(found) for found in expected_ids]
    # The query side cuts each text into the terms the index counted for it.
    terms = {term_id: term for term, term_id in vocabulary.items()}
    querying = Analyzer()
    assert [Counter(terms[i] for i in found if i != DROPPED) for found in ids] == [
        Counter(querying.query_terms(text)) for text in texts
    ]


def test_each_cjk_run_gives_its_bigrams_its_han_characters_and_a_run_of_one_itself() -> None:
    texts = ["中文检索", "がの", "の", "ｱｲ･ｳ", "豈更 and BM25の", "İ中"]
    analyzer = Analyzer()
    found = [list(ids) for ids in analyzer.index_ids_of(texts)]
    named = {term_id: term for term, term_id in analyzer.vocabulary.items()}
    assert [sorted(named[i] for i in ids if i != DROPPED) for ids in found] == [
        sorted(["中文", "文检", "检索", "中", "文", "检", "索"]),
        ["がの"],  # kana: the bigram alone (the near miss of the Han rule)
        ["の"],  # a run of one: kept as it is
        ["ｱｲ", "ｳ"],  # half-width katakana; the half-width middle dot (U+FF65) is not CJK and ends the run
        sorted(["豈更", "豈", "更", "bm25", "の"]),  # compatibility ideographs are Han
        ["中"],  # 'İ' lower-cased is 'i' (a stopword) and a combining dot, which ends no CJK run
    ]
    assert found[5].count(DROPPED) == 1


@given(st.lists(MIXED, max_size=12), st.integers(min_value=0, max_value=40), st.sampled_from([8, 1 << 18]))
def test_a_cap_on_distinct_words_stops_batched_analysis_at_the_text_one_at_a_time_analysis_stops_at(
    texts: list[str], cap: int, batch: int
) -> None:
    with patch.object(analysis, "BATCH_CHARACTERS", batch):
        ids, vocabulary, stopped = _batched(texts, cap)
    expected_ids, expected_vocabulary, expected_stop = _sequential(texts, cap)
    assert stopped == expected_stop
    assert list(vocabulary.items()) == list(expected_vocabulary.items())
    assert [Counter(found) for found in ids] == [Counter(found) for found in expected_ids]


def test_the_cap_refuses_the_text_holding_one_distinct_word_too_many_and_not_the_one_before() -> None:
    texts = ["中文", "检索 中文", "日本語"]  # distinct words: 3 (中文 中 文), 3 more, 5 more
    assert _batched(texts, 6)[2] == 2
    assert _batched(texts, 5)[2] == 1
    assert _batched(texts, 11)[2] is None  # the near miss: exactly as many as the cap
    assert _batched(texts, 10)[2] == 2


def test_an_analyzer_copied_from_one_that_analysed_text_by_text_gives_the_same_ids_in_batches() -> None:
    original = Analyzer()
    before = [list(original.index_ids(text)) for text in ["中文检索 works", "日本語の検索"]]
    twin = original.copy()
    again = [list(ids) for ids in twin.index_ids_of(["日本語の検索", "中文检索 works", "新しい"])]
    assert [Counter(found) for found in again[:2]] == [Counter(before[1]), Counter(before[0])]
    assert len(twin.vocabulary) > len(original.vocabulary)  # the new text's terms, in the copy only
    assert twin._cjk_ids and all(twin._tokens[analysis._key_text(key)] == i for key, i in twin._cjk_ids.items())


def test_the_cache_of_cjk_ids_starts_again_past_its_size_and_the_ids_stay_those_of_one_at_a_time_analysis() -> None:
    texts = ["".join(chr(0x4E00 + (n * 37 + c) % 5_000) for c in range(40)) for n in range(400)]
    with patch.object(analysis, "BATCH_CHARACTERS", 256), patch.object(analysis, "_CJK_IDS_KEPT", 100):
        analyzer = Analyzer()
        found = [list(ids) for ids in analyzer.index_ids_of(texts)]
        assert len(analyzer._cjk_ids) <= 100 + 2 * 256  # the cache, and one batch's keys
    expected_ids, expected_vocabulary, _ = _sequential(texts)
    assert list(analyzer.vocabulary.items()) == list(expected_vocabulary.items())
    assert [Counter(ids) for ids in found] == [Counter(ids) for ids in expected_ids]
    # The near miss: a cache larger than the distinct tokens keeps each of them.
    with patch.object(analysis, "BATCH_CHARACTERS", 256):
        whole = Analyzer()
        list(whole.index_ids_of(texts))
    assert len(whole._cjk_ids) == len(whole._tokens) > 100 + 2 * 256
