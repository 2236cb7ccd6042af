"""Builders for run documents (as a history or baseline file holds them) and the records read from them."""

from __future__ import annotations

import math
from typing import Any

from scanner.evaluation.records import RunRecord
from scanner.report.read import run_from_document

KS = (1, 5, 10)


def fingerprint(**changes: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "retriever": {"name": "builtin", "tokenizer": "unicode61"},
        "limit": 10,
        "k": list(KS),
        "golden_sha256": "a" * 64,
        "metric_version": 2,
    }
    base.update(changes)
    return base


def make_run(
    values: dict[str, float] | None = None,
    *,
    timestamp: str = "2026-12-02T15:44:16Z",
    fingerprint_changes: dict[str, Any] | None = None,
    corpus: dict[str, Any] | None = None,
    aggregate: dict[str, Any] | None = None,
    findings: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """A run whose query `id` scores `value` on every metric (rr, recall@k, nDCG@k).

    The aggregate is the mean per metric unless given explicitly.
    """
    if values is None:
        values = {"q1": 1.0, "q2": 0.5, "q3": 0.0}
    rows = [
        {
            "id": query_id,
            "query": f"text of {query_id}",
            "tags": [],
            "line": index + 1,
            "expected": [{"path": f"{query_id}.md", "heading": None}],
            "top_k": [{"rank": 1, "path": f"{query_id}.md", "heading": "Intro", "score": 1.0}],
            "metrics": {
                "reciprocal_rank": value,
                "recall_at_k": {str(k): value for k in KS},
                "ndcg_at_k": {str(k): value for k in KS},
            },
        }
        for index, (query_id, value) in enumerate(values.items())
    ]
    mean = math.fsum(values.values()) / len(values) if values else 0.0
    return {
        "$schema": "https://kb-eval.github.io/schema/report-v1.json",
        "schema_version": 1,
        "tool": {"name": "kb-eval", "version": "0.1.0"},
        "timestamp": timestamp,
        "fingerprint": fingerprint(**(fingerprint_changes or {})),
        "corpus": corpus if corpus is not None else {"documents": 642, "chunks": 9400, "digest": "sha256:" + "1" * 64},
        "aggregate": aggregate
        if aggregate is not None
        else {
            "query_count": len(values),
            "mrr": mean,
            "recall_at_k": {str(k): mean for k in KS},
            "ndcg_at_k": {str(k): mean for k in KS},
        },
        "by_tag": {},
        "per_query": rows,
        "findings": findings or [],
        "warnings": [],
    }


def labelled_history(label: str, queries: int) -> list[dict[str, Any]]:
    """Three runs whose query ids carry `label`, so two labels give two different history files."""
    values = {f"{label}-q{i}": (i % 7) / 7 for i in range(queries)}
    return [make_run(values, timestamp=f"2026-12-0{day}T00:00:00Z") for day in range(1, 4)]


def uniform_aggregate(value: float, query_count: int = 3) -> dict[str, Any]:
    return {
        "query_count": query_count,
        "mrr": value,
        "recall_at_k": {str(k): value for k in KS},
        "ndcg_at_k": {str(k): value for k in KS},
    }


def make_record(values: dict[str, float] | None = None, **changes: Any) -> RunRecord:
    """`make_run` as the record a history or baseline reader turns it into."""
    return run_from_document(make_run(values, **changes))


def run_with_a_finding() -> RunRecord:
    """A real run (the redesign fixture through the CLI) whose note quotes two golden queries."""
    from scanner.cli.main import execute

    result = execute(["--kb-path", "tests/fixtures/redesign/kb", "--run", "tests/fixtures/redesign/run.jsonl",
                      "--no-history", "--format", "json"])
    assert result.report is not None and result.report.run.findings
    return result.report.run
