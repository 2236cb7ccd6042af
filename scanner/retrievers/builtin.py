"""The embedded default: SQLite FTS5 over the chunk fields, routed by the query's script.

Why two indexes: a word index with Porter stemming is what English needs
(`indexing` finds `indexed`), and it holds Japanese/Chinese as character bigrams;
a trigram index ranks Japanese paraphrases better than bigrams but ranks
English worse (no stemming, short words lost). So a query without CJK
characters goes to the word index, and a query with CJK characters to the
trigram index, whose list the word index fills when trigrams find too little.
Measured on the bench generator's bilingual KB (README, The built-in search):
fusing both rankings for every query cost English more than it gained
Japanese, and routing mixed-script queries to trigrams beat fusing them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import Enum

from ..analysis import has_cjk
from ..index import TRIGRAM_TOKENIZER, WORD_TOKENIZER, Index
from ..query_compiler import QUERY_COMPILER_VERSION, CompiledQuery, compile_query
from .base import Hit, SearchRequest


class Tokenization(str, Enum):
    AUTO = "auto"
    """By the query's script: the word index for queries without CJK characters, the trigram index
    (filled from the word index's bigrams) for queries with them."""
    WORD = "word"
    """The word index alone (CJK as bigrams), for every query."""


@dataclass(frozen=True, slots=True)
class FieldWeights:
    heading: float = 2.0
    breadcrumb: float = 1.0
    body: float = 1.0

    def as_tuple(self) -> tuple[float, float, float]:
        return (self.heading, self.breadcrumb, self.body)


class BuiltinRetriever:
    def __init__(
        self, index: Index, weights: FieldWeights = FieldWeights(), tokenization: Tokenization = Tokenization.AUTO
    ) -> None:
        self.index = index
        self.weights = weights
        self.tokenization = tokenization

    def describe(self) -> dict[str, object]:
        return {
            "name": "builtin",
            "engine": "sqlite-fts5",
            "tokenization": self.tokenization.value,
            "tokenizers": {"word": WORD_TOKENIZER + " + cjk bigrams", "trigram": TRIGRAM_TOKENIZER},
            "weights": {"heading": self.weights.heading, "breadcrumb": self.weights.breadcrumb, "body": self.weights.body},
            "routing": "cjk queries: trigram, filled from word" if self.tokenization is Tokenization.AUTO else None,
            "query_compiler_version": QUERY_COMPILER_VERSION,
        }

    def prepare(self, requests: Sequence[SearchRequest]) -> None:
        """Build the FTS5 tables these queries will use, before the read snapshot starts."""
        tables: set[str] = set()
        for request in requests:
            compiled = compile_query(request.text)
            if compiled is not None:
                tables.update(table for table, _ in self._plan(request.text, compiled))
        self.index.ensure_full_text(*sorted(tables))

    def search_all(self, requests: Sequence[SearchRequest]) -> list[list[Hit]]:
        return [self.search(request.text, request.limit) for request in requests]

    def search(self, text: str, limit: int) -> list[Hit]:
        compiled = compile_query(text)
        if compiled is None:
            return []
        plan = self._plan(text, compiled)
        self.index.ensure_full_text(*(table for table, _ in plan))  # a no-op after prepare()
        weights = self.weights.as_tuple()
        # The first index ranks; the second (for CJK: the word index's bigrams) only fills the
        # list when the first finds fewer than `limit` chunks, e.g. a question sharing no
        # three-character run with any document. Scores of filled hits are the second index's.
        ranked: list[tuple[int, float]] = []
        for table, expression in plan:
            seen = {chunk_id for chunk_id, _ in ranked}
            more = self.index.search(table, expression, weights, limit + len(ranked))
            ranked.extend((chunk_id, score) for chunk_id, score in more if chunk_id not in seen)
            ranked = ranked[:limit]
            if len(ranked) >= limit:
                break
        located = self.index.locate_chunks([chunk_id for chunk_id, _ in ranked])
        return [Hit(rank, *located[chunk_id], score) for rank, (chunk_id, score) in enumerate(ranked, 1)]

    def _plan(self, text: str, compiled: CompiledQuery) -> list[tuple[str, str]]:
        """Which index(es) answer this query, with which expression."""
        word = [("fts_word", compiled.word)] if compiled.word is not None else []
        trigram = [("fts_trigram", compiled.trigram)] if compiled.trigram is not None else []
        if self.tokenization is Tokenization.WORD or not has_cjk(text):
            return word
        return trigram + word

