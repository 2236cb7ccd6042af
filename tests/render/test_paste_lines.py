"""The golden-file lines the summary offers for pasting judge nothing by themselves.

Pasted under a query's `expected:` as offered, they change no label: every entry is commented
out. Uncommented without a thought, an entry is `grade: 0`, judged not relevant: no document, and
above all no note that quotes the golden set, becomes an answer nobody chose. A document that is
also a golden-queries-quoted finding says so where it is offered.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from scanner.golden.file import GoldenQuery, load_golden
from scanner.pipeline.run import RunOutcome
from scanner.render.markdown import render_summary
from tests.render.states import FIXTURE_KB, context, pull_request_findings


@pytest.fixture(scope="module")
def outcome(tmp_path_factory: pytest.TempPathFactory) -> RunOutcome:
    return pull_request_findings(tmp_path_factory.mktemp("pr"))


def offered(outcome: RunOutcome) -> list[str]:
    markdown = render_summary(outcome.report, context(outcome))
    fence = re.search(r"^(`{3,})yaml$", markdown, re.MULTILINE)
    assert fence is not None
    return markdown.split(fence.group(0) + "\n", 1)[1].split("\n" + fence.group(1) + "\n", 1)[0].splitlines()


def pasted(tmp_path: Path, lines: list[str], query_id: str) -> Path:
    """The fixture's golden file with `lines` pasted under `query_id`'s expected entries."""
    text = (FIXTURE_KB / ".kb-eval.yml").read_text(encoding="utf-8")
    start = text.index(f"  - id: {query_id}\n")
    end = text.find("\n  - id: ", start + 1)
    end = len(text) if end == -1 else end + 1
    golden = tmp_path / ".kb-eval.yml"
    golden.write_text(text[:end] + "\n".join(lines) + "\n" + text[end:], encoding="utf-8")
    return golden


def test_the_offered_lines_pasted_as_they_are_judge_nothing(outcome: RunOutcome, tmp_path: Path) -> None:
    lines = offered(outcome)
    assert any("path:" in line for line in lines)  # guard: something is offered
    assert all(line.startswith("#") for line in lines)
    before = load_golden(FIXTURE_KB / ".kb-eval.yml").queries
    after = load_golden(pasted(tmp_path, lines, "laptop")).queries
    def labels(queries: tuple[GoldenQuery, ...]) -> list[list[tuple[object, ...]]]:
        # What each label says; the lines below the paste moved, which is not a judgment.
        return [[(e.path, e.heading, e.grade, e.parent, e.subsections, e.any_of) for e in q.expected] for q in queries]

    assert labels(after) == labels(before)


def test_uncommented_unchanged_they_make_no_document_relevant(outcome: RunOutcome, tmp_path: Path) -> None:
    lines = [line[1:] for line in offered(outcome) if line.startswith("#  ")]
    laptop = next(q for q in load_golden(pasted(tmp_path, lines, "laptop")).queries if q.id == "laptop")
    added = [entry for entry in laptop.expected if entry.path == "notes/faq.md"]
    assert added and all(entry.grade == 0 for entry in added)
    # The near miss: a grade the person sets is read as written.
    chosen = [line.replace("grade: 0", "grade: 2") for line in lines]
    laptop = next(q for q in load_golden(pasted(tmp_path, chosen, "laptop")).queries if q.id == "laptop")
    assert {entry.grade for entry in laptop.expected if entry.path == "notes/faq.md"} == {2}


def test_a_document_that_quotes_golden_queries_is_marked_where_it_is_offered(outcome: RunOutcome) -> None:
    findings = {located.finding.path for located in outcome.report.run.findings}
    assert "notes/faq.md" in findings
    lines = offered(outcome)
    marks = [line for line in lines if "golden-queries-quoted" in line]
    assert marks and all('"notes/faq.md"' in line for line in marks)
    # The near miss: a document that is no finding is offered without the mark.
    assert any('"notes/rollback-and-tags.md"' in line for line in lines)
    assert not any("rollback-and-tags" in line for line in marks)
    markdown = render_summary(outcome.report, context(outcome))
    listed = [line for line in markdown.splitlines() if line.startswith("  - rank ")]
    assert all(("golden-queries-quoted" in line) == ("notes/faq.md" in line) for line in listed)
