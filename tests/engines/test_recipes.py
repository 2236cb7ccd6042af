"""The recipes of docs/retrievers.md run against real engines (SQLite FTS5 through the sqlite3
command, PostgreSQL through PostGraphile over HTTP, Xapian through Omega); each run's metrics are
compared with trec_eval's (pytrec-eval-terrier) computed from the engine's own answers, asked
directly. The engines are installed by .ci/run; each test starts and stops what it needs."""

from __future__ import annotations

import json
import math
import shutil
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

import pytest
import pytrec_eval

from scanner.foundation.errors import ExitCode
from tests.engines.runs import ENGINES, EXAMPLE_KB, LIMIT, MCP_SERVERS, EngineRun, copy_kb, postgresql, sqlite_fts5
from tests.support import engines

KS = (1, 5, 10)


def trec_eval_means(run: EngineRun) -> dict[str, float]:
    """recip_rank, recall_k and ndcg_cut_k averaged over the golden queries, from the engine's
    direct answers; documents judged by path (the engines answer by document)."""
    qrels = {q.id: {entry.path: 1 for entry in q.expected} for q in run.golden.queries if q.expected}
    ranked = {
        qid: {path: float(LIMIT - rank) for rank, path in enumerate(paths[:LIMIT])}
        for qid, paths in run.direct.items() if paths and qid in qrels
    }
    measures = {"recip_rank", "recall." + ",".join(map(str, KS)), "ndcg_cut." + ",".join(map(str, KS))}
    per_query = pytrec_eval.RelevanceEvaluator(qrels, measures).evaluate(ranked) if ranked else {}
    names = ["recip_rank", *(f"recall_{k}" for k in KS), *(f"ndcg_cut_{k}" for k in KS)]
    # trec_eval leaves out a query the run never answered; kb-eval scores it 0, as `trec_eval -c`.
    return {name: math.fsum(per_query.get(qid, {}).get(name, 0.0) for qid in qrels) / len(qrels) for name in names}


def kb_eval_means(report: Mapping[str, object]) -> dict[str, float]:
    aggregate = report["aggregate"]
    assert isinstance(aggregate, dict)
    return {
        "recip_rank": aggregate["mrr"],
        **{f"recall_{k}": aggregate["recall_at_k"][str(k)] for k in KS},
        **{f"ndcg_cut_{k}": aggregate["ndcg_at_k"][str(k)] for k in KS},
    }


def check(run: EngineRun) -> None:
    assert run.result.returncode == ExitCode.OK, run.result.stderr
    assert run.report is not None
    returned = {row["id"]: [hit["path"] for hit in row["top_k"]] for row in run.report["per_query"]}  # type: ignore[attr-defined]
    assert returned == {qid: paths[:LIMIT] for qid, paths in run.direct.items()}
    assert any(returned.values()), "the engine found nothing for any query: the comparison would prove nothing"
    assert kb_eval_means(run.report) == pytest.approx(trec_eval_means(run), abs=1e-12)
    # Document-level answers, scored by document: no warning that headings can never match. A
    # query the engine answered with nothing is counted in a warning, as many as there are.
    codes = [warning["code"] for warning in run.report["warnings"]]  # type: ignore[attr-defined]
    unanswered = sum(1 for paths in returned.values() if not paths)
    assert codes == (["empty-answers"] if unanswered else []), run.result.stderr


HEAVY = pytest.mark.slow
"""A recipe that starts a server stack (PostgreSQL and PostGraphile under Node: 15-40 s each on the
CI machine) runs in the full suite; the quick suite keeps the recipes that run one command."""


@pytest.mark.parametrize(
    "engine", [pytest.param(name, marks=HEAVY) if name.startswith("PostgreSQL") else name for name in sorted(ENGINES)]
)
def test_the_recipe_scores_what_trec_eval_computes_from_the_engines_own_answers(engine: str, tmp_path: Path) -> None:
    check(ENGINES[engine](EXAMPLE_KB, tmp_path))


@pytest.mark.parametrize(
    "server",
    # basic-memory takes minutes (each of its programs loads a large import tree): the full suite's.
    [pytest.param(name, marks=HEAVY) if name.startswith("basic-memory") else name for name in sorted(MCP_SERVERS)],
)
def test_an_mcp_servers_recipe_scores_what_trec_eval_computes_from_its_own_command_line(
    server: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    if server.startswith("basic-memory"):  # its run is shared with the pull-request test (conftest.py)
        check(request.getfixturevalue("basic_memory_on_the_example"))
    else:
        check(MCP_SERVERS[server](EXAMPLE_KB, tmp_path))


HOSTILE_GOLDEN = """queries:
  - id: apostrophe
    query: "it's the \\"rollback\\" (migration) -- C++ AND OR NOT *"
    expected: [guides/deploy.md]
  - id: nothing
    query: zzyzx qwxq
    expected: [guides/search.md]
"""


def test_sqlite_recipe_takes_quotes_and_fts5_syntax_as_words_and_reads_no_rows_as_no_hits(tmp_path: Path) -> None:
    kb = tmp_path / "source"
    kb.mkdir()
    (kb / "guides").mkdir()
    for path in ("guides/deploy.md", "guides/search.md"):
        (kb / path).write_text((EXAMPLE_KB / path).read_text())
    (kb / ".kb-eval.yml").write_text(HOSTILE_GOLDEN)
    run = sqlite_fts5(kb, tmp_path)
    check(run)
    assert run.direct["nothing"] == [] and run.direct["apostrophe"][0] == "guides/deploy.md"


@HEAVY
def test_a_graphql_error_reaches_the_user_in_the_services_words(tmp_path: Path) -> None:
    seen: dict[str, subprocess.CompletedProcess[str]] = {}

    def misspelled_field(environ: Mapping[str, str]) -> None:
        body = '{"query": "query ($q: String!, $n: Int!) { serch(q: $q, lim: $n) { nodes { path } } }", ' \
               '"variables": {"q": "{query}", "n": {limit}}}'
        seen["run"] = subprocess.run(
            [str(Path(sys.executable).parent / "kb-eval"), "--kb-path", environ["KB"], "--no-history",
             "--http-url", f"http://127.0.0.1:{environ['PORT']}/graphql", "--http-body", body,
             "--hits-path", "data.search.nodes"],
            capture_output=True, text=True, timeout=engines.STEP_TIMEOUT_S, check=False,
        )

    postgresql(EXAMPLE_KB, tmp_path, while_serving=misspelled_field)
    result = seen["run"]
    assert result.returncode == ExitCode.BAD_INPUT
    assert 'Cannot query field \\\\"serch\\\\"' in result.stderr or 'Cannot query field "serch"' in result.stderr, result.stderr
    assert "--hits-path" not in result.stderr.split("hint:")[0]


def test_every_recipe_block_the_tests_run_is_in_the_docs() -> None:
    names = set(engines.recipes())
    assert names == {
        "sqlite-fts5-index", "sqlite-fts5-search", "postgresql-index", "postgresql-serve", "postgresql-search",
        "xapian-index", "xapian-search", "qmd-mcp-stdio", "qmd-mcp-http", "basic-memory-mcp-stdio",
        "elasticsearch",  # the last one: tests/retrievers/test_elastic_spec.py
        "sqlite-fts5-both-sides",
    }
    assert all(block.strip() for block in engines.recipes().values())


def test_an_engine_that_indexes_the_golden_file_has_it_named(tmp_path: Path) -> None:
    # The recipe's search over an index of every file of the KB folder, the golden file among them
    # (what an engine pointed at the repository does): it quotes every query, so it comes back.
    if shutil.which("sqlite3") is None:
        engines.missing("the sqlite3 command (Debian's sqlite3)")
    kb = copy_kb(EXAMPLE_KB, tmp_path)
    environ = engines.recipe_environment(kb, tmp_path)
    index_all = engines.recipes()["sqlite-fts5-index"].replace("WHERE name LIKE '%.md'", "WHERE name LIKE '%.%'")
    assert index_all != engines.recipes()["sqlite-fts5-index"]
    subprocess.run(["bash", "-euo", "pipefail", "-c", index_all], env=environ, check=True, capture_output=True,
                   timeout=engines.STEP_TIMEOUT_S)
    result = engines.run_recipe("sqlite-fts5-search", environ)
    assert result.returncode == ExitCode.OK, result.stderr
    assert "kb-eval's own files as hits: golden file '.kb-eval.yml'" in result.stderr


def test_the_both_sides_recipe_answers_the_base_from_the_bases_own_index(tmp_path: Path) -> None:
    # The block of docs/pull-request-loop.md, as written, on a real pull request; the base's numbers
    # must be those of the same search run on `git archive` of the base commit.
    if shutil.which("sqlite3") is None:
        engines.missing("the sqlite3 command (Debian's sqlite3)")
    from tests.git.test_git_base import BASE_KB, REGRESSING_CHANGE, commit, new_repo
    from tests.sides.test_both_sides import archived, sqlite_flags

    repo = new_repo(tmp_path / "repo")
    commit(repo, BASE_KB, "base")
    commit(repo, REGRESSING_CHANGE, "the pull request")
    work = tmp_path / "work"
    work.mkdir()
    result = engines.run_recipe("sqlite-fts5-both-sides", engines.recipe_environment(repo / "kb", work))
    assert result.returncode == ExitCode.OK, result.stderr
    report = json.loads((work / "report.json").read_text())
    assert report["comparison"]["status"] == "compared"
    alone = subprocess.run(
        [str(Path(sys.executable).parent / "kb-eval"), "--kb-path", str(archived(repo, "HEAD~1", tmp_path / "a")),
         "--no-history", "--format", "json", *sqlite_flags()],
        capture_output=True, text=True, timeout=engines.STEP_TIMEOUT_S, check=False,
    )
    assert alone.returncode == ExitCode.OK, alone.stderr
    base = json.loads(alone.stdout)
    assert report["previous"]["aggregate"]["mrr"] == base["aggregate"]["mrr"]
    assert [q["top_k"] for q in report["previous"]["per_query"]] == [q["top_k"] for q in base["per_query"]]
    assert report["diff"]["mrr"] < 0  # the pull request's change is measured, not the head twice
