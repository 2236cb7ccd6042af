"""The default gate fails real regressions and not noise, run through the CLI as a workflow runs it.

A docs KB of 36 pages, each the answer to one golden query. A pull request that adds a good new
page taking rank 1 of two queries (their labelled answers move to rank 2) is one event: every @1
measure falls by 2/36 = 0.056, past the 0.05 threshold, yet two queries moving is what chance
does. A pull request that removes a dozen pages makes a dozen queries lose their answer.
"""

from __future__ import annotations

import json
from pathlib import Path

from scanner.cli.main import execute
from scanner.foundation.errors import ExitCode

TOPICS = [
    "caching", "theming", "search", "navigation", "tabs", "footer", "header", "icons", "fonts", "colors",
    "analytics", "comments", "versioning", "language", "blog", "tags", "social", "offline", "privacy",
    "admonitions", "annotations", "buttons", "grids", "tooltips", "diagrams", "math", "lists", "images",
    "tables", "footnotes", "formatting", "abbreviations", "emoji", "snippets", "plugins", "deploying",
]
WORDS = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india", "juliet", "kilo", "lima"]


def _page(n: int, topic: str) -> str:
    # Each page holds its own rare words, so its query finds it first.
    words = " ".join(f"{topic}{word}" for word in WORDS)
    return f"# Setting up {topic}\n\nHow to configure {topic} on the site: {words}.\n"


def _kb(folder: Path) -> Path:
    kb = folder / "docs"
    kb.mkdir(parents=True)
    queries = []
    for n, topic in enumerate(TOPICS):
        (kb / f"{topic}.md").write_text(_page(n, topic), encoding="utf-8")
        queries.append(
            f"  - id: {topic}\n    query: how do I configure {topic} {topic}alpha {topic}bravo\n"
            f"    expected:\n      - {topic}.md\n"
        )
    (kb / ".kb-eval.yml").write_text("queries:\n" + "".join(queries), encoding="utf-8")
    return kb


def _run(kb: Path, *extra: str) -> tuple[int, dict[str, object]]:
    result = execute(["--kb-path", str(kb), "--history", str(kb.parent / "history.json"), "--format", "json",
                      "--fail-on-regression", *extra])
    assert result.outcome is not None, result.stderr_text
    return result.exit_code, json.loads(result.outcome.json_text)


def _useful_new_page(kb: Path) -> None:
    """A page that answers `caching` and `theming` better than their labelled pages."""
    text = "".join(
        f"## {topic}\n\nHow do I configure {topic}: {topic}alpha {topic}bravo {topic}alpha {topic}bravo.\n\n"
        for topic in ("caching", "theming")
    )
    (kb / "faq.md").write_text("# Frequently asked\n\n" + text, encoding="utf-8")


def test_two_of_36_queries_giving_rank_1_to_a_useful_new_page_do_not_fail_the_default_gate(tmp_path: Path) -> None:
    kb = _kb(tmp_path)
    assert _run(kb)[0] == ExitCode.OK
    _useful_new_page(kb)
    code, report = _run(kb)
    diff = report["diff"]
    assert isinstance(diff, dict) and diff["queries"]["worse"] == ["caching", "theming"]
    assert diff["aggregate"]["recall_at_k"]["1"]["delta"] < -0.05  # past the threshold...
    assert code == ExitCode.OK  # ...but two queries moving is one event chance explains
    gate = report["gate"]
    assert isinstance(gate, dict) and not gate["tripped"] and gate["alpha"] == 0.05
    assert "chance explains" in gate["reason"] and "(2 of 36 queries moved, p = 0.5)" in gate["reason"]


def test_the_same_pull_request_failed_the_gate_on_the_threshold_alone(tmp_path: Path) -> None:
    # The near miss: the rule before, `--alpha off`, fails this pull request.
    kb = _kb(tmp_path)
    _run(kb, "--alpha", "off")
    _useful_new_page(kb)
    assert _run(kb, "--alpha", "off")[0] == ExitCode.REGRESSION


def test_a_dozen_of_36_queries_losing_their_answer_fails_the_default_gate(tmp_path: Path) -> None:
    kb = _kb(tmp_path)
    _run(kb)
    for topic in TOPICS[:12]:
        (kb / f"{topic}.md").unlink()
    code, report = _run(kb)
    assert code == ExitCode.REGRESSION
    gate = report["gate"]
    assert isinstance(gate, dict) and gate["tripped"]
    assert "more queries than chance explains (p < 0.05)" in gate["reason"]
    assert "(12 of 36 queries moved, p = 0.00049)" in gate["reason"]
