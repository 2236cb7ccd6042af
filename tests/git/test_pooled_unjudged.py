"""Unjudged results where reviewers look: a pull request's base and head top k pooled on a real git
repository; the documents that entered a query's top k with no label listed with the lines that
would judge them; rank-biased overlap kept apart from the judged verdict."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml

from scanner.compare.pooling import rank_biased_overlap
from scanner.foundation.errors import ExitCode
from scanner.render.markdown import SummaryContext, render_summary
from tests.git.test_git_base import commit, new_repo, run

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="needs git")

GOLDEN = """\
queries:
  - id: onboard
    query: first day checklist
    expected:
      - onboarding.md
      - {path: laptop.md, grade: 0}
  - id: deploy
    query: blue green rollout
    expected:
      - deploy.md
  - id: rollback
    query: revert a bad release
    expected:
      - rollback.md
"""
BASE_KB = {
    "deploy.md": "# Deploy\n\nBlue green rollout of the service, step by step.\n",
    "onboarding.md": "# Onboarding\n\nThe first day checklist for new engineers.\n",
    "rollback.md": "# Rollback\n\nRevert a bad release quickly with the previous image.\n",
    ".kb-eval.yml": GOLDEN,
}
#: The pull request: two new pages outrank the labelled answer of "first day checklist"; one of
#: them (laptop.md) was judged not relevant, the other (day-one.md) nobody has judged.
HEAD_CHANGE = {
    "day-one.md": "# Your first day\n\nThe first day checklist: badge, laptop, first day checklist.\n",
    "laptop.md": "# Laptop\n\nOn the first day, the laptop checklist comes before the first day checklist.\n",
}


@pytest.fixture(scope="module")
def pull_request(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict]:  # type: ignore[type-arg]
    repo = new_repo(tmp_path_factory.mktemp("pooled") / "repo")
    commit(repo, BASE_KB, "base")
    commit(repo, HEAD_CHANGE, "head")
    result, report = run(repo / "kb", "--baseline-ref=HEAD~1")
    assert result.exit_code == ExitCode.OK, result.stderr_text
    assert report["comparison"]["source"] == "git"
    return repo, {"report": report, "result": result}


def test_a_document_that_entered_the_top_k_with_no_label_is_listed_under_its_query(pull_request) -> None:  # type: ignore[no-untyped-def]
    report = pull_request[1]["report"]
    pooled = {row["id"]: row for row in report["diff"]["pooling"]["queries"]}
    onboard = pooled["onboard"]
    assert set(onboard["entered"]) == {"day-one.md", "laptop.md"}
    # laptop.md entered too, but `grade: 0` is a judgment: only day-one.md has no label.
    assert [(u["path"], u["heading"]) for u in onboard["unlabelled"]] == [("day-one.md", "Your first day")]
    assert 0 < onboard["rbo"] < 1
    # Queries whose ranking did not move are not listed; their RBO is 1.
    assert "deploy" not in pooled and "rollback" not in pooled
    assert report["diff"]["pooling"]["k"] == 10


def test_the_summary_says_the_verdict_rests_on_unjudged_documents_and_gives_the_lines(pull_request) -> None:  # type: ignore[no-untyped-def]
    result = pull_request[1]["result"]
    assert result.report is not None and result.report.comparison.query_deltas
    markdown = render_summary(result.report, SummaryContext(kb_path="kb"))
    assert "<details><summary>1 document with no label entered the top 10 of 1 query: judge them" in markdown
    assert "1 of the 2 documents that entered the top 10 has no label" in markdown
    assert "The verdict rests partly on unjudged documents: in the 1 query that fell, 1 of the 2 documents" in markdown
    assert "(RBO, no labels involved)" in markdown
    # The snippet judges nothing as offered (comments only); its entries, uncommented, are valid
    # YAML naming the document with grade 0 until a person sets the grade.
    block = markdown.split("```yaml\n", 1)[1].split("\n```", 1)[0]
    assert yaml.safe_load(block) is None
    entries = yaml.safe_load("\n".join(line[1:] for line in block.splitlines() if line.startswith("#  ")))
    assert entries == [{"path": "day-one.md", "heading": "Your first day", "grade": 0}]
    assert "laptop.md" not in block


def test_the_text_report_lists_them_too(pull_request) -> None:  # type: ignore[no-untyped-def]
    repo = pull_request[0]
    from scanner.cli.main import execute

    text = execute([f"--kb-path={repo / 'kb'}", "--no-history", "--baseline-ref=HEAD~1"]).stdout_text
    assert "Documents that entered the top 10 with no label" in text
    assert "onboard: 1 of the 2 documents that entered the top 10 has no label" in text
    assert "day-one.md › Your first day" in text


def test_a_pull_request_that_changes_no_ranking_lists_nothing(tmp_path: Path) -> None:
    repo = new_repo(tmp_path / "repo")
    commit(repo, BASE_KB, "base")
    commit(repo, {"unrelated.md": "# Zebra\n\nStripes.\n"}, "head")
    result, report = run(repo / "kb", "--baseline-ref=HEAD~1")
    assert result.exit_code == ExitCode.OK
    assert report["diff"]["pooling"]["queries"] == []
    assert result.report is not None
    assert "entered the top" not in render_summary(result.report, SummaryContext(kb_path="kb"))


@pytest.mark.parametrize(("first", "second", "expected"), [
    ("abcde", "abcde", 1.0),
    ("abc", "xyz", 0.0),
    ("", "", 1.0),
    ("abc", "", 0.0),
    # Webber et al.'s extrapolation: a shorter list that agrees with the longer one so far is
    # assumed to go on agreeing.
    ("abc", "abcdef", 1.0),
])
def test_rank_biased_overlap_at_its_ends(first: str, second: str, expected: float) -> None:
    assert rank_biased_overlap(list(first), list(second)) == pytest.approx(expected, abs=1e-12)


def test_rank_biased_overlap_equals_its_defining_sum() -> None:
    # RBO_ext is (1-p) sum_d p^(d-1) A_d with A_d the agreement at depth d, extrapolated past the
    # lists' ends as Webber et al. define; summed here term by term to depth 2,000.
    p = 0.9
    first, second = list("abcdefgh"), list("cagbxyz")
    s, longest = len(second), len(first)

    def overlap(d: int) -> int:
        return len(set(first[:d]) & set(second[: min(d, s)]))

    x_s, x_l = overlap(s), overlap(longest)
    total = 0.0
    for d in range(1, 2001):
        if d <= s:
            agreement = overlap(d) / d
        elif d <= longest:
            agreement = (overlap(d) + x_s * (d - s) / s) / d
        else:
            agreement = (x_l - x_s) / longest + x_s / s
        total += (1 - p) * p ** (d - 1) * agreement
    assert rank_biased_overlap(first, second) == pytest.approx(total, abs=1e-12)
    assert rank_biased_overlap(second, first) == pytest.approx(total, abs=1e-12)
