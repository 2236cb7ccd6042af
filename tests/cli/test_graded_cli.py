"""Graded labels and --relevance-level through the CLI: what is refused, warned, recorded."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from scanner.foundation.errors import ExitCode
from tests.conftest import CliResult, run_cli, write_tree

GRADED = """\
queries:
  - id: rollback
    query: rollback procedures for deployments
    expected:
      - {path: ops/rollback.md, grade: 3}
      - {path: ops/images.md, grade: 0}
  - id: tags
    query: container image tags
    expected:
      - {path: ops/images.md, grade: 1}
"""


def graded_kb(root: Path, golden: str = GRADED) -> Path:
    return write_tree(
        root,
        {
            "ops/rollback.md": "# Rollback\nRollback procedures for deployments: revert the release.\n",
            "ops/images.md": "# Images\nContainer image tags follow the release number.\n",
            ".kb-eval.yml": golden,
        },
    )


def run_json(kb: Path, *extra: str) -> tuple[CliResult, dict[str, Any]]:
    result = run_cli("--kb-path", kb, "--format", "json", "--no-history", *extra)
    return result, (json.loads(result.stdout) if result.stdout else {})


def test_the_default_level_counts_grade_1_and_records_no_fingerprint_key(tmp_path: Path) -> None:
    result, report = run_json(graded_kb(tmp_path / "kb"))
    assert result.code == ExitCode.OK, result.stderr
    assert report["aggregate"]["query_count"] == 2
    assert "relevance_level" not in report["fingerprint"]
    assert report["per_query"][0]["expected"][1] == {"path": "ops/images.md", "heading": None, "grade": 0}


def test_a_level_above_some_queries_leaves_them_out_with_a_warning_naming_the_line(tmp_path: Path) -> None:
    result, report = run_json(graded_kb(tmp_path / "kb"), "--relevance-level", "2")
    assert result.code == ExitCode.OK, result.stderr
    assert report["aggregate"]["query_count"] == 1
    assert report["fingerprint"]["relevance_level"] == 2
    warning = next(w for w in report["warnings"] if w["code"] == "no-relevant-entry")
    assert warning["line"] == 7 and "'tags'" in warning["message"] and "--relevance-level" in warning["message"]
    assert not [w for w in report["warnings"] if w["code"] == "no-relevant-entry" and "'rollback'" in w["message"]]


def test_a_level_above_every_grade_is_refused_with_exit_2_naming_the_flag(tmp_path: Path) -> None:
    result, _ = run_json(graded_kb(tmp_path / "kb"), "--relevance-level", "4")
    assert result.code == ExitCode.BAD_INPUT
    assert "--relevance-level 4 is above every grade" in result.stderr and "highest is 3" in result.stderr
    # The highest grade itself is accepted (the near miss).
    assert run_json(graded_kb(tmp_path / "kb2"), "--relevance-level", "3")[0].code == ExitCode.OK


def test_a_level_of_0_is_refused_as_the_flag(tmp_path: Path) -> None:
    result, _ = run_json(graded_kb(tmp_path / "kb"), "--relevance-level", "0")
    assert result.code == ExitCode.BAD_INPUT and "--relevance-level" in result.stderr


def test_runs_at_different_levels_are_not_compared_and_the_reason_names_both(tmp_path: Path) -> None:
    kb = graded_kb(tmp_path / "kb")
    history = str(tmp_path / "history.json")
    assert run_cli("--kb-path", kb, "--history", history).code == ExitCode.OK
    result = run_cli("--kb-path", kb, "--history", history, "--format", "json", "--relevance-level", "2")
    report = json.loads(result.stdout)
    assert report["comparison"]["status"] == "incomparable"
    assert "relevance level differs: 1 vs 2 (the previous run vs this run)" in report["comparison"]["reasons"]
    # The same level twice compares.
    again = json.loads(run_cli("--kb-path", kb, "--history", history, "--format", "json", "--relevance-level", "2").stdout)
    assert again["comparison"]["status"] == "compared"


def test_the_report_gives_each_mean_its_interval_and_the_gate_its_detectable_drop(tmp_path: Path) -> None:
    result, report = run_json(graded_kb(tmp_path / "kb"))
    assert result.code == ExitCode.OK, result.stderr
    aggregate = report["aggregate"]
    low, high = aggregate["interval_95"]["mrr"]
    assert low <= aggregate["mrr"] <= high
    for k, mean in aggregate["ndcg_at_k"].items():
        assert aggregate["interval_95"]["ndcg_at_k"][k][0] <= mean <= aggregate["interval_95"]["ndcg_at_k"][k][1]
    assert set(aggregate["interval_95"]) == {
        "mrr", "map", "recall_at_k", "ndcg_at_k", "precision_at_k", "success_at_k", "judged_at_k"}
    detectable = report["gate"]["detectable_drop"]
    assert detectable["alpha"] == 0.05 and detectable["power"] == 0.8 and detectable["queries"] == 2
    # Two queries: no sign-flip test can reach p < 0.05, so no drop is detectable, and it says so.
    assert detectable["metrics"]["MRR"] == {"drop": None, "basis": "this-run"}
    assert "judged@10" not in detectable["metrics"]
    # The same run twice gives the same intervals.
    assert run_json(graded_kb(tmp_path / "kb2"))[1]["aggregate"]["interval_95"] == aggregate["interval_95"]


def test_the_text_report_lists_the_standard_measures_the_intervals_and_what_the_gate_can_detect(tmp_path: Path) -> None:
    result = run_cli("--kb-path", graded_kb(tmp_path / "kb"), "--no-history")
    assert result.code == ExitCode.OK, result.stderr
    lines = result.stdout.splitlines()
    assert any(line.startswith("P ") for line in lines) and any(line.startswith("judged ") for line in lines)
    assert any(line.startswith("MAP     ") for line in lines)
    interval_line = next(line for line in lines if line.startswith("95% intervals: MRR "))
    assert "MAP " in interval_line and "nDCG@10 " in interval_line
    assert "With 2 counted queries no drop can be significant at alpha 0.05" in result.stdout
