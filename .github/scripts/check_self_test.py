#!/usr/bin/env python3
"""The self-test workflow's verdict (.github/workflows/self-test.yml): outputs and reports as a user sees them.

Reads the steps' outputs as `toJSON(steps.<id>.outputs)` in CLEAN_OUTPUTS and LEAK_OUTPUTS, the
outcome of the mistyped-kb-path step in TYPO_OUTCOME, and the reports from the workspace (the
current folder). Prints one line per check; exit 1 when any failed. Standard library only: it runs
on the runner's Python, outside the image it checks.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Mapping
from pathlib import Path

OUTPUT_NAMES = ("report", "query-count", "mrr", "recall", "ndcg", "findings-count", "regressed")
EXAMPLE_QUERIES = 8
"""Queries in examples/kb/.kb-eval.yml."""
LEAK_NOTE = "notes/eval-checklist.md"
"""The note the workflow adds to the copy, quoting two golden queries."""


def check_run(name: str, outputs: Mapping[str, str], workspace: Path, findings: list[str]) -> list[str]:
    """Problems with one action run: every output set, consistent with the report it names."""
    problems = [f"{name}: output {key} is missing" for key in OUTPUT_NAMES if key not in outputs]
    if problems:
        return problems
    report_path = workspace / outputs["report"]
    if not report_path.is_file():
        return [f"{name}: the report {outputs['report']} was not written"]
    report = json.loads(report_path.read_text(encoding="utf-8"))
    if outputs["query-count"] != str(EXAMPLE_QUERIES) or len(report["per_query"]) != EXAMPLE_QUERIES:
        problems.append(f"{name}: {outputs['query-count']} queries in the outputs, {EXAMPLE_QUERIES} expected")
    if not math.isclose(float(outputs["mrr"]), float(report["aggregate"]["mrr"])) or not 0 < float(outputs["mrr"]) <= 1:
        problems.append(f"{name}: output mrr {outputs['mrr']} is not the report's {report['aggregate']['mrr']}")
    found = sorted(finding["path"] for finding in report["findings"])
    if found != findings or outputs["findings-count"] != str(len(findings)):
        problems.append(f"{name}: findings {found} (output {outputs['findings-count']}), expected {findings}")
    if outputs["regressed"] != "false":
        problems.append(f"{name}: regressed is {outputs['regressed']} with no baseline")
    return problems


def check(environ: Mapping[str, str], workspace: Path) -> list[str]:
    problems = check_run("clean", json.loads(environ["CLEAN_OUTPUTS"]), workspace, [])
    problems += check_run("leak", json.loads(environ["LEAK_OUTPUTS"]), workspace, [LEAK_NOTE])
    if environ.get("TYPO_OUTCOME") != "failure":
        problems.append(f"typo: a mistyped kb-path gave outcome {environ.get('TYPO_OUTCOME')!r}, not failure")
    return problems


def main() -> int:
    problems = check(os.environ, Path.cwd())
    for problem in problems:
        print(f"::error title=self-test::{problem}")
    if not problems:
        print("self-test: outputs and reports as expected (clean, leak, typo)")
    return 1 if problems else 0


if __name__ == "__main__":
    raise SystemExit(main())
