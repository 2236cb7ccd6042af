"""Committed history and baseline files, fuzzed on the report schema's shape: no value in any
field ends a run with an internal error.

A history run is either refused (a problem naming its field: the run is dropped with a warning)
or read into a record that compares, gates, renders and writes a report that validates. A
baseline is refused with exit 2 naming the file, or the same. The mutations keep the file's
shape and put hostile values where the schema has fields, since a random document is refused
at the first key and never reaches the code under test.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from scanner.compare.comparison import Source, compare_runs
from scanner.compare.gate import evaluate_gate
from scanner.compare.report import Report
from scanner.foundation.errors import InputError
from scanner.render.markdown import SummaryContext, render_summary
from scanner.render.text import render_text
from scanner.report.baseline import read_baseline
from scanner.report.document import report_document, validation_errors
from scanner.report.history import read_history
from scanner.report.read import run_from_document, run_record_problems
from tests.support.run_records import make_record, make_run

FUZZ = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])

_HOSTILE: list[Any] = [
    0, -1, 1, 2, 7, 1.5, -0.0, 0.5, 10**20, 1e300, "", "x", "0", "01", "1", "\x1b[31m", "a\n::error::x",
    None, True, False, [], {}, ["a"], [""], {"1": 0.5}, {"0": 0.5}, {"01": 0.5}, {"": 1},
]


def rich_run() -> dict[str, Any]:
    """A history run as kb-eval writes one, with every optional part the reader knows."""
    run = make_run()
    for row in run["per_query"]:
        row["expected"] = [
            {"path": "q.md", "heading": "Intro", "grade": 2, "parent": "Top", "subsections": True},
            {"path": "g.md", "heading": None, "grade": 1,
             "any": [{"path": "g.md", "heading": None}, {"path": "h.md", "heading": "H", "parent": "P"}]},
        ]
        row["top_k"] = [
            {"rank": 1, "path": "q.md", "heading": "Intro", "score": 2.0, "parents": ["Top"]},
            {"rank": 2, "path": "h.md", "heading": None, "score": None},
        ]
        metrics = row["metrics"]
        metrics["average_precision"] = metrics["reciprocal_rank"]
        for family in ("precision_at_k", "success_at_k", "judged_at_k"):
            metrics[family] = dict(metrics["recall_at_k"])
    aggregate = run["aggregate"]
    aggregate["map"] = aggregate["mrr"]
    for family in ("precision_at_k", "success_at_k", "judged_at_k"):
        aggregate[family] = dict(aggregate["recall_at_k"])
    run["by_tag"] = {"install": copy.deepcopy(aggregate)}
    run["warnings"] = [{"code": "history-pruned", "message": "m", "file": "f", "line": 3}]
    return run


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    found = [prefix]
    if isinstance(value, dict):
        for key, item in value.items():
            found.extend(_paths(item, (*prefix, key)))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            found.extend(_paths(item, (*prefix, index)))
    return found


@st.composite
def mutated(draw: st.DrawFn, original: dict[str, Any]) -> dict[str, Any]:
    """`original` with one to three fields replaced by hostile values, deleted or repeated."""
    document = copy.deepcopy(original)
    for _ in range(draw(st.integers(1, 3))):
        paths = [p for p in _paths(document) if p]
        path = draw(st.sampled_from(paths))
        parent = document
        for step in path[:-1]:
            parent = parent[step]
        last = path[-1]
        action = draw(st.sampled_from(["replace", "replace", "delete", "repeat"]))
        if action == "delete" and isinstance(parent, dict):
            del parent[last]
        elif action == "repeat" and isinstance(parent, list):
            parent.append(copy.deepcopy(parent[last]))
        else:
            parent[last] = copy.deepcopy(draw(st.sampled_from(_HOSTILE)))
    return document


def compared_and_rendered(previous_document: dict[str, Any], source: Source) -> None:
    """Everything a run does with a previous run it accepted: compare, gate, render, validate."""
    previous = run_from_document(previous_document)
    current = make_record()
    comparison = compare_runs(current, previous, source)
    gate = evaluate_gate(comparison, 0.05, 0.05, current)
    report = Report(current, comparison, gate)
    assert validation_errors(report_document(report)) == []
    render_text(report)
    render_summary(report, SummaryContext(kb_path=".", history=(previous,)))


@FUZZ
@given(mutated(rich_run()))
def test_any_history_run_of_the_schemas_shape_is_dropped_by_field_or_compares(run: dict[str, Any]) -> None:
    problems = run_record_problems(run)
    if problems:
        # Each problem names the field it is about, so the warning points at it.
        assert all(": " in problem for problem in problems)
        return
    compared_and_rendered(run, Source.HISTORY)


def _baseline_report() -> dict[str, Any]:
    current = make_record()
    comparison = compare_runs(current, run_from_document(rich_run()), Source.HISTORY)
    return report_document(Report(current, comparison, evaluate_gate(comparison, 0.05, None, current)))


@FUZZ
@given(mutated(_baseline_report()))
def test_any_baseline_of_the_schemas_shape_is_exit_2_naming_the_file_or_compares(
    tmp_path_factory: pytest.TempPathFactory, document: dict[str, Any]
) -> None:
    path = tmp_path_factory.mktemp("baseline") / "baseline.json"
    path.write_text(json.dumps(document), encoding="utf-8")
    try:
        read_baseline(path, validation_errors)
    except InputError as error:
        assert error.file == str(path) and error.hint
        return
    compared_and_rendered(document, Source.BASELINE)


@pytest.mark.parametrize(
    ("change", "field"),
    [
        (lambda row: row["top_k"][0].update(rank=0), "per_query[0].top_k[0].rank"),
        (lambda row: row["metrics"].pop("reciprocal_rank"), "per_query[0].metrics.reciprocal_rank"),
        (lambda row: row.update(id=""), "per_query[0].id"),
    ],
    ids=["rank-0", "no-reciprocal-rank", "empty-id"],
)
def test_a_committed_history_run_the_red_team_planted_is_dropped_naming_its_field(
    tmp_path: Path, change: Any, field: str
) -> None:
    run = rich_run()
    change(run["per_query"][0])
    path = tmp_path / "history.json"
    path.write_text(json.dumps({"format": "kb-eval-history", "schema_version": 1, "runs": [run]}), encoding="utf-8")
    read = read_history(path)
    assert read.runs == ()
    assert [w.code.value for w in read.warnings] == ["history-run-dropped"]
    assert field in read.warnings[0].message and read.warnings[0].file == str(path)


def test_a_history_run_as_kb_eval_writes_it_compares_and_renders(tmp_path: Path) -> None:
    path = tmp_path / "history.json"
    path.write_text(
        json.dumps({"format": "kb-eval-history", "schema_version": 1, "runs": [rich_run()]}), encoding="utf-8"
    )
    read = read_history(path)
    assert read.warnings == () and len(read.runs) == 1
    compared_and_rendered(rich_run(), Source.HISTORY)


def test_a_history_run_written_by_kb_eval_0_1_with_rr_still_compares() -> None:
    run = rich_run()
    for row in run["per_query"]:
        row["metrics"]["rr"] = row["metrics"].pop("reciprocal_rank")
    assert run_record_problems(run) == []
    compared_and_rendered(run, Source.HISTORY)


def test_a_hit_with_more_parents_than_markdown_nests_drops_the_run_and_five_compare() -> None:
    # 8,000 parents made matching cost the square of the list (every heading against those above it).
    run = rich_run()
    run["per_query"][0]["top_k"][0]["parents"] = ["Top"] * 8_000
    [problem] = run_record_problems(run)
    assert problem.startswith("per_query[0].top_k[0].parents:")
    run["per_query"][0]["top_k"][0]["parents"] = ["A", "B", "C", "D", "Top"]  # h1 to h5 above an h6
    assert run_record_problems(run) == []
    compared_and_rendered(run, Source.HISTORY)
