"""On a pull request, new is told from old: a finding the base commit already had is marked and not
annotated again, and a displacement the base already had is not blamed on the page. Real git
repositories; the base evaluated by the pipeline as on a pull request."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from scanner.cli.main import execute
from scanner.compare.comparison import BaseRequest
from scanner.corpus.parse_memo import ParseMemo
from scanner.pipeline.base import BaseEvaluation, ResolvedBase, evaluate_base, resolve_base
from scanner.pipeline.evaluate import EvalOptions
from scanner.render.annotations import report_annotations
from scanner.render.console import findings_warning
from scanner.render.markdown import SummaryContext, render_summary
from tests.conftest import golden_yaml
from tests.git.test_git_base import commit, new_repo, run
from tests.support.phases import head_keeping_analysis

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="needs git")

GOLDEN = golden_yaml(
    ("deploy", "blue green rollout of the service", ["deploy.md"]),
    ("onboard", "first day checklist for engineers", ["onboarding.md"]),
    ("rollback", "revert a bad release quickly", ["rollback.md"]),
    ("cache", "warm the build cache nightly", ["cache.md"]),
)
BASE = {
    "deploy.md": "# Deploy\n\nBlue green rollout of the service, step by step.\n",
    "onboarding.md": "# Onboarding\n\nThe first day checklist for engineers joining us.\n",
    "rollback.md": "# Rollback\n\nRevert a bad release quickly with the previous image.\n",
    "cache.md": "# Cache\n\nHow to warm the build cache nightly.\n",
    # Already at the base: a page about the test that quotes two golden queries.
    "eval-notes.md": "# Eval notes\n\nWe ask: blue green rollout of the service? And: revert a bad release quickly?\n",
    ".kb-eval.yml": GOLDEN,
}
# The pull request adds a page that quotes two other queries, while the labelled answer of one of
# them loses its words: the page now takes its place.
PULL_REQUEST = {
    "onboarding.md": "# Onboarding\n\nWelcome aboard.\n",
    "faq.md": "# FAQ\n\nfirst day checklist for engineers; warm the build cache nightly.\n",
}


@pytest.fixture
def pull_request(tmp_path: Path) -> Path:
    repo = new_repo(tmp_path / "repo")
    commit(repo, BASE, "base")
    commit(repo, PULL_REQUEST, "the pull request")
    return repo / "kb"


def test_the_json_tells_the_findings_the_pull_request_brought_from_those_the_base_had(pull_request: Path) -> None:
    _, report = run(pull_request, "--baseline-ref=HEAD~1")
    assert {f["path"] for f in report["findings"]} == {"eval-notes.md", "faq.md"}
    at_base = {item["path"]: item for item in report["comparison"]["findings_at_base"]}
    assert at_base["eval-notes.md"]["present_at_base"] is True
    assert at_base["faq.md"]["present_at_base"] is False
    # onboarding.md lost its words in this pull request: its fall is blamed on faq.md.
    assert at_base["faq.md"]["newly_displacing"] == ["onboard"]
    # eval-notes.md outranks nothing that ranked better at the base.
    assert at_base["eval-notes.md"]["newly_displacing"] == []


def test_only_what_the_pull_request_brought_is_annotated(pull_request: Path) -> None:
    result = execute([f"--kb-path={pull_request}", "--no-history", "--baseline-ref=HEAD~1"])
    assert result.report is not None
    annotated = {a.properties.file for a in report_annotations(result.report, "kb") if a.properties.title == "golden-queries-quoted"}
    assert annotated == {"kb/faq.md"}
    # The near miss: the same run not compared with the base annotates both, as before.
    alone = execute([f"--kb-path={pull_request}", "--no-history"])
    assert alone.report is not None and alone.report.findings_at_base is None
    annotated = {a.properties.file for a in report_annotations(alone.report, "kb") if a.properties.title == "golden-queries-quoted"}
    assert annotated == {"kb/eval-notes.md", "kb/faq.md"}


def test_the_summary_and_the_log_mark_what_was_already_at_the_base(pull_request: Path) -> None:
    result = execute([f"--kb-path={pull_request}", "--no-history", "--baseline-ref=HEAD~1"])
    assert result.report is not None
    summary = render_summary(result.report, SummaryContext(kb_path="kb", report_path="r.json"))
    [notes_row] = [line for line in summary.splitlines() if line.startswith("| eval-notes.md")]
    [faq_row] = [line for line in summary.splitlines() if line.startswith("| faq.md")]
    assert "already at the base commit" in notes_row and "already at the base commit" not in faq_row
    assert "1 of them was already at the base commit" in summary
    assert "took rank" in faq_row  # blamed: the answer fell in this pull request
    warning = findings_warning(result.report.run.findings, result.report.findings_at_base)
    assert "eval-notes.md (already at the base commit)" in warning
    assert "faq.md (already" not in warning


def test_a_miss_the_base_already_had_is_not_blamed_on_the_page(tmp_path: Path) -> None:
    # The labelled answer of "onboard" was already gone at the base; the pull request adds a page
    # quoting it. The page outranks the answer, but the answer fell before this pull request.
    base = dict(BASE, **{"onboarding.md": "# Onboarding\n\nWelcome aboard.\n"})
    repo = new_repo(tmp_path / "repo")
    commit(repo, base, "base")
    commit(repo, {"faq.md": PULL_REQUEST["faq.md"]}, "the pull request")
    _, report = run(repo / "kb", "--baseline-ref=HEAD~1")
    [faq] = [item for item in report["comparison"]["findings_at_base"] if item["path"] == "faq.md"]
    assert faq["present_at_base"] is False
    assert faq["newly_displacing"] == []
    quoted = {q["query_id"]: q for f in report["findings"] if f["path"] == "faq.md" for q in f["quoted"]}
    assert quoted["onboard"]["displaces_expected"] is True  # the fact stays; only the blame moves


def test_the_base_scans_only_the_documents_the_pull_request_changed(tmp_path: Path) -> None:
    # faq.md is on main already, quoting two queries; the pull request edits it (same quotes) and
    # leaves eval-notes.md alone. The base reads both but scans only faq.md: eval-notes.md has the
    # same bytes, so its findings are the head's.
    faq = "# FAQ\n\nfirst day checklist for engineers; warm the build cache nightly.\n"
    repo = new_repo(tmp_path / "repo")
    commit(repo, dict(BASE, **{"faq.md": faq}), "base")
    commit(repo, {"faq.md": faq + "\nSee also the wiki.\n"}, "the pull request")
    kb = repo / "kb"
    resolved = resolve_base(kb, BaseRequest("HEAD~1"), one_index=False)
    assert isinstance(resolved, ResolvedBase)
    memo = ParseMemo()
    _, plan, _ = head_keeping_analysis(EvalOptions(kb_path=kb), memo)
    base = evaluate_base(resolved, EvalOptions(kb_path=kb), plan, memo)
    assert isinstance(base, BaseEvaluation)
    assert "eval-notes.md" in base.unchanged and "faq.md" not in base.unchanged
    assert set(base.quoted) == {"faq.md"}  # eval-notes.md was not scanned again
    # Both findings were on main: neither is new, whichever way the base learnt it.
    _, report = run(kb, "--baseline-ref=HEAD~1")
    at_base = {item["path"]: item["present_at_base"] for item in report["comparison"]["findings_at_base"]}
    assert at_base == {"eval-notes.md": True, "faq.md": True}


def test_an_edited_page_that_quotes_one_more_query_than_at_the_base_is_new(tmp_path: Path) -> None:
    # The near miss of the rule above: the edit is what brings the third quotation.
    faq = "# FAQ\n\nfirst day checklist for engineers; warm the build cache nightly.\n"
    repo = new_repo(tmp_path / "repo")
    commit(repo, dict(BASE, **{"faq.md": faq}), "base")
    commit(repo, {"faq.md": faq + "\nOr revert a bad release quickly.\n"}, "the pull request")
    _, report = run(repo / "kb", "--baseline-ref=HEAD~1")
    at_base = {item["path"]: item["present_at_base"] for item in report["comparison"]["findings_at_base"]}
    assert at_base == {"eval-notes.md": True, "faq.md": False}


@pytest.mark.parametrize("edited", [False, True], ids=["moved", "moved-and-edited"])
def test_a_page_the_pull_request_moves_without_editing_keeps_its_standing(tmp_path: Path, edited: bool) -> None:
    repo = new_repo(tmp_path / "repo")
    commit(repo, BASE, "base")
    notes = BASE["eval-notes.md"] + ("\nOne more line the pull request wrote.\n" if edited else "")
    (repo / "kb" / "eval-notes.md").unlink()
    commit(repo, {"archive/eval-notes.md": notes}, "the pull request moves the page")
    _, report = run(repo / "kb", "--baseline-ref=HEAD~1")
    [finding] = report["findings"]
    assert finding["path"] == "archive/eval-notes.md"
    [at_base] = report["comparison"]["findings_at_base"]
    # The same bytes under a new name were at the base; an edited page is the pull request's own.
    assert at_base["present_at_base"] is (not edited)


def test_a_deleted_page_copied_into_three_files_keeps_its_standing_once(tmp_path: Path) -> None:
    # All three byte-identical copies counted as "already at the base commit", annotated by none.
    repo = new_repo(tmp_path / "repo")
    commit(repo, BASE, "base")
    (repo / "kb" / "eval-notes.md").unlink()
    copies = {f"copy-{n}/eval-notes.md": BASE["eval-notes.md"] for n in range(3)}
    commit(repo, copies, "the pull request copies the page three times")
    _, report = run(repo / "kb", "--baseline-ref=HEAD~1")
    at_base = {item["path"]: item["present_at_base"] for item in report["comparison"]["findings_at_base"]}
    assert at_base == {"copy-0/eval-notes.md": True, "copy-1/eval-notes.md": False, "copy-2/eval-notes.md": False}
