"""A budget per metric: `--regression-threshold 0.05,map=0.02,recall@10=0.1`."""

from __future__ import annotations

from typing import Any

import pytest

from scanner.cli.main import parse_cli
from scanner.compare.comparison import Metric, compare_runs
from scanner.compare.gate import MetricSelector, RegressionBudget, evaluate_gate
from scanner.foundation.errors import InputError
from scanner.report.document import gate_document
from tests.support.run_records import make_record, uniform_aggregate


def standard_aggregate(value: float, **moved: Any) -> dict[str, Any]:
    aggregate = uniform_aggregate(value)
    aggregate |= {
        "map": value,
        "precision_at_k": {k: value for k in aggregate["recall_at_k"]},
        "success_at_k": {k: value for k in aggregate["recall_at_k"]},
        "judged_at_k": {k: value for k in aggregate["recall_at_k"]},
    }
    for key, new in moved.items():
        family, _, k = key.partition("_")
        if k:
            aggregate[f"{family}_at_k"][k] = new
        else:
            aggregate[family] = new
    return aggregate


def gate(budget: str, **moved: float):  # type: ignore[no-untyped-def]
    previous = make_record(aggregate=standard_aggregate(0.8))
    current = make_record(aggregate=standard_aggregate(0.8, **moved))
    return evaluate_gate(compare_runs(current, previous), parse_cli(["--regression-threshold", budget]).regression_threshold)


def test_the_single_number_keeps_its_meaning() -> None:
    assert parse_cli(["--regression-threshold", "0.1"]).regression_threshold == RegressionBudget(0.1)
    assert gate("0.05", map=0.74).tripped
    assert not gate("0.1", map=0.74).tripped


def test_a_pair_gives_one_metric_its_own_budget_and_leaves_the_others_on_the_number() -> None:
    # MAP falls 0.03: past its own 0.02, within the default 0.05.
    result = gate("0.05,map=0.02", map=0.77)
    assert result.tripped and "MAP -0.0300 (budget 0.02)" in result.reason
    assert not gate("0.05,map=0.04", map=0.77).tripped
    # recall@10 falls 0.03 with only MAP budgeted: within the number.
    assert not gate("0.05,map=0.02", recall_10=0.77).tripped


def test_a_pair_with_k_wins_over_the_family_and_the_family_covers_every_k() -> None:
    assert gate("recall=0.01", recall_5=0.78).tripped
    assert not gate("recall=0.01,recall@5=0.05", recall_5=0.78).tripped
    assert gate("recall=0.01,recall@5=0.05", recall_10=0.78).tripped


def test_judged_at_k_is_gated_only_when_a_pair_names_it() -> None:
    result = gate("0.05", judged_10=0.1)
    assert not result.tripped
    [verdict] = result.verdicts
    assert verdict.metric == Metric("judged", 10) and verdict.threshold is None and not verdict.counts
    assert gate("0.05,judged@10=0.2", judged_10=0.1).tripped


def test_the_json_gate_lists_the_pairs_and_each_verdict_s_budget() -> None:
    document = gate_document(gate("0.05,P@5=0.01,map=0.02", precision_5=0.75))
    assert document["threshold"] == 0.05
    assert document["thresholds"] == {"P@5": 0.01, "MAP": 0.02}
    assert document["metrics"][0]["metric"] == "P@5" and document["metrics"][0]["threshold"] == 0.01


@pytest.mark.parametrize(("text", "expected"), [
    ("map=0.02", RegressionBudget(0.05, ((MetricSelector("map", None), 0.02),))),
    ("NDCG@10=0.1, 0.2", RegressionBudget(0.2, ((MetricSelector("ndcg", 10), 0.1),))),
    ("precision@5=0,success=0.3", RegressionBudget(0.05, (
        (MetricSelector("precision", 5), 0.0), (MetricSelector("success", None), 0.3)))),
])
def test_pairs_parse_in_any_case_and_order(text: str, expected: RegressionBudget) -> None:
    assert parse_cli(["--k", "1,5,10", "--regression-threshold", text]).regression_threshold == expected


@pytest.mark.parametrize(("text", "words"), [
    ("0.05,0.1", "two numbers"),
    ("mrr@5=0.1", "names no metric"),
    ("f1=0.1", "names no metric"),
    ("recall@x=0.1", "names no metric"),
    ("map=0.02,MAP=0.03", "names MAP twice"),
    ("map=1", "gives map the drop '1'"),
    ("map=", "gives map the drop ''"),
    (",", "not a number"),
])
def test_a_malformed_budget_is_refused_as_the_flag(text: str, words: str) -> None:
    with pytest.raises(InputError) as raised:
        parse_cli(["--regression-threshold", text])
    assert raised.value.field == "--regression-threshold" and words in raised.value.message


def test_a_pair_for_a_k_the_run_does_not_measure_is_refused_naming_both_flags() -> None:
    with pytest.raises(InputError) as raised:
        parse_cli(["--k", "1,5", "--regression-threshold", "recall@10=0.1"])
    assert "budgets @10, which --k does not measure (--k is 1,5)" in raised.value.message
    assert parse_cli(["--k", "1,10", "--regression-threshold", "recall@10=0.1"]).k == (1, 10)
