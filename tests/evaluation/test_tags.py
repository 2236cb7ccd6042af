"""Per-tag aggregates: linear in the queries, capped in number with one warning, and bootstrapped
only where a tag has enough queries."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path

import pytest

from scanner.compare.gate import check_named_tags
from scanner.evaluation.records import QueryRecord
from scanner.evaluation.tags import (
    MAX_TAGS_AGGREGATED,
    MIN_QUERIES_FOR_INTERVAL,
    aggregate_by_tag,
    with_tag_intervals,
)
from scanner.foundation.diagnostics import Diagnostics
from scanner.foundation.errors import InputError
from scanner.golden.file import ExpectedEntry
from scanner.metrics.measures import AggregateMetrics, score_query
from scanner.retrievers.base import Hit
from tests.conftest import run_cli, write_tree
from tests.support.counting import steps
from tests.support.run_records import KS, make_record

_EXPECTED = (ExpectedEntry("a.md", None, 1),)
_HITS = (Hit(1, "b.md", "B", 2.0), Hit(2, "a.md", "A", 1.0))
ONE = QueryRecord("q", "text", (), 1, _EXPECTED, _HITS, score_query(list(_HITS), list(_EXPECTED), KS, 1))


def queries(tags: list[tuple[str, ...]]) -> list[QueryRecord]:
    return [dataclasses.replace(ONE, id=f"q{n}", tags=tagged) for n, tagged in enumerate(tags)]


def test_one_tag_per_query_costs_steps_linear_in_the_queries() -> None:
    # Each tag used to be a pass over every query: 5,000 tags of one query each were 25 million checks.
    def case(count: int) -> Callable[[], object]:
        rows = queries([(f"t{n}",) for n in range(count)])
        return lambda: aggregate_by_tag(rows, KS, Diagnostics())

    assert steps(case(2_000)) / steps(case(500)) < 4 * 1.5


def test_past_the_cap_the_tags_carried_by_the_most_queries_are_aggregated_with_one_warning() -> None:
    tags = [("shared",)] * 3 + [(f"t{n:04}",) for n in range(MAX_TAGS_AGGREGATED + 50)]
    diagnostics = Diagnostics()
    by_tag = dict(aggregate_by_tag(queries(tags), KS, diagnostics))
    assert len(by_tag) == MAX_TAGS_AGGREGATED and by_tag["shared"].query_count == 3
    assert "t0000" in by_tag and f"t{MAX_TAGS_AGGREGATED + 49:04}" not in by_tag  # ties by name
    [warning] = diagnostics.items
    assert warning.code.value == "tags-capped"
    assert f"carry {MAX_TAGS_AGGREGATED + 51} tags" in warning.message and "51 have none" in warning.message


def test_at_the_cap_every_tag_is_aggregated_without_a_warning() -> None:
    tags = [(f"t{n}", "all") for n in range(MAX_TAGS_AGGREGATED - 1)]
    diagnostics = Diagnostics()
    by_tag = dict(aggregate_by_tag(queries(tags), KS, diagnostics))
    assert len(by_tag) == MAX_TAGS_AGGREGATED and by_tag["all"].query_count == MAX_TAGS_AGGREGATED - 1
    assert diagnostics.items == []


def test_only_a_tag_with_enough_counted_queries_is_bootstrapped() -> None:
    enough, few = MIN_QUERIES_FOR_INTERVAL, MIN_QUERIES_FOR_INTERVAL - 1
    rows = queries([("big",)] * enough + [("small",)] * few)
    by_tag = aggregate_by_tag(rows, KS, Diagnostics())
    bootstrapped: list[tuple[int, int]] = []

    def bootstrap(metrics: AggregateMetrics, selected: object) -> AggregateMetrics:
        assert isinstance(selected, list)
        bootstrapped.append((metrics.query_count, len(selected)))
        return metrics

    with_tag_intervals(by_tag, rows, bootstrap)
    assert bootstrapped == [(enough, enough)]


def test_a_golden_file_of_many_tags_gives_a_report_of_the_capped_tags(tmp_path: Path) -> None:
    lines = ["queries:"]
    for n in range(MAX_TAGS_AGGREGATED + 20):
        lines += [f"  - id: q{n}", f'    query: "alpha beta {n}"', "    expected: [a.md]", f"    tags: [t{n:04}]"]
    kb = write_tree(tmp_path / "kb", {"a.md": "# Alpha\nalpha beta\n", ".kb-eval.yml": "\n".join(lines) + "\n"})
    result = run_cli("--kb-path", kb, "--no-history", "--format", "json")
    assert result.code == 0, result.stderr
    report = result.json()
    assert len(report["by_tag"]) == MAX_TAGS_AGGREGATED
    assert [w["code"] for w in report["warnings"]] == ["tags-capped"]
    assert all("interval_95" not in value for value in report["by_tag"].values())  # one query each


def test_a_gate_budget_naming_a_tag_past_the_cap_is_exit_2_not_a_budget_that_judges_nothing() -> None:
    # Its verdict was skipped in silence: no aggregate in this run, so nothing to compare.
    tags = [("shared",)] * 2 + [(f"t{n:04}",) for n in range(MAX_TAGS_AGGREGATED + 5)]
    rows = queries(tags)
    run = dataclasses.replace(make_record(), queries=tuple(rows), by_tag=aggregate_by_tag(rows, KS, Diagnostics()))
    with pytest.raises(InputError) as refused:
        check_named_tags([f"t{MAX_TAGS_AGGREGATED + 4:04}"], run, "--regression-threshold")
    assert "has no aggregate of its own" in str(refused.value) and refused.value.field == "--regression-threshold"
    check_named_tags(["shared", "t0000"], run, "--regression-threshold")  # the near miss: aggregated tags pass
