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

from dataclasses import dataclass
from enum import Enum
from typing import Sequence

from ..index import TRIGRAM_TOKENIZER, WORD_TOKENIZER, Index
from ..query_compiler import QUERY_COMPILER_VERSION, compile_query
from .base import Hit, SearchRequest

RRF_K = 60
"""The constant of Cormack et al. (2009), used unchanged: it damps the top ranks of each list
so that agreement between the two rankings counts for more than one list's first place."""

FUSION_DEPTH = 100
"""How many hits of each ranking take part in the fusion (or the limit, when larger)."""


class Tokenization(str, Enum):
    FUSED = "fused"
    WORD = "word"
    TRIGRAM = "trigram"


@dataclass(frozen=True, slots=True)
class FieldWeights:
    heading: float = 2.0
    breadcrumb: float = 1.0
    body: float = 1.0

    def as_tuple(self) -> tuple[float, float, float]:
        return (self.heading, self.breadcrumb, self.body)


class BuiltinRetriever:
    def __init__(
        self, index: Index, weights: FieldWeights = FieldWeights(), tokenization: Tokenization = Tokenization.FUSED
    ) -> None:
        self.index = index
        self.weights = weights
        self.tokenization = tokenization

    def describe(self) -> dict[str, object]:
        tokenizers = {
            Tokenization.FUSED: [WORD_TOKENIZER, TRIGRAM_TOKENIZER],
            Tokenization.WORD: [WORD_TOKENIZER],
            Tokenization.TRIGRAM: [TRIGRAM_TOKENIZER],
        }[self.tokenization]
        return {
            "name": "builtin",
            "engine": "sqlite-fts5",
            "tokenization": self.tokenization.value,
            "tokenizers": tokenizers,
            "weights": {"heading": self.weights.heading, "breadcrumb": self.weights.breadcrumb, "body": self.weights.body},
            "fusion": {"method": "rrf", "k": RRF_K, "depth": FUSION_DEPTH} if self.tokenization is Tokenization.FUSED else None,
            "query_compiler_version": QUERY_COMPILER_VERSION,
        }

    def search_all(self, requests: Sequence[SearchRequest]) -> list[list[Hit]]:
        return [self.search(request.text, request.limit) for request in requests]

    def search(self, text: str, limit: int) -> list[Hit]:
        compiled = compile_query(text)
        if compiled is None:
            return []
        weights = self.weights.as_tuple()
        depth = max(limit, FUSION_DEPTH)
        rankings = []
        if self.tokenization in (Tokenization.FUSED, Tokenization.WORD) and compiled.word is not None:
            rankings.append(self.index.search("fts_word", compiled.word, weights, depth))
        if self.tokenization in (Tokenization.FUSED, Tokenization.TRIGRAM) and compiled.trigram is not None:
            rankings.append(self.index.search("fts_trigram", compiled.trigram, weights, depth))
        if self.tokenization is not Tokenization.FUSED:
            rows = rankings[0] if rankings else []
            return [Hit(rank, path, heading, score) for rank, (_, path, heading, score) in enumerate(rows[:limit], 1)]
        return _fuse(rankings, limit)


def _fuse(rankings: list[list[tuple[int, str, str, float]]], limit: int) -> list[Hit]:
    scores: dict[int, float] = {}
    best_rank: dict[int, int] = {}
    located: dict[int, tuple[str, str]] = {}
    for rows in rankings:
        for rank, (chunk_id, path, heading, _) in enumerate(rows, 1):
            scores[chunk_id] = scores.get(chunk_id, 0.0) + 1.0 / (RRF_K + rank)
            best_rank[chunk_id] = min(best_rank.get(chunk_id, rank), rank)
            located[chunk_id] = (path, heading)
    # Ties (equal fused score) go to the better single-list rank, then to index order.
    order = sorted(scores, key=lambda c: (-scores[c], best_rank[c], c))[:limit]
    return [Hit(rank, *located[c], round(scores[c], 12)) for rank, c in enumerate(order, 1)]
