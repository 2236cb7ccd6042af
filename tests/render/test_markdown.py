"""The step summary / PR comment, from real runs in every state a reviewer meets.

Each test pins what must appear and the near miss that must not; every report is
schema-valid (the records are the real ones a run produced).
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable
from pathlib import Path

import pytest

from scanner.pipeline.run import RunOutcome
from scanner.render.markdown import MAX_CHANGED_ROWS, comment_state, render_summary
from scanner.report.document import report_document, validation_errors
from tests.render.states import STATES, context


@pytest.fixture(scope="module")
def outcomes(tmp_path_factory: pytest.TempPathFactory) -> dict[str, RunOutcome]:
    made = {}
    for name, make in STATES.items():
        made[name] = make(tmp_path_factory.mktemp(name))
        assert validation_errors(report_document(made[name].report)) == []
    return made


def summary(outcomes: dict[str, RunOutcome], state: str, *, enforced: bool | None = None, **kwargs: object) -> str:
    """The state's summary; `enforced` as if fail-on-regression had been (or not been) given."""
    outcome = outcomes[state]
    report = outcome.report
    if enforced is not None:
        report = dataclasses.replace(report, gate=dataclasses.replace(report.gate, enforced=enforced))
    return render_summary(report, context(outcome, **kwargs))  # type: ignore[arg-type]


def first_line(markdown: str) -> str:
    return markdown.splitlines()[0]


@pytest.mark.parametrize(
    ("state", "verdict"),
    [
        ("first-run", "Not compared"),
        ("unchanged", "Unchanged"),
        ("worse", "Worse, not a regression"),
        ("improved", "Improved"),
        ("regressed", "Regressed"),
    ],
)
def test_the_first_line_is_the_verdict_and_the_kb_path(outcomes: dict[str, RunOutcome], state: str, verdict: str) -> None:
    assert first_line(summary(outcomes, state)) == f"## kb-eval: {verdict} · docs/kb"


def test_the_verdict_comes_before_any_table(outcomes: dict[str, RunOutcome]) -> None:
    markdown = summary(outcomes, "regressed")
    assert markdown.index("Regressed") < markdown.index("### 6 queries changed") < markdown.index("| metric |")


@pytest.mark.parametrize("state", ["pull-request-findings", "regressed", "labels-to-fix"])
def test_the_first_screen_is_the_verdict_what_changed_and_where_to_look_with_the_statistics_folded(
    outcomes: dict[str, RunOutcome], state: str
) -> None:
    markdown = summary(outcomes, state)
    # Where to look first (the queries that fell, the documents quoting the golden set) comes
    # before the numbers; the statistics' own words are inside folded parts only.
    changed = markdown.index(" changed\n")
    quoted = markdown.index("(golden-queries-quoted)\n")
    assert markdown.index("## kb-eval: ") < changed < quoted < markdown.index("| metric |")
    unfolded = re.sub(r"<details>.*?</details>", "", markdown, flags=re.DOTALL)
    assert "bootstrap" in markdown and "RBO" in markdown  # guard: the statistics are there, folded
    for jargon in ("bootstrap", "RBO", "power 0.8", "resamples", "ranking overlap"):
        assert jargon not in unfolded, jargon


def test_the_summary_says_what_it_compared_with(outcomes: dict[str, RunOutcome]) -> None:
    timestamp = outcomes["unchanged"].report.comparison.previous.timestamp  # type: ignore[union-attr]
    assert f"Compared with the previous run in the history of {timestamp}." in summary(outcomes, "unchanged")
    assert "Compared with" not in summary(outcomes, "first-run")
    assert "No comparison: no previous run in the history" in summary(outcomes, "first-run")


def test_a_delta_is_shown_only_where_a_metric_moved(outcomes: dict[str, RunOutcome]) -> None:
    # | metric | value | 95% interval | change |
    rows = {line.split("|")[1].strip(): line.split("|")[4].strip() for line in summary(outcomes, "worse").splitlines()
            if line.startswith("| ") and line.count("|") == 5 and "metric" not in line and "---" not in line}
    assert rows["MRR"].startswith("▼ -0.")
    assert rows["recall@10"] == ""  # unchanged: no (+0.0000)
    assert "+0.0000" not in summary(outcomes, "unchanged")
    improved = summary(outcomes, "improved")
    assert "▲ +0." in improved and "▼" not in improved.split("### ")[0]


def test_a_query_pushed_down_shows_its_rank_move_and_what_now_ranks_above(outcomes: dict[str, RunOutcome]) -> None:
    markdown = summary(outcomes, "worse")
    row = next(line for line in markdown.splitlines() if line.startswith("| ▼ rollback-migration"))
    assert "rank 1 → 2" in row and "notes/rollback-and-tags.md" in row
    assert "queries changed" not in summary(outcomes, "unchanged")


def test_fifty_and_more_changed_queries_are_capped_with_a_count(outcomes: dict[str, RunOutcome]) -> None:
    markdown = summary(outcomes, "many-changed")
    assert "### 57 queries changed" in markdown
    assert sum(line.startswith("| ▼ q0") for line in markdown.splitlines()) == MAX_CHANGED_ROWS
    assert f"… {57 - MAX_CHANGED_ROWS} more in the JSON report" in markdown


def test_a_gate_that_could_not_run_is_said_and_silent_only_when_not_asked(outcomes: dict[str, RunOutcome]) -> None:
    asked = summary(outcomes, "gate-without-previous")
    assert "**The regression gate could not run: history disabled" in asked
    assert "could not run" not in summary(outcomes, "gate-without-previous", enforced=False)


def test_a_tripped_gate_is_bold_and_a_passed_one_is_not(outcomes: dict[str, RunOutcome]) -> None:
    failed = "**Regression gate failed, so the step fails (fail-on-regression is true): recall@10 fell by 0.667"
    assert failed in summary(outcomes, "regressed")
    passed = summary(outcomes, "worse", enforced=True)
    assert "Regression gate passed" in passed and "**Regression" not in passed


def test_findings_that_displaced_a_labelled_answer_come_first(outcomes: dict[str, RunOutcome]) -> None:
    outcome = outcomes["first-run"]
    [located] = outcome.report.run.findings
    overview = dataclasses.replace(
        located,
        finding=dataclasses.replace(
            located.finding,
            path="aaa-overview.md",
            quoted=tuple(dataclasses.replace(q, displaces_expected=False) for q in located.finding.quoted),
        ),
    )
    run = dataclasses.replace(outcome.report.run, findings=(overview, located))
    markdown = render_summary(dataclasses.replace(outcome.report, run=run), context(outcome))
    assert markdown.index("about-the-eval.md") < markdown.index("aaa-overview.md")
    assert "took rank 1 above the expected document" in markdown
    assert "below the expected document" in markdown


def test_long_parts_are_folded(outcomes: dict[str, RunOutcome]) -> None:
    markdown = summary(outcomes, "first-run")
    assert "<details><summary>1 query missed an expected document in the top 10</summary>" in markdown
    assert "<details><summary>1 warning</summary>" in markdown


def test_a_trend_chart_needs_two_runs(outcomes: dict[str, RunOutcome]) -> None:
    assert "xychart-beta" in summary(outcomes, "unchanged")
    assert "xychart-beta" not in summary(outcomes, "first-run")


def test_the_run_is_linked_and_files_link_to_the_head_commit(outcomes: dict[str, RunOutcome]) -> None:
    markdown = summary(outcomes, "first-run")
    assert "[Run log](https://github.com/octo/kb/actions/runs/123456)" in markdown
    assert "(https://github.com/octo/kb/blob/" + "a" * 40 + "/docs/kb/notes/about-the-eval.md#L6)" in markdown
    assert "](" not in summary(outcomes, "first-run", links=None)


def test_pull_request_text_cannot_add_markup(outcomes: dict[str, RunOutcome]) -> None:
    outcome = outcomes["first-run"]
    [query, *rest] = outcome.report.run.queries or ()
    hostile = dataclasses.replace(query, id="<img src=x>|@org/team", metrics=dataclasses.replace(
        query.metrics, recall_at_k={k: 0.0 for k in query.metrics.recall_at_k}))
    run = dataclasses.replace(outcome.report.run, queries=(hostile, *rest))
    markdown = render_summary(dataclasses.replace(outcome.report, run=run), context(outcome))
    assert "\\<img src=x\\>\\|@\u200borg/team" in markdown
    assert re.search(r"(?<!\\)<img", markdown) is None  # only the escaped form


Make = Callable[[Path], RunOutcome]


def test_on_a_pull_request_the_finding_the_base_had_is_marked_and_the_new_one_is_not(
    outcomes: dict[str, RunOutcome],
) -> None:
    markdown = summary(outcomes, "pull-request-findings", enforced=False)
    rows = {line.split("](")[0].lstrip("| ["): line for line in markdown.splitlines() if line.startswith("| [notes/")}
    assert "(already at the base commit)" in rows["notes/eval-notes.md"]
    assert "already at the base commit" not in rows["notes/faq.md"]
    assert "took rank 1 above the expected document" in rows["notes/faq.md"]  # brought by this pull request
    assert "2 of them were already at the base commit (not annotated again)." in markdown
    # Against the base commit the corpus change is what is measured: no caveat about it.
    assert "corpus changed" not in markdown.lower()


def test_a_gate_that_cannot_run_on_a_pull_request_says_the_step_fails_and_how_to_fix_it(
    outcomes: dict[str, RunOutcome],
) -> None:
    markdown = summary(outcomes, "pull-request-gate-cannot-run").replace("\\", "")  # as read
    assert "**The regression gate cannot run, so the step fails (fail-on-regression is true): " in markdown
    assert "set `fetch-depth: 0` on actions/checkout" in markdown
    # The near miss: a gate with no previous run outside a pull request is a warning, not a failure.
    elsewhere = summary(outcomes, "gate-without-previous")
    assert "could not run" in elsewhere and "step fails" not in elsewhere


def test_the_reason_for_no_comparison_and_its_fix_are_two_sentences(outcomes: dict[str, RunOutcome]) -> None:
    [line] = [
        line for line in summary(outcomes, "pull-request-gate-cannot-run").splitlines()
        if line.startswith("No comparison:")
    ]
    assert re.search(r"nothing was compared\. To compare: ", line), line


def test_the_comment_is_updated_when_a_finding_turns_out_to_be_at_the_base(outcomes: dict[str, RunOutcome]) -> None:
    # on-change mode compares this digest: a rebase onto a base that has the page must change it.
    report = outcomes["pull-request-findings"].report
    assert report.findings_at_base is not None
    flipped = tuple(dataclasses.replace(item, present_at_base=not item.present_at_base) for item in report.findings_at_base)
    assert comment_state(dataclasses.replace(report, findings_at_base=flipped)) != comment_state(report)
    assert comment_state(dataclasses.replace(report)) == comment_state(report)


def test_an_unlabelled_path_cannot_close_the_snippet_or_add_markup(outcomes: dict[str, RunOutcome]) -> None:
    import cmarkgfm
    import yaml

    from scanner.compare.pooling import UnlabelledDocument

    outcome = outcomes["worse"]
    comparison = outcome.report.comparison
    pool = next(p for p in comparison.pools if p.rests_on_unjudged)
    hostile_path = "notes/````\n</details><img src=x>@org/team.md"
    hostile = dataclasses.replace(pool, unlabelled=(UnlabelledDocument(hostile_path, "H `x`", 3),))
    pools = tuple(hostile if p is pool else p for p in comparison.pools)
    report = dataclasses.replace(outcome.report, comparison=dataclasses.replace(comparison, pools=pools))
    markdown = render_summary(report, context(outcome))
    html = cmarkgfm.github_flavored_markdown_to_html(markdown)
    outside_code = re.sub(r"<pre.*?</pre>", "", html, flags=re.DOTALL)
    assert "<img" not in html
    # A mention notifies outside code only; inside the snippet it is inert text.
    assert "@org/team" not in outside_code.replace("@\u200borg/team", "")
    fence = re.search(r"^(`{3,})yaml$", markdown, re.MULTILINE)
    assert fence is not None and len(fence.group(1)) > 4  # longer than the path's run of four
    block = markdown.split(fence.group(0) + "\n", 1)[1].split("\n" + fence.group(1) + "\n", 1)[0]
    # Uncommented, each entry is the path and heading as written, no YAML structure added.
    entries = yaml.safe_load("\n".join(line[1:] for line in block.splitlines() if line.startswith("#  ")))
    assert {"path": hostile_path, "heading": "H `x`", "grade": 0} in entries


def test_a_labelled_page_the_pull_request_moved_is_named_by_its_new_path_and_not_blamed(
    outcomes: dict[str, RunOutcome],
) -> None:
    # The regressed state moves guides/ to handbook/ and keeps the labels: the pages now above
    # their old paths are those pages, moved.
    markdown = summary(outcomes, "regressed").replace("\\", "")
    row = next(line for line in markdown.splitlines() if line.startswith("| ▼ reranker"))
    assert "handbook/search.md: the labelled guides/search.md, moved (the label names the old path)" in row
    assert "expects 'guides/search.md', which is not in the indexed corpus; did you mean 'handbook/search.md'?" in markdown
    # Nor is a moved labelled page a document to judge: the verdict rests on the others only.
    rests = next(line for line in markdown.splitlines() if line.startswith("The verdict rests partly"))
    assert "in the 2 queries that fell, 2 of the 4 documents" in rests
    # The near miss: a new page that pushed an answer down is named as what now ranks above it.
    worse = summary(outcomes, "worse")
    row = next(line for line in worse.splitlines() if line.startswith("| ▼ rollback-migration"))
    assert row.endswith("| notes/rollback-and-tags.md |") and "moved" not in row


def test_no_folded_line_shows_a_markdown_escape_as_typed(outcomes: dict[str, RunOutcome]) -> None:
    # A <summary> line is an HTML block: GitHub shows `\(` there as typed. Every state's folds, and
    # a golden-set fold whose headline holds a percentage in parentheses, read as plain text.
    import cmarkgfm
    from cmarkgfm.cmark import Options

    from scanner.evaluation.health import Coverage

    report = outcomes["regressed"].report
    health = report.run.health
    assert health is not None
    unreached = dataclasses.replace(health.coverage, unreached=("notes/a_b.md",), unreached_count=1)
    assert isinstance(unreached, Coverage)
    folded = dataclasses.replace(report, run=dataclasses.replace(report.run, health=dataclasses.replace(health, coverage=unreached)))
    rendered = [render_summary(outcome.report, context(outcome)) for outcome in outcomes.values()]
    rendered.append(render_summary(folded, context(outcomes["regressed"])))
    summaries = [
        line
        for markdown in rendered
        for line in re.findall(r"<summary>(.*?)</summary>", cmarkgfm.github_flavored_markdown_to_html(markdown, options=Options.CMARK_OPT_UNSAFE))
    ]
    assert any("Golden set:" in line and "%)" in line for line in summaries)  # the case is there
    assert not [line for line in summaries if re.search(r"\\[()\[\]*_`#|<>!.-]", line)]
