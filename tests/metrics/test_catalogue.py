"""The measure catalogue (scanner/metrics/catalogue.py) is the one list of measures: the records,
the JSON schema, the budget parser and docs/metrics.md agree with it."""

from __future__ import annotations

import dataclasses
import json

import pytest

from scanner.compare.comparison import metrics_of
from scanner.golden.file import ExpectedEntry
from scanner.metrics.catalogue import BY_REPORT_KEY, CATALOGUE, IN_COMPARISON_ORDER, Measure, aggregate
from scanner.metrics.measures import AggregateMetrics, QueryMetrics, score_query
from scanner.retrievers.base import Hit
from scanner.settings.values import Refused, budget
from tests.conftest import REPO


def hits(*paths: str) -> list[Hit]:
    return [Hit(rank, path, "", 1.0) for rank, path in enumerate(paths, 1)]


def expected(*paths: str) -> list[ExpectedEntry]:
    return [ExpectedEntry(path, None, line) for line, path in enumerate(paths, 1)]


SCHEMA = json.loads((REPO / "schema" / "report.schema.json").read_text(encoding="utf-8"))


def _probe(record: type[QueryMetrics | AggregateMetrics]) -> dict[str, object]:
    """A record whose every measure field holds a value no other field holds."""
    values: dict[str, object] = {}
    for n, field in enumerate(dataclasses.fields(record)):
        if field.name in ("counted", "query_count", "intervals"):
            continue
        values[field.name] = {1: n / 100} if field.name.endswith("_at_k") else n / 100
    return values


@pytest.mark.parametrize("record", [QueryMetrics, AggregateMetrics])
def test_every_measure_a_record_holds_is_read_by_exactly_one_entry(record: type) -> None:
    # A value added to the records without a catalogue entry would never be compared or written.
    values = _probe(record)
    filled = record(**values, **({"query_count": 1} if record is AggregateMetrics else {}))
    read = [
        (measure.of_query if record is QueryMetrics else measure.of_aggregate)(filled) for measure in CATALOGUE
    ]
    assert sorted(map(repr, read)) == sorted(map(repr, values.values()))


def test_a_scored_query_has_every_measure_at_every_cutoff() -> None:
    row = score_query(hits("a.md", "b.md"), expected("b.md"), (1, 5))
    for measure in CATALOGUE:
        for k in (1, 5) if measure.at_k else (None,):
            assert measure.query_value(row, k) is not None, measure.label(k)
        assert measure.aggregate_value(aggregate([row], (1, 5)), 5 if measure.at_k else None) is not None


def test_a_run_recorded_before_the_standard_measures_compares_on_kb_mcps_three() -> None:
    old = AggregateMetrics(3, 0.5, {5: 0.5}, {5: 0.4})
    assert [metric.label for metric in metrics_of(old)] == ["recall@5", "MRR", "nDCG@5"]
    fresh = aggregate([score_query(hits("a.md"), expected("a.md"), (5,))], (5,))
    assert [metric.label for metric in metrics_of(fresh)] == [
        "recall@5", "MRR", "nDCG@5", "P@5", "success@5", "MAP", "judged@5"
    ]


def test_the_schema_lists_the_catalogues_keys_in_the_reports_order_with_its_descriptions() -> None:
    definitions = SCHEMA["$defs"]
    aggregate_keys = [key for key in definitions["aggregate"]["properties"] if key not in ("query_count", "interval_95")]
    assert aggregate_keys == [measure.report_key for measure in CATALOGUE]
    assert list(definitions["metric_deltas"]["properties"]) == [measure.report_key for measure in CATALOGUE]
    query_keys = [measure.query_key for measure in CATALOGUE]
    assert list(definitions["query"]["properties"]["metrics"]["properties"]) == query_keys
    assert list(definitions["query_metric_deltas"]["properties"]) == query_keys
    intervals = definitions["aggregate"]["properties"]["interval_95"]["properties"]
    assert list(intervals) == [m.report_key for m in CATALOGUE if not m.at_k] + [m.report_key for m in CATALOGUE if m.at_k]
    for measure in CATALOGUE:
        assert definitions["aggregate"]["properties"][measure.report_key]["description"].startswith(measure.description)


def docs_table() -> str:
    rows = [
        "| measure | JSON key (aggregate / per query) | equals | gated by the single threshold |",
        "| --- | --- | --- | --- |",
    ]
    for measure in CATALOGUE:
        keys = f"`{measure.report_key}`" + (f" / `{measure.query_key}`" if measure.query_key != measure.report_key else "")
        tool, name = measure.reference
        label = f"{measure.display}@k" if measure.at_k else measure.display
        rows.append(
            f"| {label} | {keys} | {tool} `{name}` | {'yes' if measure.gated else 'only when a budget pair names it'} |"
        )
    return "\n".join(rows) + "\n"


def test_docs_metrics_lists_every_measure_as_the_catalogue_declares_it() -> None:
    assert docs_table() in (REPO / "docs" / "metrics.md").read_text(encoding="utf-8"), docs_table()


@pytest.mark.parametrize("measure", CATALOGUE, ids=lambda measure: measure.name)
def test_a_budget_pair_names_each_measure_by_its_name_and_aliases(measure: Measure) -> None:
    for name in (measure.name, *measure.budget_aliases):
        [(selector, drop)] = budget(f"{name.upper()}=0.1").per_metric
        assert selector.family == measure.name and selector.k is None and drop == 0.1
    if measure.at_k:
        assert budget(f"{measure.name}@5=0.1").per_metric[0][0].k == 5
    else:  # the near miss: a cut-off on a measure without one names nothing
        with pytest.raises(Refused):
            budget(f"{measure.name}@5=0.1")


def test_a_budget_naming_no_measure_lists_every_name_a_pair_may_use() -> None:
    with pytest.raises(Refused) as refused:
        budget("0.05,bogus=0.1")
    assert "(mrr, map, or recall, ndcg, p, success, judged, each with or without @k" in str(refused.value)


def test_kb_mcps_three_lead_the_comparison_order() -> None:
    # kb-mcp's diff lists recall@k, MRR and nDCG@k; the JSON's deltas and the gate's verdicts follow this order.
    assert [measure.name for measure in IN_COMPARISON_ORDER][:3] == ["recall", "mrr", "ndcg"]
    assert sorted(measure.comparison_position for measure in CATALOGUE) == list(range(len(CATALOGUE)))


def test_each_measure_aggregates_as_its_catalogue_entry_says(monkeypatch: pytest.MonkeyPatch) -> None:
    rows = [
        score_query(hits("a.md"), expected("a.md"), (5,)),
        score_query(hits("x.md", "a.md"), expected("a.md"), (5,)),
        score_query(hits("x.md"), expected("a.md"), (5,)),
    ]
    assert aggregate(rows, (5,)).map == pytest.approx((1.0 + 0.5 + 0.0) / 3)

    class Largest:
        def over(self, values: list[float]) -> float:
            return max(values)

    monkeypatch.setitem(BY_REPORT_KEY, "map", dataclasses.replace(BY_REPORT_KEY["map"], aggregation=Largest()))
    changed = aggregate(rows, (5,))
    assert changed.map == 1.0
    # The near miss: a measure whose entry was left alone is still the mean.
    assert changed.mrr == pytest.approx((1.0 + 0.5 + 0.0) / 3)
