"""Ranking metrics, exactly as kb-mcp defines them (metric version 2), with graded labels and the
standard measures of trec_eval beside them.

Definitions (what a hit is, what counts, the empty cases):

- A hit *matches* an expected entry when the paths are equal and, if the entry
  pins a heading, the hit's heading equals it after trimming and lower-casing.
- An entry is *relevant* when its grade is at least the relevance level
  (`--relevance-level`, default 1; trec_eval's `-l`). An entry without `grade:` is
  grade 1, so with the default level an ungraded golden file reads as it always did.
- *Crediting* (the one walk behind nDCG, precision, AP and judged): walk the hits in
  rank order; each hit consumes at most one not-yet-consumed entry it matches (entries
  with a heading first, then higher grade first, then file order). A second chunk of
  an already-credited document consumes nothing: per document, as trec_eval counts
  a docno once.
- recall@k: relevant entries matched by any of the top k hits, divided by the
  number of relevant entries. Several chunks of one document match one
  path-only entry once: recall counts entries, not hits.
- reciprocal rank: 1 / rank of the first hit anywhere in the returned list that
  matches a relevant entry; 0 when none does (trec_eval's `recip_rank`, the list
  cut at the limit).
- nDCG@k: the grades are the gains, exactly as trec_eval's `ndcg_cut`: each
  credited hit in the top k adds grade / log2(rank + 1); IDCG is the same sum over
  the entries with a grade above 0, highest first, cut at k. The relevance level
  does not apply (trec_eval's `ndcg_cut` ignores `-l` too). With every grade 1 this
  is the binary nDCG of metric version 2, to the last bit.
- precision@k: relevant entries credited in the top k, divided by k (trec_eval `P_k`:
  k, not the number returned, even when fewer came back).
- success@k: 1 when any of the top k hits matches a relevant entry, else 0 (trec_eval
  `success_k`, ir_measures `Success@k`).
- average precision: over the credited relevant hits of the returned list, the
  precision at each one's rank, summed and divided by the number of relevant entries
  (trec_eval `map` per query); its mean over queries is MAP.
- judged@k: entries of any grade (0 included) credited in the top k, divided by the number
  of hits in the top k (ir_measures `Judged@k`, which divides by what came back, not by k):
  how much of the top k some label judges; 0 when nothing came back.

Aggregates are plain means over queries (macro average), as trec_eval's `all` row.

A query with no relevant entry (`expected: []`, which kb-mcp accepts, or entries all below the
relevance level) scores 0.0 on every metric, as kb-mcp's per-query functions return, and is left
out of every aggregate and of `query_count`, as kb-mcp's `aggregate_metrics` skips it (and as
trec_eval, which cannot average a recall over no relevant document): averaging in a zero that
measures nothing would lower the score of a golden set for holding a query that has no answer to find.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from scanner.golden.file import ExpectedEntry
from scanner.retrievers.base import Hit

METRIC_VERSION = 2
"""Unchanged by grades and the new measures: an ungraded file scores what it scored, and the grades
themselves are in the golden file's hash."""
DEFAULT_RELEVANCE_LEVEL = 1
"""trec_eval's default `-l`: grade 1 and above is relevant."""


@dataclass(frozen=True, slots=True)
class QueryMetrics:
    reciprocal_rank: float
    recall_at_k: dict[int, float]
    ndcg_at_k: dict[int, float]
    counted: bool = True
    """False when the query has no relevant entry: reported, and left out of every aggregate."""
    precision_at_k: dict[int, float] = field(default_factory=dict)
    """Empty in a row read from a run recorded before these measures (so: not compared)."""
    success_at_k: dict[int, float] = field(default_factory=dict)
    judged_at_k: dict[int, float] = field(default_factory=dict)
    average_precision: float | None = None
    """None in a row recorded before this measure."""


@dataclass(frozen=True, slots=True)
class Interval:
    """The bootstrap interval of one measure's mean (computed in metrics/uncertainty.py)."""

    measure: str
    """The report's key: mrr, map, recall_at_k, ndcg_at_k, precision_at_k, success_at_k, judged_at_k."""
    k: int | None
    low: float
    high: float


@dataclass(frozen=True, slots=True)
class AggregateMetrics:
    query_count: int
    mrr: float
    recall_at_k: dict[int, float]
    ndcg_at_k: dict[int, float]
    precision_at_k: dict[int, float] = field(default_factory=dict)
    """Empty in an aggregate read from a run recorded before these measures."""
    success_at_k: dict[int, float] = field(default_factory=dict)
    judged_at_k: dict[int, float] = field(default_factory=dict)
    map: float | None = None
    """Mean average precision; None in a run recorded before it."""
    intervals: tuple[Interval, ...] = ()
    """The bootstrap interval of each mean (metrics/uncertainty.py); empty when not computed
    (a compared run, a run read back from a history, no counted query)."""


def is_relevant(entry: ExpectedEntry, relevance_level: int = DEFAULT_RELEVANCE_LEVEL) -> bool:
    return entry.grade >= relevance_level


def relevant_entries(expected: Sequence[ExpectedEntry], relevance_level: int) -> list[ExpectedEntry]:
    return [entry for entry in expected if entry.grade >= relevance_level]


def hit_matches(hit: Hit, entry: ExpectedEntry) -> bool:
    if hit.path != entry.path:
        return False
    return entry.heading is None or hit.heading.strip().lower() == entry.heading.strip().lower()


def recall_at_k(
    hits: Sequence[Hit], expected: Sequence[ExpectedEntry], k: int, relevance_level: int = DEFAULT_RELEVANCE_LEVEL
) -> float:
    relevant = relevant_entries(expected, relevance_level)
    if not relevant:
        return 0.0
    top = hits[:k]
    found = sum(1 for entry in relevant if any(hit_matches(hit, entry) for hit in top))
    return found / len(relevant)


def reciprocal_rank(
    hits: Sequence[Hit], expected: Sequence[ExpectedEntry], relevance_level: int = DEFAULT_RELEVANCE_LEVEL
) -> float:
    relevant = relevant_entries(expected, relevance_level)
    for position, hit in enumerate(hits, 1):
        if any(hit_matches(hit, entry) for entry in relevant):
            return 1.0 / position
    return 0.0


def credited(hits: Sequence[Hit], entries: Sequence[ExpectedEntry]) -> list[tuple[int, ExpectedEntry]]:
    """(rank position, entry) for each hit that consumes an entry, in rank order (the walk the
    module docstring defines). Positions count from 1 over `hits` as given."""
    # Heading-pinned entries are offered first: a section hit should consume the entry that
    # names its section, leaving the path-only entry for another chunk of the same document.
    # Then the higher grade: a hit that matches two entries takes the larger gain, as the
    # ideal ranking would.
    pending = sorted(range(len(entries)), key=lambda i: (entries[i].heading is None, -entries[i].grade, i))
    result: list[tuple[int, ExpectedEntry]] = []
    for position, hit in enumerate(hits, 1):
        if not pending:
            break
        for slot, i in enumerate(pending):
            if hit_matches(hit, entries[i]):
                del pending[slot]
                result.append((position, entries[i]))
                break
    return result


def ndcg_at_k(hits: Sequence[Hit], expected: Sequence[ExpectedEntry], k: int) -> float:
    gaining = [entry for entry in expected if entry.grade > 0]
    dcg = 0.0
    for position, entry in credited(hits[:k], gaining):
        dcg += entry.grade / math.log2(position + 1)
    grades = sorted((entry.grade for entry in gaining), reverse=True)[:k]
    ideal = sum(grade / math.log2(i + 1) for i, grade in enumerate(grades, 1))
    return dcg / ideal if ideal else 0.0


def precision_at_k(
    hits: Sequence[Hit], expected: Sequence[ExpectedEntry], k: int, relevance_level: int = DEFAULT_RELEVANCE_LEVEL
) -> float:
    return len(credited(hits[:k], relevant_entries(expected, relevance_level))) / k


def success_at_k(
    hits: Sequence[Hit], expected: Sequence[ExpectedEntry], k: int, relevance_level: int = DEFAULT_RELEVANCE_LEVEL
) -> float:
    relevant = relevant_entries(expected, relevance_level)
    return 1.0 if any(hit_matches(hit, entry) for hit in hits[:k] for entry in relevant) else 0.0


def average_precision(
    hits: Sequence[Hit], expected: Sequence[ExpectedEntry], relevance_level: int = DEFAULT_RELEVANCE_LEVEL
) -> float:
    relevant = relevant_entries(expected, relevance_level)
    if not relevant:
        return 0.0
    walk = credited(hits, relevant)
    return math.fsum(found / position for found, (position, _) in enumerate(walk, 1)) / len(relevant)


def judged_at_k(hits: Sequence[Hit], expected: Sequence[ExpectedEntry], k: int) -> float:
    top = hits[:k]
    return len(credited(top, expected)) / len(top) if top else 0.0


def score_query(
    hits: Sequence[Hit],
    expected: Sequence[ExpectedEntry],
    ks: Sequence[int],
    relevance_level: int = DEFAULT_RELEVANCE_LEVEL,
) -> QueryMetrics:
    if not relevant_entries(expected, relevance_level):
        zero = {k: 0.0 for k in ks}
        return QueryMetrics(0.0, dict(zero), dict(zero), False, dict(zero), dict(zero), dict(zero), 0.0)
    return QueryMetrics(
        reciprocal_rank=reciprocal_rank(hits, expected, relevance_level),
        recall_at_k={k: recall_at_k(hits, expected, k, relevance_level) for k in ks},
        ndcg_at_k={k: ndcg_at_k(hits, expected, k) for k in ks},
        counted=True,
        precision_at_k={k: precision_at_k(hits, expected, k, relevance_level) for k in ks},
        success_at_k={k: success_at_k(hits, expected, k, relevance_level) for k in ks},
        judged_at_k={k: judged_at_k(hits, expected, k) for k in ks},
        average_precision=average_precision(hits, expected, relevance_level),
    )


def aggregate(per_query: Iterable[QueryMetrics], ks: Sequence[int]) -> AggregateMetrics:
    rows = [row for row in per_query if row.counted]
    n = len(rows)
    if n == 0:
        zero = {k: 0.0 for k in ks}
        return AggregateMetrics(0, 0.0, dict(zero), dict(zero), dict(zero), dict(zero), dict(zero), 0.0)
    return AggregateMetrics(
        query_count=n,
        mrr=math.fsum(r.reciprocal_rank for r in rows) / n,
        recall_at_k={k: math.fsum(r.recall_at_k[k] for r in rows) / n for k in ks},
        ndcg_at_k={k: math.fsum(r.ndcg_at_k[k] for r in rows) / n for k in ks},
        precision_at_k={k: math.fsum(r.precision_at_k[k] for r in rows) / n for k in ks},
        success_at_k={k: math.fsum(r.success_at_k[k] for r in rows) / n for k in ks},
        judged_at_k={k: math.fsum(r.judged_at_k[k] for r in rows) / n for k in ks},
        map=math.fsum(r.average_precision or 0.0 for r in rows) / n,
    )
