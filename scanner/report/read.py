"""Reading a run back from a file a pull request controls: checked, then turned into a record.

A history entry is the JSON report of a run minus the keys that describe its
own comparison (`previous`, `diff`, `corpus_changed`, `comparison`, `gate`):
keeping the report's shape means a baseline file (a whole report) and a
history entry are read by the same code, here, and nowhere else reads a run
by string key.

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
from typing import Any, TypeGuard

from scanner.evaluation.records import QueryRecord, RunRecord
from scanner.foundation.diagnostics import Diagnostic, DiagnosticCode
from scanner.foundation.strict_json import json_type
from scanner.golden.file import DEFAULT_GRADE, ExpectedEntry
from scanner.metrics.measures import AggregateMetrics, QueryMetrics
from scanner.retrievers.base import AnswerCost, Hit
from scanner.search.index import CorpusSnapshot

_TIMESTAMP = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z")
"""The report's timestamp format (scanner.report.document writes %Y-%m-%dT%H:%M:%SZ)."""

_MAX_PROBLEMS = 5
"""Stop listing problems after this many: a garbage file would otherwise produce thousands."""


def is_unit_number(value: object) -> bool:
    """A finite int or float in [0, 1] (bool is not a number here)."""
    return (
        isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) and 0.0 <= value <= 1.0
    )


def _is_count(value: object) -> TypeGuard[int]:
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
    if "map" in aggregate and not is_unit_number(aggregate["map"]):
        problems.append(f"{where}.map: must be a finite number in [0, 1]")
    for family in _STANDARD_AT_K:
        if family in aggregate:
            problems.extend(_at_k_problems(aggregate[family], f"{where}.{family}"))
    if "query_count" in aggregate and not _is_count(aggregate["query_count"]):
        problems.append(f"{where}.query_count: must be a non-negative integer")
    return problems


def _at_k_problems(values: object, where: str) -> list[str]:
    if not isinstance(values, dict):
        return [f"{where}: missing or not an object"]
    problems: list[str] = []
    for k, value in values.items():
        # len() first: int() of a 5,000-digit key raises ValueError (a crash, exit 3) past its digit limit.
        if not (isinstance(k, str) and k.isdigit() and k.isascii() and len(k) <= 6 and int(k) >= 1):
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
        if not (isinstance(query_id, str) and query_id):
            problems.append(f"{where}.id: missing, empty or not a string")
        elif query_id in seen:
            # Deltas are matched by id; a repeated id would pair the wrong rows.
            problems.append(f"{where}.id: {query_id!r} appears twice")
        else:
            seen.add(query_id)
        metrics = row.get("metrics")
        if not isinstance(metrics, dict):
            problems.append(f"{where}.metrics: missing or not an object")
            continue
        if not any(key in metrics for key in _RECIPROCAL_RANK_KEYS):
            # Read as NaN it would reach the comparison and the report (which refuses it: exit 3).
            problems.append(f"{where}.metrics.reciprocal_rank: missing")
        for key in _RECIPROCAL_RANK_KEYS:
            if key in metrics and not is_unit_number(metrics[key]):
                problems.append(f"{where}.metrics.{key}: must be a finite number in [0, 1]")
        if "average_precision" in metrics and not is_unit_number(metrics["average_precision"]):
            problems.append(f"{where}.metrics.average_precision: must be a finite number in [0, 1]")
        for family in ("recall_at_k", "ndcg_at_k", *_STANDARD_AT_K):
            if family in metrics:
                problems.extend(_at_k_problems(metrics[family], f"{where}.metrics.{family}"))
        problems.extend(_top_k_problems(row.get("top_k"), f"{where}.top_k"))
        if len(problems) >= _MAX_PROBLEMS:
            break
    return problems


MAX_PARENTS = 5
"""Headings enclosing a hit's section: Markdown nests six levels, so at most five. A longer list
was not written by kb-eval, and matching walks it for every pair of its headings."""


def _top_k_problems(hits: object, where: str) -> list[str]:
    """What of a recorded ranking the report would copy and its schema refuses."""
    if hits is None:
        return []
    if not isinstance(hits, list):
        return [f"{where}: not a list"]
    for index, hit in enumerate(hits):
        if not isinstance(hit, dict):
            continue  # left out when read (_hits), as a malformed entry always was
        rank, parents = hit.get("rank"), hit.get("parents")
        if "rank" in hit and not (_is_count(rank) and rank >= 1):
            return [f"{where}[{index}].rank: must be an integer from 1"]
        if isinstance(parents, list) and len(parents) > MAX_PARENTS:
            return [f"{where}[{index}].parents: {len(parents)} enclosing headings, Markdown nests at most {MAX_PARENTS}"]
    return []


def _json_type(value: object) -> str:
    """`a boolean`, `an object`, `null`: the JSON type as the refusal's sentence reads it."""
    name = json_type(value)
    return name if name == "null" else f"{'an' if name[0] in 'aeiou' else 'a'} {name}"


KB_MCP_FINGERPRINT_ALIASES = ("golden_hash", "k_values", "model", "reranker", "fts_query_version")
"""Written beside kb-eval's fingerprint for kb-mcp's readers (scanner/report/document.py); derived
from kb-eval's own keys, so they are dropped here and never take part in a comparison."""

_STANDARD_AT_K = ("precision_at_k", "success_at_k", "judged_at_k")
"""Recorded since schema minor 1 beside MAP; a run without them is compared on what it has."""

_RECIPROCAL_RANK_KEYS = ("reciprocal_rank", "rr")
"""kb-mcp's key, and the one kb-eval 0.1 wrote (a history written then still compares)."""


def run_from_document(document: Mapping[str, Any]) -> RunRecord:
    """The record of a run document that `run_record_problems` found no problem with.

    What the comparison needs was checked there; the rest (hits, expected entries, tags) is
    taken where well-formed and left out where not, since nothing decides on it."""
    aggregate = document["aggregate"]
    corpus = document.get("corpus")
    tool = document.get("tool")
    by_tag = document.get("by_tag")
    per_query = document.get("per_query")
    return RunRecord(
        tool_version=str(tool.get("version", "")) if isinstance(tool, Mapping) else "",
        timestamp=document["timestamp"],
        fingerprint={
            key: value for key, value in document["fingerprint"].items() if key not in KB_MCP_FINGERPRINT_ALIASES
        },
        corpus=_corpus(corpus) if isinstance(corpus, Mapping) else None,
        aggregate=_aggregate(aggregate),
        by_tag=tuple(
            (tag, _aggregate(value))
            for tag, value in (by_tag.items() if isinstance(by_tag, Mapping) else ())
            if isinstance(tag, str) and isinstance(value, Mapping) and not _aggregate_problems(value, "")
        ),
        queries=tuple(_query(row) for row in per_query) if isinstance(per_query, list) else None,
        findings=(),
        warnings=tuple(_warnings(document.get("warnings"))),
    )


def _corpus(corpus: Mapping[str, Any]) -> CorpusSnapshot | None:
    """None unless both counts were recorded: a half-recorded corpus would compare as changed
    (`-1 -> 642 documents`) when nothing is known. A missing digest is "" (compare says unknown)."""
    documents, chunks, digest = corpus.get("documents"), corpus.get("chunks"), corpus.get("digest")
    if not (_is_count(documents) and _is_count(chunks)):
        return None
    return CorpusSnapshot(documents, chunks, digest if isinstance(digest, str) else "")


def _aggregate(aggregate: Mapping[str, Any]) -> AggregateMetrics:
    count = aggregate.get("query_count")
    return AggregateMetrics(
        query_count=count if _is_count(count) else 0,
        mrr=float(aggregate["mrr"]),
        recall_at_k=_by_k(aggregate.get("recall_at_k")),
        ndcg_at_k=_by_k(aggregate.get("ndcg_at_k")),
        **_standard(aggregate, "map"),
    )


def _standard(metrics: Mapping[str, Any], mean_key: str) -> dict[str, Any]:
    """The measures added in schema minor 1, when all of them were recorded (checked by the
    problems functions above); none of them otherwise, so a half-recorded run compares on kb-mcp's."""
    if not (mean_key in metrics and all(isinstance(metrics.get(family), Mapping) for family in _STANDARD_AT_K)):
        return {}
    mean = "map" if mean_key == "map" else "average_precision"
    return {
        mean: float(metrics[mean_key]),
        **{family: _by_k(metrics[family]) for family in _STANDARD_AT_K},
    }


def _by_k(values: object) -> dict[int, float]:
    if not isinstance(values, Mapping):
        return {}
    return {int(k): float(v) for k, v in values.items()}


def _query(row: Mapping[str, Any]) -> QueryRecord:
    metrics = row["metrics"]
    rr = next((metrics[key] for key in _RECIPROCAL_RANK_KEYS if key in metrics), None)
    text, line, tags = row.get("query"), row.get("line"), row.get("tags")
    expected = tuple(_expected(row.get("expected")))
    return QueryRecord(
        id=row["id"],
        text=text if isinstance(text, str) else "",
        tags=tuple(t for t in tags if isinstance(t, str)) if isinstance(tags, list) else (),
        line=line if _is_count(line) and line else None,
        expected=expected,
        hits=tuple(_hits(row.get("top_k"))),
        metrics=QueryMetrics(
            reciprocal_rank=float(rr) if rr is not None else math.nan,
            recall_at_k=_by_k(metrics.get("recall_at_k")),
            ndcg_at_k=_by_k(metrics.get("ndcg_at_k")),
            **_standard(metrics, "average_precision"),
            # `expected: []` is reported and left out of the aggregate (kb-mcp); an old row
            # without `expected` counted.
            counted=bool(expected) or not isinstance(row.get("expected"), list),
        ),
        answer=_answer(row.get("answer")),
    )


def _answer(answer: object) -> AnswerCost | None:
    """A query's answer cost where well-formed (schema minor 5); else not measured."""
    if not isinstance(answer, Mapping):
        return None
    seconds, size = answer.get("seconds"), answer.get("bytes")
    if not (isinstance(seconds, (int, float)) and not isinstance(seconds, bool) and math.isfinite(seconds)
            and seconds >= 0):
        return None
    return AnswerCost(float(seconds), size if _is_count(size) else None)


def _expected(entries: object, nested: bool = False) -> list[ExpectedEntry]:
    if not isinstance(entries, list):
        return []
    read = []
    for e in entries:
        if not (isinstance(e, Mapping) and isinstance(e.get("path"), str)):
            continue
        heading, parent = e.get("heading"), e.get("parent")
        # Members are read one level deep only: a group's member is never a group.
        members = tuple(_expected(e.get("any"), nested=True)) if not nested else ()
        read.append(
            ExpectedEntry(
                e["path"], heading if isinstance(heading, str) else None, 0,
                # A grade this version cannot read is the default: only the unjudged listing reads it.
                e["grade"] if _is_count(e.get("grade")) else DEFAULT_GRADE,
                parent=parent if isinstance(parent, str) else None,
                subsections=e.get("subsections") is True,
                any_of=members if len(members) >= 2 else (),
            )
        )
    return read


def _hits(entries: object) -> list[Hit]:
    if not isinstance(entries, list):
        return []
    hits = []
    for entry in entries:
        if not (isinstance(entry, Mapping) and _is_count(entry.get("rank")) and isinstance(entry.get("path"), str)):
            continue
        heading, score, parents = entry.get("heading"), entry.get("score"), entry.get("parents")
        known = isinstance(parents, list) and all(isinstance(p, str) for p in parents)
        hits.append(
            Hit(
                entry["rank"], entry["path"], heading if isinstance(heading, str) else "",
                float(score) if isinstance(score, (int, float)) and not isinstance(score, bool)
                and math.isfinite(score) else None,
                tuple(parents) if known and isinstance(parents, list) else None,
            )
        )
    return hits


KNOWN_CODES = frozenset(code.value for code in DiagnosticCode)


def _warnings(entries: object) -> list[Diagnostic]:
    if not isinstance(entries, list):
        return []
    return [
        Diagnostic(
            DiagnosticCode(w["code"]), w["message"],
            w.get("file") if isinstance(w.get("file"), str) else None,
            w.get("line") if _is_count(w.get("line")) else None,
        )
        for w in entries
        # A code this version does not know (a newer kb-eval's) is left out, like any malformed entry.
        # Asked as a string first: a list or an object there cannot even be looked up in a set.
        if isinstance(w, Mapping) and isinstance(w.get("code"), str) and w["code"] in KNOWN_CODES
        and isinstance(w.get("message"), str)
    ]
