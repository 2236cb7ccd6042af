"""The summary of every reviewer-facing state is pinned (docs/screenshots/<state>.md), and
GitHub's own Markdown renderer (cmark-gfm) turns pull-request text into text, never markup."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import cmarkgfm
import pytest

from bench.screenshots import OUT, state_markdown
from scanner.render.markdown import prose, render_summary
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


def test_a_setting_in_backticks_shows_as_code_and_nothing_in_them_becomes_markup() -> None:
    html = cmarkgfm.github_flavored_markdown_to_html(prose("To compare: set `fetch-depth: 0` on actions/checkout."))
    assert "<code>fetch-depth: 0</code>" in html
    # A span holding a blank line and HTML (a ref or path from the pull request) stays one inert
    # code span: the paragraph does not end inside it, nothing in it is markup.
    hostile = prose("ref `x\n\n<img src=x onerror=alert(1)> **b** [l](javascript:x)` and **c** <i>")
    html = cmarkgfm.github_flavored_markdown_to_html(hostile)
    assert "<img" not in html and "<strong>" not in html and "<i>" not in html and 'href="javascript' not in html
    assert html.count("<p>") == 1
    # In a table cell, a pipe in the span does not split the cell.
    table = cmarkgfm.github_flavored_markdown_to_html("| a | b |\n| --- | --- |\n| " + prose("`x|y`") + " | z |\n")
    assert "<td><code>x|y</code></td>" in table and "<td>z</td>" in table
    # The near miss: an unpaired backtick is text, not the start of a span.
    assert "<code>" not in cmarkgfm.github_flavored_markdown_to_html(prose("one ` alone"))
