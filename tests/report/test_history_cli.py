"""Two-run flows through the CLI: history, baseline and the regression gate."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from scanner.foundation.errors import ExitCode
from tests.conftest import CliResult, golden_yaml, run_cli, write_tree

GOLDEN = golden_yaml(
    ("rollback", "rollback procedures for deployments", ["ops/rollback.md"]),
    ("tags", "container image tags", ["ops/images.md"]),
    ("oncall", "on-call rotation schedule", ["team/oncall.md"]),
)


def kb_with_answers(root: Path) -> Path:
    return write_tree(
        root,
        {
            "ops/rollback.md": "# Rollback\nRollback procedures for deployments: revert the release.\n",
            "ops/images.md": "# Images\nContainer image tags follow the release number.\n",
            "team/oncall.md": "# On-call\nThe on-call rotation schedule changes every Monday.\n",
            ".kb-eval.yml": GOLDEN,
        },
    )


def run_json(kb: Path, *extra: str | Path) -> tuple[CliResult, dict[str, Any]]:
    result = run_cli("--kb-path", kb, "--format", "json", *extra)
    return result, (json.loads(result.stdout) if result.stdout else {})


def history_runs(kb: Path) -> list[dict[str, Any]]:
    runs: list[dict[str, Any]] = json.loads((kb / ".kb-eval-history.json").read_text())["runs"]
    return runs


def test_an_unchanged_corpus_compares_with_no_regression(tmp_path: Path) -> None:
    kb = kb_with_answers(tmp_path / "kb")
    first, report1 = run_json(kb, "--fail-on-regression")
    assert first.code == ExitCode.OK, first.stderr
    assert report1["comparison"]["status"] == "no-previous" and report1["corpus_changed"] is None

    second, report2 = run_json(kb, "--fail-on-regression")

    assert second.code == ExitCode.OK, second.stderr
    assert report2["comparison"]["status"] == "compared"
    assert report2["corpus_changed"] is False
    assert report2["diff"]["aggregate"]["mrr"]["delta"] == 0
    assert report2["gate"]["evaluated"] and not report2["gate"]["tripped"]
    assert len(history_runs(kb)) == 2


def test_a_renamed_document_trips_the_gate_names_metric_and_query_and_still_saves(tmp_path: Path) -> None:
    kb = kb_with_answers(tmp_path / "kb")
    assert run_json(kb)[0].code == ExitCode.OK
    (kb / "ops/rollback.md").rename(kb / "ops/rollback-old.md")

    # The threshold alone (`--alpha off`): one query of a few cannot be told from chance.
    result, report = run_json(kb, "--fail-on-regression", "--alpha", "off")

    assert result.code == ExitCode.REGRESSION
    assert "regression" in result.stderr and "MRR" in result.stderr and "rollback" in result.stderr
    assert report["gate"]["tripped"] is True
    assert report["diff"]["queries"]["worse"] == ["rollback"]
    assert report["corpus_changed"] is True  # the rename changed the corpus digest, still compared
    assert len(history_runs(kb)) == 2  # saved before exiting 1


def test_the_same_drop_without_fail_on_regression_exits_0_with_the_delta(tmp_path: Path) -> None:
    kb = kb_with_answers(tmp_path / "kb")
    run_json(kb)
    (kb / "ops/rollback.md").rename(kb / "ops/rollback-old.md")
    result, report = run_json(kb, "--alpha", "off")
    assert result.code == ExitCode.OK
    assert report["diff"]["aggregate"]["mrr"]["delta"] < -0.05
    assert report["gate"]["tripped"] is True  # reported, not enforced


def test_an_edited_golden_file_skips_the_comparison_with_the_reason(tmp_path: Path) -> None:
    kb = kb_with_answers(tmp_path / "kb")
    run_json(kb)
    (kb / "ops/rollback.md").rename(kb / "ops/rollback-old.md")
    write_tree(kb, {".kb-eval.yml": GOLDEN + "# edited\n"})
    result, report = run_json(kb, "--fail-on-regression")
    assert result.code == ExitCode.OK
    assert report["comparison"] == {
        "status": "incomparable",
        "source": "history",
        "reasons": ["golden changed since the previous run"],
        "cause": "incomparable-fingerprint",
        "hint": None,
        "findings_at_base": None,
    }
    assert report["previous"] is None and report["diff"] is None and report["corpus_changed"] is None
    assert report["gate"]["evaluated"] is False


def test_a_changed_limit_skips_the_comparison(tmp_path: Path) -> None:
    kb = kb_with_answers(tmp_path / "kb")
    run_json(kb, "--limit", "10")
    result, report = run_json(kb, "--limit", "20", "--fail-on-regression")
    assert result.code == ExitCode.OK
    assert report["comparison"]["status"] == "incomparable"
    assert report["comparison"]["reasons"][0].startswith("limit differs: 10 vs 20")


def test_a_note_quoting_two_golden_queries_is_a_finding_and_stays_comparable(tmp_path: Path) -> None:
    kb = kb_with_answers(tmp_path / "kb")
    run_json(kb)
    write_tree(kb, {"notes/eval.md": "# About the eval\n`rollback procedures for deployments` and `on-call rotation schedule`\n"})
    result, report = run_json(kb)
    assert result.code == ExitCode.OK
    assert [f["path"] for f in report["findings"]] == ["notes/eval.md"]
    assert report["comparison"]["status"] == "compared"


def test_an_added_document_marks_the_corpus_changed_and_still_compares(tmp_path: Path) -> None:
    kb = kb_with_answers(tmp_path / "kb")
    run_cli("--kb-path", kb)
    write_tree(kb, {"team/holidays.md": "# Holidays\nThe office closes in August.\n"})
    result = run_cli("--kb-path", kb)
    assert result.code == ExitCode.OK
    assert "The corpus changed since the compared run (3 -> 4 documents" in result.stdout
    assert "a delta may reflect the corpus, not retrieval" in result.stdout
    _, report = run_json(kb)
    assert report["corpus_changed"] is False  # third run: same corpus as the second


def test_an_unreadable_history_stops_the_run_with_exit_2_and_is_left_untouched(tmp_path: Path) -> None:
    kb = kb_with_answers(tmp_path / "kb")
    target = tmp_path / "elsewhere.json"
    target.write_text('{"keep": "me"}')
    (kb / ".kb-eval-history.json").symlink_to(target)
    result, _ = run_json(kb)
    assert result.code == ExitCode.BAD_INPUT and "symbolic link" in result.stderr
    assert result.stdout == ""
    assert target.read_text() == '{"keep": "me"}' and (kb / ".kb-eval-history.json").is_symlink()


def test_a_fifo_at_the_history_path_stops_the_run_with_exit_2(tmp_path: Path) -> None:
    kb = kb_with_answers(tmp_path / "kb")
    os.mkfifo(kb / ".kb-eval-history.json")
    result, _ = run_json(kb)
    assert result.code == ExitCode.BAD_INPUT and "FIFO" in result.stderr


def test_garbage_history_content_warns_and_starts_fresh(tmp_path: Path) -> None:
    kb = kb_with_answers(tmp_path / "kb")
    (kb / ".kb-eval-history.json").write_text('{"format":"kb-eval-history","schema_version":1,"runs":[{garbage')
    result, report = run_json(kb)
    assert result.code == ExitCode.OK
    assert "history-unparsable" in [w["code"] for w in report["warnings"]]
    assert len(history_runs(kb)) == 1


def test_a_file_kb_eval_did_not_write_stops_the_run_with_exit_2_and_is_left_untouched(tmp_path: Path) -> None:
    kb = kb_with_answers(tmp_path / "kb")
    (kb / ".kb-eval-history.json").write_text("{garbage")
    result = run_cli("--kb-path", kb, "--format", "json")
    assert result.code == ExitCode.BAD_INPUT and "left it untouched" in result.stderr
    assert (kb / ".kb-eval-history.json").read_text() == "{garbage"


def test_no_history_neither_reads_nor_writes(tmp_path: Path) -> None:
    kb = kb_with_answers(tmp_path / "kb")
    result, report = run_json(kb, "--no-history")
    assert result.code == ExitCode.OK
    assert not (kb / ".kb-eval-history.json").exists()
    assert report["comparison"]["status"] == "no-previous"


def test_a_saved_baseline_is_compared_instead_of_the_history(tmp_path: Path) -> None:
    kb = kb_with_answers(tmp_path / "kb")
    baseline = tmp_path / "baseline.json"
    assert run_json(kb, "--no-history", "--save-baseline", baseline)[0].code == ExitCode.OK
    (kb / "ops/rollback.md").rename(kb / "ops/rollback-old.md")
    run_json(kb)  # a worse run lands in the history; the baseline stays fixed
    result, report = run_json(kb, "--baseline", baseline, "--fail-on-regression", "--alpha", "off")
    assert result.code == ExitCode.REGRESSION
    assert report["comparison"]["source"] == "baseline" and report["previous"]["source"] == "baseline"


def test_a_baseline_that_is_not_a_report_is_exit_2(tmp_path: Path) -> None:
    kb = kb_with_answers(tmp_path / "kb")
    baseline = tmp_path / "baseline.json"
    baseline.write_text('{"not": "a report"}')
    result, _ = run_json(kb, "--baseline", baseline)
    assert result.code == ExitCode.BAD_INPUT and "not a valid kb-eval report" in result.stderr
    assert not (kb / ".kb-eval-history.json").exists()  # stopped before the eval saved anything


def test_meaningless_gate_settings_are_exit_2(tmp_path: Path) -> None:
    kb = kb_with_answers(tmp_path / "kb")
    assert run_json(kb, "--regression-threshold", "1.5")[0].code == ExitCode.BAD_INPUT
    assert run_json(kb, "--alpha", "0")[0].code == ExitCode.BAD_INPUT
    assert run_json(kb, "--history-size", "0")[0].code == ExitCode.BAD_INPUT
    assert not (kb / ".kb-eval-history.json").exists()
