"""The trend chart: every run its own point, the lines named and coloured apart, drawn by the real
Mermaid library (tests/support/mermaid.py) and read back from its SVG."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from scanner.pipeline.run import RunOutcome
from scanner.render.markdown import TREND_COLOURS, render_summary, trend_labels
from tests.render.states import STATES, context
from tests.support import mermaid


@pytest.fixture(scope="module")
def outcomes(tmp_path_factory: pytest.TempPathFactory) -> dict[str, RunOutcome]:
    return {name: STATES[name](tmp_path_factory.mktemp(name)) for name in ("unchanged", "improved")}


def chart(outcome: RunOutcome) -> str:
    markdown = render_summary(outcome.report, context(outcome))
    return markdown.split("```mermaid\n", 1)[1].split("```", 1)[0]


def test_runs_of_one_minute_and_one_second_each_keep_their_own_label() -> None:
    assert trend_labels(["2026-12-04T10:15:01Z", "2026-12-04T10:16:00Z"]) == ["12-04 10:15", "12-04 10:16"]
    assert trend_labels(["2026-12-04T10:15:01Z", "2026-12-04T10:15:42Z", "2026-12-04T10:16:00Z"]) == [
        "12-04 10:15:01", "12-04 10:15:42", "12-04 10:16"]
    assert trend_labels(["2026-12-04T10:15:42Z"] * 3) == ["12-04 10:15:42", "12-04 10:15:42 #2", "12-04 10:15:42 #3"]


def test_the_lines_are_named_with_a_legend_and_their_own_colours(outcomes: dict[str, RunOutcome]) -> None:
    diagram = chart(outcomes["unchanged"])
    assert re.search(r'^    line "MRR" \[', diagram, re.MULTILINE)
    assert re.search(r'^    line "nDCG@10" \[', diagram, re.MULTILINE)
    assert "showLegend: true" in diagram
    assert f'plotColorPalette: "{TREND_COLOURS[0]}, {TREND_COLOURS[1]}"' in diagram
    assert "Lines: MRR (blue); nDCG@10 (orange)." in render_summary(outcomes["unchanged"].report, context(outcomes["unchanged"]))


DRAWN = ("unchanged", "improved")


@pytest.fixture(scope="module")
def drawn(outcomes: dict[str, RunOutcome], tmp_path_factory: pytest.TempPathFactory) -> dict[tuple[str, str], Path]:
    """(state, svg or png) -> the chart Mermaid drew: one browser per format for both states."""
    charts = [chart(outcomes[state]) for state in DRAWN]
    return {(state, kind): image for kind in ("svg", "png")
            for state, image in zip(DRAWN, mermaid.render(charts, tmp_path_factory.mktemp(kind), kind), strict=True)}


@pytest.mark.slow  # a headless browser; the chart's text is checked in the quick tests above
@pytest.mark.parametrize("state", DRAWN)
def test_mermaid_draws_every_run_as_its_own_point_with_both_lines_named(
    outcomes: dict[str, RunOutcome], state: str, drawn: dict[tuple[str, str], Path]
) -> None:
    outcome = outcomes[state]
    runs = 1 + len(outcome.history)
    svg = drawn[state, "svg"].read_text(encoding="utf-8")
    texts = re.findall(r"<text[^>]*>([^<]*)</text>", svg)
    legend = re.search(r'<g class="legend">(.*?)<g class="bottom-axis">', svg, re.DOTALL)
    assert legend is not None and re.findall(r">([^<]+)</text>", legend.group(1)) == ["MRR", "nDCG@10"]
    assert re.findall(r'stroke="(#[0-9A-Fa-f]{6})"', legend.group(1)) == list(TREND_COLOURS)
    labels = trend_labels([r.timestamp for r in [outcome.report.run, *outcome.history][::-1]])
    assert len(set(labels)) == runs and all(label in texts for label in labels)
    for index, colour in enumerate(TREND_COLOURS):
        [path] = re.findall(rf'<g class="line-plot-{index}"><path d="([^"]+)"[^>]*stroke="{colour}"', svg)
        assert len(path.split("L")) == runs, "a run is not its own point on the line"
    png = drawn[state, "png"]
    assert png.read_bytes().startswith(b"\x89PNG") and png.stat().st_size > 1000
