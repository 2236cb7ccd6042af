"""Each answer's time and size, recorded per query and spread per run, outside the fingerprint."""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scanner.cli.main import execute
from scanner.compare.cost_budgets import CostBudgets, evaluate_cost_budgets
from scanner.evaluation.costs import nearest_rank, summarise
from scanner.foundation.errors import ExitCode, InputError
from scanner.golden.file import find_golden, load_golden
from scanner.render import phrases
from scanner.report.document import run_document, validation_errors
from scanner.report.read import run_from_document
from scanner.retrievers.base import AnswerCost
from tests.conftest import REPO

KB = REPO / "examples" / "kb"
ECHO = Path(__file__).parents[1] / "support" / "fake_kb_search.py"
COMMAND = f"{shlex.quote(sys.executable)} {shlex.quote(str(ECHO))} search --format json --limit {{limit}} {{query}}"


@settings(max_examples=200, derandomize=True)
@given(st.lists(st.floats(min_value=0, max_value=1e4, allow_nan=False), min_size=1, max_size=60))
def test_the_percentiles_are_nearest_rank_as_numpys_inverted_cdf(values: list[float]) -> None:
    ordered = sorted(values)
    for fraction in (0.5, 0.95):
        assert nearest_rank(ordered, fraction) == np.percentile(values, fraction * 100, method="inverted_cdf")


def test_a_spread_is_a_value_some_query_had_and_missing_costs_are_not_a_spread() -> None:
    costs = [AnswerCost(s / 10, 100 * s) for s in range(1, 21)]
    summary = summarise(costs)
    assert summary is not None and summary.queries == 20
    assert (summary.seconds.p50, summary.seconds.p95, summary.seconds.max) == (1.0, 1.9, 2.0)
    assert summary.bytes is not None and summary.bytes.p95 == 1900
    # The near misses: one query not measured leaves the run unmeasured, not a spread of the rest;
    # sizes the retriever does not report leave the time alone.
    assert summarise([*costs, None]) is None
    sized = summarise([AnswerCost(0.5, None), AnswerCost(0.7, None)])
    assert sized is not None and sized.bytes is None and sized.seconds.max == 0.7


def ranked_command(tmp_path: Path) -> str:
    """The fake search answering each golden query with its expected paths."""
    golden = load_golden(find_golden(KB, None))
    rankings = tmp_path / "rankings.json"
    rankings.write_text(json.dumps({
        query.text: [{"path": entry.path} for entry in query.expected] for query in golden.queries
    }))
    return COMMAND.replace("search ", f"search --rankings {shlex.quote(str(rankings))} ", 1)


def test_a_command_retrievers_answers_are_timed_and_sized_per_query_and_outside_the_fingerprint(
    tmp_path: Path,
) -> None:
    command = ranked_command(tmp_path)
    result = execute(["--kb-path", str(KB), "--no-history", "--format", "json", "--command", command])
    assert result.exit_code == ExitCode.OK, result.stderr_text
    report = json.loads(result.stdout_text)
    assert validation_errors(report) == []
    for row in report["per_query"]:
        assert row["answer"]["seconds"] > 0
        # The fake prints the query back inside its JSON: the size is exactly what it printed.
        assert row["answer"]["bytes"] > len(row["query"])
    answers = report["answers"]
    assert answers["queries"] == len(report["per_query"])
    assert answers["bytes"]["max"] == max(row["answer"]["bytes"] for row in report["per_query"])
    # By key, not by text: the checkout's own path (in the command) may hold the word.
    assert not {"answer", "answers", "seconds", "bytes"} & keys_in(report["fingerprint"])
    # Read back (a history, the base's child), every query keeps its cost.
    again = run_from_document(report)
    assert [q.answer.bytes if q.answer else None for q in again.queries or ()] == [
        row["answer"]["bytes"] for row in report["per_query"]
    ]
    assert run_document(again)["answers"] == answers


def test_the_built_in_search_is_not_timed_so_its_report_is_the_same_bytes_each_run() -> None:
    reports = [
        json.loads(execute(["--kb-path", str(KB), "--no-history", "--format", "json"]).stdout_text) for _ in range(2)
    ]
    assert reports[0]["answers"] is None and all(row["answer"] is None for row in reports[0]["per_query"])
    assert {k: v for k, v in reports[0].items() if k != "timestamp"} == {
        k: v for k, v in reports[1].items() if k != "timestamp"
    }


def test_the_summary_line_says_each_spread_and_the_change_of_p95() -> None:
    now = summarise([AnswerCost(0.2, 2048), AnswerCost(0.4, 4096)])
    before = summarise([AnswerCost(0.1, 1024), AnswerCost(0.3, 1024)])
    assert now is not None and before is not None
    sentence = phrases.answers_sentence(now, before)
    assert sentence == (
        "Answer time p50 200 ms · p95 400 ms · max 400 ms (p95 before: 300 ms, +100 ms); "
        "answer size p50 2.0 KiB · p95 4.0 KiB · max 4.0 KiB (p95 before: 1.0 KiB, +3.0 KiB), over 2 queries."
    )
    # Every figure in the sentence is one of the records'.
    assert phrases.duration(now.seconds.p95) == "400 ms" and phrases.size(before.bytes.p95) == "1.0 KiB"  # type: ignore[union-attr]
    assert "before" not in phrases.answers_sentence(now, None)


def keys_in(value: object) -> set[str]:
    """Every object key at any depth of a JSON value."""
    if isinstance(value, dict):
        return set(value) | {key for item in value.values() for key in keys_in(item)}
    if isinstance(value, list):
        return {key for item in value for key in keys_in(item)}
    return set()


# --- budgets ---------------------------------------------------------------------------------------


def test_budgets_parse_with_their_units_and_refuse_what_they_cannot_measure() -> None:
    from scanner.settings import values

    assert values.latency_budget("p95=800ms, max=2s").time == (("p95", 0.8), ("max", 2.0))
    assert values.answer_budget("max=64KiB").size == (("max", 65536.0),)
    assert values.answer_budget("p50=64KB").size == (("p50", 64000.0),)
    for wrong in ("p95=800", "p99=1s", "p95=1s,p95=2s", "p95"):
        with pytest.raises(values.Refused):
            values.latency_budget(wrong)


def test_a_budget_equal_to_its_value_holds_and_one_over_it_fails() -> None:
    answers = summarise([AnswerCost(0.5, 100), AnswerCost(0.8, 200)])
    held = evaluate_cost_budgets(CostBudgets(time=(("max", 0.8),), size=(("max", 200.0),)), answers)
    assert held.checks and not held.failed
    over = evaluate_cost_budgets(CostBudgets(time=(("p95", 0.79),)), answers)
    assert [check.statistic for check in over.failed] == ["p95"]
    assert phrases.costs_failed(over) == "answer time p95 800 ms is over its budget 790 ms by 10 ms"


def test_a_budget_on_answers_nobody_timed_is_refused_not_passed() -> None:
    with pytest.raises(InputError, match="not timed"):
        evaluate_cost_budgets(CostBudgets(time=(("p95", 1.0),)), None)
    result = execute(["--kb-path", str(KB), "--no-history", "--latency-budget", "p95=1s"])
    assert result.exit_code == ExitCode.BAD_INPUT
    assert "--latency-budget does not apply to --retriever builtin" in result.stderr_text


def test_an_answer_over_its_budget_fails_the_step_and_says_by_how_much(tmp_path: Path) -> None:
    command = ranked_command(tmp_path)
    summary = tmp_path / "summary.md"
    base = ["--kb-path", str(KB), "--no-history", "--format", "json", "--command", command, "--summary", str(summary)]
    held = execute([*base, "--latency-budget", "max=1000s", "--answer-budget", "max=1MiB"])
    assert held.exit_code == ExitCode.OK, held.stderr_text
    assert [b["over"] for b in json.loads(held.stdout_text)["answer_budgets"]] == [False, False]
    assert "Answer budgets held" in summary.read_text()
    over = execute([*base, "--answer-budget", "max=1B"])
    assert over.exit_code == ExitCode.REGRESSION
    [budget] = json.loads(over.stdout_text)["answer_budgets"]
    assert budget["over"] and budget["value"] == max(row["answer"]["bytes"] for row in json.loads(over.stdout_text)["per_query"])
    assert "answer size max" in over.stderr_text and "is over its budget 1 B" in over.stderr_text
    assert "**answer size max" in summary.read_text()
