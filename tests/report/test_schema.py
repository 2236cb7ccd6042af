"""The comparison and gate fragments validate against the published report schema."""

from __future__ import annotations

import json
from typing import Any

import jsonschema
import pytest
from hypothesis import given
from hypothesis import strategies as st

from scanner.compare.comparison import Comparison, compare_runs, compare_with_history, no_previous
from scanner.compare.gate import GateResult, evaluate_gate
from scanner.compare.report import Report
from scanner.evaluation.records import RunRecord
from scanner.report.document import SCHEMA_PATH, report_document
from scanner.report.read import run_from_document
from tests.support.run_records import make_record, make_run

SCHEMA = json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))


def _report(current: RunRecord, comparison: Comparison, gate: GateResult) -> dict[str, Any]:
    return report_document(Report(current, comparison, gate))


def _assert_valid(report: dict[str, Any]) -> None:
    validator = jsonschema.Draft202012Validator(SCHEMA)
    errors = [f"{list(e.absolute_path)}: {e.message}" for e in validator.iter_errors(report)]
    assert errors == []


def test_a_compared_report_with_a_tripped_gate_and_p_values_is_valid() -> None:
    previous = make_record(
        {"q1": 1.0, "q2": 1.0, "q3": 0.5}, corpus={"documents": 1, "chunks": 2, "digest": "sha256:" + "2" * 64}
    )
    current = make_record({"q1": 1.0, "q2": 0.0, "q3": 0.75})
    comparison = compare_runs(current, previous)
    gate = evaluate_gate(comparison, 0.05, alpha=0.5)
    report = _report(current, comparison, gate)
    _assert_valid(report)
    assert report["corpus_changed"] is True and report["gate"]["metrics"][0]["p_value"] is not None


def test_incomparable_and_no_previous_reports_are_valid() -> None:
    current = make_record()
    for comparison in (
        compare_with_history(current, [make_record(fingerprint_changes={"limit": 20})]),
        compare_with_history(current, []),
        no_previous("history disabled (--no-history)"),
    ):
        _assert_valid(_report(current, comparison, evaluate_gate(comparison, 0.05)))


def test_a_comparison_with_an_old_run_without_ndcg_is_valid() -> None:
    old = {
        "timestamp": "2026-01-01T00:00:00Z",
        "fingerprint": make_run()["fingerprint"],
        "aggregate": {"mrr": 0.5, "recall_at_k": {"1": 0.5, "5": 0.5, "10": 0.5}},
        "per_query": [{"id": "q1", "metrics": {"rr": 1.0}}],
    }
    current = make_record()
    comparison = compare_runs(current, run_from_document(old))
    _assert_valid(_report(current, comparison, evaluate_gate(comparison, 0.05)))


@pytest.mark.parametrize(
    "broken",
    [
        {"comparison": {"status": "maybe", "source": None, "reasons": []}},
        {"comparison": {"status": "compared", "source": "history"}},
        {"gate": {"tripped": "yes"}},
        {"diff": {"aggregate": {"mrr": {"previous": 2, "current": 0, "delta": -2}}}},
    ],
    ids=["unknown status", "no reasons", "gate shape", "delta out of range"],
)
def test_the_schema_rejects_a_broken_comparison(broken: dict[str, Any]) -> None:
    current = make_record()
    comparison = compare_runs(current, make_record())
    report = _report(current, comparison, evaluate_gate(comparison, 0.05)) | broken
    assert list(jsonschema.Draft202012Validator(SCHEMA).iter_errors(report)) != []


def _many_rows(count: int) -> dict[str, Any]:
    """A real report whose per-query rows are `count` copies of one row, ids renumbered."""
    current = make_record({"q1": 1.0, "q2": 0.5})
    document = _report(current, no_previous("history disabled (--no-history)"), evaluate_gate(no_previous("x"), 0.05))
    row = document["per_query"][0]
    document["per_query"] = [{**row, "id": f"q{n}"} for n in range(count)]
    return document


def test_rows_of_one_shape_are_validated_once_so_validation_does_not_grow_with_queries() -> None:
    from scanner.report.document import rows_to_validate

    small, large = rows_to_validate(_many_rows(10)), rows_to_validate(_many_rows(1000))
    assert len(small["per_query"]) == len(large["per_query"]) == 2
    # The near miss: a list no longer than the schema's shortest list of objects is kept whole.
    assert len(rows_to_validate(_many_rows(2))["per_query"]) == 2


def test_a_row_of_a_shape_no_earlier_row_has_is_validated_wherever_it_sits() -> None:
    from scanner.report.document import ReportInvalid, validate

    document = _many_rows(1000)
    validate(document)  # valid as built
    late = document["per_query"][700]
    document["per_query"][700] = {**late, "line": "three"}  # a string where the schema wants an integer
    with pytest.raises(ReportInvalid, match="per_query/2/line"):
        validate(document)


def test_every_list_of_objects_keeps_one_item_of_each_shape_and_its_first_two() -> None:
    from scanner.report.document import rows_to_validate

    hits = [{"rank": n, "heading": "h"} for n in range(5)] + [{"rank": 6, "heading": None}]
    assert rows_to_validate({"top_k": hits, "k": [1, 5, 10]}) == {
        "top_k": [hits[0], hits[1], hits[5]], "k": [1, 5, 10],
    }


def test_the_published_schema_is_valid_against_its_metaschema_and_a_broken_one_is_not() -> None:
    # A run no longer checks the schema it validates with: this test does, once (the wheel ships
    # these bytes: tests/packaging/test_installed.py).
    schema = json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))
    validator_class = jsonschema.validators.validator_for(schema)
    validator_class.check_schema(schema)
    with pytest.raises(jsonschema.SchemaError):
        validator_class.check_schema({**schema, "type": 5})


def _reference_shape(value: Any) -> object:
    """The shape as its definition says it, one call per value."""
    if isinstance(value, dict):
        return tuple((key, _reference_shape(item)) for key, item in value.items())
    if isinstance(value, list):
        return tuple(_reference_shape(item) for item in value)
    return type(value)


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=3),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=3), inner, max_size=4),
    max_leaves=20,
)


@given(_JSON)
def test_a_rows_shape_is_its_keys_types_and_list_lengths_at_every_depth(value: Any) -> None:
    from scanner.report.document import _shape

    assert _shape(value) == _reference_shape(value)
    # The near miss: a list one item longer is another shape.
    assert _shape([value]) != _shape([value, value])
