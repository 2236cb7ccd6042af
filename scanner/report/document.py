"""The JSON report: built here alone, from records, validated, and serialised by one function.

Every key is present every time (`findings: []`, `rank_in_top_k: null`): a
consumer can tell "checked, nothing found" from output that predates a check.
Where kb-mcp's `eval --format json` defines a key, the name and type are
kb-mcp's (`reciprocal_rank`, a hit's `heading: null`). Every report is
validated against the published schema before it is written or printed; one
that fails is a bug in kb-eval (exit 3), never written.

The report, the baseline (`--save-baseline`, a whole report) and each history
entry (the run part of a report) all go through `serialise`, so no file
kb-eval writes can carry a line break or a legacy workflow command that
another file would not.
"""

from __future__ import annotations

import importlib.resources
import json
import math
from collections.abc import Mapping
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from scanner.compare.comparison import Comparison, MetricDelta, QueryDelta, QueryStatus
from scanner.compare.gate import Detectable, GateResult, MetricVerdict
from scanner.compare.pooling import RBO_PERSISTENCE
from scanner.compare.report import Report
from scanner.evaluation.costs import AnswerCosts, Spread
from scanner.evaluation.health import GoldenHealth
from scanner.evaluation.records import LocatedFinding, QueryRecord, RunRecord
from scanner.foundation.diagnostics import Diagnostic
from scanner.golden.file import ExpectedEntry
from scanner.metrics.catalogue import CATALOGUE
from scanner.metrics.measures import AggregateMetrics, Interval, QueryMetrics
from scanner.metrics.uncertainty import DETECTION_POWER
from scanner.report.serialise import serialise
from scanner.retrievers.base import Hit
from scanner.scan.quotes import CHECK_NAME
from scanner.search.index import CorpusSnapshot

SCHEMA_VERSION = 1
SCHEMA_MINOR = 8
"""Additions to version 1 that a reader of version 1 can ignore: 1 added grades, the standard
measures (precision, success, MAP, judged) and the intervals; 2 the label keys; 3 the gate's
`enforced`; 4 the gate's per-tag verdicts (`tag`); 5 answer time and size; 6 the fail-under `floors`; 7 the `answer_budgets`; 8
the `golden_health` of the golden set.
Every added key is optional in
the schema, so a report or history written before it still reads."""
SCHEMA_ID = "https://kb-eval.github.io/schema/report-v1.json"
SCHEMA_FILE = "report.schema.json"
_CHECKOUT_SCHEMA = Path(__file__).resolve().parents[2] / "schema" / SCHEMA_FILE
# A checkout (and the Docker image, /app/schema) reads the published file itself; an installed
# wheel carries a copy as package data (pyproject.toml maps schema/ to scanner._schema).
if TYPE_CHECKING:
    import jsonschema

SCHEMA_PATH = (
    _CHECKOUT_SCHEMA if _CHECKOUT_SCHEMA.is_file()
    else Path(str(importlib.resources.files("scanner._schema").joinpath(SCHEMA_FILE)))
)

Document = dict[str, Any]

__all__ = [
    "ReportInvalid", "report_document", "rows_to_validate", "run_document", "serialise", "validate", "validation_errors",
]


class ReportInvalid(Exception):
    """The report does not match its own schema: a kb-eval bug (exit 3)."""


# --- records -> JSON -------------------------------------------------------------------


def report_document(report: Report) -> Document:
    """The whole JSON report of a run."""
    return {
        **run_document(report.run),
        "previous": previous_document(report.comparison),
        "diff": diff_document(report.comparison),
        "corpus_changed": corpus_changed(report.comparison),
        "comparison": {
            "status": report.comparison.status.value,
            "source": report.comparison.source,
            "reasons": list(report.comparison.reasons),
            "cause": report.comparison.cause.value if report.comparison.cause is not None else None,
            "hint": report.comparison.hint,
            "findings_at_base": findings_at_base_document(report),
        },
        "gate": gate_document(report.gate),
        "floors": [
            {"metric": check.label, "tag": check.tag, "floor": check.floor, "value": check.value,
             "shortfall": check.shortfall, "below": check.below}
            for check in report.floors.checks
        ],
        "answer_budgets": [
            {"measure": check.kind.value, "statistic": check.statistic, "budget": check.budget, "value": check.value,
             "over": check.over}
            for check in report.costs.checks
        ],
        "golden_health": golden_health_document(report.run.health),
    }


def golden_health_document(health: GoldenHealth | None) -> Document | None:
    """None only for a run read back from an older file; a fresh run always has every key."""
    if health is None:
        return None
    cover = health.coverage
    return {
        "duplicate_wordings": [
            {"wording": d.wording, "ids": list(d.ids), "lines": list(d.lines)} for d in health.duplicates
        ],
        "title_queries": [
            {"id": t.query_id, "line": t.line, "path": t.path, "title": t.title, "similarity": t.similarity}
            for t in health.title_queries
        ],
        "coverage": {
            "documents": cover.documents,
            "answers": cover.answers,
            "answer_share": cover.answer_share,
            "k": cover.k,
            "unreached_count": cover.unreached_count,
            "unreached": list(cover.unreached),
        },
    }


def findings_at_base_document(report: Report) -> list[Document] | None:
    """Each finding told from the pull request's base, in the findings' order; null when this run
    was not compared with a git revision it evaluated."""
    if report.findings_at_base is None:
        return None
    return [
        {"path": item.path, "present_at_base": item.present_at_base, "newly_displacing": list(item.newly_displacing)}
        for item in report.findings_at_base
    ]


def run_document(run: RunRecord) -> Document:
    """A run as the report and the history hold it (the report minus its comparison keys)."""
    return {
        "$schema": SCHEMA_ID,
        "schema_version": SCHEMA_VERSION,
        "schema_minor": SCHEMA_MINOR,
        "tool": {"name": "kb-eval", "version": run.tool_version},
        "timestamp": run.timestamp,
        "fingerprint": fingerprint_document(run.fingerprint),
        "corpus": _corpus_document(run.corpus),
        "aggregate": aggregate_document(run.aggregate),
        "answers": answers_document(run.answers),
        "by_tag": {tag: aggregate_document(metrics) for tag, metrics in run.by_tag},
        "per_query": [query_document(query) for query in run.queries or ()],
        "findings": [finding_document(located) for located in run.findings],
        "warnings": [warning_document(item) for item in run.warnings],
    }


def aggregate_document(metrics: AggregateMetrics) -> Document:
    document: Document = {"query_count": metrics.query_count}
    for measure in CATALOGUE:
        # A measure is left out only for a run recorded before it existed (read back from a history).
        document |= _measure_entry(measure.report_key, measure.of_aggregate(metrics))
    if metrics.intervals:
        document["interval_95"] = intervals_document(metrics.intervals)
    return document


def query_metrics_document(metrics: QueryMetrics) -> Document:
    document: Document = {}
    for measure in CATALOGUE:
        document |= _measure_entry(measure.query_key, measure.of_query(metrics))
    return document


def _measure_entry(key: str, value: float | Mapping[int, float] | None) -> Document:
    if value is None:
        return {}
    return {key: _by_k(value) if isinstance(value, Mapping) else value}


def query_document(query: QueryRecord) -> Document:
    return {
        "id": query.id,
        "query": query.text,
        "tags": list(query.tags),
        "line": query.line,
        "expected": [expected_document(e) for e in query.expected],
        "top_k": [hit_document(h) for h in query.hits],
        "metrics": query_metrics_document(query.metrics),
        "answer": None if query.answer is None else {"seconds": query.answer.seconds, "bytes": query.answer.bytes},
    }


def answers_document(costs: AnswerCosts | None) -> Document | None:
    if costs is None:
        return None

    def spread(values: Spread, unit: type[float | int]) -> Document:
        return {"p50": unit(values.p50), "p95": unit(values.p95), "max": unit(values.max)}

    return {
        "queries": costs.queries,
        "seconds": spread(costs.seconds, float),
        "bytes": None if costs.bytes is None else spread(costs.bytes, int),
    }


def expected_document(entry: ExpectedEntry, member: bool = False) -> Document:
    """kb-mcp's `path` and `heading`, the grade, and kb-eval's label keys only when the entry uses
    them. A group's members carry no grade: the group's is theirs."""
    written: Document = {"path": entry.path, "heading": entry.heading}
    if not member:
        written["grade"] = entry.grade
    if entry.parent is not None:
        written["parent"] = entry.parent
    if entry.subsections:
        written["subsections"] = True
    if entry.any_of:
        written["any"] = [expected_document(one, member=True) for one in entry.any_of]
    return written


def hit_document(hit: Hit) -> Document:
    # kb-mcp writes null for a hit with no heading; the record keeps "" (Hit.heading).
    written: Document = {"rank": hit.rank, "path": hit.path, "heading": hit.heading or None, "score": _finite_or_none(hit.score)}
    if hit.parents is not None:
        written["parents"] = list(hit.parents)
    return written


def finding_document(located: LocatedFinding) -> Document:
    return {
        "check": CHECK_NAME,
        "path": located.finding.path,
        "quoted": [
            {
                "query_id": quoted.query_id,
                "rank_in_top_k": quoted.rank_in_top_k,
                "displaces_expected": quoted.displaces_expected,
                "field": location.field,
                "line": location.line,
                "column": location.column,
            }
            for quoted, location in zip(located.finding.quoted, located.locations)
        ],
    }


def warning_document(item: Diagnostic) -> Document:
    return {"code": item.code, "message": item.message, "file": item.file, "line": item.line}


def previous_document(comparison: Comparison) -> Document | None:
    previous = comparison.previous
    if previous is None:
        return None
    return {
        "source": comparison.source,
        "timestamp": previous.timestamp,
        "fingerprint": fingerprint_document(previous.fingerprint),
        "corpus": _corpus_document(previous.corpus),
        "aggregate": aggregate_document(previous.aggregate),
        "answers": answers_document(previous.answers),
        # kb-mcp's `previous` is the whole previous run; its per-query rows are what a consumer
        # of kb-mcp's JSON reads to see which query moved.
        "per_query": [query_document(query) for query in previous.queries or ()],
        "commit": comparison.revision.commit if comparison.revision is not None else None,
        "ref": comparison.revision.ref if comparison.revision is not None else None,
    }


def diff_document(comparison: Comparison) -> Document | None:
    if not comparison.compared:
        return None
    by_status: dict[str, list[str]] = {"worse": [], "better": [], "mixed": []}
    changed = []
    unchanged = 0
    for query in comparison.query_deltas:
        if query.status is QueryStatus.UNCHANGED:
            unchanged += 1
            continue
        by_status[query.status].append(query.query_id)
        changed.append(query)
    aggregate = _deltas_document(comparison.metric_deltas, per_query=False)
    return {
        # kb-mcp's keys: each metric's delta as a plain number (current - previous).
        "mrr": aggregate["mrr"]["delta"] if "mrr" in aggregate else None,
        "recall_at_k": {k: value["delta"] for k, value in aggregate.get("recall_at_k", {}).items()},
        "ndcg_at_k": {k: value["delta"] for k, value in aggregate.get("ndcg_at_k", {}).items()},
        "aggregate": aggregate,
        "queries": {
            **by_status,
            "unchanged": unchanged,
            "only_in_current": list(comparison.only_in_current),
            "only_in_previous": list(comparison.only_in_previous),
        },
        "per_query": [_query_delta_document(query) for query in comparison.changed_queries()],
        "corpus": (
            {"changed": comparison.corpus.changed, "description": comparison.corpus.description}
            if comparison.corpus is not None else None
        ),
        "pooling": _pooling_document(comparison),
    }


def _pooling_document(comparison: Comparison) -> Document:
    """The queries whose ranking moved: what entered their top k, what of it no label judges, RBO."""
    pools = comparison.pools
    return {
        "k": pools[0].k if pools else None,
        "rbo_persistence": RBO_PERSISTENCE,
        "queries": [
            {
                "id": pool.query_id,
                "rbo": pool.rbo,
                "entered": list(pool.entered),
                "unlabelled": [
                    {"path": d.path, "heading": d.heading or None, "rank": d.rank} for d in pool.unlabelled
                ],
            }
            for pool in pools
            if pool.entered or pool.rbo < 1.0
        ],
    }


def corpus_changed(comparison: Comparison) -> bool | None:
    """True/False when compared and both corpora are known; None otherwise (never False for unknown)."""
    if not comparison.compared or comparison.corpus is None:
        return None
    return comparison.corpus.changed


def gate_document(gate: GateResult) -> Document:
    return {
        "tripped": gate.tripped,
        "evaluated": gate.evaluated,
        "enforced": gate.enforced,
        "reason": gate.reason,
        "threshold": gate.threshold,
        "thresholds": {selector.label: drop for selector, drop in gate.per_metric},
        "alpha": gate.alpha,
        "metrics": [_verdict_document(verdict) for verdict in gate.verdicts],
        "detectable_drop": _detectable_document(gate.detectable),
    }


def _detectable_document(detectable: Detectable | None) -> Document | None:
    if detectable is None:
        return None
    return {
        "alpha": detectable.alpha,
        "power": DETECTION_POWER,
        "queries": detectable.queries,
        "metrics": {
            drop.metric.label: {"drop": drop.drop, "basis": "paired" if drop.paired else "this-run"}
            for drop in detectable.drops
        },
    }


def intervals_document(intervals: tuple[Interval, ...]) -> Document:
    """`{"mrr": [low, high], "recall_at_k": {"5": [low, high]}, ...}`, beside the means they bound."""
    document: Document = {}
    for interval in intervals:
        bounds = [interval.low, interval.high]
        if interval.k is None:
            document[interval.measure] = bounds
        else:
            document.setdefault(interval.measure, {})[str(interval.k)] = bounds
    return document


def _verdict_document(verdict: MetricVerdict) -> Document:
    return {
        "metric": verdict.metric.label,
        "tag": verdict.tag,
        "previous": verdict.previous,
        "current": verdict.current,
        "delta": verdict.delta,
        "over_threshold": verdict.over_threshold,
        "threshold": verdict.threshold,
        "p_value": verdict.significance.p_value if verdict.significance else None,
        "test": verdict.significance.to_json() if verdict.significance else None,
        "counts": verdict.counts,
        "worst_queries": [{"id": qid, "delta": delta} for qid, delta in verdict.worst_queries],
    }


def _query_delta_document(query: QueryDelta) -> Document:
    return {
        "id": query.query_id,
        "query": query.query,
        "status": query.status,
        "metrics": _deltas_document(query.deltas, per_query=True),
        "rank_before": query.rank_before,
        "rank_after": query.rank_after,
        "now_above": query.now_above,
        "moves": [
            {
                "expected": expected_document(move.entry),
                "rank_before": move.rank_before,
                "rank_after": move.rank_after,
                "now_above": hit_document(move.now_above) if move.now_above is not None else None,
            }
            for move in query.moves
        ],
    }


def _deltas_document(deltas: tuple[MetricDelta, ...], *, per_query: bool) -> Document:
    """`{"mrr": {...}, "recall_at_k": {"5": {...}}, ...}`, under the keys the aggregate or a query's
    metrics use (per query MRR is kb-mcp's `reciprocal_rank`, MAP is `average_precision`)."""
    document: Document = {}
    for delta in deltas:
        value = {"previous": delta.previous, "current": delta.current, "delta": delta.delta}
        measure = delta.metric.measure
        key = measure.query_key if per_query else measure.report_key
        if delta.metric.k is None:
            document[key] = value
        else:
            document.setdefault(key, {})[str(delta.metric.k)] = value
    return document


def fingerprint_document(fingerprint: Mapping[str, object]) -> Document:
    """kb-eval's fingerprint, plus the keys kb-mcp's fingerprint has (KB_MCP_FINGERPRINT_ALIASES), so a
    consumer of kb-mcp's JSON reads kb-eval's unchanged. Each is derived from kb-eval's own keys."""
    document: Document = _plain(fingerprint)
    retriever = document.get("retriever")
    retriever = retriever if isinstance(retriever, dict) else {}
    compiler = retriever.get("query_compiler_version")
    return document | {
        "golden_hash": document.get("golden_sha256"),
        "k_values": document.get("k"),
        # kb-mcp names its embedding model; kb-eval's nearest is what answered the queries.
        "model": str(retriever.get("name", "unknown")),
        "reranker": None,
        "fts_query_version": compiler if isinstance(compiler, int) else None,
    }


def _corpus_document(corpus: CorpusSnapshot | None) -> Document | None:
    if corpus is None:
        return None
    return {"documents": corpus.documents, "chunks": corpus.chunks, "digest": corpus.digest}


def _by_k(values: Mapping[int, float]) -> dict[str, float]:
    return {str(k): values[k] for k in sorted(values)}


def _finite_or_none(value: float | None) -> float | None:
    # JSON has no NaN or Infinity; an external retriever's odd score must not make the report invalid.
    return value if value is not None and math.isfinite(value) else None


def _plain(value: object) -> Any:
    """A fingerprint (possibly read-only mappings and tuples) as plain JSON types."""
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


# --- validation ------------------------------------------------------------------------


@lru_cache(maxsize=1)
def _validator() -> jsonschema.protocols.Validator:
    # Imported on first validation, after the evaluation: its ~9 MiB then do not add to the peak
    # of the analysis.
    import jsonschema

    schema = json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))
    validator_class = jsonschema.validators.validator_for(schema)
    # The schema is kb-eval's own file, checked against its metaschema by the tests (the installed
    # wheel's too), not again by every run: that check was a fixed 0.17 s of each.
    return validator_class(schema, format_checker=validator_class.FORMAT_CHECKER)


MAX_SCHEMA_ERRORS = 5
"""Problems listed for an invalid document: a garbage file must not materialise thousands."""


def validation_errors(document: object, most: int = MAX_SCHEMA_ERRORS) -> list[str]:
    """Messages for the first `most` places `document` breaks the schema (empty when valid).

    The validator yields errors lazily; only the first few are taken, so a crafted file with
    a million bad entries costs what five do."""
    errors = []
    for error in _validator().iter_errors(document):
        errors.append(f"{'/'.join(str(p) for p in error.absolute_path) or '(top level)'}: {error.message}")
        if len(errors) >= most:
            break
    return errors


def validate(document: Document) -> None:
    """ReportInvalid unless the report kb-eval built matches its schema (a bug: exit 3).

    The report is built by construction (`report_document`, from typed records), so its rows are
    checked once per shape, not once each: in every list of objects (a query's row, a finding,
    a hit), the first two items and then the first item of each shape not seen yet are validated
    (`rows_to_validate`). A shape is the keys, the type of every value and the length of every
    list inside: a hit without a heading, a query without hits, a `null` rank are new shapes and
    are checked. What is not re-checked is a value of a shape already checked (a score, an id),
    which the record types and the measures' own tests fix. All rows of 10,000 queries were
    15 s of CPU, the whole evaluation's worth; a baseline or history read from disk is untrusted
    and still validated whole (`validation_errors`)."""
    errors = validation_errors(rows_to_validate(document), 20)
    if errors:
        raise ReportInvalid("the report does not match its schema:\n  " + "\n  ".join(errors))


def rows_to_validate(value: Any) -> Any:
    """`value` with every list of objects cut to its first two items and the first item of each
    further shape (see `validate`); two, because the schema's shortest list of objects holds two."""
    if isinstance(value, dict):
        return {key: rows_to_validate(item) for key, item in value.items()}
    if isinstance(value, list) and len(value) > 2 and all(isinstance(item, dict) for item in value):
        kept = value[:2]
        seen = {_shape(item) for item in kept}
        for item in value[2:]:
            shape = _shape(item)
            if shape not in seen:
                seen.add(shape)
                kept.append(item)
        return [rows_to_validate(item) for item in kept]
    if isinstance(value, list):
        return [rows_to_validate(item) for item in value]
    return value


def _shape(value: Any) -> object:
    """The keys, the type of every value and the length of every list: what a schema branches on
    besides the values themselves."""
    # A scalar's shape is its type, taken here rather than by a call per value: a report's rows
    # are mostly scalars, and the calls were most of validating 10,000 queries.
    if isinstance(value, dict):
        return tuple(
            (key, _shape(item) if isinstance(item, (dict, list)) else type(item)) for key, item in value.items()
        )
    if isinstance(value, list):
        return tuple(_shape(item) if isinstance(item, (dict, list)) else type(item) for item in value)
    return type(value)
