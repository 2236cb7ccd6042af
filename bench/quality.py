"""nDCG@k of a ranked list of (path, heading) hits against a golden query's expected entries.

Used for every system in the benchmark, so the figures are comparable. When
kb-eval's own metric functions are importable they are used instead (see
`ndcg_function`), so "kb-eval's nDCG" means the same thing in the harness as
in kb-eval's report.

Semantics of the fallback (binary gains, as trec_eval's ndcg_cut with
relevance 1): a hit is relevant when its path equals an expected entry's
path and, if that entry names a heading, its heading equals it. Each expected
entry earns its gain once, at the first hit that matches it; later hits
matching the same entry earn nothing. The ideal ranking puts one hit per
expected entry first. No expected entries: nDCG is 0.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from statistics import fmean

Expected = Sequence[tuple[str, str | None]]
Ranking = Sequence[tuple[str, str]]


def ndcg_at_k(ranking: Ranking, expected: Expected, k: int) -> float:
    if not expected:
        return 0.0
    credited = [False] * len(expected)
    dcg = 0.0
    for rank, (path, heading) in enumerate(ranking[:k], start=1):
        for i, (want_path, want_heading) in enumerate(expected):
            if not credited[i] and path == want_path and (want_heading is None or heading == want_heading):
                credited[i] = True
                dcg += 1.0 / math.log2(rank + 1)
                break
    ideal = sum(1.0 / math.log2(rank + 1) for rank in range(1, min(len(expected), k) + 1))
    return dcg / ideal


def kb_eval_ndcg_at_k(ranking: Ranking, expected: Expected, k: int) -> float:
    """kb-eval's own nDCG@k (scanner.metrics.measures), fed the same (path, heading) lists."""
    from scanner.golden.file import ExpectedEntry
    from scanner.metrics.measures import score_query
    from scanner.retrievers.base import Hit

    hits = [Hit(rank, path, heading, None) for rank, (path, heading) in enumerate(ranking, 1)]
    entries = [ExpectedEntry(path, heading, 0) for path, heading in expected]
    return score_query(hits, entries, (k,)).ndcg_at_k[k]


def best_ndcg_function() -> tuple[Callable[[Ranking, Expected, int], float], str]:
    try:
        import scanner.metrics.measures  # noqa: F401
    except ImportError:
        return ndcg_at_k, "bench/quality.py ndcg_at_k"
    return kb_eval_ndcg_at_k, "scanner.metrics.measures.ndcg_at_k"


def mean_ndcg(
    rankings: dict[str, Ranking],
    expected: dict[str, Expected],
    query_ids: Sequence[str],
    k: int = 10,
    metric: Callable[[Ranking, Expected, int], float] = ndcg_at_k,
) -> float | None:
    """Mean over `query_ids`; a query the system did not answer scores 0. None for no queries."""
    if not query_ids:
        return None
    return fmean(metric(rankings.get(qid, []), expected[qid], k) for qid in query_ids)
