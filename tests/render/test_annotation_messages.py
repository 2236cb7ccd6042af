"""Every annotation a run produces says something: none goes out with an empty message."""

from __future__ import annotations

import pytest

from scanner.pipeline.run import RunOutcome
from scanner.render.annotations import report_annotations
from tests.render.states import STATES


@pytest.fixture(scope="module")
def outcomes(tmp_path_factory: pytest.TempPathFactory) -> dict[str, RunOutcome]:
    wanted = ("worse", "pull-request-findings", "first-run")
    return {name: STATES[name](tmp_path_factory.mktemp(name)) for name in wanted}


@pytest.mark.parametrize("name", ["worse", "pull-request-findings", "first-run"])
def test_no_annotation_has_an_empty_message(outcomes: dict[str, RunOutcome], name: str) -> None:
    annotations = report_annotations(outcomes[name].report, "docs/kb")
    assert annotations and all(a.message.strip() for a in annotations)


def test_a_changed_corpus_is_a_notice_against_a_history_and_nothing_against_a_pull_requests_base(
    outcomes: dict[str, RunOutcome],
) -> None:
    titles = [a.properties.title for a in report_annotations(outcomes["worse"].report, "docs/kb")]
    assert "kb-eval: corpus changed" in titles  # compared with the history: a caveat worth a notice
    on_pull_request = outcomes["pull-request-findings"].report
    assert on_pull_request.comparison.corpus is not None and on_pull_request.comparison.corpus.changed
    titles = [a.properties.title for a in report_annotations(on_pull_request, "docs/kb")]
    assert "kb-eval: corpus changed" not in titles
