"""Absolute floors (`--fail-under`): a mean below its floor fails the step with or without a run
to compare with, and every output says which floor and by how much."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from scanner.cli.main import parse_cli
from scanner.compare.gate import MetricSelector
from scanner.foundation.errors import ExitCode, InputError
from tests.support.tagged_runs import TaggedKB


@pytest.fixture()
def kb(tmp_path: Path) -> TaggedKB:
    # Two of four ops queries find a.md second: ops MRR 0.75, overall MRR 0.9, recall@1 0.8.
    return TaggedKB(tmp_path, ["ops"] * 4 + ["dev"] * 6)


FALLEN = {"q1", "q2"}


def test_a_first_run_below_its_floor_fails_naming_the_floor_and_the_shortfall(kb: TaggedKB, tmp_path: Path) -> None:
    summary = tmp_path / "summary.md"
    code, out, err = kb.run("head", FALLEN, "--fail-under", "recall@1=0.85", "--summary", str(summary))
    assert code == ExitCode.REGRESSION
    assert "kb-eval: Below the fail-under floor, so the step fails: recall@1 0.8000 is below its floor 0.85 by 0.0500" in err
    assert "Below the fail-under floor, so the step fails: recall@1 0.8000 is below its floor 0.85 by 0.0500" in out
    assert "**Below the fail-under floor, so the step fails: recall@1 0.8000 is below its floor 0.85 by 0.0500.**" in (
        summary.read_text())
    [check] = json.loads((tmp_path / "head.json").read_text())["floors"]
    assert check == {"metric": "recall@1", "tag": None, "floor": 0.85, "value": 0.8, "shortfall": 0.05, "below": True}


def test_a_mean_equal_to_its_floor_passes_and_says_so(kb: TaggedKB, tmp_path: Path) -> None:
    code, out, err = kb.run("head", FALLEN, "--fail-under", "recall@1=0.8")
    assert code == ExitCode.OK and "below" not in err
    assert "Every fail-under floor holds (recall@1 0.8000 >= 0.8)." in out
    assert json.loads((tmp_path / "head.json").read_text())["floors"][0]["below"] is False


def test_no_floor_checks_nothing_and_says_nothing(kb: TaggedKB, tmp_path: Path) -> None:
    code, out, _ = kb.run("head", FALLEN)
    assert code == ExitCode.OK and "floor" not in out and json.loads((tmp_path / "head.json").read_text())["floors"] == []


def test_a_tag_floor_holds_the_tag_s_mean(kb: TaggedKB) -> None:
    code, _, err = kb.run("head", FALLEN, "--fail-under", "mrr=0.8,ops:mrr=0.8")
    assert code == ExitCode.REGRESSION and "ops:MRR 0.7500 is below its floor 0.8 by 0.0500" in err
    assert "recall" not in err and " MRR 0.9" not in err
    # The near miss: the tag whose queries all held.
    assert kb.run("head", FALLEN, "--fail-under", "dev:mrr=0.8")[0] == ExitCode.OK


def test_a_floor_without_k_holds_every_k_and_one_with_k_wins(kb: TaggedKB, tmp_path: Path) -> None:
    code, _, err = kb.run("head", FALLEN, "--fail-under", "recall=0.9")
    assert code == ExitCode.REGRESSION and "recall@1 0.8000 is below its floor 0.9" in err
    checks = json.loads((tmp_path / "head.json").read_text())["floors"]
    assert [c["metric"] for c in checks] == ["recall@1", "recall@5", "recall@10"]
    assert kb.run("head", FALLEN, "--fail-under", "recall=0.9,recall@1=0.8")[0] == ExitCode.OK


def test_a_floor_fails_the_step_even_when_a_comparison_passes_the_gate(kb: TaggedKB, tmp_path: Path) -> None:
    assert kb.run("base", FALLEN)[0] == ExitCode.OK
    code, _, err = kb.run("head", FALLEN, "--baseline", str(tmp_path / "base.json"), "--fail-on-regression",
                          "--fail-under", "map=0.95")
    document = json.loads((tmp_path / "head.json").read_text())
    assert document["gate"]["evaluated"] is True and document["gate"]["tripped"] is False
    assert code == ExitCode.REGRESSION and "MAP 0.9000 is below its floor 0.95 by 0.0500" in err
    assert "kb-eval: regression:" not in err


def test_a_floor_naming_a_tag_no_query_carries_or_an_unmeasured_k_is_refused(kb: TaggedKB) -> None:
    code, _, err = kb.run("head", set(), "--fail-under", "opz:mrr=0.5")
    assert code == ExitCode.BAD_INPUT
    assert "--fail-under names the tag 'opz', which no golden query carries (tags: dev, ops)" in err
    code, _, err = kb.run("head", set(), "--fail-under", "recall@20=0.5")
    assert code == ExitCode.BAD_INPUT and "--fail-under sets a floor at @20, which --k does not measure" in err


def test_floors_parse_as_pairs_and_refuse_anything_else() -> None:
    assert parse_cli(["--fail-under", "recall@10=0.6,ops:mrr=0.5"]).fail_under.items == (
        (MetricSelector("recall", 10), 0.6), (MetricSelector("mrr", None, "ops"), 0.5),
    )
    for text, words in [("0.5", "'0.5' names no metric"), ("mrr=1.5", "gives mrr the floor '1.5'"),
                        ("mrr=0.5,MRR=0.6", "names MRR twice"), ("ops:=0.5", "names no metric")]:
        with pytest.raises(InputError) as raised:
            parse_cli(["--fail-under", text])
        assert words in raised.value.message
