"""The summary Markdown and the outputs, from a real report with the comparison fields filled in."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest

from scanner.action import write_outputs
from scanner.cli import execute
from scanner.summary import MAX_FINDING_ROWS, SourceLinks, render_summary
from tests.action_cases import KB, finding_workspace
from tests.runner_log import parse_env_file

LINKS = SourceLinks("https://github.com", "octo/kb", "a" * 40)


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    root = tmp_path_factory.mktemp("ws")
    finding_workspace(root)
    result = execute(["--kb-path", str(root / KB)])
    assert result.report is not None
    return dict(result.report)


def with_comparison(report: dict[str, Any], tripped: bool) -> dict[str, Any]:
    """The `diff` and `gate` shapes of the history/baseline work (issue 5)."""
    changed = copy.deepcopy(report)
    mrr = changed["aggregate"]["mrr"]
    changed["diff"] = {
        "aggregate": {
            "mrr": {"previous": mrr, "current": mrr, "delta": 0.0},
            "recall_at_k": {"1": {"previous": 1.0, "current": 0.5, "delta": -0.5}},
        },
        "queries": {},
        "per_query": [],
        "corpus": {"changed": True, "description": "3 -> 4 documents"},
    }
    changed["gate"] = {"tripped": tripped, "evaluated": True, "reason": "recall@1 fell by 0.5000 > 0.05"}
    return changed


def test_deltas_appear_beside_the_figures_with_the_corpus_note(report: dict[str, Any]) -> None:
    markdown = render_summary(with_comparison(report, False), kb_path=KB, report_path="r.json", links=LINKS)
    recall_row = next(line for line in markdown.splitlines() if line.startswith("| recall |"))
    assert "(-0.5000)" in recall_row.split("|")[2]
    assert "(+0.0000)" in next(line for line in markdown.splitlines() if line.startswith("**MRR**"))
    assert "3 &#45;&#62; 4 documents" in markdown and "may reflect the corpus" in markdown
    assert "Regression gate passed" in markdown


def test_without_a_comparison_there_are_no_deltas(report: dict[str, Any]) -> None:
    markdown = render_summary(report, kb_path=KB, report_path=None, links=None)
    assert "(+" not in markdown and "(-" not in markdown and "Deltas" not in markdown
    assert "](" not in markdown  # no links without a repository to link to


def test_regressed_output_follows_the_gate_and_only_the_gate(report: dict[str, Any], tmp_path: Path) -> None:
    for tripped, expected in ((True, "true"), (False, "false")):
        output = tmp_path / f"out-{tripped}"
        write_outputs(str(output), with_comparison(report, tripped), "r.json")
        assert dict(parse_env_file(output.read_text(encoding="utf-8")))["regressed"] == expected
    markdown = render_summary(with_comparison(report, True), kb_path=KB, report_path=None, links=None)
    assert "**REGRESSION**" in markdown
    output = tmp_path / "out-none"
    write_outputs(str(output), report, "r.json")  # a report without a gate: not regressed
    assert dict(parse_env_file(output.read_text(encoding="utf-8")))["regressed"] == "false"


def test_the_findings_table_is_capped_and_says_how_many_more_the_report_has(report: dict[str, Any]) -> None:
    many = copy.deepcopy(report)
    [finding] = many["findings"]
    many["findings"] = [{**finding, "path": f"notes/n{n}.md"} for n in range(MAX_FINDING_ROWS + 7)]
    markdown = render_summary(many, kb_path=KB, report_path=None, links=LINKS)
    assert markdown.count("| [notes/n") == MAX_FINDING_ROWS
    assert "… 7 more in the JSON report" in markdown
    assert f"### {MAX_FINDING_ROWS + 7} documents quote 2 or more" in markdown


def test_a_changed_corpus_is_a_notice_annotation_and_an_unchanged_one_is_not(report: dict[str, Any]) -> None:
    from scanner.annotations import report_annotations

    changed = with_comparison(report, False)
    changed["corpus_changed"] = True
    notices = [a for a in report_annotations(changed, KB) if a.kind.value == "notice"]
    assert [n.message for n in notices] == [
        "The corpus changed since the compared run (3 -> 4 documents): a delta may reflect the corpus, not retrieval."
    ]
    changed["corpus_changed"] = False
    assert not [a for a in report_annotations(changed, KB) if a.kind.value == "notice"]
