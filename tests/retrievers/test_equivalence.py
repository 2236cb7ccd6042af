"""End to end: an external retriever answering with the built-in rankings gives the built-in report.

The built-in run on examples/kb is replayed through each external retriever
(http on 127.0.0.1, command, JSONL and TREC run files); metrics, per-query
lists and findings must come out identical, only the fingerprint's retriever
differs. The quote scan must take its ranks from whichever retriever answered.
"""

from __future__ import annotations

import copy
import json
import shlex
import sys
import urllib.parse
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from scanner.cli.main import parse_cli
from scanner.pipeline.evaluate import EvalOptions
from scanner.report.document import run_document
from scanner.settings.retriever import retriever_builder
from tests.conftest import REPO, write_tree
from tests.support.loopback_server import Received, Reply, running, serve_rankings
from tests.support.phases import evaluate_head

EXAMPLE_KB = REPO / "examples" / "kb"
FAKE = Path(__file__).parents[1] / "support" / "fake_kb_search.py"
WHEN = datetime(2026, 12, 2, 12, 0, tzinfo=UTC)


def evaluate(kb: Path, *argv: str) -> dict[str, Any]:
    """The report of `kb` answered by the retriever the flags `argv` choose (none: the built-in one)."""
    builder = retriever_builder(parse_cli(list(argv)), env={})
    return run_document(evaluate_head(EvalOptions(kb_path=kb, timestamp=WHEN, retriever=builder)).run)


def without_retriever(report: dict[str, Any]) -> dict[str, Any]:
    stripped = copy.deepcopy(report)
    # kb-mcp's aliases `model` and `fts_query_version` are read from the retriever's describe() too.
    for key in ("retriever", "model", "fts_query_version"):
        del stripped["fingerprint"][key]
    # What each answer cost is measured for an external retriever only (tests/evaluation/test_answer_costs.py).
    stripped["answers"] = None
    for row in stripped["per_query"]:
        row["answer"] = None
    return stripped


def rankings_by_text(report: dict[str, Any]) -> dict[str, list[dict[str, object]]]:
    return {
        q["query"]: [{"path": h["path"], "heading": h["heading"], "score": h["score"]} for h in q["top_k"]]
        for q in report["per_query"]
    }


@pytest.fixture(scope="module")
def builtin_report() -> dict[str, Any]:
    report = evaluate(EXAMPLE_KB)
    assert report["aggregate"]["query_count"] >= 5
    assert 0 < report["aggregate"]["mrr"] < 1, "a perfect or empty run could hide a wrong replay"
    return report


@pytest.mark.parametrize("concurrency", [1, 8])
def test_http_serving_the_builtin_rankings_reproduces_the_builtin_report(
    builtin_report: dict[str, Any], concurrency: int
) -> None:
    with running(serve_rankings(rankings_by_text(builtin_report))) as server:
        report = evaluate(EXAMPLE_KB, "--http-url", server.url + "/search", "--concurrency", str(concurrency))
    assert without_retriever(report) == without_retriever(builtin_report)
    assert report["fingerprint"]["retriever"]["name"] == "http"


def test_a_command_printing_the_builtin_rankings_reproduces_the_builtin_report(
    builtin_report: dict[str, Any], tmp_path: Path
) -> None:
    rankings = tmp_path / "rankings.json"
    rankings.write_text(json.dumps(rankings_by_text(builtin_report)), encoding="utf-8")
    template = (
        f"{shlex.quote(sys.executable)} {shlex.quote(str(FAKE))} search --format json "
        f"--limit {{limit}} --rankings {shlex.quote(str(rankings))} {{query}}"
    )
    report = evaluate(EXAMPLE_KB, "--command", template, "--concurrency", "2")
    assert without_retriever(report) == without_retriever(builtin_report)


def test_a_jsonl_run_of_the_builtin_rankings_reproduces_the_builtin_report(
    builtin_report: dict[str, Any], tmp_path: Path
) -> None:
    run = tmp_path / "builtin.jsonl"
    lines = [{"id": q["id"], "hits": rankings_by_text(builtin_report)[q["query"]]} for q in builtin_report["per_query"]]
    run.write_text("".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines), encoding="utf-8")
    report = evaluate(EXAMPLE_KB, "--run-file", str(run))
    assert without_retriever(report) == without_retriever(builtin_report)


def test_a_trec_run_of_the_builtin_rankings_reproduces_its_lists_and_metrics(
    builtin_report: dict[str, Any], tmp_path: Path
) -> None:
    # Built-in scores tie (fused ranks), and trec_eval would reorder ties by
    # docid, so the run carries strictly decreasing scores instead.
    run = tmp_path / "builtin.trec"
    lines = []
    for q in builtin_report["per_query"]:
        for hit in q["top_k"]:
            docid = urllib.parse.quote(hit["path"], safe="/") + "#" + urllib.parse.quote(hit["heading"] or "", safe="")
            lines.append(f"{q['id']} Q0 {docid} {hit['rank']} {100 - hit['rank']} builtin\n")
    run.write_text("".join(lines), encoding="utf-8")
    report = evaluate(EXAMPLE_KB, "--run-file", str(run))

    def lists(r: dict[str, Any]) -> list[object]:
        return [(q["id"], [(h["rank"], h["path"], h["heading"]) for h in q["top_k"]], q["metrics"]) for q in r["per_query"]]

    assert lists(report) == lists(builtin_report)
    assert report["aggregate"] == builtin_report["aggregate"]


QUOTING_KB: dict[str, str | bytes] = {
    ".kb-eval.yml": """
        queries:
          - id: rollback
            query: how do I roll back a database migration
            expected:
              - path: deploy.md
          - id: laptop
            query: setting up a new laptop for development
            expected:
              - path: onboarding.md
        """,
    "deploy.md": "# Deploy\n\n## Database\n\nRun the down migration to roll back a schema change.\n",
    "onboarding.md": "# Onboarding\n\nInstall the toolchain on your machine before the first day.\n",
    "notes/eval-notes.md": (
        "# Notes on the search test\n\n"
        "We check how do I roll back a database migration, and also\n"
        "setting up a new laptop for development, against the index.\n"
    ),
}


def test_the_quote_scan_finds_the_same_documents_with_ranks_from_the_retriever_that_answered(tmp_path: Path) -> None:
    kb = write_tree(tmp_path / "kb", QUOTING_KB)
    builtin = evaluate(kb)
    assert [f["path"] for f in builtin["findings"]] == ["notes/eval-notes.md"], "fixture must produce the finding"

    # The service ranks the quoting note at 2 for one query and not at all for the other.
    def answer(request: Received) -> Reply:
        if request.query_text().startswith("how do I roll back"):
            return Reply(body={"results": [{"path": "deploy.md"}, {"path": "notes/eval-notes.md"}]})
        return Reply(body={"results": [{"path": "onboarding.md"}]})

    with running(answer) as server:
        external = evaluate(kb, "--http-url", server.url)

    def quoted(report: dict[str, Any]) -> dict[str, dict[str, object]]:
        return {f["path"]: {q["query_id"]: q["rank_in_top_k"] for q in f["quoted"]} for f in report["findings"]}

    assert quoted(external) == {"notes/eval-notes.md": {"rollback": 2, "laptop": None}}
    assert quoted(external).keys() == quoted(builtin).keys()
    assert {q for f in builtin["findings"] for q in (x["query_id"] for x in f["quoted"])} == {"rollback", "laptop"}
