"""In Action mode a wrong label is an annotation on the golden file's line, and a run that cannot
measure anything fails the step with exit 2 in the Action's words (`kb-path`, not `--kb-path`)."""

from __future__ import annotations

from pathlib import Path

import pytest

from scanner.foundation.errors import ExitCode
from tests.conftest import Launch, write_tree
from tests.support.action_cases import GUIDES, KB, observe, run_entrypoint
from tests.support.container import RunnerLayout, action_inputs, pull_request_event

GOLDEN = """\
queries:
  - id: rollback
    query: how do I roll back a database migration
    expected:
      - path: guides/deploy.md
        heading: Databse
"""


@pytest.fixture
def layout(tmp_path: Path) -> RunnerLayout:
    layout = RunnerLayout(tmp_path)
    layout.write_event(pull_request_event())
    return layout


def test_a_heading_no_section_has_is_an_annotation_on_its_golden_line(layout: RunnerLayout, launch: Launch) -> None:
    write_tree(layout.workspace / KB, {**GUIDES, ".kb-eval.yml": GOLDEN})
    observed = observe(run_entrypoint(launch, layout, action_inputs({"kb-path": KB})))
    assert observed.returncode == ExitCode.OK
    [(kind, file, line, _, title, message)] = [a for a in observed.annotations if a[4] != "golden-queries-quoted"]
    assert (kind, file, line, title) == ("warning", f"{KB}/.kb-eval.yml", "5", "kb-eval: expected heading not in the document")
    assert "'Databse'" in message and "'Database'" in message


def test_a_kb_with_no_indexable_document_fails_the_step_in_the_actions_words(layout: RunnerLayout, launch: Launch) -> None:
    write_tree(layout.workspace / KB, {"notes.rst": "Notes\n=====\n", ".kb-eval.yml": GOLDEN})
    observed = observe(run_entrypoint(launch, layout, action_inputs({"kb-path": KB})))
    run_text = "\n".join(a[5] for a in observed.annotations)
    assert observed.returncode == ExitCode.BAD_INPUT
    assert "0 documents indexed" in run_text and "check kb-path" in run_text and "exclude" in run_text
    assert "--kb-path" not in run_text and "--exclude" not in run_text


def test_a_query_left_out_by_the_relevance_level_is_named_with_the_input(layout: RunnerLayout, launch: Launch) -> None:
    graded = GOLDEN.replace("heading: Databse", "heading: Database\n        grade: 1") + (
        "  - id: tags\n    query: which tag do container images get\n    expected:\n"
        "      - path: guides/deploy.md\n        grade: 2\n"
    )
    write_tree(layout.workspace / KB, {**GUIDES, ".kb-eval.yml": graded})
    observed = observe(run_entrypoint(launch, layout, action_inputs({"kb-path": KB, "relevance-level": "2"})))
    assert observed.returncode == ExitCode.OK
    [message] = [a[5] for a in observed.annotations if "left out of every aggregate" in a[5]]
    assert "'rollback'" in message and "relevance-level" in message and "--relevance-level" not in message
