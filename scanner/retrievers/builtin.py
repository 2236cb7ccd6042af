"""The embedded default: SQLite FTS5, word and trigram rankings fused.

Why two rankings: a word index with Porter stemming is what English needs
(`indexing` finds `indexed`), but it sees a Japanese sentence as one
unsplittable token; a trigram index finds Japanese and Chinese substrings but
ranks English worse (no stemming, short words lost). Reciprocal rank fusion of
the two needs no score calibration between indexes and keeps each one's
strength: a chunk that both rank high wins, a chunk only one of them can see
still gets in.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import Enum

from ..analysis import has_cjk
from ..index import TRIGRAM_TOKENIZER, WORD_TOKENIZER, Index
from ..query_compiler import QUERY_COMPILER_VERSION, CompiledQuery, compile_query
from .base import Hit, SearchRequest

RRF_K = 60
"""The constant of Cormack et al. (2009), used unchanged: it damps the top ranks of each list
so that agreement between the two rankings counts for more than one list's first place."""

FUSION_DEPTH = 100
"""How many hits of each ranking take part in the fusion (or the limit, when larger)."""


class Tokenization(str, Enum):
    AUTO = "auto"
    """By the query's script: word index for queries without CJK, trigram index (filled from the
    word index's bigrams) for CJK-only queries, both fused for mixed ones. Chosen by measurement
    (README, Search quality)."""
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
            "fusion": {"method": "rrf", "k": RRF_K, "depth": FUSION_DEPTH},
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
        self.prepare([SearchRequest("", text, limit)])
        weights = self.weights.as_tuple()
        plan = self._plan(text, compiled)
        fused = len(plan) == 2 and plan[0][0] == "fts_word"
        if fused:
            depth = max(limit, FUSION_DEPTH)
            ranked = _fuse([self.index.search(table, expression, weights, depth) for table, expression in plan], limit)
        else:
            # One index ranks; a second one (CJK: the word index's bigrams) only fills the list
            # when the first finds fewer than `limit` chunks, e.g. a question sharing no
            # three-character run with any document.
            ranked = []
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
        # Mixed-script queries need both indexes, fused. CJK-only queries: the trigram index
        # ranks them best, the word index's bigrams fill in what it cannot match.
        if any(ch.isascii() and ch.isalnum() for ch in text):
            return word + trigram
        return trigram + word


def _fuse(rankings: list[list[tuple[int, float]]], limit: int) -> list[tuple[int, float]]:
    scores: dict[int, float] = {}
    best_rank: dict[int, int] = {}
    for rows in rankings:
        for rank, (chunk_id, _) in enumerate(rows, 1):
            scores[chunk_id] = scores.get(chunk_id, 0.0) + 1.0 / (RRF_K + rank)
            best_rank[chunk_id] = min(best_rank.get(chunk_id, rank), rank)
    # Ties (equal fused score) go to the better single-list rank, then to index order.
    order = sorted(scores, key=lambda c: (-scores[c], best_rank[c], c))[:limit]
    return [(c, round(scores[c], 12)) for c in order]
