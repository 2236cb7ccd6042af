"""Ranking metrics, exactly as kb-mcp defines them (metric version 2).

Definitions (what a hit is, what counts, the empty cases):

- A hit *matches* an expected entry when the paths are equal and, if the entry
  pins a heading, the hit's heading equals it as the reader sees it
  (`golden.headings.reader_heading`: inline code, emphasis, links and escapes
  removed, whitespace collapsed, case folded; kb-mcp trims and lower-cases).
  kb-eval's label forms: `parent:` also requires that heading among the hit's
  enclosing headings; `subsections: true` also accepts a hit in any section
  nested under the labelled one; a group (`any:`) is matched by a hit matching
  any of its members. Each entry, a group included, counts once below.
- recall@k: expected entries matched by any of the top k hits, divided by the
  number of expected entries. Several chunks of one document match one
  path-only entry once: recall counts entries, not hits.
- reciprocal rank: 1 / rank of the first hit anywhere in the returned list that
  matches any expected entry; 0 when none does (trec_eval's `recip_rank` with
  a binary qrel, when the list is cut at the limit).
- nDCG@k, binary gain: walk the top k hits in rank order; each hit consumes at
  most one not-yet-consumed expected entry it matches (entries with a heading
  first, then file order) and adds 1/log2(rank + 1). IDCG is the sum over
  i = 1..min(|expected|, k) of 1/log2(i + 1). A second chunk of an
  already-credited document gains nothing, which is where this differs from
  trec_eval's ndcg_cut on chunk-level runs (there each chunk is its own docno).

Aggregates are plain means over queries (macro average), as trec_eval's `all` row.

A query with no expected entry (`expected: []`, which kb-mcp accepts) scores 0.0 on every metric,
as kb-mcp's per-query functions return, and is left out of every aggregate and of `query_count`,
as kb-mcp's `aggregate_metrics` skips it: averaging in a zero that measures nothing would lower
the score of a golden set for holding a query that has no answer to find.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from scanner.golden.file import ExpectedEntry
from scanner.golden.headings import reader_heading
from scanner.retrievers.base import Hit

METRIC_VERSION = 2


@dataclass(frozen=True, slots=True)
class QueryMetrics:
    reciprocal_rank: float
    recall_at_k: dict[int, float]
    ndcg_at_k: dict[int, float]
    counted: bool = True
    """False when the query has no expected entry: reported, and left out of every aggregate."""


@dataclass(frozen=True, slots=True)
class AggregateMetrics:
    query_count: int
    mrr: float
    recall_at_k: dict[int, float]
    ndcg_at_k: dict[int, float]


def hit_matches(hit: Hit, entry: ExpectedEntry) -> bool:
    if entry.any_of:
        return any(_matches_one(hit, member) for member in entry.any_of)
    return _matches_one(hit, entry)


def _matches_one(hit: Hit, entry: ExpectedEntry) -> bool:
    if hit.path != entry.path:
        return False
    if entry.heading is None:
        return True
    wanted = reader_heading(entry.heading)
    own = reader_heading(hit.heading)
    if hit.parents is None:
        # Where the section sits is unknown (a retriever's heading its document repeats): the
        # heading alone decides, for `parent:` and `subsections:` labels too (docs/metrics.md).
        return own == wanted
    chain = [reader_heading(part) for part in hit.parents] + [own]
    parent = reader_heading(entry.parent) if entry.parent is not None else None
    # The labelled section is chain[i]; with `subsections` it may be any enclosing one.
    candidates = range(len(chain)) if entry.subsections else (len(chain) - 1,)
    return any(chain[i] == wanted and (parent is None or parent in chain[:i]) for i in candidates)


def _pins_heading(entry: ExpectedEntry) -> bool:
    return all(member.heading is not None for member in entry.members)


def recall_at_k(hits: Sequence[Hit], expected: Sequence[ExpectedEntry], k: int) -> float:
    if not expected:
        return 0.0
    top = hits[:k]
    found = sum(1 for entry in expected if any(hit_matches(hit, entry) for hit in top))
    return found / len(expected)


def reciprocal_rank(hits: Sequence[Hit], expected: Sequence[ExpectedEntry]) -> float:
    for position, hit in enumerate(hits, 1):
        if any(hit_matches(hit, entry) for entry in expected):
            return 1.0 / position
    return 0.0


def ndcg_at_k(hits: Sequence[Hit], expected: Sequence[ExpectedEntry], k: int) -> float:
    # Heading-pinned entries are offered first: a section hit should consume the entry that
    # names its section, leaving the path-only entry for another chunk of the same document.
    pending = sorted(range(len(expected)), key=lambda i: (not _pins_heading(expected[i]), i))
    dcg = 0.0
    for position, hit in enumerate(hits[:k], 1):
        for slot, i in enumerate(pending):
            if hit_matches(hit, expected[i]):
                del pending[slot]
                dcg += 1.0 / math.log2(position + 1)
                break
    ideal = sum(1.0 / math.log2(i + 1) for i in range(1, min(len(expected), k) + 1))
    return dcg / ideal if ideal else 0.0


def score_query(hits: Sequence[Hit], expected: Sequence[ExpectedEntry], ks: Sequence[int]) -> QueryMetrics:
    return QueryMetrics(
        reciprocal_rank=reciprocal_rank(hits, expected),
        recall_at_k={k: recall_at_k(hits, expected, k) for k in ks},
        ndcg_at_k={k: ndcg_at_k(hits, expected, k) for k in ks},
        counted=bool(expected),
    )


def aggregate(per_query: Iterable[QueryMetrics], ks: Sequence[int]) -> AggregateMetrics:
    rows = [row for row in per_query if row.counted]
    n = len(rows)
    if n == 0:
        return AggregateMetrics(0, 0.0, {k: 0.0 for k in ks}, {k: 0.0 for k in ks})
    return AggregateMetrics(
        query_count=n,
        mrr=math.fsum(r.reciprocal_rank for r in rows) / n,
        recall_at_k={k: math.fsum(r.recall_at_k[k] for r in rows) / n for k in ks},
        ndcg_at_k={k: math.fsum(r.ndcg_at_k[k] for r in rows) / n for k in ks},
    )
