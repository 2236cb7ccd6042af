"""What a change put in front of reviewers that nobody has judged, and how far each ranking moved.

Pooling, as TREC pools systems: for each query in both runs, the top k of the compared (base)
run and of this (head) run are pooled. A document *entered* the top k when it is in the head's
top k and not in the base's; it is *unlabelled* when no expected entry of the query, of any
grade (`grade: 0` is a judgment), names its path. A document that entered with no label is
scored as a miss although nobody has said whether it answers; the reviewer is shown it, with the
golden-file lines that would judge it.

Rank-biased overlap (Webber, Moffat & Zobel, "A similarity measure for indefinite rankings",
ACM TOIS 28(4), 2010; the extrapolated RBO_ext of eq. 32, for lists of unequal length) compares
the two rankings of distinct documents with no judgment at all: 1 when they are the same, 0 when
they share nothing; persistence RBO_PERSISTENCE weighs the first 10 ranks at about 86%. It is
shown beside the judged verdict and never decides it.

Pure: two query records in, records out.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from scanner.evaluation.records import QueryRecord
from scanner.retrievers.base import Hit

RBO_PERSISTENCE = 0.9
"""p of RBO: the expected depth a reader looks to is 1 / (1 - p) = 10 ranks."""


@dataclass(frozen=True, slots=True)
class UnlabelledDocument:
    """A document that entered a query's top k and that no label judges."""

    path: str
    heading: str
    """The heading of its best-ranked section in the top k ("" for text before the first heading)."""
    rank: int
    """Its best rank in this run."""


@dataclass(frozen=True, slots=True)
class QueryPool:
    """One query's pooled top k: what entered it, what of that nobody judged, how far it moved."""

    query_id: str
    query: str
    line: int | None
    """The query's line in the golden file (where a snippet goes); None when not recorded."""
    k: int
    entered: tuple[str, ...]
    """Paths in this run's top k and not in the compared run's, best rank first."""
    unlabelled: tuple[UnlabelledDocument, ...]
    """Of `entered`, those no expected entry names."""
    rbo: float
    """Rank-biased overlap of the two returned lists of distinct documents (1: the same)."""

    @property
    def rests_on_unjudged(self) -> bool:
        return bool(self.unlabelled)


def distinct_documents(hits: Sequence[Hit]) -> list[Hit]:
    """The best-ranked hit of each path, in rank order: RBO and pooling compare documents."""
    seen: set[str] = set()
    first = []
    for hit in hits:
        if hit.path not in seen:
            seen.add(hit.path)
            first.append(hit)
    return first


def pool_query(current: QueryRecord, previous: QueryRecord, k: int) -> QueryPool:
    head = distinct_documents(current.hits[:k])
    before = {hit.path for hit in previous.hits[:k]}
    labelled = {member.path for entry in current.expected for member in entry.members}
    entered = [hit for hit in head if hit.path not in before]
    unlabelled = tuple(UnlabelledDocument(h.path, h.heading, h.rank) for h in entered if h.path not in labelled)
    score = rank_biased_overlap(
        [h.path for h in distinct_documents(current.hits)], [h.path for h in distinct_documents(previous.hits)]
    )
    return QueryPool(current.id, current.text, current.line, k, tuple(h.path for h in entered), unlabelled, score)


def rank_biased_overlap(first: Sequence[str], second: Sequence[str], p: float = RBO_PERSISTENCE) -> float:
    """RBO_ext (eq. 32 of Webber et al. 2010) of two rankings of distinct items.

    With s and l the shorter and longer lengths and X_d the overlap of the two prefixes of depth d
    (the shorter list whole past s):

        ((1-p)/p) * (sum_{d=1..l} X_d/d p^d + sum_{d=s+1..l} X_s (d-s)/(s d) p^d)
            + ((X_l - X_s)/l + X_s/s) p^l

    Two empty lists are the same ranking (1.0); one empty list shares nothing (0.0)."""
    short, long_ = (first, second) if len(first) <= len(second) else (second, first)
    s, l = len(short), len(long_)
    if l == 0:
        return 1.0
    if s == 0:
        return 0.0
    seen_short: set[str] = set()
    seen_long: set[str] = set()
    overlap = 0
    overlaps = [0] * (l + 1)
    for d in range(1, l + 1):
        item_long = long_[d - 1]
        if d <= s:
            item_short = short[d - 1]
            if item_short == item_long:
                overlap += 1
            else:
                overlap += (item_short in seen_long) + (item_long in seen_short)
            seen_short.add(item_short)
        elif item_long in seen_short:
            overlap += 1
        seen_long.add(item_long)
        overlaps[d] = overlap
    x_s, x_l = overlaps[s], overlaps[l]
    weighted = sum(overlaps[d] / d * p**d for d in range(1, l + 1))
    weighted += sum(x_s * (d - s) / (s * d) * p**d for d in range(s + 1, l + 1))
    value = (1 - p) / p * weighted + ((x_l - x_s) / l + x_s / s) * p**l
    return min(max(value, 0.0), 1.0)
