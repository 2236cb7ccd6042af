"""Ranking metrics, exactly as kb-mcp defines them (metric version 2), with graded labels and the
standard measures of trec_eval beside them.

Definitions (what a hit is, what counts, the empty cases):

- A hit *matches* an expected entry when the paths are equal and, if the entry
  pins a heading, the hit's heading equals it as the reader sees it
  (`golden.headings.reader_heading`: inline code, emphasis, links and escapes
  removed, whitespace collapsed, case folded; kb-mcp trims and lower-cases), or
  another form a reader may write it in (`heading_forms`: a table-of-contents
  label, the heading without an inline HTML badge).
  kb-eval's label forms: `parent:` also requires that heading among the hit's
  enclosing headings; `subsections: true` also accepts a hit in any section
  nested under the labelled one; a group (`any:`) is matched by a hit matching
  any of its members. Each entry, a group included, counts once below.
- An entry is *relevant* when its grade is at least the relevance level
  (`--relevance-level`, default 1; trec_eval's `-l`). An entry without `grade:` is
  grade 1, so with the default level an ungraded golden file reads as it always did.
  A group has one grade, the group's.
- *Crediting* (the one walk behind nDCG, precision, AP and judged): walk the hits in
  rank order; each hit consumes at most one not-yet-consumed entry it matches (entries
  whose every member pins a heading first, then higher grade first, then file order).
  A second chunk of an already-credited document consumes nothing: per document, as
  trec_eval counts a docno once.
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

Aggregates are plain means over queries (macro average), as trec_eval's `all` row: each measure's
entry in catalogue.py says how it aggregates, and `catalogue.aggregate` reads it.

A query with no relevant entry (`expected: []`, which kb-mcp accepts, or entries all below the
relevance level) scores 0.0 on every metric, as kb-mcp's per-query functions return, and is left
out of every aggregate and of `query_count`, as kb-mcp's `aggregate_metrics` skips it (and as
trec_eval, which cannot average a recall over no relevant document): averaging in a zero that
measures nothing would lower the score of a golden set for holding a query that has no answer to find.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

from scanner.golden.file import ExpectedEntry
from scanner.golden.headings import heading_forms, reader_heading
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


def relevant_entries(expected: Sequence[ExpectedEntry], relevance_level: int) -> list[ExpectedEntry]:
    return [entry for entry in expected if entry.grade >= relevance_level]


def _pins_heading(entry: ExpectedEntry) -> bool:
    return all(member.heading is not None for member in entry.members)


_Key = tuple[str, str | None, str | None, bool]
"""What a hit must carry to match a member: path, heading and parent as the reader sees them, and
whether sections nested under the heading count."""


class Judgments:
    """One query's entries, indexed by what a hit must carry to match them.

    Matching a ranking entry by entry would cost the ranking's length times the number of entries
    (a golden file can list tens of thousands under one query, and `limit` allows 1,000 hits).
    Here a hit looks up the few keys it could match (its path, with its heading and each enclosing
    one: at most the depth of a heading squared), and each bucket of entries is walked once."""

    def __init__(self, entries: Sequence[ExpectedEntry]) -> None:
        self.entries = tuple(entries)
        order = sorted(range(len(self.entries)), key=self._priority)
        self._buckets: dict[_Key, list[int]] = {}
        self._by_heading: dict[tuple[str, str], list[int]] = {}
        """For a hit whose place is unknown (no `parents`): the heading alone decides, for `parent:`
        and `subsections:` labels too (docs/metrics.md)."""
        for i in order:  # each bucket in crediting order
            for key in dict.fromkeys(self._key(member) for member in self.entries[i].members):
                bucket = self._buckets.setdefault(key, [])
                if not bucket or bucket[-1] != i:
                    bucket.append(i)
                path, wanted, _, _ = key
                if wanted is not None:
                    loose = self._by_heading.setdefault((path, wanted), [])
                    if not loose or loose[-1] != i:
                        loose.append(i)
        self._paths = {key[0] for key in self._buckets}
        self._forms: dict[str, tuple[str, ...]] = {}
        """Each heading's forms, made once per query: its walks read the same hits."""

    def _priority(self, i: int) -> tuple[bool, int, int]:
        # Heading-pinned entries are offered first: a section hit should consume the entry that
        # names its section, leaving the path-only entry for another chunk of the same document.
        # Then the higher grade: a hit that matches two entries takes the larger gain, as the
        # ideal ranking would.
        entry = self.entries[i]
        return (not _pins_heading(entry), -entry.grade, i)

    @staticmethod
    def _key(member: ExpectedEntry) -> _Key:
        if member.heading is None:
            return (member.path, None, None, False)
        parent = reader_heading(member.parent) if member.parent is not None else None
        return (member.path, reader_heading(member.heading), parent, member.subsections)

    def buckets_of(self, hit: Hit) -> list[list[int]]:
        """The buckets holding every entry `hit` matches (an entry may sit in more than one)."""
        if hit.path not in self._paths:
            return []
        found = [self._buckets.get((hit.path, None, None, False))]
        # Each heading in every form a reader may write it in (golden.headings.heading_forms).
        own = self._forms_of(hit.heading)
        if hit.parents is None:
            found.extend(self._by_heading.get((hit.path, form)) for form in own)
        else:
            chain = [self._forms_of(part) for part in hit.parents] + [own]
            last = len(chain) - 1
            for i, forms in enumerate(chain):
                above = {parent for enclosing in chain[:i] for parent in enclosing}
                for heading in forms:
                    for subsections in ((False, True) if i == last else (True,)):
                        found.append(self._buckets.get((hit.path, heading, None, subsections)))
                        found.extend(self._buckets.get((hit.path, heading, parent, subsections)) for parent in above)
        # A bucket reached through two forms is one bucket.
        return list({id(bucket): bucket for bucket in found if bucket}.values())

    def _forms_of(self, heading: str) -> tuple[str, ...]:
        if heading not in self._forms:
            self._forms[heading] = heading_forms(heading)
        return self._forms[heading]

    def first_positions(self, hits: Sequence[Hit]) -> list[int | None]:
        """For each entry, the position (from 1, over `hits` as given) of the first hit matching it."""
        first: list[int | None] = [None] * len(self.entries)
        seen: set[int] = set()
        for position, hit in enumerate(hits, 1):
            for bucket in self.buckets_of(hit):
                if id(bucket) in seen:  # every entry in it already has an earlier position
                    continue
                seen.add(id(bucket))
                for i in bucket:
                    if first[i] is None:
                        first[i] = position
        return first

    def credited(self, hits: Sequence[Hit]) -> list[tuple[int, ExpectedEntry]]:
        """(position, entry) for each hit that consumes an entry, in rank order (the crediting walk
        of the module docstring): each hit takes the first entry in crediting order not yet taken
        among those it matches."""
        taken = [False] * len(self.entries)
        start: dict[int, int] = {}
        """Per bucket, how far its taken entries reach: each bucket's front is skipped once."""
        result: list[tuple[int, ExpectedEntry]] = []
        left = len(self.entries)
        for position, hit in enumerate(hits, 1):
            if not left:
                break
            best: int | None = None
            for bucket in self.buckets_of(hit):
                at = start.get(id(bucket), 0)
                while at < len(bucket) and taken[bucket[at]]:
                    at += 1
                start[id(bucket)] = at
                if at < len(bucket) and (best is None or self._priority(bucket[at]) < self._priority(best)):
                    best = bucket[at]
            if best is not None:
                taken[best] = True
                left -= 1
                result.append((position, self.entries[best]))
        return result


def _first_match(positions: Sequence[int | None]) -> int | None:
    return min((position for position in positions if position is not None), default=None)


def credited(hits: Sequence[Hit], entries: Sequence[ExpectedEntry]) -> list[tuple[int, ExpectedEntry]]:
    """(rank position, entry) for each hit that consumes an entry, in rank order (the walk the
    module docstring defines). Positions count from 1 over `hits` as given."""
    return Judgments(entries).credited(hits)


def _ndcg(walk: Sequence[tuple[int, ExpectedEntry]], gaining: Sequence[ExpectedEntry], k: int) -> float:
    dcg = 0.0
    for position, entry in walk:
        if position <= k:
            dcg += entry.grade / math.log2(position + 1)
    grades = sorted((entry.grade for entry in gaining), reverse=True)[:k]
    ideal = sum(grade / math.log2(i + 1) for i, grade in enumerate(grades, 1))
    return dcg / ideal if ideal else 0.0


def _average_precision(walk: Sequence[tuple[int, ExpectedEntry]], relevant: int) -> float:
    return math.fsum(found / position for found, (position, _) in enumerate(walk, 1)) / relevant if relevant else 0.0


def _same_entries(these: Sequence[ExpectedEntry], those: Sequence[ExpectedEntry]) -> bool:
    """The same entries in the same order: the crediting walk over them is the same walk."""
    return len(these) == len(those) and all(a is b for a, b in zip(these, those))


def score_query(
    hits: Sequence[Hit],
    expected: Sequence[ExpectedEntry],
    ks: Sequence[int],
    relevance_level: int = DEFAULT_RELEVANCE_LEVEL,
) -> QueryMetrics:
    """Every measure of one query, from one index of its entries per walk: the crediting walk over
    the whole list gives every cutoff's, since the walk over the top k is its prefix."""
    relevant = relevant_entries(expected, relevance_level)
    if not relevant:
        zero = {k: 0.0 for k in ks}
        return QueryMetrics(0.0, dict(zero), dict(zero), False, dict(zero), dict(zero), dict(zero), 0.0)
    gaining = [entry for entry in expected if entry.grade > 0]
    judgments = Judgments(relevant)
    first = judgments.first_positions(hits)
    found = _first_match(first)
    walk = judgments.credited(hits)
    # The three walks differ only where the entries do (a grade 0 entry, a level above 1): with
    # the same entries, the same walk is taken once, not three times.
    gain_walk = walk if _same_entries(gaining, relevant) else Judgments(gaining).credited(hits)
    judged_walk = (
        walk if _same_entries(expected, relevant)
        else gain_walk if _same_entries(expected, gaining) else Judgments(expected).credited(hits)
    )
    shown = {k: min(k, len(hits)) for k in ks}
    return QueryMetrics(
        reciprocal_rank=1.0 / found if found is not None else 0.0,
        recall_at_k={k: sum(1 for p in first if p is not None and p <= k) / len(relevant) for k in ks},
        ndcg_at_k={k: _ndcg(gain_walk, gaining, k) for k in ks},
        counted=True,
        precision_at_k={k: sum(1 for p, _ in walk if p <= k) / k for k in ks},
        success_at_k={k: 1.0 if found is not None and found <= k else 0.0 for k in ks},
        judged_at_k={k: sum(1 for p, _ in judged_walk if p <= k) / shown[k] if shown[k] else 0.0 for k in ks},
        average_precision=_average_precision(walk, len(relevant)),
    )


