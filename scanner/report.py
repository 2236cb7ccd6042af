"""The JSON report (built and validated here alone) and the text rendering for people.

Every key is present every time (`findings: []`, `rank_in_top_k: null`): a
consumer can tell "checked, nothing found" from output that predates a check.
Every report is validated against the published schema before it is written
or printed; one that fails is a bug in kb-eval (exit 3), never written.
"""

from __future__ import annotations

import importlib.resources
import json
import math
from collections.abc import Mapping, Sequence
from datetime import datetime
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

import jsonschema

from . import __version__
from .diagnostics import Diagnostics
from .index import CorpusSnapshot
from .metrics import AggregateMetrics
from .quotes import CHECK_NAME
from .untrusted_text import LEGACY_COMMAND, shown

if TYPE_CHECKING:
    from .evaluate import LocatedFinding, QueryResult

SCHEMA_VERSION = 1
SCHEMA_ID = "https://kb-eval.github.io/schema/report-v1.json"
SCHEMA_FILE = "report.schema.json"
_CHECKOUT_SCHEMA = Path(__file__).resolve().parent.parent / "schema" / SCHEMA_FILE
# A checkout (and the Docker image, /app/schema) reads the published file itself; an installed
# wheel carries a copy as package data (pyproject.toml maps schema/ to scanner._schema).
SCHEMA_PATH = (
    _CHECKOUT_SCHEMA if _CHECKOUT_SCHEMA.is_file()
    else Path(str(importlib.resources.files("scanner._schema").joinpath(SCHEMA_FILE)))
)

Report = dict[str, Any]


class ReportInvalid(Exception):
    """The report does not match its own schema: a kb-eval bug (exit 3)."""


def build_report(
    *,
    timestamp: datetime,
    fingerprint: Mapping[str, object],
    corpus: CorpusSnapshot,
    results: Sequence[QueryResult],
    overall: AggregateMetrics,
    by_tag: Mapping[str, AggregateMetrics],
    findings: Sequence[LocatedFinding],
    diagnostics: Diagnostics,
) -> Report:
    return {
        "$schema": SCHEMA_ID,
        "schema_version": SCHEMA_VERSION,
        "tool": {"name": "kb-eval", "version": __version__},
        "timestamp": timestamp.strftime("%Y-%m-%dT%H:%M:%SZ"),
        "fingerprint": dict(fingerprint),
        "corpus": {"documents": corpus.documents, "chunks": corpus.chunks, "digest": corpus.digest},
        "aggregate": aggregate_json(overall),
        "by_tag": {tag: aggregate_json(metrics) for tag, metrics in by_tag.items()},
        "per_query": [_query_json(result) for result in results],
        "findings": [_finding_json(located) for located in findings],
        "warnings": [item.to_json() for item in diagnostics.items],
        "previous": None,
        "diff": None,
        "corpus_changed": None,
    }


def aggregate_json(metrics: AggregateMetrics) -> dict[str, object]:
    return {
        "query_count": metrics.query_count,
        "mrr": metrics.mrr,
        "recall_at_k": {str(k): v for k, v in metrics.recall_at_k.items()},
        "ndcg_at_k": {str(k): v for k, v in metrics.ndcg_at_k.items()},
    }


def _query_json(result: QueryResult) -> dict[str, object]:
    return {
        "id": result.query.id,
        "query": result.query.text,
        "tags": list(result.query.tags),
        "line": result.query.line,
        "expected": [{"path": e.path, "heading": e.heading} for e in result.query.expected],
        "top_k": [
            {"rank": h.rank, "path": h.path, "heading": h.heading, "score": _finite_or_none(h.score)}
            for h in result.hits
        ],
        "metrics": {
            "rr": result.metrics.reciprocal_rank,
            "recall_at_k": {str(k): v for k, v in result.metrics.recall_at_k.items()},
            "ndcg_at_k": {str(k): v for k, v in result.metrics.ndcg_at_k.items()},
        },
    }


def _finding_json(located: LocatedFinding) -> dict[str, object]:
    return {
        "check": CHECK_NAME,
        "path": located.finding.path,
        "quoted": [
            {
                "query_id": quoted.query_id,
                "rank_in_top_k": quoted.rank_in_top_k,
                "field": location.field,
                "line": location.line,
                "column": location.column,
            }
            for quoted, location in zip(located.finding.quoted, located.locations)
        ],
    }


def _finite_or_none(value: float | None) -> float | None:
    # JSON has no NaN or Infinity; an external retriever's odd score must not make the report invalid.
    return value if value is not None and math.isfinite(value) else None


@lru_cache(maxsize=1)
def _validator() -> jsonschema.protocols.Validator:
    schema = json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))
    validator_class = jsonschema.validators.validator_for(schema)
    validator_class.check_schema(schema)
    return validator_class(schema, format_checker=validator_class.FORMAT_CHECKER)


def validation_errors(report: Mapping[str, object]) -> list[str]:
    """Messages for every place `report` breaks the schema (empty when valid)."""
    return [
        f"{'/'.join(str(p) for p in error.absolute_path) or '(top level)'}: {error.message}"
        for error in sorted(_validator().iter_errors(report), key=lambda e: list(map(str, e.absolute_path)))
    ]


def validate_report(report: Mapping[str, object]) -> None:
    errors = validation_errors(report)
    if errors:
        raise ReportInvalid("the report does not match its schema:\n  " + "\n  ".join(errors[:20]))


def to_json(report: Mapping[str, object]) -> str:
    # allow_nan=False: a NaN that slipped through is a crash here, not an invalid file downstream.
    text = json.dumps(report, ensure_ascii=False, indent=2, allow_nan=False)
    return LEGACY_COMMAND.sub(r"#\\u0023[", text.translate(_LINE_BREAKS_ESCAPED)) + "\n"


# Paths and ids from the pull request may hold what a log reader takes for a line break or a
# command: json.dumps escapes C0 controls but leaves U+0085, U+2028 and U+2029 raw, and `##[`
# anywhere in a line is a legacy workflow command to the runner. Each is written as a JSON
# escape instead (`#` as \u0023 before `[`), so any JSON reader decodes the same text and no
# line of the file holds a break or a command. These characters occur only inside strings,
# and no JSON escape sequence contains one, so the rewrite cannot cut an escape.
_LINE_BREAKS_ESCAPED = {0x85: "\\u0085", 0x2028: "\\u2028", 0x2029: "\\u2029"}


def render_text(report: Mapping[str, Any]) -> str:
    """The people-facing report: header, aggregate table, findings, and the queries that missed.

    Paths, ids, headings, tags and an external retriever's name are pull-request text: each is
    printed through shown(), so none can break its line or start a workflow command."""
    fp = report["fingerprint"]
    agg = report["aggregate"]
    corpus = report["corpus"]
    ks = [str(k) for k in fp["k"]]
    retriever = fp["retriever"]
    out = [
        f"kb-eval {report['tool']['version']}: retriever {shown(str(retriever.get('name')))}"
        + (f" ({shown(str(retriever['tokenization']))})" if retriever.get("tokenization") else "")
        + f", limit {fp['limit']}, {agg['query_count']} queries,"
        f" {corpus['documents']} documents / {corpus['chunks']} chunks",
        "",
    ]
    header = ["metric", *[f"@{k}" for k in ks]]
    rows = [
        ["recall", *[f"{agg['recall_at_k'][k]:.4f}" for k in ks]],
        ["nDCG", *[f"{agg['ndcg_at_k'][k]:.4f}" for k in ks]],
    ]
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    for row in [header, *rows]:
        out.append("  ".join(cell.ljust(widths[i]) for i, cell in enumerate(row)).rstrip())
    out.append(f"MRR     {agg['mrr']:.4f}")
    if report.get("by_tag"):
        out.append("")
        out.append("by tag: " + ", ".join(
            f"{shown(tag)} (n={m['query_count']}) MRR {m['mrr']:.4f}" for tag, m in report["by_tag"].items()
        ))
    if report["findings"]:
        out.append("")
        out.append(f"findings ({CHECK_NAME}): documents quoting 2 or more golden queries verbatim")
        for finding in report["findings"]:
            out.append(f"  {shown(finding['path'])}")
            for quoted in finding["quoted"]:
                rank = f"rank {quoted['rank_in_top_k']}" if quoted["rank_in_top_k"] is not None else "not in top_k"
                out.append(f"    {shown(quoted['query_id'])} ({rank}), {quoted['field']} line {quoted['line']}")
    largest = ks[-1]
    missed = [q for q in report["per_query"] if q["metrics"]["recall_at_k"][largest] < 1.0]
    if missed:
        out.append("")
        out.append(f"queries that missed an expected document in the top {largest}:")
        for q in missed:
            got = ", ".join(f"{h['rank']}. {shown(h['path'])}" for h in q["top_k"][:3]) or "no hits"
            want = ", ".join(
                shown(e["path"]) + (f" # {shown(e['heading'])}" if e["heading"] else "") for e in q["expected"]
            )
            out.append(f"  {shown(q['id'])}: recall@{largest} {q['metrics']['recall_at_k'][largest]:.2f}, RR {q['metrics']['rr']:.2f}")
            out.append(f"    expected: {want}")
            out.append(f"    got:      {got}")
    return "\n".join(out) + "\n"
