"""A run record: what one run leaves behind for later runs to compare with.

A run record IS the JSON report of that run minus the keys that describe its
own comparison (`previous`, `diff`, `corpus_changed`, `comparison`, `gate`):
keeping the report's shape means a baseline file (a whole report) and a
history entry are read by the same code.

Records come back from files the user (or a pull request) controls, so before
any arithmetic touches one it is checked here: every metric must be a finite
number in [0, 1], counts non-negative integers, query ids unique. A record that
fails is never compared (a crafted NaN or 1e400 would otherwise poison every
delta and the gate).

Fields added after the first release are optional so an older history still
loads: only `timestamp`, `fingerprint` and `aggregate` (with `mrr` and
`recall_at_k`) are required.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Any

COMPARISON_KEYS = ("previous", "diff", "corpus_changed", "comparison", "gate")
"""Report keys that describe a run's own comparison, not the run; never stored in history."""

_TIMESTAMP = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z")
"""The report's timestamp format (scanner.report writes %Y-%m-%dT%H:%M:%SZ)."""

_MAX_PROBLEMS = 5
"""Stop listing problems after this many: a garbage file would otherwise produce thousands."""


def run_record_from_report(report: Mapping[str, Any]) -> dict[str, Any]:
    """The run record of a report: the report without its comparison keys."""
    return {key: value for key, value in report.items() if key not in COMPARISON_KEYS}


def is_unit_number(value: object) -> bool:
    """A finite int or float in [0, 1] (bool is not a number here)."""
    return (
        isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) and 0.0 <= value <= 1.0
    )


def _is_count(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def run_record_problems(run: object) -> list[str]:
    """What is wrong with a run record, empty when it can be compared.

    Messages name the field by its JSON path, so a warning can point at it.
    """
    problems: list[str] = []
    if not isinstance(run, dict):
        return [f"a run must be a JSON object, not {_json_type(run)}"]
    timestamp = run.get("timestamp")
    if not (isinstance(timestamp, str) and _TIMESTAMP.fullmatch(timestamp)):
        # Printed in the text report: a crafted "x\n::error::" must not reach the log.
        problems.append("timestamp: missing or not a UTC time like 2026-12-02T15:44:16Z")
    if not isinstance(run.get("fingerprint"), dict):
        problems.append("fingerprint: missing or not an object")
    aggregate = run.get("aggregate")
    if not isinstance(aggregate, dict):
        problems.append("aggregate: missing or not an object")
    else:
        problems.extend(_aggregate_problems(aggregate, "aggregate"))
    corpus = run.get("corpus")
    if corpus is not None:
        problems.extend(_corpus_problems(corpus))
    per_query = run.get("per_query")
    if per_query is not None:
        problems.extend(_per_query_problems(per_query))
    return problems[:_MAX_PROBLEMS]


def _aggregate_problems(aggregate: Mapping[str, Any], where: str) -> list[str]:
    problems: list[str] = []
    if not is_unit_number(aggregate.get("mrr")):
        problems.append(f"{where}.mrr: must be a finite number in [0, 1]")
    problems.extend(_at_k_problems(aggregate.get("recall_at_k"), f"{where}.recall_at_k"))
    if "ndcg_at_k" in aggregate:  # newer than the first history format
        problems.extend(_at_k_problems(aggregate["ndcg_at_k"], f"{where}.ndcg_at_k"))
    if "query_count" in aggregate and not _is_count(aggregate["query_count"]):
        problems.append(f"{where}.query_count: must be a non-negative integer")
    return problems


def _at_k_problems(values: object, where: str) -> list[str]:
    if not isinstance(values, dict):
        return [f"{where}: missing or not an object"]
    problems: list[str] = []
    for k, value in values.items():
        if not (isinstance(k, str) and k.isdigit() and k.isascii() and int(k) >= 1):
            problems.append(f"{where}: key {k!r} is not a positive integer k")
        elif not is_unit_number(value):
            problems.append(f"{where}.{k}: must be a finite number in [0, 1]")
    return problems


def _corpus_problems(corpus: object) -> list[str]:
    if not isinstance(corpus, dict):
        return ["corpus: not an object"]
    problems: list[str] = []
    for field in ("documents", "chunks"):
        if field in corpus and not _is_count(corpus[field]):
            problems.append(f"corpus.{field}: must be a non-negative integer")
    if "digest" in corpus and not isinstance(corpus["digest"], str):
        problems.append("corpus.digest: must be a string")
    return problems


def _per_query_problems(per_query: object) -> list[str]:
    if not isinstance(per_query, list):
        return ["per_query: not a list"]
    problems: list[str] = []
    seen: set[str] = set()
    for index, row in enumerate(per_query):
        where = f"per_query[{index}]"
        if not isinstance(row, dict):
            problems.append(f"{where}: not an object")
            continue
        query_id = row.get("id")
        if not isinstance(query_id, str):
            problems.append(f"{where}.id: missing or not a string")
        elif query_id in seen:
            # Deltas are matched by id; a repeated id would pair the wrong rows.
            problems.append(f"{where}.id: {query_id!r} appears twice")
        else:
            seen.add(query_id)
        metrics = row.get("metrics")
        if not isinstance(metrics, dict):
            problems.append(f"{where}.metrics: missing or not an object")
            continue
        if "rr" in metrics and not is_unit_number(metrics["rr"]):
            problems.append(f"{where}.metrics.rr: must be a finite number in [0, 1]")
        for family in ("recall_at_k", "ndcg_at_k"):
            if family in metrics:
                problems.extend(_at_k_problems(metrics[family], f"{where}.metrics.{family}"))
        if len(problems) >= _MAX_PROBLEMS:
            break
    return problems


def _json_type(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    return "an object"
