"""Comparability, deltas and corpus change between two runs."""

from __future__ import annotations

import json

import pytest

from scanner.compare import (
    ComparisonStatus,
    Metric,
    compare_runs,
    compare_with_history,
    corpus_change,
    fingerprint_differences,
    no_previous,
    pick_comparable,
)
from tests.run_records import fingerprint, make_run

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
        ({"query_compiler_version": 2}, "query compiler version differs: 1 vs 2"),
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
        make_run(timestamp="2026-12-03T00:00:00Z", fingerprint_changes={"limit": 20}),
        make_run(timestamp="2026-12-02T00:00:00Z"),
        make_run(timestamp="2026-12-01T00:00:00Z"),
    ]
    picked = pick_comparable(fingerprint(), runs)
    assert picked is not None and picked["timestamp"] == "2026-12-02T00:00:00Z"
    assert pick_comparable(fingerprint(limit=5), runs) is None


# --- statuses and the JSON fragments ----------------------------------------------------


def test_no_history_means_no_previous_and_corpus_changed_is_null_not_false() -> None:
    comparison = compare_with_history(make_run(), [])
    assert comparison.status is ComparisonStatus.NO_PREVIOUS
    assert comparison.to_json() == {
        "previous": None,
        "diff": None,
        "corpus_changed": None,
        "comparison": {
            "status": "no-previous",
            "source": "history",
            "reasons": ["no previous run in the history"],
        },
    }


def test_a_history_with_no_comparable_run_compares_nothing_and_says_why() -> None:
    runs = [make_run(fingerprint_changes={"golden_sha256": "c" * 64})]
    comparison = compare_with_history(make_run(), runs)
    fragments = comparison.to_json()
    assert fragments["comparison"] == {
        "status": "incomparable",
        "source": "history",
        "reasons": ["golden changed since the previous run"],
    }
    assert fragments["previous"] is None and fragments["diff"] is None
    assert fragments["corpus_changed"] is None


def test_a_baseline_with_another_limit_is_incomparable() -> None:
    comparison = compare_runs(make_run(fingerprint_changes={"limit": 20}), make_run(), "baseline")
    assert comparison.status is ComparisonStatus.INCOMPARABLE
    assert comparison.reasons[0].startswith("limit differs: 10 vs 20 (the baseline vs this run)")


def test_the_newest_comparable_run_is_compared_when_the_newest_is_not() -> None:
    runs = [
        make_run(timestamp="2026-12-03T00:00:00Z", fingerprint_changes={"limit": 20}),
        make_run({"q1": 0.0, "q2": 0.5, "q3": 0.0}, timestamp="2026-12-01T00:00:00Z"),
    ]
    comparison = compare_with_history(make_run(), runs)
    assert comparison.status is ComparisonStatus.COMPARED
    previous = comparison.previous_json()
    assert previous is not None and previous["timestamp"] == "2026-12-01T00:00:00Z"
    assert previous["source"] == "history"


def test_identical_runs_compare_with_zero_deltas_and_an_unchanged_corpus() -> None:
    comparison = compare_runs(make_run(), make_run())
    diff = comparison.diff_json()
    assert diff is not None
    assert comparison.corpus_changed_json() is False
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
    json.dumps(comparison.to_json(), allow_nan=False)


def test_every_aggregate_metric_gets_a_delta() -> None:
    comparison = compare_runs(make_run(), make_run())
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
    diff = comparison.diff_json()
    assert diff is not None
    assert set(diff["aggregate"]) == {"mrr", "recall_at_k", "ndcg_at_k"}


def test_per_query_deltas_are_matched_by_id_not_position() -> None:
    previous = make_run({"q3": 0.0, "q2": 1.0, "q1": 0.5})
    current = make_run({"q1": 1.0, "q2": 0.0, "q3": 0.0})
    comparison = compare_runs(current, previous)
    diff = comparison.diff_json()
    assert diff is not None
    assert diff["queries"]["worse"] == ["q2"]
    assert diff["queries"]["better"] == ["q1"]
    assert diff["queries"]["unchanged"] == 1
    rows = diff["per_query"]
    assert [row["id"] for row in rows] == ["q2", "q1"]
    assert rows[0]["metrics"]["rr"] == {"previous": 1.0, "current": 0.0, "delta": -1.0}
    assert comparison.worst_queries(Metric("recall", 5)) == [("q2", -1.0)]


def test_queries_only_in_one_run_are_listed() -> None:
    comparison = compare_runs(make_run({"q1": 1.0, "new": 1.0}), make_run({"q1": 1.0, "gone": 0.0}))
    diff = comparison.diff_json()
    assert diff is not None
    assert diff["queries"]["only_in_current"] == ["new"]
    assert diff["queries"]["only_in_previous"] == ["gone"]


def test_deltas_are_rounded_so_float_noise_is_not_a_change() -> None:
    comparison = compare_runs(make_run({"q1": 0.75}), make_run({"q1": 0.80}))
    assert comparison.metric_deltas[0].delta == -0.05


def test_a_previous_run_with_a_crafted_timestamp_is_not_compared() -> None:
    previous = make_run(timestamp="2026-12-01T00:00:00Z\n::error::injected")
    comparison = compare_runs(make_run(), previous)
    assert comparison.status is ComparisonStatus.NO_PREVIOUS
    assert not any("\n" in line for line in comparison.text_lines())


def test_a_previous_run_with_an_impossible_value_is_not_compared() -> None:
    previous = make_run()
    previous["aggregate"]["mrr"] = float("nan")
    comparison = compare_runs(make_run(), previous)
    assert comparison.status is ComparisonStatus.NO_PREVIOUS
    assert "aggregate.mrr" in comparison.reasons[0]
    previous["aggregate"]["mrr"] = 1.0000001
    assert compare_runs(make_run(), previous).status is ComparisonStatus.NO_PREVIOUS
    previous["aggregate"]["mrr"] = 1.0
    assert compare_runs(make_run(), previous).status is ComparisonStatus.COMPARED


def test_an_old_run_without_newer_fields_still_compares() -> None:
    old = {
        "timestamp": "2026-01-01T00:00:00Z",
        "fingerprint": fingerprint(),
        "aggregate": {"mrr": 0.5, "recall_at_k": {"1": 0.5, "5": 0.5, "10": 0.5}},
        "per_query": [{"id": "q1", "metrics": {"rr": 1.0}}],
    }
    comparison = compare_runs(make_run(), old)
    assert comparison.status is ComparisonStatus.COMPARED
    assert [d.metric.label for d in comparison.metric_deltas] == [
        "recall@1",
        "recall@5",
        "recall@10",
        "MRR",
    ]
    assert comparison.corpus_changed_json() is None
    assert comparison.query_deltas[0].deltas[0].metric == Metric("mrr", None)


def test_no_previous_is_its_own_status() -> None:
    comparison = no_previous("history disabled (--no-history)")
    assert comparison.comparison_json() == {
        "status": "no-previous",
        "source": None,
        "reasons": ["history disabled (--no-history)"],
    }


# --- corpus change: reported, never a reason to skip the comparison --------------------


def _corpus(documents: int = 642, chunks: int = 9400, digest: str = "1") -> dict[str, object]:
    return {"documents": documents, "chunks": chunks, "digest": "sha256:" + digest * 64}


def test_a_document_added_marks_the_corpus_changed_and_still_compares() -> None:
    comparison = compare_runs(make_run(corpus=_corpus(646, 9420)), make_run(corpus=_corpus(642, 9400)))
    assert comparison.status is ComparisonStatus.COMPARED
    assert comparison.corpus_changed_json() is True
    assert comparison.corpus is not None
    assert comparison.corpus.description == "642 -> 646 documents, 9400 -> 9420 chunks"
    assert any("642 -> 646 documents" in line and "not retrieval" in line for line in comparison.text_lines())


def test_same_counts_with_another_digest_is_a_changed_corpus() -> None:
    change = corpus_change(_corpus(digest="2"), _corpus(digest="1"))
    assert change.changed is True and change.description == "same counts, different contents"


def test_same_counts_and_digest_is_an_unchanged_corpus() -> None:
    change = corpus_change(_corpus(), _corpus())
    assert change.changed is False
    comparison = compare_runs(make_run(corpus=_corpus()), make_run(corpus=_corpus()))
    assert not any("not retrieval" in line for line in comparison.text_lines())


def test_an_unrecorded_previous_corpus_is_unknown_not_unchanged() -> None:
    assert corpus_change(_corpus(), None).changed is None
    no_digest = {"documents": 642, "chunks": 9400}
    assert corpus_change(_corpus(), no_digest).changed is None
    assert corpus_change(_corpus(650), no_digest).changed is True


def test_a_new_finding_does_not_make_runs_incomparable() -> None:
    finding = {"check": "golden-queries-quoted", "path": "notes/x.md", "quoted": []}
    comparison = compare_runs(make_run(findings=[finding]), make_run())
    assert comparison.status is ComparisonStatus.COMPARED
