"""`kb-eval compare --format json`: the table of several runs as JSON, every key every time."""

from __future__ import annotations

from typing import Any

from scanner.compare.runs import RunsTable

COMPARE_KIND = "kb-eval-compare"
COMPARE_VERSION = 1


def runs_table_document(table: RunsTable) -> dict[str, Any]:
    runs = []
    for number, named in enumerate(table.runs):
        pairing = table.pairings[number - 1] if number else None
        runs.append({
            "name": named.name,
            "retriever": named.run.retriever_name,
            "timestamp": named.run.timestamp,
            "query_count": named.run.aggregate.query_count,
            "paired": None if pairing is None else pairing.paired,
            "paired_queries": None if pairing is None else pairing.queries,
            "not_paired_because": [] if pairing is None else list(pairing.reasons),
        })
    return {
        "kind": COMPARE_KIND,
        "version": COMPARE_VERSION,
        "alpha": table.alpha,
        "tag": table.tag,
        "runs": runs,
        "metrics": [
            {
                "metric": row.metric.label,
                "cells": [
                    {
                        "value": cell.value,
                        "delta": cell.delta,
                        "p_value": cell.test.p_value if cell.test is not None else None,
                        "significant": table.significant(cell) if cell.test is not None else None,
                    }
                    for cell in row.cells
                ],
            }
            for row in table.rows
        ],
    }
