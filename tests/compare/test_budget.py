"""A budget per metric: `--regression-threshold 0.05,map=0.02,recall@10=0.1`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from scanner.cli.main import parse_cli
from scanner.compare.comparison import Metric, compare_runs
from scanner.compare.gate import MetricSelector, RegressionBudget, evaluate_gate
from scanner.foundation.errors import ExitCode, InputError
from scanner.report.document import gate_document
from tests.support.run_records import make_record, uniform_aggregate
from tests.support.tagged_runs import TaggedKB


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


# --- a budget per tag: `tag:metric=drop` -------------------------------------------------------



def test_a_tag_pair_names_the_tag_and_the_metric_and_keeps_the_overall_number() -> None:
    budget = parse_cli(["--regression-threshold", "0.05,ops:mrr=0.02,lang:en:recall@5=0.1"]).regression_threshold
    assert budget.default == 0.05
    assert budget.per_metric == (
        (MetricSelector("mrr", None, "ops"), 0.02), (MetricSelector("recall", 5, "lang:en"), 0.1),
    )
    assert budget.threshold_for(Metric("mrr", None), "ops") == 0.02
    # A tag's mean no pair names is not gated; the overall MRR keeps the single number.
    assert budget.threshold_for(Metric("ndcg", 10), "ops") is None
    assert budget.threshold_for(Metric("mrr", None)) == 0.05


@pytest.mark.parametrize(("text", "words"), [(":mrr=0.1", "names an empty tag"), ("ops:mrr=0.1,ops:MRR=0.2", "names ops:MRR twice"),
                                             ("ops:ndgc=0.1", "names no metric in 'ops:ndgc=0.1'")])
def test_a_malformed_tag_pair_is_refused(text: str, words: str) -> None:
    with pytest.raises(InputError) as raised:
        parse_cli(["--regression-threshold", text])
    assert words in raised.value.message


def twenty_queries(tmp_path: Path) -> TaggedKB:
    kb = TaggedKB(tmp_path, ["ops"] * 8 + ["dev"] * 12)
    assert kb.run("base", set())[0] == ExitCode.OK
    return kb


def test_a_tag_whose_mean_fell_past_its_budget_fails_the_gate_naming_tag_and_metric(tmp_path: Path) -> None:
    kb = twenty_queries(tmp_path)
    # One ops query's answer falls to rank 2: ops MRR -0.0625, the overall MRR -0.025 (within 0.05).
    fallen = {"q1"}
    # The threshold alone (`--alpha off`): one query moved, which the default test calls chance.
    baseline = ("--baseline", str(tmp_path / "base.json"), "--fail-on-regression", "--alpha", "off")
    code, _, err = kb.run("head", fallen, *baseline, "--regression-threshold", "0.05,ops:mrr=0.02")
    assert code == ExitCode.REGRESSION
    assert "ops:MRR -0.0625 (budget 0.02)" in err and "q1" in err
    # The near misses: the single number alone passes, and a pair on the tag that did not move too.
    assert kb.run("head", fallen, *baseline, "--regression-threshold", "0.05")[0] == ExitCode.OK
    assert kb.run("head", fallen, *baseline, "--regression-threshold", "0.05,dev:mrr=0.02")[0] == ExitCode.OK


def test_a_tag_s_drop_gets_the_paired_test_over_its_own_queries(tmp_path: Path) -> None:
    kb = twenty_queries(tmp_path)
    baseline = ("--baseline", str(tmp_path / "base.json"), "--fail-on-regression", "--alpha", "0.05",
                "--regression-threshold", "0.5,ops:mrr=0.02")
    # Every ops query falls: 8 of 8 paired differences, p = 2/256.
    code, _, err = kb.run("all", set(kb.ids[:8]), *baseline)
    assert code == ExitCode.REGRESSION and "ops:MRR -0.5000" in err
    document = json.loads((tmp_path / "all.json").read_text())
    verdict = next(v for v in document["gate"]["metrics"] if v["tag"] == "ops" and v["metric"] == "MRR")
    assert verdict["p_value"] == pytest.approx(2 / 256) and verdict["counts"] is True
    # The near miss: two of the eight fall, past the budget but not significant over the tag's queries.
    code, _, _ = kb.run("two", {"q1", "q2"}, *baseline)
    document = json.loads((tmp_path / "two.json").read_text())
    verdict = next(v for v in document["gate"]["metrics"] if v["tag"] == "ops" and v["metric"] == "MRR")
    assert code == ExitCode.OK and verdict["over_threshold"] is True and verdict["p_value"] == 0.5


def test_a_tag_no_query_carries_is_refused_naming_the_tags_there_are(tmp_path: Path) -> None:
    kb = twenty_queries(tmp_path)
    code, _, err = kb.run("head", set(), "--regression-threshold", "0.05,opz:mrr=0.02")
    assert code == ExitCode.BAD_INPUT
    assert "--regression-threshold names the tag 'opz', which no golden query carries (tags: dev, ops)" in err
    assert not (tmp_path / "head.json").exists()
