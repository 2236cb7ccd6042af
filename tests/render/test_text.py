"""The text report (stdout), from real runs."""

from __future__ import annotations

import shutil
from pathlib import Path

from scanner.cli.main import execute
from scanner.render.text import render_text

KB = Path(__file__).resolve().parents[1] / "fixtures" / "redesign" / "kb"


def test_a_query_with_no_expected_document_is_not_listed_as_missed(tmp_path: Path) -> None:
    kb = tmp_path / "kb"
    shutil.copytree(KB, kb)
    golden = kb / ".kb-eval.yml"
    golden.write_text(golden.read_text() + "  - id: unlabelled\n    query: a question with no answer yet\n    expected: []\n")
    result = execute(["--kb-path", str(kb), "--no-history"])
    assert result.report is not None
    text = render_text(result.report)
    assert "  unlabelled:" not in text
    # The near miss: a labelled query that misses is still listed.
    assert "  missing-doc: recall@10 0.00" in text
    assert "9 queries" in text  # the unlabelled one is reported in JSON but not counted


def test_findings_and_comparison_are_in_the_text_report(tmp_path: Path) -> None:
    result = execute(["--kb-path", str(KB), "--run", str(KB.parent / "run.jsonl"), "--no-history"])
    assert result.report is not None
    text = render_text(result.report)
    assert "findings: 1 document quotes 2 or more golden queries verbatim (golden-queries-quoted)" in text
    assert "    image-tags (took rank 1 above the expected document), body line 7" in text
    assert text.rstrip().endswith("No comparison: history disabled (--no-history) and no --baseline given")


def test_a_regression_nobody_enforces_says_the_exit_status_stays_0_and_an_enforced_one_does_not() -> None:
    import dataclasses

    from scanner.compare.comparison import compare_runs
    from scanner.compare.gate import evaluate_gate
    from scanner.render.phrases import gate_line
    from tests.support.run_records import make_record, uniform_aggregate

    comparison = compare_runs(make_record(aggregate=uniform_aggregate(0.5)), make_record(aggregate=uniform_aggregate(0.9)))
    advice = evaluate_gate(comparison, 0.05)
    assert advice.tripped and "the exit status stays 0" in gate_line(advice)
    enforced = dataclasses.replace(advice, enforced=True)
    assert gate_line(enforced).startswith("REGRESSION: ") and "exit status" not in gate_line(enforced)
