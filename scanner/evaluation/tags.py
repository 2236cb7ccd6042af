"""The per-tag aggregates: which tags get one, and which get a bootstrap interval.

A golden file of 52 KB can give each of its queries a tag of its own: 5,000 tags were 5,000
aggregates, each found by a pass over every query, and a 9 MB report whose validation took most
of 74 s. Here queries are grouped by tag in one pass, at most MAX_TAGS_AGGREGATED tags get an
aggregate (the rest are named in one warning), and only a tag with MIN_QUERIES_FOR_INTERVAL
counted queries is bootstrapped: an interval over a handful of queries says nothing, and costs
as much as one over many.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from scanner.evaluation.records import QueryRecord
from scanner.foundation.diagnostics import DiagnosticCode, Diagnostics
from scanner.metrics.catalogue import aggregate
from scanner.metrics.measures import AggregateMetrics

MAX_TAGS_AGGREGATED = 100
"""Tags with an aggregate of their own in one run: those carried by the most queries (ties by
name). Each is a few hundred bytes of the report per cut-off, and a golden file organised by tag
has tens of them. Past the cap, one warning counts and names the tags left out."""

MIN_QUERIES_FOR_INTERVAL = 10
"""Counted queries a tag needs for its bootstrap interval: with fewer, the resampled means take
a handful of values and the percentile interval is mostly the spread of those few queries."""

NAMED_IN_WARNING = 5
"""Tags left out that the warning names; the rest are counted."""


def queries_by_tag(queries: Sequence[QueryRecord]) -> dict[str, list[QueryRecord]]:
    """Each tag's queries, in golden-file order, in one pass (a query's repeated tag counts once)."""
    grouped: dict[str, list[QueryRecord]] = {}
    for query in queries:
        for tag in dict.fromkeys(query.tags):
            grouped.setdefault(tag, []).append(query)
    return grouped


def aggregate_by_tag(
    queries: Sequence[QueryRecord], ks: Sequence[int], diagnostics: Diagnostics
) -> tuple[tuple[str, AggregateMetrics], ...]:
    """The aggregate of each tag kept (sorted by tag), and a `tags-capped` warning when some are not."""
    grouped = queries_by_tag(queries)
    ranked = sorted(grouped, key=lambda tag: (-len(grouped[tag]), tag))
    kept, left_out = sorted(ranked[:MAX_TAGS_AGGREGATED]), ranked[MAX_TAGS_AGGREGATED:]
    if left_out:
        named = ", ".join(repr(tag) for tag in sorted(left_out)[:NAMED_IN_WARNING])
        more = f" and {len(left_out) - NAMED_IN_WARNING} more" if len(left_out) > NAMED_IN_WARNING else ""
        diagnostics.warn(
            DiagnosticCode.TAGS_CAPPED,
            f"the golden queries carry {len(grouped)} tags; the {MAX_TAGS_AGGREGATED} carried by the most queries "
            f"have an aggregate of their own, {len(left_out)} have none ({named}{more}); their queries still "
            "count in the overall means",
        )
    return tuple((tag, aggregate((q.metrics for q in grouped[tag]), ks)) for tag in kept)


def with_tag_intervals(
    by_tag: Sequence[tuple[str, AggregateMetrics]],
    queries: Sequence[QueryRecord],
    bootstrapped: Callable[[AggregateMetrics, Sequence[QueryRecord]], AggregateMetrics],
) -> tuple[tuple[str, AggregateMetrics], ...]:
    """`by_tag` with `bootstrapped` applied to each tag with enough counted queries."""
    grouped = queries_by_tag(queries)
    return tuple(
        (tag, bootstrapped(metrics, grouped.get(tag, [])) if metrics.query_count >= MIN_QUERIES_FOR_INTERVAL else metrics)
        for tag, metrics in by_tag
    )
