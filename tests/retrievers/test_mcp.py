"""The MCP retriever against servers built with the official SDK: in process for what a tool answers,
and as real processes (stdio, Streamable HTTP) for what only a process does: exit, hang, start from
`{kb}`, write to stderr."""

from __future__ import annotations

import json
import shlex
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from mcp.client._memory import InMemoryTransport
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.shared.exceptions import MCPError
from mcp_types import CallToolResult, TextContent

from scanner.foundation.errors import InputError
from scanner.retrievers.base import AnswerCost, Hit, SearchRequest
from scanner.retrievers.http_settings import HeaderSpec
from scanner.retrievers.mapping import ResponseMapping
from scanner.retrievers.mcp import McpRetriever
from scanner.retrievers.mcp_settings import McpSettings
from scanner.retrievers.templates import SideSlots
from tests.conftest import REPO

SERVER = f"{shlex.quote(sys.executable)} -m tests.support.mcp_test_server"
HIT = {"path": "a.md", "heading": "A", "score": 1.0}


def in_process(app: MCPServer[Any], **settings: Any) -> McpRetriever:
    mapping = settings.pop("mapping", ResponseMapping())
    return McpRetriever(McpSettings(**settings), mapping, env={}, transport=lambda: InMemoryTransport(app))


def ask(retriever: McpRetriever, *queries: str, limit: int = 5) -> list[list[Hit]]:
    return retriever.search_all([SearchRequest(f"q{n}", text, limit) for n, text in enumerate(queries, 1)])


def refusal(retriever: McpRetriever, *queries: str) -> InputError:
    with pytest.raises(InputError) as refused:
        ask(retriever, *queries)
    return refused.value


def text_server(answer: Callable[[str, int], str], name: str = "search") -> MCPServer[Any]:
    app: MCPServer[Any] = MCPServer("t")

    @app.tool(name=name, structured_output=False)
    def search(query: str, limit: int = 10) -> str:
        return answer(query, limit)

    return app


@pytest.fixture
def kb(tmp_path: Path) -> Path:
    folder = tmp_path / "kb with space"
    folder.mkdir()
    (folder / "deploy.md").write_text("# Rollback\nRolling back redeploys the previous image.\n", encoding="utf-8")
    (folder / "index.md").write_text("# Index\nThe search index is rebuilt nightly.\n", encoding="utf-8")
    return folder


# --- what a tool answers (in process) -----------------------------------------------------------


def test_the_text_of_a_tool_result_is_read_as_json_hits_in_order() -> None:
    app = text_server(lambda query, limit: '{"results": [{"path": "b.md", "heading": "B", "score": 2},'
                      ' {"path": "a.md", "score": 1}]}')
    assert ask(in_process(app), "x") == [[Hit(1, "b.md", "B", 2.0), Hit(2, "a.md", "", 1.0)]]


def test_the_arguments_template_sends_the_query_and_the_limit_as_a_number() -> None:
    seen: list[tuple[str, int]] = []

    def answer(query: str, limit: int) -> str:
        seen.append((query, limit))
        return '{"results": []}'

    ask(in_process(text_server(answer)), 'a "quoted" {limit} query', limit=7)
    assert seen == [('a "quoted" {limit} query', 7)]


def test_structured_content_is_read_before_the_text() -> None:
    app: MCPServer[Any] = MCPServer("t")

    @app.tool()
    def search(query: str, limit: int = 10) -> dict[str, Any]:
        return {"results": [HIT]}

    retriever = in_process(app)
    assert ask(retriever, "x") == [[Hit(1, "a.md", "A", 1.0)]]


def test_a_result_whose_structured_content_and_text_differ_is_read_from_the_structured_content() -> None:
    app: MCPServer[Any] = MCPServer("t")

    @app.tool()
    def search(query: str, limit: int = 10) -> CallToolResult:
        return CallToolResult(content=[TextContent(type="text", text="3 notes found")],
                              structured_content={"results": [HIT]})

    assert ask(in_process(app), "x") == [[Hit(1, "a.md", "A", 1.0)]]


def test_a_tool_error_is_refused_in_the_servers_words() -> None:
    def answer(query: str, limit: int) -> str:
        raise ToolError("the index is locked by another process")

    refused = refusal(in_process(text_server(answer)), "x")
    assert "the tool answered with an error (isError)" in refused.message
    assert "the index is locked by another process" in refused.message
    assert "query 'q1'" in refused.message


def test_a_json_rpc_error_is_refused_with_its_code_and_message() -> None:
    def answer(query: str, limit: int) -> str:
        raise MCPError(-32602, "limit must be at most 50")

    refused = refusal(in_process(text_server(answer)), "x")
    assert "JSON-RPC error -32602: 'limit must be at most 50'" in refused.message


def test_an_error_answered_as_a_success_is_an_error_not_zero_hits() -> None:
    refused = refusal(in_process(text_server(lambda q, n: '{"results": [], "error": "index is not built"}')), "x")
    assert "the service answered with an error: 'index is not built'" in refused.message
    said = '{"results": [], "status": "error", "message": "project main not found"}'
    refused = refusal(in_process(text_server(lambda q, n: said)), "x")
    assert "the service answered with an error: 'project main not found'" in refused.message


def test_empty_results_without_an_error_are_zero_hits() -> None:
    # The near miss of the refusal above: the same answer with no error, or a null one, is no hits.
    assert ask(in_process(text_server(lambda q, n: '{"results": [], "error": null}')), "x") == [[]]
    assert ask(in_process(text_server(lambda q, n: '{"results": []}')), "x") == [[]]


def test_a_tool_the_server_does_not_offer_is_refused_naming_the_ones_it_does() -> None:
    app = text_server(lambda q, n: "[]", name="search_notes")

    @app.tool()
    def read_note(path: str) -> str:
        return ""

    refused = refusal(in_process(app), "x")
    assert "the server offers no tool 'search'; it offers search_notes, read_note" in refused.message
    assert refused.hint is not None and "--mcp-tool" in refused.hint
    # The near miss: naming the tool it offers answers.
    assert ask(in_process(app, tool="search_notes"), "x") == [[]]


def test_arguments_the_tools_schema_requires_are_checked_before_any_call() -> None:
    calls: list[str] = []

    def answer(query: str, limit: int) -> str:
        calls.append(query)
        return '{"results": []}'

    refused = refusal(in_process(text_server(answer), arguments='{"q": "{query}"}'), "x")
    assert "requires 'query', which --mcp-arguments does not give" in refused.message
    assert refused.hint is not None and '{"query": "{query}"}' in refused.hint
    assert calls == []


def test_text_that_is_not_json_is_refused_with_its_start() -> None:
    refused = refusal(in_process(text_server(lambda q, n: "Found 2 notes about deployment.")), "x")
    assert "the tool's text is not JSON" in refused.message and "'Found 2 notes about deployment.'" in refused.message


def test_a_string_wrapped_by_the_python_sdk_is_read_as_the_json_it_holds() -> None:
    # MCPServer (like FastMCP) answers a tool returning str with structuredContent {"result": text}.
    app: MCPServer[Any] = MCPServer("t")

    @app.tool()
    def search(query: str, limit: int = 10) -> str:
        return '{"results": [{"path": "a.md", "heading": "A", "score": 1.0}]}'

    assert ask(in_process(app), "x") == [[Hit(1, "a.md", "A", 1.0)]]


def test_the_mapping_settings_apply_to_mcp_answers() -> None:
    app = text_server(lambda q, n: '{"data": {"notes": [{"file": {"path": "/srv/kb/a.md"}, "title": "A"}]}}')
    mapping = ResponseMapping(hits_path="data.notes", path_field="file.path", heading_field="title",
                              path_prefix_strip=("/srv/kb",))
    assert ask(in_process(app, mapping=mapping), "x") == [[Hit(1, "a.md", "A", None)]]


def test_each_query_has_its_latency_and_answer_size_recorded_in_request_order() -> None:
    def answer(query: str, limit: int) -> str:
        if query == "slow":
            time.sleep(0.2)
        return '{"results": [' + ",".join(['{"path": "a.md"}'] * limit) + "]}"

    retriever = in_process(text_server(answer), concurrency=2)
    retriever.search_all([SearchRequest("q1", "slow", 1), SearchRequest("q2", "fast", 40)])
    slow, fast = retriever.costs()
    # In request order whatever finished first (the sizes tell them apart); the slow one's time holds
    # its server's 0.2 s, a lower bound no busy machine can break.
    assert isinstance(slow, AnswerCost) and slow.bytes is not None and fast.bytes is not None
    assert slow.seconds >= 0.2
    # Forty hits answer with more bytes than one, by about 39 hits' worth of JSON.
    assert fast.bytes - slow.bytes >= 39 * len('{"path": "a.md"}')


def test_with_concurrency_the_first_failing_request_in_order_is_the_one_reported() -> None:
    def answer(query: str, limit: int) -> str:
        if query == "late failure":
            time.sleep(0.3)
            raise ToolError("first in order")
        if query == "early failure":
            raise ToolError("second in order")
        return '{"results": []}'

    refused = refusal(in_process(text_server(answer), concurrency=3), "ok", "late failure", "early failure")
    assert "first in order" in refused.message and "query 'q2'" in refused.message


# --- real processes: stdio ----------------------------------------------------------------------


SCRIPT = REPO / "tests" / "support" / "mcp_test_server.py"
SERVER = f"{shlex.quote(sys.executable)} {shlex.quote(str(SCRIPT))}"


def stdio(command: str, kb: Path, **settings: Any) -> McpRetriever:
    return McpRetriever(McpSettings(command=command, **settings), ResponseMapping(), env={"PATH": "/usr/bin:/bin"},
                        slots=SideSlots(kb, kb.parent))


def test_a_stdio_server_is_started_with_the_sides_kb_folder_and_answers_every_query_in_one_session(kb: Path) -> None:
    retriever = stdio(SERVER + " {kb}", kb)  # a space in the folder's name: still one argument
    lists = ask(retriever, "rolling back", "search index", "nothing matches this", "!kb")
    assert [[hit.path for hit in hits] for hits in lists] == [["deploy.md"], ["index.md"], [], [str(kb)]]
    assert len(retriever.costs()) == 4 and all((cost.bytes or 0) > 0 for cost in retriever.costs())
    # The fingerprint keeps the command as written: the same on both sides of a comparison.
    assert retriever.describe()["command"] == SERVER + " {kb}"


def test_a_server_that_exits_is_refused_with_its_stderr_as_lines(kb: Path) -> None:
    refused = refusal(stdio(SERVER + " {kb}", kb), "rolling back", "!exit")
    assert "query 'q2': the server exited or closed its output while answering" in refused.message
    assert refused.message.endswith("; its stderr ends with:")
    assert refused.said == ("fatal: the index file vanished", "second line of the failure")
    assert str(refused).count("\n  | ") == 2  # each on a line of its own, not one line of \n escapes


def test_a_server_that_exits_at_start_is_refused_with_its_words(kb: Path) -> None:
    refused = refusal(stdio(SERVER + " {kb} --exit-at-start", kb), "x")
    assert "the server exited or closed its output while starting the server" in refused.message
    assert f"error: no such KB folder: {kb}" in refused.said


def test_a_call_that_never_ends_is_refused_at_the_deadline(kb: Path) -> None:
    # Long enough for the server's start on a busy machine (the same deadline bounds it).
    retriever = stdio(SERVER + " {kb}", kb, timeout_s=8.0)
    started = time.monotonic()
    refused = refusal(retriever, "!hang")
    assert "query 'q1': no answer within 8 s while answering" in refused.message
    assert time.monotonic() - started < 2 * 8.0 + 15  # the start, the call, the bounded close


def test_a_server_that_never_answers_the_handshake_is_refused_at_the_deadline(kb: Path) -> None:
    retriever = stdio(SERVER + " {kb} --silent", kb, timeout_s=1.0)
    started = time.monotonic()
    refused = refusal(retriever, "x")
    assert "no answer within 1 s while starting the server and negotiating the protocol" in refused.message
    assert time.monotonic() - started < 1.0 + 15  # the start's second and the bounded close


def test_a_program_that_is_not_installed_is_refused_before_anything_starts(kb: Path) -> None:
    with pytest.raises(InputError, match="--mcp-command program 'no-such-mcp-server' is not found"):
        stdio("no-such-mcp-server --kb {kb}", kb)


def test_http_headers_with_a_stdio_server_are_refused(kb: Path) -> None:
    with pytest.raises(InputError, match="--http-header applies to --mcp-url"):
        stdio(SERVER, kb, headers=(HeaderSpec("Authorization", "Bearer x"),))


# --- real processes: Streamable HTTP ------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@contextmanager
def http_server(kb: Path, *extra: str) -> Iterator[str]:
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, str(SCRIPT), str(kb), "--http", str(port), *extra],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
                break
            except OSError:
                time.sleep(0.1)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        process.terminate()
        process.wait(timeout=10)


def test_a_streamable_http_server_answers_with_structured_content(kb: Path) -> None:
    with http_server(kb, "--structured") as url:
        retriever = McpRetriever(McpSettings(url=url), ResponseMapping(), env={})
        assert [[hit.path for hit in hits] for hits in ask(retriever, "rolling back", "search index")] == [
            ["deploy.md"], ["index.md"]]
        refused = refusal(McpRetriever(McpSettings(url=url), ResponseMapping(), env={}), "!error-result")
    assert "the service answered with an error: 'index is not built'" in refused.message


def test_a_url_nothing_listens_on_is_refused_naming_it() -> None:
    refused = refusal(McpRetriever(McpSettings(url=f"http://127.0.0.1:{free_port()}/mcp", timeout_s=5),
                                   ResponseMapping(), env={}), "x")
    assert refused.message.startswith("mcp http://127.0.0.1:")
    assert "could not talk to the server" in refused.message or "while connecting" in refused.message


# --- from the settings --------------------------------------------------------------------------


def test_the_mcp_settings_build_an_mcp_retriever_that_uses_them(kb: Path) -> None:
    from scanner.cli.main import parse_cli
    from scanner.search.index import Index
    from scanner.settings.retriever import build_retriever

    settings = parse_cli([
        "--kb-path", str(kb), "--mcp-command", SERVER + " {kb} --tool find_notes --structured",
        "--mcp-tool", "find_notes", "--mcp-arguments", '{"query": "{query}", "limit": {limit}}',
        "--mcp-timeout", "30", "--hits-path", "results", "--path-field", "path",
    ])
    retriever = build_retriever(settings, Index.build(()), [], folder=kb)
    try:
        lists = retriever.search_all([SearchRequest("q1", "rolling back", 5), SearchRequest("q2", "!kb", 5)])
        assert [[hit.path for hit in hits] for hits in lists] == [["deploy.md"], [str(kb)]]
        assert retriever.describe()["tool"] == "find_notes"
        assert retriever.describe()["command"] == SERVER + " {kb} --tool find_notes --structured"
    finally:
        retriever.close()


# --- grooveseek 1.0's answer, as its source writes it -------------------------------------------

GROOVESEEK = json.loads((REPO / "tests" / "fixtures" / "grooveseek" / "search-1.0.0.json").read_text(encoding="utf-8"))


def grooveseek_like(text: str) -> MCPServer[Any]:
    """A server whose `search` takes grooveseek's required and optional arguments and answers, as
    grooveseek's rmcp tool returning a String does, with one text block and no structuredContent."""
    app: MCPServer[Any] = MCPServer("grooveseek")

    @app.tool(name="search", structured_output=False)
    def search(query: str, limit: int | None = None, category: str | None = None, rerank: bool | None = None,
               path_globs: list[str] | None = None) -> str:
        return text

    return app


def test_grooveseek_1_0s_search_answer_is_read_by_the_default_mapping() -> None:
    assert GROOVESEEK["tool"]["required"] == ["query"] and "limit" in GROOVESEEK["tool"]["optional"]
    retriever = in_process(grooveseek_like(GROOVESEEK["answer_text"]))  # default tool, arguments and mapping
    assert ask(retriever, "rollback") == [[
        Hit(1, "guides/deploy.md", "Rollback", pytest.approx(0.032786883)),
        Hit(2, "guides/deploy.md", "", pytest.approx(0.016129032)),  # "heading": null, a chunk before any
        Hit(3, "notes/big export.md", "Images", pytest.approx(0.015873017)),
    ]]
    # The limit is kb-eval's: a longer answer is cut to it.
    assert [len(hits) for hits in ask(retriever, "rollback", limit=2)] == [2]


def test_grooveseeks_refusal_answered_as_a_success_is_an_error_in_its_words() -> None:
    refused = refusal(in_process(grooveseek_like(GROOVESEEK["error_text"])), "rollback")
    assert "the service answered with an error: 'Search failed: no such table: chunks. Try running " \
           "rebuild_index first.'" in refused.message


def test_an_answer_over_the_cap_is_refused_naming_its_size(monkeypatch: pytest.MonkeyPatch) -> None:
    import scanner.retrievers.mcp as mcp_module

    monkeypatch.setattr(mcp_module, "MAX_ANSWER_BYTES", 400)
    answer = '{"results": [' + ",".join(['{"path": "a.md"}'] * 30) + "]}"
    refused = refusal(in_process(text_server(lambda q, n: answer)), "x")
    assert "over the 400-byte cap" in refused.message
    # The near miss: an answer under the cap is read.
    assert len(ask(in_process(text_server(lambda q, n: '{"results": [{"path": "a.md"}]}')), "x")[0]) == 1


def test_a_bug_in_reading_an_answer_is_not_passed_off_as_the_servers_fault(monkeypatch: pytest.MonkeyPatch) -> None:
    import scanner.retrievers.mcp as mcp_module

    def broken(*_args: object) -> list[Hit]:
        raise KeyError("a bug of kb-eval's")

    monkeypatch.setattr(mcp_module, "map_response", broken)
    with pytest.raises(KeyError, match="a bug of kb-eval's"):
        ask(in_process(text_server(lambda q, n: '{"results": []}')), "x")


def test_a_stdio_server_gets_none_of_kb_evals_other_variables(kb: Path, tmp_path: Path) -> None:
    # The server is a shell one-liner: it prints its environment's names to stderr, then exits.
    script = tmp_path / "env-server.sh"
    script.write_text("#!/bin/sh\nenv | cut -d= -f1 | sort | tr '\\n' ' ' >&2\nexit 1\n", encoding="utf-8")
    script.chmod(0o755)
    environ = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "INPUT_GITHUB-TOKEN": "ghs_secret",
               "ACTIONS_RUNTIME_TOKEN": "t", "KB_TOKEN": "kb-secret"}
    retriever = McpRetriever(McpSettings(command=str(script), env_names=("KB_TOKEN",)), ResponseMapping(),
                             env=environ, slots=SideSlots(kb, tmp_path))
    said = " ".join(refusal(retriever, "x").said).split()
    assert "KB_TOKEN" in said and "PATH" in said and "HOME" in said
    assert "INPUT_GITHUB-TOKEN" not in said and "ACTIONS_RUNTIME_TOKEN" not in said


def test_the_header_reaches_an_http_server_and_its_401_names_the_header_setting() -> None:
    from tests.support.loopback_server import Received, Reply, running

    def refuse(_request: Received) -> Reply:
        return Reply(status=401, body={"error": "invalid_token"})

    with running(refuse) as server:
        retriever = McpRetriever(
            McpSettings(url=server.url + "/mcp", headers=(HeaderSpec("Authorization", "Bearer ${KB_TOKEN}"),),
                        timeout_s=10),
            ResponseMapping(), env={"KB_TOKEN": "tok-123456"},
        )
        refused = refusal(retriever, "x")
    assert server.received and server.received[0].headers["Authorization"] == "Bearer tok-123456"
    assert "HTTP 401 from the server: 'invalid_token'" in refused.message and refused.hint is not None and "--http-header" in refused.hint
    assert "tok-123456" not in str(refused)
    # The fingerprint names the header, never its value.
    assert retriever.describe()["header_names"] == ["Authorization"] and "tok-123456" not in str(retriever.describe())


def test_a_url_that_is_not_the_mcp_endpoint_is_refused_with_the_status_and_the_url_hint() -> None:
    from tests.support.loopback_server import Received, Reply, running

    def not_here(_request: Received) -> Reply:
        return Reply(status=404, body={"detail": "no route /search"})

    with running(not_here) as server:
        refused = refusal(McpRetriever(McpSettings(url=server.url + "/search", timeout_s=10), ResponseMapping(),
                                       env={}), "x")
    assert """HTTP 404 from the server: '{"detail": "no route /search"}'""" in refused.message
    assert refused.hint is not None and "--mcp-url" in refused.hint


def test_an_argument_a_closed_schema_does_not_take_is_named_with_the_ones_it_does() -> None:
    from mcp_types import Tool

    from scanner.retrievers.mcp import _arguments_problem

    closed = Tool(name="search", input_schema={"type": "object", "properties": {"q": {}, "k": {}},
                                               "required": ["q"], "additionalProperties": False})
    assert _arguments_problem(closed, {"q": "x", "limit": 5}) == "takes no 'limit' (it takes 'q', 'k')"
    assert _arguments_problem(closed, {"query": "x"}) == "requires 'q', which --mcp-arguments does not give"
    # The near misses: the names it takes, and an open schema that says nothing of others.
    assert _arguments_problem(closed, {"q": "x", "k": 5}) is None
    open_schema = Tool(name="search", input_schema={"type": "object", "properties": {"q": {}}, "required": ["q"]})
    assert _arguments_problem(open_schema, {"q": "x", "limit": 5}) is None


def test_a_list_wrapped_by_the_python_sdk_is_read_with_hits_path_result() -> None:
    app: MCPServer[Any] = MCPServer("t")

    @app.tool()
    def search(query: str, limit: int = 10) -> list[dict[str, Any]]:
        return [HIT]

    assert "(its keys are 'result')" in refusal(in_process(app), "x").message
    assert ask(in_process(app, mapping=ResponseMapping(hits_path="result")), "x") == [[Hit(1, "a.md", "A", 1.0)]]


def test_a_tool_listing_that_never_comes_is_refused_at_the_deadline_naming_the_step() -> None:
    import anyio

    class Stuck(MCPServer[Any]):
        async def list_tools(self) -> list[Any]:
            await anyio.sleep(3600)
            return []

    app = Stuck("stuck")
    refused = refusal(in_process(app, timeout_s=1.0), "x")
    assert "no answer within 1 s while listing the tools" in refused.message
