"""Real runs in each state a reviewer meets, as records: first run, unchanged, worse, improved,
regressed, gate without anything to compare, many changed queries, and on a pull request compared
with its base commit: a finding the base already had beside one the pull request brought, and a
gate that cannot run because the clone lacks the base; and labels to fix (a heading typo, a
repository-relative path) beside a query whose two answers both moved.

Each state is produced by running the CLI on a real KB (the redesign fixture copied to a
temporary folder), editing the KB between runs the way a pull request would. Shared by the
renderer tests and by bench/screenshots.py, which renders each state as GitHub does.
"""

from __future__ import annotations

import contextlib
import dataclasses
import io
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

from scanner.cli.main import execute, parse_cli
from scanner.compare.comparison import BaseRequest, Origin, QueryDelta
from scanner.foundation.errors import ExitCode
from scanner.pipeline.run import RunOutcome
from scanner.render.markdown import SourceLinks, SummaryContext

FIXTURE_KB = Path(__file__).resolve().parents[1] / "fixtures" / "redesign" / "kb"
LINKS = SourceLinks("https://github.com", "octo/kb", "a" * 40, "123456")
GATE = "--fail-on-regression"
"""As the README's workflow and `init --workflow` run it: every state but `worse` has the gate on."""

PUSHY_NOTE = (
    "# Rollback and image tags in one page\n\n"
    "Roll back a database migration: roll back, migration, database, roll back a database migration.\n"
    "Which tag do container images get? Container images get a tag; images, tag, container.\n"
)
"""A new note that outranks the labelled answers of two queries without quoting them verbatim."""


def _run(kb: Path, history: Path | None, *extra: str) -> RunOutcome:
    # Paths relative to the folder, as in a checkout: the Markdown names `kb/...`, not a temp path.
    argv = ["--kb-path", kb.name, "--format", "json", *extra]
    argv += ["--history", history.name] if history is not None else ["--no-history"]
    with _inside(kb.parent):
        result = execute(argv)
    assert result.outcome is not None, result.stderr_text
    return result.outcome


@contextlib.contextmanager
def _inside(folder: Path) -> Iterator[None]:
    previous = os.getcwd()
    os.chdir(folder)
    try:
        yield
    finally:
        os.chdir(previous)


def fresh_kb(folder: Path) -> Path:
    kb = folder / "kb"
    shutil.copytree(FIXTURE_KB, kb)
    return kb


def first_run(folder: Path) -> RunOutcome:
    kb = fresh_kb(folder)
    return _run(kb, folder / "history.json", GATE)


def unchanged(folder: Path) -> RunOutcome:
    kb = fresh_kb(folder)
    _run(kb, folder / "history.json")
    return _run(kb, folder / "history.json", GATE)


def pushed_down(folder: Path, *gate: str) -> RunOutcome:
    """A pull request adds a note that now ranks above two labelled answers."""
    kb = fresh_kb(folder)
    _run(kb, folder / "history.json")
    (kb / "notes" / "rollback-and-tags.md").write_text(PUSHY_NOTE, encoding="utf-8")
    return _run(kb, folder / "history.json", *gate)


LABEL_EDITS = (
    # Two answers for one query: each gets its own row when its rank moves.
    ("      - path: guides/deploy.md\n        heading: Database\n    tags: [ops]\n  - id: image-tags",
     ("      - path: guides/deploy.md\n        heading: Rollback\n        subsections: true\n"
      "      - notes/incident-2026-03.md\n    tags: [ops]\n  - id: image-tags")),
    # A heading typo, and a path written relative to the repository instead of the KB folder.
    ("        heading: Ranking\n", "        heading: Rankng\n"),
    ("  - id: chunking\n    query: where are documents split into sections\n    expected:\n      - path: guides/search.md",
     "  - id: chunking\n    query: where are documents split into sections\n    expected:\n      - path: docs/kb/guides/search.md"),
)


def labels_to_fix(folder: Path) -> RunOutcome:
    """The pushy note lands in a KB whose golden file has two labels to fix (a heading typo, a
    repository-relative path) and a query with two answers that both move."""
    kb = fresh_kb(folder)
    golden = kb / ".kb-eval.yml"
    text = golden.read_text(encoding="utf-8")
    for old, new in LABEL_EDITS:
        assert old in text, old
        text = text.replace(old, new, 1)
    golden.write_text(text, encoding="utf-8")
    _run(kb, folder / "history.json")
    (kb / "notes" / "rollback-and-tags.md").write_text(PUSHY_NOTE, encoding="utf-8")
    return _run(kb, folder / "history.json", GATE, "--regression-threshold", "0.5")


def regressed(folder: Path) -> RunOutcome:
    """A pull request moves the guides into another folder and the golden file still names the old
    paths: six of the nine queries lose their answer, more than chance explains."""
    kb = fresh_kb(folder)
    _run(kb, folder / "history.json")
    (kb / "guides").rename(kb / "handbook")
    return _run(kb, folder / "history.json", GATE)


def improved(folder: Path) -> RunOutcome:
    """The reverse: the pushy note is deleted."""
    kb = fresh_kb(folder)
    (kb / "notes" / "rollback-and-tags.md").write_text(PUSHY_NOTE, encoding="utf-8")
    _run(kb, folder / "history.json")
    (kb / "notes" / "rollback-and-tags.md").unlink()
    return _run(kb, folder / "history.json", GATE)


def gate_without_previous(folder: Path) -> RunOutcome:
    kb = fresh_kb(folder)
    return _run(kb, None, "--fail-on-regression")


def many_changed(folder: Path, count: int = 57) -> RunOutcome:
    """A worse run whose comparison lists `count` changed queries (the real ones, repeated with new ids)."""
    outcome = pushed_down(folder, GATE)
    comparison = outcome.report.comparison
    changed = comparison.changed_queries()
    assert changed, "the pushed-down state must change queries"
    rows = tuple(
        dataclasses.replace(changed[n % len(changed)], query_id=f"q{n:03d}") for n in range(count)
    )
    many: tuple[QueryDelta, ...] = rows
    report = dataclasses.replace(outcome.report, comparison=dataclasses.replace(comparison, query_deltas=many))
    return dataclasses.replace(outcome, report=report)


EVAL_NOTES = (
    "# Notes on the evaluation\n\n"
    "Two of the golden questions: how do I roll back a database migration, and which tag do container images get.\n"
)
"""A page about the test that quotes two golden queries; on the base commit already."""
FAQ = (
    "# FAQ\n\n"
    "Setting up a new laptop? See the checklist. An outage caused by dropping a column? See the postmortem.\n"
)
"""A page the pull request adds, quoting two other golden queries."""
_GIT_ENV = {
    "PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": "/nonexistent", "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com", "GIT_COMMITTER_NAME": "t",
    "GIT_COMMITTER_EMAIL": "t@example.com",
    "GIT_AUTHOR_DATE": "2026-12-03T12:00:00Z", "GIT_COMMITTER_DATE": "2026-12-03T12:00:00Z",
}


def _commit(repo: Path, message: str) -> None:
    for args in (["add", "-A"], ["commit", "-q", "-m", message]):
        subprocess.run(["git", "-C", str(repo), *args], env=_GIT_ENV, check=True)


def pull_request_findings(folder: Path) -> RunOutcome:
    """On a pull request compared with its base commit: one finding the base already had, one the
    pull request brought (with the pushy note that pushes two labelled answers down)."""
    kb = fresh_kb(folder)
    subprocess.run(["git", "-c", "init.defaultBranch=main", "init", "-q", str(folder)], env=_GIT_ENV, check=True)
    (kb / "notes" / "eval-notes.md").write_text(EVAL_NOTES, encoding="utf-8")
    _commit(folder, "base")
    (kb / "notes" / "faq.md").write_text(FAQ, encoding="utf-8")
    (kb / "notes" / "rollback-and-tags.md").write_text(PUSHY_NOTE, encoding="utf-8")
    _commit(folder, "the pull request")
    return _run(kb, None, "--baseline-ref", "HEAD~1", GATE, "--regression-threshold", "0.5")


def gate_cannot_run_on_pull_request(folder: Path) -> RunOutcome:
    """The gate is on, and the pull request's base commit is not in the clone (a shallow checkout,
    actions/checkout's default): the step fails with exit 2 instead of passing green."""
    origin = folder / "origin"
    kb = fresh_kb(origin)
    subprocess.run(["git", "-c", "init.defaultBranch=main", "init", "-q", str(origin)], env=_GIT_ENV, check=True)
    _commit(origin, "base")
    base = subprocess.run(
        ["git", "-C", str(origin), "rev-parse", "HEAD"], env=_GIT_ENV, capture_output=True, text=True, check=True
    ).stdout.strip()
    (kb / "notes" / "faq.md").write_text(FAQ, encoding="utf-8")
    _commit(origin, "the pull request")
    subprocess.run(
        ["git", "clone", "-q", "--depth", "1", f"file://{origin}", str(folder / "checkout")], env=_GIT_ENV, check=True
    )
    settings = parse_cli(["--kb-path", "kb", "--no-history", "--format", "json", "--fail-on-regression"])
    chosen = dataclasses.replace(settings, baseline_ref=BaseRequest(base, Origin.PULL_REQUEST, "main"))
    with _inside(folder / "checkout"):
        result = execute(chosen)
    assert result.exit_code == ExitCode.BAD_INPUT and result.outcome is not None, result.stderr_text
    return result.outcome


def context(outcome: RunOutcome, *, links: SourceLinks | None = LINKS) -> SummaryContext:
    return SummaryContext(kb_path="docs/kb", report_path="kb-eval-report.json", links=links, history=outcome.history)


STATES = {
    "first-run": first_run,
    "unchanged": unchanged,
    "worse": lambda folder: pushed_down(folder, "--regression-threshold", "0.5"),
    "improved": improved,
    "regressed": regressed,
    "gate-without-previous": gate_without_previous,
    "many-changed": many_changed,
    "pull-request-findings": pull_request_findings,
    "pull-request-gate-cannot-run": gate_cannot_run_on_pull_request,
    "labels-to-fix": labels_to_fix,
}

__all__ = ["STATES", "context", "io"]
