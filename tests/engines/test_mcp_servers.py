"""The MCP retriever against real MCP servers that search a folder of Markdown, installed from npm
(qmd) or PyPI (basic-memory): what they answer when kb-eval is set up wrong, in their own words.
The recipes' scores are checked in test_recipes.py; here, each on both sides of a pull request."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from scanner.cli.main import execute
from scanner.foundation.errors import ExitCode, InputError
from scanner.retrievers.base import SearchRequest
from scanner.retrievers.mapping import ResponseMapping
from scanner.retrievers.mcp import McpRetriever
from scanner.retrievers.mcp_settings import McpSettings
from scanner.retrievers.templates import SideSlots
from tests.engines.runs import EXAMPLE_KB, EngineRun, copy_kb
from tests.support import mcp_servers

KEYWORDS = Path(__file__).resolve().parents[2] / "docs" / "recipes" / "qmd" / "keywords.yml"
REQUEST = SearchRequest("deploy", "**/deploy*", 10)
LEX = '{"searches": [{"type": "lex", "query": "{query}"}], "limit": {limit}, "rerank": false}'


@pytest.fixture
def qmd(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """examples/kb copied, with qmd and Node.js 22 first on PATH and HOME in the test's folder."""
    monkeypatch.setenv("PATH", mcp_servers.qmd_path())
    monkeypatch.setenv("HOME", str(mcp_servers.isolated_home(tmp_path)))
    return copy_kb(EXAMPLE_KB, tmp_path)


def qmd_run(kb: Path, *extra: str) -> list[str]:
    return ["--kb-path", str(kb), "--golden", str(KEYWORDS), "--no-history", "--score-level", "document",
            "--index-command", "qmd --index {work}/qmd collection add {kb} --name kb",
            "--mcp-command", "qmd --index {work}/qmd mcp", "--path-field", "file", "--path-prefix-strip", "kb/",
            *extra]


def test_qmd_asked_for_a_tool_it_does_not_offer_is_exit_2_naming_the_tools_it_does(qmd: Path) -> None:
    result = execute(qmd_run(qmd, "--mcp-arguments", LEX))  # the default tool, `search`
    assert result.exit_code == ExitCode.BAD_INPUT, result.stderr_text
    assert "the server offers no tool 'search'; it offers query, get, multi_get, status" in result.stderr_text
    # The near miss: its search tool answers, and every query is measured.
    result = execute(qmd_run(qmd, "--mcp-tool", "query", "--mcp-arguments", LEX, "--format", "json"))
    assert result.exit_code == ExitCode.OK, result.stderr_text
    report = json.loads(result.stdout_text)
    assert any(row["top_k"] for row in report["per_query"])


def test_qmd_given_an_argument_its_schema_refuses_answers_with_its_own_error(qmd: Path) -> None:
    # `searches` items need a type of lex, vec or hyde: qmd's validation error reaches the user.
    bad = '{"searches": [{"type": "keyword", "query": "{query}"}], "limit": {limit}}'
    result = execute(qmd_run(qmd, "--mcp-tool", "query", "--mcp-arguments", bad))
    assert result.exit_code == ExitCode.BAD_INPUT, result.stderr_text
    assert "query 'rollback-migration'" in result.stderr_text
    assert "keyword" in result.stderr_text or "lex" in result.stderr_text


def test_a_server_of_the_protocol_before_2026_is_reached_through_the_initialize_handshake(tmp_path: Path) -> None:
    # The reference filesystem server (TypeScript SDK 1.x) answers `server/discover` with "method not
    # found"; the SDK falls back to `initialize`, and the session lists its tools and calls one.
    kb = copy_kb(EXAMPLE_KB, tmp_path)
    server = mcp_servers.filesystem_server()
    settings = McpSettings(command=f"{server} {{kb}}", timeout_s=60)
    with pytest.raises(InputError) as refused:
        McpRetriever(settings, ResponseMapping(), slots=SideSlots(kb, tmp_path)).search_all([REQUEST])
    assert "the server offers no tool 'search'; it offers " in refused.value.message
    assert "search_files" in refused.value.message
    # Its search_files answers (structuredContent {"content": "<paths>"}): not a hit list, and the
    # refusal names what the answer holds.
    settings = McpSettings(command=f"{server} {{kb}}", tool="search_files",
                           arguments='{"path": "{kb}", "pattern": "{query}"}', timeout_s=60)
    with pytest.raises(InputError) as refused:
        McpRetriever(settings, ResponseMapping(), slots=SideSlots(kb, tmp_path)).search_all([REQUEST])
    assert "is neither a JSON list nor an object with 'results' (its keys are 'content')" in refused.value.message
    assert any("Secure MCP Filesystem Server" in line for line in refused.value.said)  # its stderr, as lines


# --- both sides of a pull request ---------------------------------------------------------------


def git(repo: Path, *argv: str) -> str:
    done = subprocess.run(["git", "-C", str(repo), "-c", "user.email=kb-eval@example.invalid", "-c", "user.name=kb-eval",
                           *argv], capture_output=True, text=True, timeout=60, check=True)
    return done.stdout.strip()


def pull_request_repo(tmp_path: Path, kb: Path, edit: Callable[[Path], None]) -> tuple[Path, str]:
    """A repository holding `kb` at `repo/kb` as its base commit, and the head commit `edit` makes
    of it (given `repo/kb`); the base commit's id."""
    if shutil.which("git") is None:
        pytest.skip("git is not installed (.ci/run installs it)")
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q")
    copy_kb(kb, repo)
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "base")
    base = git(repo, "rev-parse", "HEAD")
    edit(repo / "kb")
    git(repo, "commit", "-qam", "head")
    return repo, base


ALONE_TIMEOUT_S = 600.0
"""The base evaluated alone, after the pull request's run (basic-memory: an index and a server, 30-60 s
each on a shared CI machine)."""


def pull_request_and_base_alone(
    repo: Path, base: str, settings: list[str], tmp_path: Path,
    alone_elsewhere: Callable[[], dict[str, Any]] | None = None,
) -> tuple[dict[str, Any], dict[str, Any]]:
    """The pull request's report, and the report of its base evaluated alone with the same search
    (`alone_elsewhere`'s, asked while the pull request's run goes on in its own process, or a run
    of `git archive` of the base beside it); checked to agree on the base's means and rankings."""
    kb_eval = str(Path(sys.executable).parent / "kb-eval")
    running = [subprocess.Popen([kb_eval, "--kb-path", "kb", "--baseline-ref", base, *settings], cwd=repo,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)]
    try:
        if alone_elsewhere is None:
            archive = tmp_path / "archive"
            archive.mkdir()
            tar = subprocess.run(["git", "-C", str(repo), "archive", base], capture_output=True, timeout=60, check=True)
            subprocess.run(["tar", "-x", "-C", str(archive)], input=tar.stdout, timeout=60, check=True)
            # The base alone in a process of its own beside the pull request's run.
            running.append(subprocess.Popen([kb_eval, "--kb-path", str(archive / "kb"), *settings], cwd=tmp_path,
                                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
        else:
            independent = alone_elsewhere()
        (stdout, stderr), *alone = [process.communicate(timeout=ALONE_TIMEOUT_S) for process in running]
    finally:
        for process in running:
            process.kill()
            process.wait()
    assert running[0].returncode == ExitCode.OK, stderr
    report: dict[str, Any] = json.loads(stdout)
    assert report["comparison"]["status"] == "compared"
    if alone:
        assert running[1].returncode == ExitCode.OK, alone[0][1]
        independent = json.loads(alone[0][0])
    # The base's record keeps the means (its confidence intervals are the head's alone to show).
    base_means = report["previous"]["aggregate"]
    assert base_means == {key: value for key, value in independent["aggregate"].items() if key in base_means}
    assert {"mrr", "recall_at_k", "ndcg_at_k"} <= set(base_means)
    assert [row["top_k"] for row in report["previous"]["per_query"]] == [row["top_k"] for row in independent["per_query"]]
    # The near miss: the head answered from its own index, so what it changed is found at the base only.
    assert report["aggregate"]["mrr"] < independent["aggregate"]["mrr"]
    return report, independent


def laptop_hits(report: dict[str, Any]) -> list[dict[str, Any]]:
    hits: list[dict[str, Any]] = {row["id"]: row["top_k"] for row in report["per_query"]}["laptop"]
    return hits


SERVED = {
    "stdio": ["--mcp-command", "qmd --index {work}/qmd mcp"],
    "streamable-http": ["--serve-command", "qmd --index {work}/qmd mcp --http --host 127.0.0.1 --port {port}",
                        "--mcp-url", "http://127.0.0.1:{port}/mcp"],
}


@pytest.mark.parametrize("transport", [
    "stdio", pytest.param("streamable-http", marks=pytest.mark.slow),  # a server per side: the slow twin
])
def test_qmd_on_both_sides_of_a_pull_request_scores_the_base_as_a_run_on_git_archive_of_it(
    transport: str, qmd: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def rename_laptop(kb: Path) -> None:
        # The pull request renames a word the golden file asks for: the head's index no longer finds it.
        onboarding = kb / "guides" / "onboarding.md"
        onboarding.write_text(re.sub("[Ll]aptop", "workstation", onboarding.read_text(encoding="utf-8")), encoding="utf-8")

    shutil.copyfile(KEYWORDS, qmd / ".kb-eval.yml")
    repo, base = pull_request_repo(tmp_path, qmd, rename_laptop)
    settings = ["--no-history", "--score-level", "document", "--format", "json",
                "--index-command", "qmd --index {work}/qmd collection add {kb} --name kb",
                *SERVED[transport], "--mcp-tool", "query", "--mcp-arguments", LEX,
                "--path-field", "file", "--path-prefix-strip", "kb/"]
    report, independent = pull_request_and_base_alone(repo, base, settings, tmp_path)
    assert laptop_hits(report) == [] and laptop_hits(independent)


BASIC_MEMORY_SIDE = Path(__file__).resolve().parents[2] / "docs" / "recipes" / "basic-memory" / "side"


@pytest.mark.slow  # basic-memory indexes and servers: minutes on a shared machine
def test_basic_memory_on_both_sides_of_a_pull_request_scores_the_base_as_a_run_on_git_archive_of_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest
) -> None:
    monkeypatch.setenv("PATH", mcp_servers.basic_memory_path())
    monkeypatch.setenv("HOME", str(mcp_servers.isolated_home(tmp_path)))

    def reword_onboarding(kb: Path) -> None:
        # The pull request rewrites the note the laptop question asks for in none of its words
        # (basic-memory finds notes holding some of them): the head's index no longer finds it.
        (kb / "guides" / "onboarding.md").write_text("# Onboarding\n\nAsk your lead for access on day one.\n")

    repo, base = pull_request_repo(tmp_path, EXAMPLE_KB, reword_onboarding)
    settings = ["--no-history", "--score-level", "document", "--format", "json",
                "--index-command", f"{BASIC_MEMORY_SIDE} {{work}} index {{kb}}",
                "--mcp-command", f"{BASIC_MEMORY_SIDE} {{work}} mcp", "--mcp-tool", "search_notes",
                "--mcp-arguments",
                '{"query": "{query}", "page_size": {limit}, "search_type": "text", "output_format": "json"}',
                "--hits-path", "result.results", "--path-field", "file_path"]
    # The base is the example KB as committed: its run alone is the recipe's run on the example
    # (the same settings, the recipe's report), made once for this test and the recipe's, while
    # the pull request's run goes on beside it.
    def recipes_report() -> dict[str, Any]:
        run: EngineRun = request.getfixturevalue("basic_memory_on_the_example")
        assert run.report is not None, run.result.stderr
        return dict(run.report)

    report, independent = pull_request_and_base_alone(repo, base, settings, tmp_path, recipes_report)
    # basic-memory rewrites the notes it indexes; the recipe gives it a copy, so the checkout is untouched.
    assert git(repo, "status", "--porcelain") == ""
    assert [hit["path"] for hit in laptop_hits(independent)][:1] == ["guides/onboarding.md"]
    assert "guides/onboarding.md" not in [hit["path"] for hit in laptop_hits(report)]
