"""A pull request's findings told from the base commit's: what the pull request introduced, and
whose labelled answer it pushed down.

A finding at the head is *present at the base* when the base commit's corpus already had a finding
on the same document quoting at least the same golden queries: the pull request did not bring it,
so a reviewer is not asked about it again (no new annotation). A quoted query *newly displaces*
when this page ranks above the query's labelled answers now and did not at the base: a page that
already outranked the answer, or an answer that was already a miss, is not blamed on the page.
"""

from __future__ import annotations

from collections.abc import Mapping
from collections.abc import Set as AbstractSet
from dataclasses import dataclass

from scanner.compare.comparison import first_expected_rank
from scanner.evaluation.records import QueryRecord, RunRecord


@dataclass(frozen=True, slots=True)
class FindingAtBase:
    path: str
    present_at_base: bool
    """The base's corpus had a finding on this document quoting at least the same queries."""
    newly_displacing: tuple[str, ...]
    """Quoted query ids whose labelled answers this page outranks now and did not outrank at the
    base (the answer was found there, above this page or without it); in golden order."""


def findings_at_base(
    current: RunRecord,
    base: RunRecord,
    quoted_at_base: Mapping[str, tuple[str, ...]],
    unchanged: AbstractSet[str] = frozenset(),
    moved: Mapping[str, tuple[str, ...]] = {},
) -> tuple[FindingAtBase, ...]:
    """One entry per finding of `current`, in its order; `quoted_at_base` is the base's findings
    among the documents the pull request changed (each quoting document's path and the query ids
    it quotes), `unchanged` the documents the base holds with the same bytes (the base did not
    scan them again: their findings are the current ones), `moved` the base's findings on a
    document the pull request moved without editing, by its path here, `base` its run."""
    at_base = {path: set(ids) for path, ids in quoted_at_base.items()}
    for path, ids in moved.items():
        at_base.setdefault(path, set()).update(ids)
    base_queries = {query.id: query for query in base.queries or ()}
    result = []
    for located in current.findings:
        finding = located.finding
        quoted_ids = {quoted.query_id for quoted in finding.quoted}
        present = finding.path in unchanged or quoted_ids <= at_base.get(finding.path, set())
        newly = tuple(
            quoted.query_id
            for quoted in finding.quoted
            if quoted.displaces_expected and not _displaced_at_base(finding.path, base_queries.get(quoted.query_id))
        )
        result.append(FindingAtBase(finding.path, present, newly))
    return tuple(result)


def _displaced_at_base(path: str, query: QueryRecord | None) -> bool:
    """Whether, at the base, the query's labelled answers were already below this page or missing."""
    if query is None:
        return False  # a query the base did not have: nothing was displaced before
    answer = first_expected_rank(query)
    if answer is None:
        return True  # already a miss at the base
    page = next((hit.rank for hit in query.hits if hit.path == path), None)
    return page is not None and page < answer
