"""The typed record of a run, from evaluation to the report.

`RunRecord` is what one evaluation measured; it is what the history keeps
and what a later run compares with (`scanner.compare.report.Report` holds it
with its comparison and the gate's verdict). Records are frozen; the JSON form
exists only in `scanner.report.document` (writing) and
`scanner.report.read` (reading an untrusted file back into a record).

A record read back from an older history may lack what a newer run records
(per-query rows, the corpus): those fields are `None` there, meaning
"not recorded", which is not the same as empty.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from scanner.evaluation.costs import AnswerCosts, summarise
from scanner.evaluation.health import GoldenHealth
from scanner.foundation.diagnostics import Diagnostic
from scanner.golden.file import ExpectedEntry
from scanner.metrics.measures import AggregateMetrics, QueryMetrics
from scanner.retrievers.base import AnswerCost, Hit
from scanner.scan.quotes import Finding, QuoteLocation, is_displacing
from scanner.search.index import CorpusSnapshot

JsonValue = object
"""A value as JSON holds it (fingerprints are compared as JSON, key by key)."""


@dataclass(frozen=True, slots=True)
class QueryRecord:
    """One golden query, what came back for it, and how it scored."""

    id: str
    text: str
    tags: tuple[str, ...]
    line: int | None
    """Line of the query in the golden file; None when read back from a file that lacks it."""
    expected: tuple[ExpectedEntry, ...]
    hits: tuple[Hit, ...]
    """The returned list, cut at the limit."""
    metrics: QueryMetrics
    answer: AnswerCost | None = None
    """How long the answer took and how large it was; None when not measured (the built-in search,
    a run file): never part of the fingerprint."""


@dataclass(frozen=True, slots=True)
class LocatedFinding:
    """A finding with each quoted query's first quotation placed on a source line."""

    finding: Finding
    locations: tuple[QuoteLocation, ...]
    """One per quoted query, in the same order as `finding.quoted`."""


@dataclass(frozen=True, slots=True)
class RunRecord:
    """What one run measured. Equal inputs give equal records (timestamp aside)."""

    tool_version: str
    timestamp: str
    """UTC, `%Y-%m-%dT%H:%M:%SZ`."""
    fingerprint: Mapping[str, JsonValue]
    """Every setting that changes the numbers (see scanner.compare.comparison); two runs are comparable
    exactly when their fingerprints are equal, key by key."""
    corpus: CorpusSnapshot | None
    aggregate: AggregateMetrics
    by_tag: tuple[tuple[str, AggregateMetrics], ...]
    queries: tuple[QueryRecord, ...] | None
    """None: a history entry written before per-query rows were kept."""
    findings: tuple[LocatedFinding, ...]
    warnings: tuple[Diagnostic, ...]
    health: GoldenHealth | None = None
    """What the golden set cannot test (evaluation/health.py); None for a run read back from a file."""

    @property
    def ks(self) -> tuple[int, ...]:
        """The cut-offs this run measured, ascending."""
        return tuple(sorted(self.aggregate.recall_at_k))

    @property
    def largest_k(self) -> int:
        return self.ks[-1]

    @property
    def limit(self) -> int | None:
        limit = self.fingerprint.get("limit")
        return limit if isinstance(limit, int) else None

    @property
    def relevance_level(self) -> int:
        """The lowest grade counted as relevant; absent from the fingerprint at the default, 1."""
        level = self.fingerprint.get("relevance_level")
        return level if isinstance(level, int) and not isinstance(level, bool) else 1

    @property
    def retriever_name(self) -> str:
        name = self._retriever_setting("name")
        return str(name) if name is not None else "unknown"

    @property
    def answers(self) -> AnswerCosts | None:
        """The spread of the answers' time and size over every query; None when not measured."""
        return summarise([query.answer for query in self.queries or ()])

    @property
    def tokenization(self) -> str | None:
        """The built-in retriever's tokenization; None for another retriever."""
        tokenization = self._retriever_setting("tokenization")
        return str(tokenization) if tokenization else None

    def missed_queries(self) -> list[QueryRecord]:
        """The counted queries whose recall at the largest k is below 1, in golden order: what the
        text report and the summary list under "missed"."""
        largest = self.largest_k
        return [q for q in self.queries or () if q.metrics.counted and q.metrics.recall_at_k[largest] < 1.0]

    def _retriever_setting(self, key: str) -> JsonValue:
        # The fingerprint is read by key here and only here: a record read back from an older or
        # foreign file may lack any key, and every reader gets the same answer for that.
        retriever = self.fingerprint.get("retriever")
        return retriever.get(key) if isinstance(retriever, Mapping) else None


def displacing_first(findings: Sequence[LocatedFinding]) -> list[LocatedFinding]:
    """Findings that displaced a labelled answer first, each group in path order: a reader who
    reads only the first lines meets the harm the check exists to reveal. The JSON keeps path order."""
    return sorted(findings, key=lambda located: not is_displacing(located.finding))
