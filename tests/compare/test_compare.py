"""Comparability, deltas and corpus change between two runs."""

from __future__ import annotations

import dataclasses
import json

import pytest

from scanner.compare.comparison import (
    Comparison,
    ComparisonStatus,
    Metric,
    Source,
    compare_runs,
    compare_with_history,
    corpus_change,
    no_previous,
)
from scanner.compare.fingerprint import fingerprint_differences, pick_comparable
from scanner.compare.gate import evaluate_gate
from scanner.compare.report import Report
from scanner.render.phrases import corpus_note
from scanner.report.document import corpus_changed, diff_document, previous_document, report_document
from scanner.report.read import run_from_document, run_record_problems
from scanner.search.index import CorpusSnapshot
from tests.support.run_records import fingerprint, make_record, make_run, run_with_a_finding

# --- comparability --------------------------------------------------------------------


def test_equal_fingerprints_have_no_differences() -> None:
    assert fingerprint_differences(fingerprint(), fingerprint()) == []


def test_a_changed_golden_file_is_named_as_the_reason() -> None:
    reasons = fingerprint_differences(fingerprint(golden_sha256="b" * 64), fingerprint(), "the baseline")
    assert reasons == ["golden changed since the baseline"]


def test_a_changed_limit_is_named_with_both_values() -> None:
    reasons = fingerprint_differences(fingerprint(limit=20), fingerprint(limit=10))
    assert len(reasons) == 1 and reasons[0].startswith("limit differs: 10 vs 20")


@pytest.mark.parametrize(
    ("changes", "expected"),
    [
        ({"k": [1, 3, 10]}, "k values differ: [1, 5, 10] vs [1, 3, 10]"),
        ({"metric_version": 3}, "metric version differs: 2 vs 3"),
        (
            {"retriever": {"name": "builtin", "tokenizer": "porter"}},
            'retriever differs: tokenizer "unicode61" vs "porter"',
        ),
        ({"retriever": "http"}, "retriever differs: {"),
        (
            {"chunker_version": 2},
            'fingerprint field "chunker_version" is not recorded in',
        ),
    ],
)
def test_each_fingerprint_part_that_differs_is_named(changes: dict[str, object], expected: str) -> None:
    reasons = fingerprint_differences(fingerprint(**changes), fingerprint())
    assert len(reasons) == 1 and reasons[0].startswith(expected), reasons


def test_an_unknown_fingerprint_key_that_differs_is_never_ignored() -> None:
    reasons = fingerprint_differences(fingerprint(embedder="b"), fingerprint(embedder="a"))
    assert reasons == ['fingerprint field "embedder" differs: "a" vs "b" (the previous run vs this run)']


def test_a_boolean_is_not_equal_to_a_number_in_a_fingerprint() -> None:
    assert fingerprint_differences(fingerprint(limit=True), fingerprint(limit=1)) != []
    assert fingerprint_differences(fingerprint(limit=10.0), fingerprint(limit=10)) == []


def test_values_from_a_crafted_file_are_escaped_and_cut_in_reasons() -> None:
    hostile = "\x1b[31m" + "x" * 500 + "\n::error::boom"
    reasons = fingerprint_differences(fingerprint(), fingerprint(limit=hostile))
    assert "\x1b" not in reasons[0] and "\n" not in reasons[0]
    assert len(reasons[0]) < 160


def test_pick_comparable_takes_the_newest_run_with_an_equal_fingerprint() -> None:
    runs = [
        make_record(timestamp="2026-12-03T00:00:00Z", fingerprint_changes={"limit": 20}),
        make_record(timestamp="2026-12-02T00:00:00Z"),
        make_record(timestamp="2026-12-01T00:00:00Z"),
    ]
    picked = pick_comparable(fingerprint(), runs)
    assert picked is not None and picked.timestamp == "2026-12-02T00:00:00Z"
    assert pick_comparable(fingerprint(limit=5), runs) is None


# --- statuses and the JSON fragments ----------------------------------------------------


def fragments(comparison: Comparison) -> dict[str, object]:
    """The report keys a comparison fills, as the JSON report writes them."""
    document = report_document(Report(make_record(), comparison, evaluate_gate(comparison, 0.05)))
    return {key: document[key] for key in ("previous", "diff", "corpus_changed", "comparison")}


def test_no_history_means_no_previous_and_corpus_changed_is_null_not_false() -> None:
    comparison = compare_with_history(make_record(), [])
    assert comparison.status is ComparisonStatus.NO_PREVIOUS
    assert fragments(comparison) == {
        "previous": None,
        "diff": None,
        "corpus_changed": None,
        "comparison": {
            "status": "no-previous",
            "source": "history",
            "reasons": ["no previous run in the history"],
            "cause": "no-history",
            "hint": None,
            "findings_at_base": None,
        },
    }


def test_a_history_with_no_comparable_run_compares_nothing_and_says_why() -> None:
    runs = [make_record(fingerprint_changes={"golden_sha256": "c" * 64})]
    comparison = compare_with_history(make_record(), runs)
    parts = fragments(comparison)
    assert parts["comparison"] == {
        "status": "incomparable",
        "source": "history",
        "reasons": ["golden changed since the previous run"],
        "cause": "incomparable-fingerprint",
        "hint": None,
        "findings_at_base": None,
    }
    assert parts["previous"] is None and parts["diff"] is None
    assert parts["corpus_changed"] is None


def test_a_baseline_with_another_limit_is_incomparable() -> None:
    comparison = compare_runs(make_record(fingerprint_changes={"limit": 20}), make_record(), "baseline")
    assert comparison.status is ComparisonStatus.INCOMPARABLE
    assert comparison.reasons[0].startswith("limit differs: 10 vs 20 (the baseline vs this run)")


def test_the_newest_comparable_run_is_compared_when_the_newest_is_not() -> None:
    runs = [
        make_record(timestamp="2026-12-03T00:00:00Z", fingerprint_changes={"limit": 20}),
        make_record({"q1": 0.0, "q2": 0.5, "q3": 0.0}, timestamp="2026-12-01T00:00:00Z"),
    ]
    comparison = compare_with_history(make_record(), runs)
    assert comparison.status is ComparisonStatus.COMPARED
    previous = previous_document(comparison)
    assert previous is not None and previous["timestamp"] == "2026-12-01T00:00:00Z"
    assert previous["source"] == "history"


def test_identical_runs_compare_with_zero_deltas_and_an_unchanged_corpus() -> None:
    comparison = compare_runs(make_record(), make_record())
    diff = diff_document(comparison)
    assert diff is not None
    assert corpus_changed(comparison) is False
    assert diff["queries"] == {
        "worse": [],
        "better": [],
        "mixed": [],
        "unchanged": 3,
        "only_in_current": [],
        "only_in_previous": [],
    }
    assert diff["per_query"] == []
    assert all(delta.delta == 0 for delta in comparison.metric_deltas)
    json.dumps(fragments(comparison), allow_nan=False)


def test_every_aggregate_metric_gets_a_delta() -> None:
    comparison = compare_runs(make_record(), make_record())
    labels = [delta.metric.label for delta in comparison.metric_deltas]
    assert labels == [
        "recall@1",
        "recall@5",
        "recall@10",
        "MRR",
        "nDCG@1",
        "nDCG@5",
        "nDCG@10",
    ]
    diff = diff_document(comparison)
    assert diff is not None
    assert set(diff["aggregate"]) == {"mrr", "recall_at_k", "ndcg_at_k"}


def test_per_query_deltas_are_matched_by_id_not_position() -> None:
    previous = make_record({"q3": 0.0, "q2": 1.0, "q1": 0.5})
    current = make_record({"q1": 1.0, "q2": 0.0, "q3": 0.0})
    comparison = compare_runs(current, previous)
    diff = diff_document(comparison)
    assert diff is not None
    assert diff["queries"]["worse"] == ["q2"]
    assert diff["queries"]["better"] == ["q1"]
    assert diff["queries"]["unchanged"] == 1
    rows = diff["per_query"]
    assert [row["id"] for row in rows] == ["q2", "q1"]
    assert rows[0]["metrics"]["reciprocal_rank"] == {"previous": 1.0, "current": 0.0, "delta": -1.0}
    assert comparison.worst_queries(Metric("recall", 5)) == [("q2", -1.0)]


def test_queries_only_in_one_run_are_listed() -> None:
    comparison = compare_runs(make_record({"q1": 1.0, "new": 1.0}), make_record({"q1": 1.0, "gone": 0.0}))
    diff = diff_document(comparison)
    assert diff is not None
    assert diff["queries"]["only_in_current"] == ["new"]
    assert diff["queries"]["only_in_previous"] == ["gone"]


def test_deltas_are_rounded_so_float_noise_is_not_a_change() -> None:
    comparison = compare_runs(make_record({"q1": 0.75}), make_record({"q1": 0.80}))
    assert comparison.metric_deltas[0].delta == -0.05


def test_a_previous_run_with_a_crafted_timestamp_is_never_turned_into_a_record() -> None:
    previous = make_run(timestamp="2026-12-01T00:00:00Z\n::error::injected")
    problems = run_record_problems(previous)
    assert problems and not any("\n" in problem for problem in problems)
    assert run_record_problems(make_run(timestamp="2026-12-01T00:00:00Z")) == []


def test_a_previous_run_with_an_impossible_value_is_never_turned_into_a_record() -> None:
    previous = make_run()
    previous["aggregate"]["mrr"] = float("nan")
    assert "aggregate.mrr" in run_record_problems(previous)[0]
    previous["aggregate"]["mrr"] = 1.0000001
    assert run_record_problems(previous)
    previous["aggregate"]["mrr"] = 1.0
    assert run_record_problems(previous) == []


def test_an_old_run_without_newer_fields_still_compares() -> None:
    old = {
        "timestamp": "2026-01-01T00:00:00Z",
        "fingerprint": fingerprint(),
        "aggregate": {"mrr": 0.5, "recall_at_k": {"1": 0.5, "5": 0.5, "10": 0.5}},
        "per_query": [{"id": "q1", "metrics": {"rr": 1.0}}],
    }
    assert run_record_problems(old) == []
    comparison = compare_runs(make_record(), run_from_document(old))
    assert comparison.status is ComparisonStatus.COMPARED
    assert [d.metric.label for d in comparison.metric_deltas] == [
        "recall@1",
        "recall@5",
        "recall@10",
        "MRR",
    ]
    assert corpus_changed(comparison) is None
    assert comparison.query_deltas[0].deltas[0].metric == Metric("mrr", None)


def test_no_previous_is_its_own_status() -> None:
    comparison = no_previous("history disabled (--no-history)")
    assert fragments(comparison)["comparison"] == {
        "status": "no-previous",
        "source": None,
        "reasons": ["history disabled (--no-history)"],
        "cause": "no-baseline",
        "hint": None,
        "findings_at_base": None,
    }


# --- corpus change: reported, never a reason to skip the comparison --------------------


def _corpus(documents: int = 642, chunks: int = 9400, digest: str = "1") -> dict[str, object]:
    return {"documents": documents, "chunks": chunks, "digest": "sha256:" + digest * 64}


def _snapshot(documents: int = 642, chunks: int = 9400, digest: str = "1") -> CorpusSnapshot:
    return CorpusSnapshot(documents, chunks, "sha256:" + digest * 64)


def test_a_document_added_marks_the_corpus_changed_and_still_compares() -> None:
    comparison = compare_runs(make_record(corpus=_corpus(646, 9420)), make_record(corpus=_corpus(642, 9400)))
    assert comparison.status is ComparisonStatus.COMPARED
    assert corpus_changed(comparison) is True
    assert comparison.corpus is not None
    assert comparison.corpus.description == "642 -> 646 documents, 9400 -> 9420 chunks"
    assert "642 -> 646 documents" in (corpus_note(comparison) or "") and "not retrieval" in (corpus_note(comparison) or "")


def test_against_the_pull_requests_base_the_corpus_change_is_what_is_measured_not_a_caveat() -> None:
    changed = (make_record(corpus=_corpus(646, 9420)), make_record(corpus=_corpus(642, 9400)))
    against_base = compare_runs(*changed, Source.GIT)
    assert against_base.corpus is not None and against_base.corpus.changed is True  # still recorded
    assert corpus_note(against_base) is None
    # The near miss: against a baseline the same change is a caveat on every delta.
    assert "642 -> 646 documents" in (corpus_note(compare_runs(*changed, Source.BASELINE)) or "")


def test_same_counts_with_another_digest_is_a_changed_corpus() -> None:
    change = corpus_change(_snapshot(digest="2"), _snapshot(digest="1"))
    assert change.changed is True and change.description == "same counts, different contents"


def test_same_counts_and_digest_is_an_unchanged_corpus() -> None:
    change = corpus_change(_snapshot(), _snapshot())
    assert change.changed is False
    comparison = compare_runs(make_record(corpus=_corpus()), make_record(corpus=_corpus()))
    assert corpus_note(comparison) is None


def test_an_unrecorded_previous_corpus_is_unknown_not_unchanged() -> None:
    assert corpus_change(_snapshot(), None).changed is None
    no_digest = run_from_document({**make_run(), "corpus": {"documents": 642, "chunks": 9400}}).corpus
    assert corpus_change(_snapshot(), no_digest).changed is None
    assert corpus_change(_snapshot(650), no_digest).changed is True


def test_a_new_finding_does_not_make_runs_incomparable() -> None:
    [located] = run_with_a_finding().findings
    current = dataclasses.replace(make_record(), findings=(located,))
    comparison = compare_runs(current, make_record())
    assert comparison.status is ComparisonStatus.COMPARED


def test_a_previous_corpus_without_counts_is_unknown_not_a_change() -> None:
    partial = run_from_document({**make_run(), "corpus": {"digest": "sha256:" + "1" * 64}})
    assert partial.corpus is None
    change = compare_runs(make_record(), partial).corpus
    assert change is not None and change.changed is None and "-1" not in change.description


# --- the records are built by keyword ------------------------------------------------


def _records_with_repeated_field_types() -> list[type]:
    from scanner.compare import comparison as module

    records = [
        value for value in vars(module).values()
        if isinstance(value, type) and dataclasses.is_dataclass(value) and value.__module__ == module.__name__
    ]
    return [
        record for record in records
        if len({field.type for field in dataclasses.fields(record)}) < len(dataclasses.fields(record))
    ]


def test_a_comparison_record_with_two_fields_of_one_type_is_built_by_keyword_only() -> None:
    # Two values of one type side by side (previous and current, rank before and after, the ids only
    # in one run or the other) swap silently when passed by position.
    repeated = _records_with_repeated_field_types()
    assert {record.__name__ for record in repeated} >= {"Comparison", "QueryDelta", "MetricDelta"}
    for record in repeated:
        positional = [field.name for field in dataclasses.fields(record) if not field.kw_only]
        assert positional == [], f"{record.__name__} takes {positional} by position"
    with pytest.raises(TypeError):
        Comparison(ComparisonStatus.NO_PREVIOUS, (), None, None, (), (), (), (), None)  # type: ignore[misc]
