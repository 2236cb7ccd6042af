"""The MCP retriever's settings, as the flags and Action inputs give them: no protocol code here.

Kept apart from `mcp.py` so that reading the settings (every run does) does not import the MCP SDK
and what it brings (pydantic, anyio, httpx), which only a run that asks an MCP server needs.
"""

from __future__ import annotations

from dataclasses import dataclass

from scanner.retrievers.http_settings import HeaderSpec

DEFAULT_TOOL = "search"
DEFAULT_ARGUMENTS = '{"query": "{query}", "limit": {limit}}'
DEFAULT_TIMEOUT_S = 60.0
"""Each wait: the server's start and handshake, the tool listing, each tool call. A first call that
loads a model or builds an index takes seconds; a minute without an answer is a server that hangs."""


@dataclass(frozen=True, slots=True)
class McpSettings:
    """Everything `--mcp-*` says (with the shared `--http-header`, `--command-env`, `--concurrency`),
    before the side (`{kb}`, `{work}`, `{port}`) and `${ENV_NAME}` are filled in. Exactly one of `command` and `url` is set."""

    command: str | None = None
    """A server over stdio: the command line (split like a shell line, never run by one), `{kb}` in it
    filled once per side."""
    url: str | None = None
    """A server over Streamable HTTP: the MCP endpoint, e.g. `http://127.0.0.1:8000/mcp`; may hold
    `${ENV_NAME}`."""
    tool: str = DEFAULT_TOOL
    arguments: str = DEFAULT_ARGUMENTS
    """The tool's arguments: a JSON object template with `{query}` and `{limit}` (and the side's)."""
    headers: tuple[HeaderSpec, ...] = ()
    """Sent with every HTTP request to `url` (authorisation); refused with `command`."""
    timeout_s: float = DEFAULT_TIMEOUT_S
    concurrency: int = 1
    """Tool calls in flight at once, all in the one session."""
    env_names: tuple[str, ...] = ()
    """Variables passed from kb-eval's environment to the stdio server (with `url`, they are the index
    and serve commands' alone)."""
