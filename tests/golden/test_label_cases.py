"""Acceptance cases for the label rules: one folder per case, run through the public CLI.

`tests/cases/labels/<rule>/<case>/` holds a tiny knowledge base (`kb/`), its golden file
(`golden.yml`) and what the run must say (`expected.json`): the exit code; for a run, the
per-query metrics it pins and *every* warning about the labels (code, golden-file line, and words
the message must hold), so a wrong label that goes unnamed fails the case; for a refusal, the
words stderr must hold. Each rule has the label that resolves and the near miss that is named.
"""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest

from scanner.cli.main import main

CASES = Path(__file__).parents[1] / "cases" / "labels"
CASE_FOLDERS = sorted(path.parent for path in CASES.glob("*/*/golden.yml"))
LABEL_CODES = {"expected-not-in-corpus", "heading-not-in-document", "section-title-only"}
METRICS = {
    "reciprocal_rank": lambda m: m["reciprocal_rank"],
    **{f"recall@{k}": (lambda m, k=k: m["recall_at_k"][str(k)]) for k in (1, 5, 10)},
    **{f"ndcg@{k}": (lambda m, k=k: m["ndcg_at_k"][str(k)]) for k in (1, 5, 10)},
}


def run_case(case: Path) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    argv = ["--kb-path", str(case / "kb"), "--golden", str(case / "golden.yml"), "--format", "json", "--no-history"]
    code = main(argv, stdout=out, stderr=err)
    return code, out.getvalue(), err.getvalue()


def test_every_rule_has_a_case_that_resolves_and_a_near_miss() -> None:
    rules = {case.parent.name for case in CASE_FOLDERS}
    assert rules >= {"heading-as-the-reader-sees-it", "path-did-you-mean", "subsections", "parent", "any", "impossible", "title-only-section"}
    for rule in rules:
        assert len([c for c in CASE_FOLDERS if c.parent.name == rule]) >= 2, rule


@pytest.mark.parametrize("case", CASE_FOLDERS, ids=[f"{c.parent.name}/{c.name}" for c in CASE_FOLDERS])
def test_the_case_scores_and_says_exactly_what_it_pins(case: Path) -> None:
    expected: dict[str, Any] = json.loads((case / "expected.json").read_text(encoding="utf-8"))
    code, out, err = run_case(case)
    assert code == expected["exit"], err
    if code != 0:
        for words in expected["stderr"]:
            assert words in err, (words, err)
        return
    report = json.loads(out)
    rows = {row["id"]: row for row in report["per_query"]}
    for query_id, pinned in expected["per_query"].items():
        for metric, value in pinned.items():
            assert METRICS[metric](rows[query_id]["metrics"]) == pytest.approx(value, abs=1e-12), (query_id, metric)
    warned = [w for w in report["warnings"] if w["code"] in LABEL_CODES]
    assert len(warned) == len(expected["warnings"]), warned
    for warning, wanted in zip(sorted(warned, key=lambda w: w["line"]), expected["warnings"]):
        assert (warning["code"], warning["line"]) == (wanted["code"], wanted["line"])
        assert warning["file"].endswith("golden.yml")
        for words in wanted["says"]:
            assert words in warning["message"], (words, warning["message"])


def test_a_hits_place_is_reported_only_when_a_label_needs_it() -> None:
    needs = CASES / "parent" / "a-repeated-heading-reached-through-its-parent-resolves"
    plain = CASES / "heading-as-the-reader-sees-it" / "inline-code-written-as-the-page-shows-it-resolves"
    _, out, _ = run_case(needs)
    hits = json.loads(out)["per_query"][0]["top_k"]
    assert next(tuple(h["parents"]) for h in hits if h["heading"] == "Options") == ("Commands", "Build")
    _, out, _ = run_case(plain)
    assert all("parents" not in h for h in json.loads(out)["per_query"][0]["top_k"])
