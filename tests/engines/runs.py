"""Each engine's recipe run on a knowledge base, beside the engine's own answers asked directly
(not through kb-eval): what tests/engines/test_recipes.py compares and score_table.py prints."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from scanner.golden.file import GoldenSet, find_golden, load_golden
from tests.support import engines, mcp_servers

LIMIT = 10
"""kb-eval's default limit, which the recipes keep."""

EXAMPLE_KB = Path(__file__).resolve().parents[2] / "examples" / "kb"


@dataclass(frozen=True)
class EngineRun:
    command: str
    """The kb-eval recipe block that ran."""
    result: subprocess.CompletedProcess[str]
    report: dict[str, object] | None
    direct: dict[str, list[str]]
    """Query id -> the engine's own ranking of document paths, asked without kb-eval."""
    golden: GoldenSet


def copy_kb(kb: Path, work: Path) -> Path:
    """A copy to run on: kb-eval writes its history into the KB folder."""
    target = work / "kb"
    shutil.copytree(kb, target, ignore=shutil.ignore_patterns(".kb-eval-history.json"))
    return target


def _finish(name: str, environ: Mapping[str, str], work: Path, kb: Path,
            direct: Callable[[str], list[str]], golden_file: Path | None = None,
            timeout_s: float = engines.STEP_TIMEOUT_S) -> EngineRun:
    golden = load_golden(find_golden(kb, golden_file))
    result = engines.run_recipe(name, environ, timeout_s)
    report_file = work / "report.json"
    report = json.loads(report_file.read_text()) if report_file.exists() else None
    answers = {query.id: direct(query.text) for query in golden.queries}
    return EngineRun(engines.recipes()[name], result, report, answers, golden)


def _checked(done: subprocess.CompletedProcess[str], what: str) -> None:
    if done.returncode != 0:
        raise AssertionError(f"{what} failed ({done.returncode}): {done.stderr[-2000:]}")


def sqlite_fts5(kb: Path, work: Path) -> EngineRun:
    if shutil.which("sqlite3") is None:
        engines.missing("the sqlite3 command (Debian's sqlite3)")
    kb = copy_kb(kb, work)
    environ = engines.recipe_environment(kb, work)
    _checked(engines.run_recipe("sqlite-fts5-index", environ), "sqlite-fts5-index")
    search_sql = (engines.RECIPES / "sqlite-fts5" / "search.sql").read_text()

    def direct(text: str) -> list[str]:
        # Python's own SQLite, the question bound as a parameter.
        with sqlite3.connect(work / "kb.db") as connection:
            connection.execute("CREATE TEMP TABLE q AS SELECT ? AS text, ? AS lim", (text, LIMIT))
            return [row[0] for row in connection.execute(search_sql)]

    return _finish("sqlite-fts5-search", environ, work, kb, direct)


def postgresql(
    kb: Path, work: Path, while_serving: Callable[[Mapping[str, str]], None] | None = None
) -> EngineRun:
    """`while_serving` is called with the recipes' environment while PostGraphile still serves."""
    if shutil.which("psql") is None:
        engines.missing("psql (Debian's postgresql-client)")
    bin_dir = engines.postgraphile_bin()
    kb = copy_kb(kb, work)
    with engines.postgres() as server:
        port = engines.free_port()
        environ = engines.recipe_environment(kb, work, PORT=str(port), **server.environment())
        environ["PATH"] = f"{environ['PATH']}:{bin_dir}"
        _checked(engines.run_recipe("postgresql-index", environ), "postgresql-index")
        probe = json.dumps({"query": "{ __typename }"}).encode()
        with engines.serving("postgresql-serve", environ, f"http://127.0.0.1:{port}/graphql", probe):

            def direct(text: str) -> list[str]:
                # PostgreSQL itself, through psql, the question bound as a variable.
                rows = engines.psql_rows(server, "SELECT path FROM search(:'q', :n);\n", {"q": text, "n": str(LIMIT)})
                return [row[0] for row in rows]

            run = _finish("postgresql-search", environ, work, kb, direct)
            if while_serving is not None:
                while_serving(environ)
            return run


def xapian(kb: Path, work: Path) -> EngineRun:
    engines.xapian_tools()
    kb = copy_kb(kb, work)
    environ = engines.recipe_environment(kb, work)
    _checked(engines.run_recipe("xapian-index", environ), "xapian-index")

    def direct(text: str) -> list[str]:
        return [path.removeprefix("/") for path in engines.quest_paths(work / "kb", text, LIMIT)]

    return _finish("xapian-search", environ, work, kb, direct)


def qmd_mcp(kb: Path, work: Path, recipe: str = "qmd-mcp-stdio") -> EngineRun:
    """qmd's MCP server (stdio, or Streamable HTTP with recipe `qmd-mcp-http`), beside qmd's own
    command line over an index of its own: `qmd search` is the same BM25 keyword search."""
    path = mcp_servers.qmd_path()
    kb = copy_kb(kb, work)
    environ = engines.recipe_environment(kb, work, HOME=str(mcp_servers.isolated_home(work)))
    environ["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), path])
    direct_index = str(work / "direct")
    _checked(subprocess.run(["qmd", "--index", direct_index, "collection", "add", str(kb), "--name", "kb"],
                            env=environ, capture_output=True, text=True, timeout=engines.STEP_TIMEOUT_S, check=False),
             "qmd collection add")

    def direct(text: str) -> list[str]:
        done = subprocess.run(["qmd", "--index", direct_index, "search", "--format", "json", "-n", str(LIMIT), text],
                              env=environ, capture_output=True, text=True, timeout=engines.STEP_TIMEOUT_S, check=False)
        _checked(done, "qmd search")
        # qmd://kb/guides/deploy.md?index=... on the command line; kb/guides/deploy.md over MCP.
        return [hit["file"].split("?")[0].removeprefix("qmd://kb/") for hit in json.loads(done.stdout or "[]")]

    return _finish(recipe, environ, work, kb, direct, engines.RECIPES / "qmd" / "keywords.yml")


BASIC_MEMORY_TIMEOUT_S = 600.0
"""A whole basic-memory recipe run: its index and its server's start take 30-60 s each on a CI machine
shared by several jobs (each of its programs loads a large import tree)."""


def basic_memory_mcp(kb: Path, work: Path) -> EngineRun:
    """basic-memory's MCP server over stdio (keyword search, SQLite FTS5), beside its own command
    line (`basic-memory tool search-notes`, the same tool called in process) over an index of its own,
    both run through the recipe's script so that they share its settings."""
    path = mcp_servers.basic_memory_path()
    kb = copy_kb(kb, work)
    environ = engines.recipe_environment(kb, work, HOME=str(mcp_servers.isolated_home(work)))
    environ["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), path])
    side = str(engines.RECIPES / "basic-memory" / "side")
    direct_work = work / "direct"
    direct_work.mkdir()
    # Its own index is built beside the recipe's run (each takes tens of seconds, on one core).
    indexing = subprocess.Popen([side, str(direct_work), "index", str(kb)], env=environ, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)
    texts = [query.text for query in load_golden(find_golden(kb, None)).queries]
    answers: dict[str, list[str]] = {}

    def direct(text: str) -> list[str]:
        if not answers:
            stdout, stderr = indexing.communicate(timeout=engines.STEP_TIMEOUT_S)
            _checked(subprocess.CompletedProcess(indexing.args, indexing.returncode, stdout, stderr),
                     "basic-memory project add")
            # Every golden query in one call: each program of basic-memory first spends ~10 s importing.
            done = subprocess.run([side, str(direct_work), "search", str(LIMIT)], env=environ, capture_output=True,
                                  text=True, input="".join(json.dumps(t) + "\n" for t in texts),
                                  timeout=engines.STEP_TIMEOUT_S, check=False)
            _checked(done, "basic-memory tool search-notes")
            lines = done.stdout.splitlines()
            assert len(lines) == len(texts), done.stdout[-2000:]
            answers.update((t, [hit["file_path"] for hit in json.loads(line)["results"]]) for t, line in zip(texts, lines))
        return answers[text]

    try:
        return _finish("basic-memory-mcp-stdio", environ, work, kb, direct, timeout_s=BASIC_MEMORY_TIMEOUT_S)
    finally:
        indexing.kill()
        indexing.wait()


ENGINES: dict[str, Callable[[Path, Path], EngineRun]] = {
    "SQLite FTS5 (sqlite3 command)": sqlite_fts5,
    "PostgreSQL full-text search (PostGraphile, HTTP)": postgresql,
    "Xapian (Omega)": xapian,
}

MCP_SERVERS: dict[str, Callable[[Path, Path], EngineRun]] = {
    "qmd (MCP over stdio)": qmd_mcp,
    "qmd (MCP over Streamable HTTP)": lambda kb, work: qmd_mcp(kb, work, "qmd-mcp-http"),
    "basic-memory (MCP over stdio)": basic_memory_mcp,
}
"""Asked with a golden file of their own (qmd: keywords.yml) or installed apart (basic-memory), so not
in the score table of ENGINES."""
