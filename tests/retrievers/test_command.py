"""The command retriever running a real program (tests/support/fake_kb_search.py) per query."""

from __future__ import annotations

import json
import shlex
import sys
import time
from pathlib import Path

import pytest

from scanner.foundation.errors import InputError
from scanner.retrievers.base import Hit, SearchRequest
from scanner.retrievers.command import CommandRetriever, CommandSettings
from scanner.retrievers.mapping import ResponseMapping

FAKE = Path(__file__).parents[1] / "support" / "fake_kb_search.py"
PROGRAM = f"{shlex.quote(sys.executable)} {shlex.quote(str(FAKE))}"
TEMPLATE = f"{PROGRAM} search --format json --limit {{limit}} {{query}}"


def command(template: str = TEMPLATE, timeout_s: float = 10.0, concurrency: int = 1) -> CommandRetriever:
    return CommandRetriever(CommandSettings(template, timeout_s, concurrency), ResponseMapping())


def one(text: str, query_id: str = "q1", limit: int = 5) -> list[SearchRequest]:
    return [SearchRequest(query_id=query_id, text=text, limit=limit)]


def test_a_kb_mcp_style_answer_becomes_ranked_hits(tmp_path: Path) -> None:
    rankings = tmp_path / "rankings.json"
    rankings.write_text(json.dumps({"install": [
        {"path": "setup.md", "heading": "Install", "score": 3.0},
        {"path": "faq.md", "heading": None},
        {"path": "x.md"},
    ]}))
    retriever = command(f"{PROGRAM} search --format json --limit {{limit}} --rankings {rankings} {{query}}")
    assert retriever.search_all(one("install", limit=2)) == [
        [Hit(1, "setup.md", "Install", 3.0), Hit(2, "faq.md", "", None)]
    ]


@pytest.mark.parametrize(
    "hostile",
    [
        "it's \"quoted\"",
        "a; rm -rf /tmp/never",
        "$(touch /tmp/kb-eval-pwned) `id` ${HOME}",
        "spaces   and\ttabs | pipes > out && more",
        "{limit} stays {query}",
    ],
)
def test_a_hostile_query_reaches_the_program_as_one_literal_argument(hostile: str) -> None:
    retriever = command()
    [hits] = retriever.search_all(one(hostile, limit=7))
    assert hits == [Hit(1, "echo.md", hostile, 1.0)]
    assert retriever.argv_for(one(hostile, limit=7)[0])[2:] == ["search", "--format", "json", "--limit", "7", hostile]


def test_placeholders_inside_a_longer_argument_are_substituted_in_place() -> None:
    retriever = command(f"{PROGRAM} search --format json --limit={{limit}} {{query}}")
    assert retriever.argv_for(SearchRequest("q", "x y", 4))[2:] == ["search", "--format", "json", "--limit=4", "x y"]


def test_a_non_zero_exit_fails_naming_the_query_with_the_stderr_tail() -> None:
    with pytest.raises(InputError) as caught:
        command().search_all(one("fail", query_id="q-fail"))
    message = str(caught.value)
    assert "query 'q-fail': exit status 3" in message
    assert message.split("\n  hint:")[0].endswith("Traceback: index is locked")
    # The tail, not the whole stderr (6 KB of noise precede the error line).
    assert message.count("noise") < 500


def test_garbage_stdout_fails_naming_the_query() -> None:
    with pytest.raises(InputError) as caught:
        command().search_all(one("garbage", query_id="q-garbage"))
    assert "query 'q-garbage': stdout is not JSON" in str(caught.value)
    assert "Searching... found 2 results" in str(caught.value)


def test_a_program_past_its_timeout_is_killed_and_the_query_named() -> None:
    started = time.monotonic()
    with pytest.raises(InputError) as caught:
        command(timeout_s=0.5).search_all(one("sleep", query_id="q-sleep"))
    assert "query 'q-sleep': no answer within 0.5 s" in str(caught.value)
    assert time.monotonic() - started < 5


def test_a_grandchild_holding_the_output_open_does_not_hold_the_run() -> None:
    # The program exits at once (printing nothing: no hits), but its child keeps stdout open for
    # 30 s: waiting for EOF would leave the run waiting for that child.
    started = time.monotonic()
    assert command(timeout_s=20).search_all(one("orphan")) == [[]]
    # Waiting for EOF would take the child's 30 s, or the 20 s timeout; the bound is far below
    # both and far above a run on a loaded machine (5 s was not, under load).
    assert time.monotonic() - started < 12


def test_a_program_that_does_not_exist_is_refused_before_any_query() -> None:
    with pytest.raises(InputError, match="not found"):
        command("no-such-kb-search-program {query}")


@pytest.mark.parametrize(
    ("template", "complaint"),
    [("", "empty"), ("kb-mcp search 'unbalanced {query}", "cannot be split"), ("kb-mcp search --limit {limit}", "never uses")],
)
def test_a_template_that_cannot_work_is_refused(template: str, complaint: str) -> None:
    with pytest.raises(InputError, match=complaint):
        command(template)


def test_concurrency_4_gives_the_same_results_as_1_in_golden_order() -> None:
    requests = [SearchRequest(f"q{n}", f"query number {n}", 3) for n in range(12)]
    sequential = command(concurrency=1).search_all(requests)
    parallel = command(concurrency=4).search_all(requests)
    assert parallel == sequential
    assert [hits[0].heading for hits in parallel] == [f"query number {n}" for n in range(12)]


def test_describe_records_the_template_verbatim_and_the_mapping() -> None:
    assert command().describe() == {"name": "command", "command": TEMPLATE, "mapping": ResponseMapping().describe()}


def test_a_program_printing_nothing_has_returned_no_hits() -> None:
    # `sqlite3 -json` prints nothing at all for zero rows.
    assert command(f"{shlex.quote(sys.executable)} -c pass {{query}}").search_all(one("x")) == [[]]
    assert command(f"{shlex.quote(sys.executable)} -c print() {{query}}").search_all(one("x")) == [[]]


def test_a_program_printing_something_that_is_not_json_is_still_refused() -> None:
    with pytest.raises(InputError, match="stdout is not JSON"):
        command(f"{shlex.quote(sys.executable)} -c {shlex.quote('print(1, 2)')} {{query}}").search_all(one("x"))


def test_a_failing_program_that_printed_a_json_error_shows_its_words() -> None:
    script = "import json,sys; print(json.dumps({'error': 'fts5: syntax error near \"+\"'})); sys.exit(1)"
    with pytest.raises(InputError) as caught:
        command(f"{shlex.quote(sys.executable)} -c {shlex.quote(script)} {{query}}").search_all(one("x"))
    assert "it printed the error 'fts5: syntax error near" in str(caught.value)
