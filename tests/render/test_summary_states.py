"""The summary of every reviewer-facing state is pinned (docs/screenshots/<state>.md), and
GitHub's own Markdown renderer (cmark-gfm) turns pull-request text into text, never markup."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import cmarkgfm
import pytest

from bench.screenshots import OUT, state_markdown
from scanner.render.markdown import render_summary
from tests.render.states import STATES, context, first_run


@pytest.mark.parametrize("name", sorted(STATES))
def test_the_summary_of_each_state_is_the_pinned_one(name: str, tmp_path: Path) -> None:
    # Regenerate with `python bench/screenshots.py` and look at the PNGs before committing.
    assert state_markdown(name, tmp_path) == (OUT / f"{name}.md").read_text(encoding="utf-8")


def test_github_renders_hostile_names_as_text(tmp_path: Path) -> None:
    outcome = first_run(tmp_path)
    [located] = outcome.report.run.findings
    hostile = "<img src=x onerror=alert(1)>[click](javascript:x) **b** `c` | @team.md"
    finding = dataclasses.replace(located.finding, path=hostile)
    run = dataclasses.replace(outcome.report.run, findings=(dataclasses.replace(located, finding=finding),))
    html = cmarkgfm.github_flavored_markdown_to_html(
        render_summary(dataclasses.replace(outcome.report, run=run), context(outcome, links=None))
    )
    assert "<img" not in html and 'href="javascript' not in html and "<strong>b</strong>" not in html
    assert "<code>c</code>" not in html
    assert "&lt;img src=x onerror=alert(1)&gt;[click](javascript:x) **b** `c` | @\u200bteam.md" in html
