"""Compile untrusted query text into weighted search terms; no character is syntax.

The query is analysed exactly as the indexed text is (`analysis.Analyzer`: words, Snowball
stemming, English function words left out, CJK runs as bigrams plus Han unigrams). Quotes, `*`, `-`, `:`,
parentheses and operator words are plain text: there is no query language to escape from.
Every term is optional (a disjunction), and BM25 rewards chunks that match more and rarer terms.

A term the question repeats keeps its repeats (its query weight is its count): the previous
compiler dropped them, and on Cranfield's long questions that alone cost nDCG@10 0.391 -> 0.343.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from scanner.search.analysis import WORD, Analyzer

QUERY_COMPILER_VERSION = 7
"""Part of the built-in retriever's description (fingerprint): a change here or in the scoring
changes the numbers. 5: terms analysed like the index (Snowball stemmer, CJK bigrams), repeats
kept, no phrases. 6: the breadcrumb's own BM25 added to BM25F; Han characters also as unigrams.
7: a page's title counted once, wherever the page writes it (corpus/titles.py); chunks without a
term left out of the collection statistics."""

MAX_TERMS = 64
"""Distinct terms kept per query (its first ones). Each costs one posting-list read; questions
have well under 64 words, so this only bounds hostile or pasted-paragraph queries."""


@dataclass(frozen=True, slots=True)
class CompiledQuery:
    terms: tuple[tuple[str, int], ...]
    """(term, count in the query), in order of first appearance; may be empty when every word
    is an English function word (the query then matches nothing)."""


_ANALYZER = Analyzer()
"""Analysis of query text needs no vocabulary; one shared instance keeps its word cache."""


def is_searchable(text: str) -> bool:
    """Whether `text` has a letter or a digit: compile_query gives None exactly when it has not.
    The run's refusal of an unsearchable query asks this, not compile_query, so a golden set is
    analysed once, by the search, rather than once more before it."""
    return WORD.search(text) is not None


def compile_query(text: str) -> CompiledQuery | None:
    """None when the text has no letters or digits at all (the run refuses such a query up front)."""
    if not is_searchable(text):
        return None
    counts = Counter(_ANALYZER.query_terms(text))
    return CompiledQuery(tuple(list(counts.items())[:MAX_TERMS]))
