"""The regression gate: threshold boundaries, naming, no-op and significance."""

from __future__ import annotations

from pathlib import Path

import pytest

from scanner.compare.comparison import compare_runs, compare_with_history
from scanner.compare.gate import GateResult, evaluate_gate
from scanner.compare.report import Report
from scanner.foundation.errors import ExitCode
from scanner.render.text import gate_lines
from scanner.report.document import gate_document
from tests.conftest import run_cli
from tests.support.run_records import make_record, uniform_aggregate


def _gate_for(previous_value: float, current_value: float, threshold: float = 0.05) -> GateResult:
    previous = make_record(aggregate=uniform_aggregate(previous_value))
    current = make_record(aggregate=uniform_aggregate(current_value))
    return evaluate_gate(compare_runs(current, previous), threshold)


def test_a_drop_exactly_equal_to_the_threshold_does_not_trip() -> None:
    # 0.80 - 0.75 is 0.05000000000000004 in floating point; it must still count as 0.05.
    result = _gate_for(0.80, 0.75)
    assert result.evaluated and not result.tripped
    assert all(not verdict.over_threshold for verdict in result.verdicts)


def test_a_drop_just_above_the_threshold_trips() -> None:
    result = _gate_for(0.80, 0.7499)
    assert result.tripped
    assert {verdict.metric.label for verdict in result.verdicts if verdict.counts} == {
        "recall@1",
        "recall@5",
        "recall@10",
        "MRR",
        "nDCG@1",
        "nDCG@5",
        "nDCG@10",
    }


def test_a_drop_in_a_single_metric_trips_and_is_named() -> None:
    previous = make_record(aggregate=uniform_aggregate(0.8))
    dropped = uniform_aggregate(0.8)
    dropped["ndcg_at_k"]["5"] = 0.7
    result = evaluate_gate(compare_runs(make_record(aggregate=dropped), previous), 0.05)
    assert result.tripped
    assert [v.metric.label for v in result.verdicts if v.counts] == ["nDCG@5"]
    assert "nDCG@5 -0.1000" in result.reason


def test_an_improvement_never_trips() -> None:
    result = _gate_for(0.5, 0.9)
    assert result.evaluated and not result.tripped and result.verdicts == ()


def test_the_gate_names_the_worst_queries() -> None:
    previous = make_record({"q1": 1.0, "q2": 1.0, "q3": 0.5, "q4": 1.0})
    current = make_record({"q1": 1.0, "q2": 0.0, "q3": 0.25, "q4": 1.0})
    result = evaluate_gate(compare_runs(current, previous), 0.05)
    assert result.tripped
    recall5 = next(v for v in result.verdicts if v.metric.label == "recall@5")
    assert recall5.worst_queries == (("q2", -1.0), ("q3", -0.25))
    assert "worst queries: q2 (-1.000), q3 (-0.250)" in result.reason
    report = Report(current, compare_runs(current, previous), result)
    assert any("worst queries: q2" in line for line in gate_lines(report))


def test_without_a_comparable_run_the_gate_is_a_no_op_that_says_why() -> None:
    runs = [
        make_record(
            fingerprint_changes={"golden_sha256": "e" * 64},
            aggregate=uniform_aggregate(1.0),
        )
    ]
    result = evaluate_gate(compare_with_history(make_record(aggregate=uniform_aggregate(0.0)), runs), 0.05)
    assert not result.tripped and not result.evaluated
    assert "golden changed since the previous run" in result.reason
    empty = evaluate_gate(compare_with_history(make_record(), []), 0.05)
    assert not empty.tripped and "no previous run" in empty.reason


def test_findings_never_trip_the_gate() -> None:
    finding = {"check": "golden-queries-quoted", "path": "notes/x.md", "quoted": []}
    result = evaluate_gate(compare_runs(make_record(findings=[finding] * 5), make_record()), 0.0)
    assert result.evaluated and not result.tripped


def test_a_zero_threshold_trips_on_any_drop() -> None:
    assert _gate_for(0.5, 0.49, threshold=0.0).tripped
    assert not _gate_for(0.5, 0.5, threshold=0.0).tripped


# --- alpha: only significant drops count ------------------------------------------------


def test_with_alpha_one_query_flipping_on_five_does_not_trip_but_reports_p() -> None:
    previous = make_record({f"q{i}": 1.0 for i in range(5)})
    current = make_record({"q0": 0.0} | {f"q{i}": 1.0 for i in range(1, 5)})
    comparison = compare_runs(current, previous)
    assert evaluate_gate(comparison, 0.05).tripped  # the near miss: without alpha it trips

    result = evaluate_gate(comparison, 0.05, alpha=0.05)

    assert not result.tripped
    for verdict in result.verdicts:
        assert verdict.over_threshold and not verdict.counts
        assert verdict.significance is not None and verdict.significance.p_value == 1.0
    assert "drops past 0.05 that chance explains (the gate needs p < 0.05)" in result.reason
    assert "(1 of 5 queries moved, p = 1)" in result.reason
    assert gate_document(result)["metrics"][0]["p_value"] == 1.0


def test_with_alpha_a_broad_drop_is_significant_and_trips() -> None:
    previous = make_record({f"q{i:02d}": 1.0 for i in range(40)})
    current = make_record({f"q{i:02d}": (0.0 if i < 30 else 1.0) for i in range(40)})
    result = evaluate_gate(compare_runs(current, previous), 0.05, alpha=0.05)
    assert result.tripped
    for verdict in result.verdicts:
        assert verdict.significance is not None
        assert verdict.significance.method == "monte-carlo"
        assert verdict.significance.p_value < 0.001
        assert verdict.counts


@pytest.mark.parametrize(
    ("flag", "value"),
    [
        ("--regression-threshold", "-0.01"),
        ("--regression-threshold", "1.0"),
        ("--regression-threshold", "nan"),
        ("--alpha", "0"),
        ("--alpha", "1.5"),
        ("--alpha", "inf"),
    ],
)
def test_meaningless_gate_settings_are_refused_where_declared(flag: str, value: str, tmp_path: Path) -> None:
    # Checked once, by the declaration, before anything runs: the gate takes what it accepts.
    result = run_cli("--kb-path", tmp_path, flag, value)
    assert result.code == ExitCode.BAD_INPUT and flag in result.stderr


@pytest.mark.parametrize(("flag", "value"), [("--regression-threshold", "0"), ("--alpha", "1")])
def test_ordinary_gate_settings_are_accepted(flag: str, value: str) -> None:
    from scanner.settings.declaration import setting

    setting(flag.lstrip("-")).parse(value)
