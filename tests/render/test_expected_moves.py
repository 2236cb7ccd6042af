"""A changed query shows every expected document whose rank moved, and misses name sections."""

from __future__ import annotations

import io
from pathlib import Path

from scanner.cli.main import execute
from scanner.render.markdown import render_summary
from scanner.report.document import report_document, validation_errors
from tests.render.states import context

GOLDEN = """\
queries:
  - id: deploy
    query: how do I deploy the service to production
    expected:
      - deploy.md
      - rollout.md
"""
DEPLOY = "# Deploy\n\nDeploy the service to production with the deploy command.\n"
ROLLOUT = "# Rollout\n\nA production rollout of the service goes region by region.\n"
PUSHY = "# Service notes\n\nservice production service production deploy service production\n"


def run(kb: Path, history: Path):  # type: ignore[no-untyped-def]
    result = execute(["--kb-path", str(kb), "--history", str(history), "--format", "json"])
    assert result.outcome is not None, result.stderr_text
    return result.outcome


def test_the_second_expected_document_falling_gets_its_own_row(tmp_path: Path) -> None:
    kb = tmp_path / "kb"
    kb.mkdir()
    (kb / ".kb-eval.yml").write_text(GOLDEN, encoding="utf-8")
    (kb / "deploy.md").write_text(DEPLOY, encoding="utf-8")
    (kb / "rollout.md").write_text(ROLLOUT, encoding="utf-8")
    history = tmp_path / "history.json"
    before = run(kb, history).report.run.queries[0]
    (kb / "service-notes.md").write_text(PUSHY, encoding="utf-8")
    outcome = run(kb, history)
    after = outcome.report.run.queries[0]
    ranks = lambda q: [h.path for h in q.hits]
    # the set-up this test needs: the first expected document keeps its rank, the second falls
    assert ranks(before).index("deploy.md") == ranks(after).index("deploy.md")
    assert ranks(before).index("rollout.md") < ranks(after).index("rollout.md")
    [delta] = outcome.report.comparison.changed_queries()
    assert delta.rank_before == delta.rank_after  # the query's row alone would say nothing moved
    [move] = delta.moves
    assert move.entry.path == "rollout.md" and move.now_above is not None
    assert move.now_above.path == "service-notes.md"
    markdown = render_summary(outcome.report, context(outcome))
    row = f"| ↳ rollout.md | rank {move.rank_before} → {move.rank_after} | service-notes.md › Service notes |"
    assert row in markdown
    assert "| ↳ deploy.md |" not in markdown  # a document that did not move gets no row
    assert validation_errors(report_document(outcome.report)) == []


def test_the_got_column_names_the_section_not_only_the_document(tmp_path: Path) -> None:
    kb = tmp_path / "kb"
    kb.mkdir()
    (kb / "guide.md").write_text("# Guide\n\n## Setup\n\nInstall the thing.\n\n## Usage\n\nRun the thing daily.\n")
    (kb / "colours.md").write_text("# Colours\n\nBlue and green.\n")
    (kb / ".kb-eval.yml").write_text(
        "queries:\n  - id: q\n    query: how do I run the thing daily\n    expected:\n"
        "      - {path: guide.md, heading: Setup}\n      - colours.md\n"
    )
    out = io.StringIO()
    result = execute(["--kb-path", str(kb), "--no-history"])
    out.write(result.stdout_text)
    text = out.getvalue()
    assert "expected: guide.md › Setup, colours.md" in text
    assert "got:      1. guide.md › Usage" in text
    assert "1. guide.md," not in text
