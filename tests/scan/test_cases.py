"""Acceptance cases for golden-queries-quoted: one folder per case, run through the public CLI.

`tests/cases/<rule>/<case>/` holds a tiny knowledge base (`kb/`), its golden file (`golden.yml`) and
the findings the run must report (`findings.json`). A new case is a new folder; nothing here changes.
Each rule folder holds a case that is a finding and its near miss that is not (both halves), and
every case's KB quotes at least one of its golden queries, so an empty expectation cannot pass
because nothing was there to find.

Only the findings part of the report is compared, projected onto the keys the cases pin, so a
change elsewhere in the report does not touch these cases. `displaces_expected` is also derived
from the report's own per-query lists, the way a reader of the report would check it, and compared
with the case; where the report carries the key itself, it must agree with both.
"""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest

from scanner.cli.main import main
from scanner.foundation.errors import ExitCode
from scanner.golden.file import load_golden
from scanner.scan.quotes import normalise

CASES = Path(__file__).parents[1] / "cases"
CASE_FOLDERS = sorted(path.parent for path in CASES.glob("*/*/golden.yml"))
PINNED = ("query_id", "rank_in_top_k", "field", "line")


def run_case(case: Path) -> dict[str, Any]:
    stdout, stderr = io.StringIO(), io.StringIO()
    argv = ["--kb-path", str(case / "kb"), "--golden", str(case / "golden.yml"), "--format", "json", "--no-history"]
    code = main(argv, stdout=stdout, stderr=stderr)
    assert code == ExitCode.OK, stderr.getvalue()  # findings never change the exit code
    report: dict[str, Any] = json.loads(stdout.getvalue())
    return report


def derived_displaces(report: dict[str, Any], query_id: str, path: str) -> bool | None:
    """From the report alone: did `path` rank above every hit of an expected document?"""
    [row] = [q for q in report["per_query"] if q["id"] == query_id]

    def is_expected(hit: dict[str, Any]) -> bool:
        return any(
            hit["path"] == e["path"]
            and (e["heading"] is None or (hit["heading"] or "").strip().lower() == e["heading"].strip().lower())
            for e in row["expected"]
        )

    mine = [hit["rank"] for hit in row["top_k"] if hit["path"] == path]
    if not mine:
        return None
    theirs = [hit["rank"] for hit in row["top_k"] if is_expected(hit)]
    return not theirs or min(mine) < min(theirs)


def findings_of(report: dict[str, Any]) -> list[dict[str, Any]]:
    shown = []
    for finding in report["findings"]:
        quoted = []
        for entry in finding["quoted"]:
            derived = derived_displaces(report, entry["query_id"], finding["path"])
            if "displaces_expected" in entry:
                assert entry["displaces_expected"] == derived, (finding["path"], entry)
            quoted.append({**{key: entry[key] for key in PINNED}, "displaces_expected": derived})
        shown.append({"path": finding["path"], "quoted": quoted})
    return shown


@pytest.mark.parametrize("case", CASE_FOLDERS, ids=[f"{c.parent.name}/{c.name}" for c in CASE_FOLDERS])
def test_the_case_reports_exactly_its_findings(case: Path) -> None:
    expected = json.loads((case / "findings.json").read_text(encoding="utf-8"))
    assert findings_of(run_case(case)) == expected


@pytest.mark.parametrize("case", CASE_FOLDERS, ids=[f"{c.parent.name}/{c.name}" for c in CASE_FOLDERS])
def test_the_case_kb_quotes_one_of_its_queries_so_it_cannot_pass_vacuously(case: Path) -> None:
    needles = {normalise(query.text) for query in load_golden(case / "golden.yml").queries}
    texts = [normalise(path.read_text(encoding="utf-8")) for path in (case / "kb").rglob("*.md")]
    assert any(needle in text for needle in needles for text in texts)


def test_every_rule_folder_holds_a_finding_and_a_near_miss() -> None:
    halves: dict[str, set[bool]] = {}
    for case in CASE_FOLDERS:
        found = bool(json.loads((case / "findings.json").read_text(encoding="utf-8")))
        halves.setdefault(case.parent.name, set()).add(found)
    assert len(halves) >= 6
    assert {rule: kinds for rule, kinds in halves.items() if kinds != {True, False}} == {"displaces": {True}}
