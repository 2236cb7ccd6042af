"""The embedded default: BM25 over the chunk fields (scanner/search/bm25.py), one analysis for every script.

English words are stemmed; Japanese and Chinese runs are indexed as character bigrams. The
previous default routed queries with CJK characters to an FTS5 trigram index; on real Japanese
and Chinese questions (docs/search-quality.md, ADR 0003) bigrams rank better, so there is one
index and no routing.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import Enum

from scanner.foundation.progress import progress
from scanner.retrievers.base import AnswerCost, AnswerNote, Hit, RetrieverKind, SearchRequest
from scanner.search.analysis import STEMMER
from scanner.search.bm25 import Bm25Parameters
from scanner.search.index import INDEXED_FIELDS, Index
from scanner.search.query_compiler import QUERY_COMPILER_VERSION, compile_query


class Tokenization(str, Enum):
    AUTO = "auto"
    """The default analysis: words (stemmed English), CJK runs as bigrams. Since query compiler 5
    the same for every script, as WORD is; kept so existing settings stay valid."""
    WORD = "word"
    """Words, CJK runs as bigrams, for every query."""


@dataclass(frozen=True, slots=True)
class FieldWeights:
    """How many times a term counts in each field (scanner/search/bm25.py). Heading 2, breadcrumb (the
    page's title, counted once whatever way the page writes it, and its parent headings) 3.5, body
    1, an eighth of the breadcrumb's weight scored as its own BM25 beside BM25F
    (`Bm25Parameters.alone`). Chosen on eight public collections, each written in the three
    title layouts; the only setting of its grid at or above every lexical baseline on all of them
    (docs/search-quality.md)."""

    heading: float = 2.0
    breadcrumb: float = 3.5
    body: float = 1.0

    def as_tuple(self) -> tuple[float, float, float]:
        return (self.heading, self.breadcrumb, self.body)


DEFAULT_PARAMETERS = Bm25Parameters()


class BuiltinRetriever:
    kind = RetrieverKind.BUILTIN
    path_prefixes: tuple[str, ...] = ()

    def __init__(
        self,
        index: Index,
        weights: FieldWeights = FieldWeights(),
        tokenization: Tokenization = Tokenization.AUTO,
        parameters: Bm25Parameters = DEFAULT_PARAMETERS,
        *,
        parents: bool = True,
    ) -> None:
        self.index = index
        self.weights = weights
        self.tokenization = tokenization
        self.parameters = parameters
        self.parents = parents
        """Whether each hit carries its enclosing headings (Hit.parents). Only `parent:` and
        `subsections:` labels read them (the pipeline says, evaluate.bind); otherwise they are not
        read from the chunk table nor split, and no hit is made again without them."""

    def describe(self) -> dict[str, object]:
        return {
            "name": self.kind.value,
            "engine": "bm25-sparse",
            "query_compiler_version": QUERY_COMPILER_VERSION,
            "tokenization": self.tokenization.value,
            "analysis": f"words, snowball {STEMMER} stemmer, english stopwords; cjk runs as bigrams, han characters as unigrams",
            "weights": {"heading": self.weights.heading, "breadcrumb": self.weights.breadcrumb, "body": self.weights.body},
            "bm25": {"k1": self.parameters.k1, "b": self.parameters.b},
            "alone": {field: share for field, share in zip(INDEXED_FIELDS, self.parameters.alone)},
        }

    def prepare(self, requests: Sequence[SearchRequest]) -> None:
        """Analyse the corpus and build the scorer, before the read snapshot starts."""
        if requests:
            self.index.scorer(self.weights.as_tuple(), self.parameters)

    def notes(self) -> tuple[AnswerNote, ...]:
        return ()

    def costs(self) -> tuple[AnswerCost, ...]:
        # Not timed: kb-eval's own search in this process is not the search a team runs, and an
        # untimed report stays the same bytes from one run to the next.
        return ()

    def close(self) -> None:
        return None

    def search_all(self, requests: Sequence[SearchRequest]) -> list[list[Hit]]:
        rankings = []
        with progress("answered", total=len(requests), unit="queries") as tick:
            for request in requests:
                rankings.append(self._ranked(request.text, request.limit))
                tick()
        if requests:
            # Every query is answered: the impacts kept between them (a pull request's head and
            # base compute some as queries ask, up to 16 MiB a layer) go back before the scan,
            # which at a pull request runs beside the other side's search.
            self.index.scorer(self.weights.as_tuple(), self.parameters).forget_impacts()
        # Where the hits sit, read for every query at once (a few statements of many ids), not
        # one statement per query.
        located = self.index.locate_chunks(
            sorted({position + 1 for ranked in rankings for position, _ in ranked}), parents=self.parents
        )
        return [_hits(ranked, located) for ranked in rankings]

    def search(self, text: str, limit: int) -> list[Hit]:
        ranked = self._ranked(text, limit)
        return _hits(ranked, self.index.locate_chunks([position + 1 for position, _ in ranked], parents=self.parents))

    def _ranked(self, text: str, limit: int) -> list[tuple[int, float]]:
        """(chunk position, score) of the best `limit` chunks for `text`."""
        compiled = compile_query(text)
        if compiled is None:
            return []
        scorer = self.index.scorer(self.weights.as_tuple(), self.parameters)
        vocabulary = self.index.analyzer.vocabulary
        terms = [(vocabulary[term], float(count)) for term, count in compiled.terms if term in vocabulary]
        return scorer.top(terms, limit)


def _hits(ranked: list[tuple[int, float]], located: dict[int, tuple[str, str, tuple[str, ...] | None]]) -> list[Hit]:
    # Scorer positions are 0-based in chunk-id order; chunk ids start at 1.
    return [
        Hit(rank, located[position + 1][0], located[position + 1][1], score, located[position + 1][2])
        for rank, (position, score) in enumerate(ranked, 1)
    ]
