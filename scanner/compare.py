"""Comparing this run with a previous one: only what is comparable, and what changed.

Two runs are comparable when their fingerprints are equal: the fingerprint holds
every setting that changes the numbers (retriever and its settings, limit, k
values, golden file hash, metric and query-compiler versions). Equality is
checked over every key, so a fingerprint key added later is never ignored; a
run recorded before that key existed is not comparable (a missing setting may
have had another value).

The corpus snapshot and the findings are deliberately NOT in the fingerprint:
a knowledge base grows every day, and if a new document made runs incomparable
the gate would go quiet exactly when a change might have hurt retrieval. A
changed corpus is reported instead (`corpus_changed`), so a reader knows a
delta may come from the corpus rather than from retrieval.

Everything here is pure: run records in (as validated by
`scanner.runrecord`), frozen records out, and `to_json()` fragments for the
report keys `previous`, `diff`, `corpus_changed` and `comparison`.
"""

from __future__ import annotations

import enum
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from scanner.runrecord import run_record_problems

DELTA_DECIMALS = 10
"""Deltas are rounded to 10 decimals: 0.80 - 0.75 is 0.05000000000000004 in floating
point, and float noise must not decide whether a drop is over the gate threshold.
Metrics are means over at most tens of thousands of queries, far coarser than 1e-10."""

_NAMED_FINGERPRINT_KEYS = (
    "golden_sha256",
    "retriever",
    "limit",
    "k",
    "metric_version",
    "query_compiler_version",
)
"""Keys with a purpose-written reason, in the order reasons are listed."""

_MAX_VALUE_CHARS = 60
"""Values quoted in a reason are cut here: they come from files a pull request controls."""


class ComparisonStatus(enum.Enum):
    COMPARED = "compared"
    """A previous run with an equal fingerprint was found and compared."""
    NO_PREVIOUS = "no-previous"
    """Nothing to compare with (no history yet, history disabled, or it started fresh)."""
    INCOMPARABLE = "incomparable"
    """Previous runs exist but none has this run's fingerprint; `reasons` say what differs."""


MetricFamily = Literal["mrr", "recall", "ndcg"]


@dataclass(frozen=True, slots=True)
class Metric:
    """One aggregate metric: MRR, or recall/nDCG at one k."""

    family: MetricFamily
    k: int | None
    """The cut-off for recall and nDCG; None for MRR."""

    @property
    def label(self) -> str:
        """How people read it: MRR, recall@5, nDCG@10."""
        if self.family == "mrr":
            return "MRR"
        return f"{'recall' if self.family == 'recall' else 'nDCG'}@{self.k}"

    def in_aggregate(self, aggregate: Mapping[str, Any]) -> float | None:
        """The value in a report's `aggregate` object, None when that run did not record it."""
        if self.family == "mrr":
            return _number(aggregate.get("mrr"))
        return _at_k(aggregate.get(f"{self.family}_at_k"), self.k)

    def in_query(self, metrics: Mapping[str, Any]) -> float | None:
        """The value in a per-query `metrics` object (MRR's per-query value is `rr`)."""
        if self.family == "mrr":
            return _number(metrics.get("rr"))
        return _at_k(metrics.get(f"{self.family}_at_k"), self.k)


def _number(value: object) -> float | None:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    return None


def _at_k(values: object, k: int | None) -> float | None:
    if not isinstance(values, Mapping) or k is None:
        return None
    return _number(values.get(str(k)))


@dataclass(frozen=True, slots=True)
class MetricDelta:
    """How one metric moved between the previous run and this one."""

    metric: Metric
    previous: float
    current: float

    @property
    def delta(self) -> float:
        """current - previous, rounded to DELTA_DECIMALS; negative means it got worse."""
        return round(self.current - self.previous, DELTA_DECIMALS)

    def to_json(self) -> dict[str, float]:
        return {"previous": self.previous, "current": self.current, "delta": self.delta}


@dataclass(frozen=True, slots=True)
class QueryDelta:
    """One golden query present in both runs (matched by id) and how its metrics moved."""

    query_id: str
    query: str | None
    """The query text as this run recorded it."""
    deltas: tuple[MetricDelta, ...]
    """Every metric both runs recorded for this query, in aggregate order."""

    @property
    def status(self) -> Literal["worse", "better", "mixed", "unchanged"]:
        """worse: some metric fell and none rose; better: the reverse; mixed: both."""
        fell = any(d.delta < 0 for d in self.deltas)
        rose = any(d.delta > 0 for d in self.deltas)
        if fell and rose:
            return "mixed"
        if fell:
            return "worse"
        if rose:
            return "better"
        return "unchanged"

    def delta_of(self, metric: Metric) -> MetricDelta | None:
        for delta in self.deltas:
            if delta.metric == metric:
                return delta
        return None

    def to_json(self) -> dict[str, object]:
        deltas: dict[str, Any] = {}
        for delta in self.deltas:
            if delta.metric.family == "mrr":
                deltas["rr"] = delta.to_json()
            else:
                deltas.setdefault(f"{delta.metric.family}_at_k", {})[str(delta.metric.k)] = delta.to_json()
        return {
            "id": self.query_id,
            "query": self.query,
            "status": self.status,
            "metrics": deltas,
        }


@dataclass(frozen=True, slots=True)
class CorpusChange:
    """Whether the corpus moved between the two runs (it never makes them incomparable)."""

    changed: bool | None
    """True/False when both runs recorded a corpus; None when the previous one did not (unknown)."""
    description: str
    """`642 -> 646 documents`, `same counts, different contents`, `unchanged`, or why unknown."""

    def to_json(self) -> dict[str, object]:
        return {"changed": self.changed, "description": self.description}


@dataclass(frozen=True, slots=True)
class Comparison:
    """The result of comparing this run with a previous one (or of finding none)."""

    status: ComparisonStatus
    reasons: tuple[str, ...]
    """Why nothing was compared (no-previous / incomparable); empty when compared."""
    source: Literal["history", "baseline"] | None
    """Where the previous run came from; None when there was nowhere to look."""
    previous: Mapping[str, Any] | None
    """The compared run record, only when status is COMPARED."""
    metric_deltas: tuple[MetricDelta, ...]
    """Every aggregate metric both runs recorded: MRR, recall@k and nDCG@k for each k."""
    query_deltas: tuple[QueryDelta, ...]
    """Every query in both runs, in this run's order."""
    only_in_current: tuple[str, ...]
    """Query ids this run has and the previous one did not."""
    only_in_previous: tuple[str, ...]
    corpus: CorpusChange | None
    """None when nothing was compared."""

    @property
    def compared(self) -> bool:
        return self.status is ComparisonStatus.COMPARED

    def worst_queries(self, metric: Metric, limit: int = 5) -> list[tuple[str, float]]:
        """The queries whose value of `metric` fell the most, largest drop first."""
        drops = []
        for query in self.query_deltas:
            delta = query.delta_of(metric)
            if delta is not None and delta.delta < 0:
                drops.append((query.query_id, delta.delta))
        drops.sort(key=lambda item: (item[1], item[0]))
        return drops[:limit]

    def paired_values(self, metric: Metric) -> tuple[list[float], list[float]]:
        """Per-query (current, previous) values of `metric` over the matched queries."""
        current: list[float] = []
        previous: list[float] = []
        for query in self.query_deltas:
            delta = query.delta_of(metric)
            if delta is not None:
                current.append(delta.current)
                previous.append(delta.previous)
        return current, previous

    # --- report fragments --------------------------------------------------

    def to_json(self) -> dict[str, Any]:
        """The four report keys this comparison fills, every key every time."""
        return {
            "previous": self.previous_json(),
            "diff": self.diff_json(),
            "corpus_changed": self.corpus_changed_json(),
            "comparison": self.comparison_json(),
        }

    def previous_json(self) -> dict[str, Any] | None:
        if self.previous is None:
            return None
        corpus = self.previous.get("corpus")
        return {
            "source": self.source,
            "timestamp": self.previous.get("timestamp"),
            "fingerprint": self.previous.get("fingerprint"),
            "corpus": corpus if isinstance(corpus, dict) else None,
            "aggregate": self.previous.get("aggregate"),
        }

    def diff_json(self) -> dict[str, Any] | None:
        if not self.compared:
            return None
        aggregate: dict[str, Any] = {}
        for delta in self.metric_deltas:
            if delta.metric.family == "mrr":
                aggregate["mrr"] = delta.to_json()
            else:
                aggregate.setdefault(f"{delta.metric.family}_at_k", {})[str(delta.metric.k)] = delta.to_json()
        by_status: dict[str, list[str]] = {"worse": [], "better": [], "mixed": []}
        changed_rows = []
        unchanged = 0
        for query in self.query_deltas:
            status = query.status
            if status == "unchanged":
                unchanged += 1
                continue
            by_status[status].append(query.query_id)
            changed_rows.append(query)
        # Largest single drop first, so the rows a reader needs are at the top.
        changed_rows.sort(key=lambda q: min((d.delta for d in q.deltas), default=0.0))
        return {
            "aggregate": aggregate,
            "queries": {
                "worse": by_status["worse"],
                "better": by_status["better"],
                "mixed": by_status["mixed"],
                "unchanged": unchanged,
                "only_in_current": list(self.only_in_current),
                "only_in_previous": list(self.only_in_previous),
            },
            "per_query": [query.to_json() for query in changed_rows],
            "corpus": self.corpus.to_json() if self.corpus else None,
        }

    def corpus_changed_json(self) -> bool | None:
        """True/False when compared and both corpora are known; None otherwise (not False)."""
        if not self.compared or self.corpus is None:
            return None
        return self.corpus.changed

    def comparison_json(self) -> dict[str, object]:
        return {
            "status": self.status.value,
            "source": self.source,
            "reasons": list(self.reasons),
        }

    def corpus_note(self) -> str | None:
        """The sentence the text report, the job summary and an annotation carry when the
        corpus changed (or when it is unknown whether it did); None otherwise."""
        if not self.compared or self.corpus is None or self.corpus.changed is False:
            return None
        if self.corpus.changed is None:
            return f"Whether the corpus changed since the compared run is unknown ({self.corpus.description})."
        return (
            f"The corpus changed since the compared run ({self.corpus.description}): "
            "a delta may reflect the corpus, not retrieval."
        )

    def text_lines(self) -> list[str]:
        """Lines for the text report (and the summary) describing the comparison."""
        if self.status is ComparisonStatus.NO_PREVIOUS:
            return ["No comparison: " + "; ".join(self.reasons)]
        if self.status is ComparisonStatus.INCOMPARABLE:
            return ["Not compared with the previous run, because:"] + [f"  - {reason}" for reason in self.reasons]
        assert self.previous is not None  # COMPARED always carries the run (see compare_runs)
        lines = [f"Compared with the {self.source} run of {self.previous.get('timestamp')}:"]
        for delta in self.metric_deltas:
            lines.append(f"  {delta.metric.label:<10} {delta.previous:.4f} -> {delta.current:.4f} ({delta.delta:+.4f})")
        note = self.corpus_note()
        if note is not None:
            lines.append(f"  {note}")
        worse = [q.query_id for q in self.query_deltas if q.status == "worse"]
        better = [q.query_id for q in self.query_deltas if q.status == "better"]
        if worse:
            lines.append(f"  Worse: {', '.join(worse[:10])}" + (" ..." if len(worse) > 10 else ""))
        if better:
            lines.append(f"  Better: {', '.join(better[:10])}" + (" ..." if len(better) > 10 else ""))
        return lines


# --- choosing what to compare with -----------------------------------------------


def fingerprint_differences(
    current: Mapping[str, Any],
    previous: Mapping[str, Any],
    against: str = "the previous run",
) -> list[str]:
    """Why two fingerprints are not equal, one human reason per differing key; empty if equal.

    `against` names the previous run in the reasons ("the previous run", "the baseline").
    Values are quoted as `previous vs current`.
    """
    reasons: list[str] = []
    keys = [key for key in _NAMED_FINGERPRINT_KEYS if key in current or key in previous]
    keys += sorted(key for key in {*current, *previous} if key not in _NAMED_FINGERPRINT_KEYS)
    order = f"({against} vs this run)"
    for key in keys:
        if key not in previous:
            reasons.append(f"fingerprint field {_show(key)} is not recorded in {against}")
            continue
        if key not in current:
            reasons.append(f"fingerprint field {_show(key)} is recorded in {against} but not in this run")
            continue
        old, new = previous[key], current[key]
        if _same(old, new):
            continue
        if key == "golden_sha256":
            reasons.append(f"golden changed since {against}")
        elif key == "limit":
            reasons.append(f"limit differs: {_show(old)} vs {_show(new)} {order}")
        elif key == "k":
            reasons.append(f"k values differ: {_show(old)} vs {_show(new)} {order}")
        elif key == "metric_version":
            reasons.append(f"metric version differs: {_show(old)} vs {_show(new)} {order}")
        elif key == "query_compiler_version":
            reasons.append(f"query compiler version differs: {_show(old)} vs {_show(new)} {order}")
        elif key == "retriever" and isinstance(old, Mapping) and isinstance(new, Mapping):
            for part in sorted({*old, *new}):
                if part not in old or part not in new or not _same(old[part], new[part]):
                    reasons.append(
                        f"retriever differs: {part} {_show(old.get(part))} vs {_show(new.get(part))} {order}"
                    )
        elif key == "retriever":
            reasons.append(f"retriever differs: {_show(old)} vs {_show(new)} {order}")
        else:
            reasons.append(f"fingerprint field {_show(key)} differs: {_show(old)} vs {_show(new)} {order}")
    return reasons


def _same(a: object, b: object) -> bool:
    # JSON equality: 10 == 10.0 is fine, but True must not equal 1.
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    return type(a) is type(b) and a == b or (isinstance(a, (int, float)) and isinstance(b, (int, float)) and a == b)


def _show(value: object) -> str:
    text = json.dumps(value, sort_keys=True, ensure_ascii=True)
    if len(text) > _MAX_VALUE_CHARS:
        text = text[: _MAX_VALUE_CHARS - 3] + "..."
    return text


def pick_comparable(
    current_fingerprint: Mapping[str, Any], runs: Sequence[Mapping[str, Any]]
) -> Mapping[str, Any] | None:
    """The newest run (runs are newest first) whose fingerprint equals this run's, or None."""
    for run in runs:
        fingerprint = run.get("fingerprint")
        if isinstance(fingerprint, Mapping) and _same(dict(fingerprint), dict(current_fingerprint)):
            return run
    return None


def no_previous(reason: str, source: Literal["history", "baseline"] | None = None) -> Comparison:
    """A comparison that did not happen because there was nothing to compare with."""
    return Comparison(ComparisonStatus.NO_PREVIOUS, (reason,), source, None, (), (), (), (), None)


def compare_with_history(current: Mapping[str, Any], runs: Sequence[Mapping[str, Any]]) -> Comparison:
    """Compare with the newest comparable run of the history (newest first)."""
    if not runs:
        return no_previous("no previous run in the history", "history")
    fingerprint = current.get("fingerprint", {})
    match = pick_comparable(fingerprint, runs)
    if match is not None:
        return compare_runs(current, match, "history")
    reasons = fingerprint_differences(fingerprint, runs[0]["fingerprint"], "the previous run")
    if len(runs) > 1:
        reasons.insert(
            0,
            f"none of the {len(runs)} runs in the history has this run's settings; the newest differs as follows",
        )
    return _incomparable(reasons, "history")


def compare_runs(
    current: Mapping[str, Any],
    previous: Mapping[str, Any],
    source: Literal["history", "baseline"] = "history",
) -> Comparison:
    """Compare this run with one previous run: incomparable unless the fingerprints are equal.

    The previous run is checked again here (every metric finite and in [0, 1]);
    one that fails is treated as unreadable content: nothing is compared, and the
    reason says so.
    """
    problems = run_record_problems(previous)
    if problems:
        return no_previous(f"the previous run cannot be compared: {'; '.join(problems)}", source)
    against = "the baseline" if source == "baseline" else "the previous run"
    reasons = fingerprint_differences(current.get("fingerprint", {}), previous["fingerprint"], against)
    if reasons:
        return _incomparable(reasons, source)

    metrics = _metrics_of(current.get("aggregate", {}))
    metric_deltas = []
    for metric in metrics:
        new = metric.in_aggregate(current.get("aggregate", {}))
        old = metric.in_aggregate(previous["aggregate"])
        if new is not None and old is not None:
            metric_deltas.append(MetricDelta(metric, old, new))

    previous_rows = {row["id"]: row for row in previous.get("per_query") or []}
    current_rows = current.get("per_query") or []
    current_ids = {row["id"] for row in current_rows}
    query_deltas = []
    for row in current_rows:
        old_row = previous_rows.get(row["id"])
        if old_row is None:
            continue
        deltas = []
        for metric in metrics:
            new = metric.in_query(row.get("metrics", {}))
            old = metric.in_query(old_row.get("metrics", {}))
            if new is not None and old is not None:
                deltas.append(MetricDelta(metric, old, new))
        query = row.get("query")
        query_deltas.append(QueryDelta(row["id"], query if isinstance(query, str) else None, tuple(deltas)))
    return Comparison(
        status=ComparisonStatus.COMPARED,
        reasons=(),
        source=source,
        previous=previous,
        metric_deltas=tuple(metric_deltas),
        query_deltas=tuple(query_deltas),
        only_in_current=tuple(r["id"] for r in current_rows if r["id"] not in previous_rows),
        only_in_previous=tuple(i for i in previous_rows if i not in current_ids),
        corpus=corpus_change(current.get("corpus"), previous.get("corpus")),
    )


def _incomparable(reasons: list[str], source: Literal["history", "baseline"]) -> Comparison:
    return Comparison(
        ComparisonStatus.INCOMPARABLE,
        tuple(reasons),
        source,
        None,
        (),
        (),
        (),
        (),
        None,
    )


def _metrics_of(aggregate: Mapping[str, Any]) -> list[Metric]:
    """Every metric in an aggregate, in report order: recall@k by k, MRR, nDCG@k by k."""
    metrics: list[Metric] = []
    for family in ("recall", "ndcg"):
        values = aggregate.get(f"{family}_at_k")
        if isinstance(values, Mapping):
            ks = sorted(int(k) for k in values if isinstance(k, str) and k.isdigit())
            metrics.extend(Metric(family, k) for k in ks)
        if family == "recall" and "mrr" in aggregate:
            metrics.append(Metric("mrr", None))
    return metrics


def corpus_change(current: object, previous: object) -> CorpusChange:
    """Describe how the corpus moved: counts first, then the content digest."""
    if not isinstance(previous, Mapping):
        return CorpusChange(None, "the previous run did not record its corpus")
    if not isinstance(current, Mapping):
        return CorpusChange(None, "this run did not record its corpus")
    parts = []
    for field in ("documents", "chunks"):
        old, new = previous.get(field), current.get(field)
        if isinstance(old, int) and isinstance(new, int) and old != new:
            parts.append(f"{old} -> {new} {field}")
    if parts:
        return CorpusChange(True, ", ".join(parts))
    old_digest, new_digest = previous.get("digest"), current.get("digest")
    if isinstance(old_digest, str) and isinstance(new_digest, str):
        if old_digest != new_digest:
            return CorpusChange(True, "same counts, different contents")
        return CorpusChange(False, "unchanged")
    # Equal counts prove nothing about contents: an edited document keeps them.
    return CorpusChange(None, "same counts; the previous run recorded no content digest")
