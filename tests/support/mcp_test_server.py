"""An MCP server built with the official SDK's MCPServer (FastMCP's successor), for the MCP retriever's
tests: a real server speaking the real protocol, whose failures are chosen by the query.

    python tests/support/mcp_test_server.py KB [--http PORT] [--tool NAME] [--structured]
                                              [--exit-at-start] [--silent]

Its `search` tool finds the KB's Markdown files whose text holds every word of the query (a plain
search over the folder it was started with, so a test can tell which KB a server answers from), and
answers `{"results": [{"path", "heading", "score"}]}` as JSON text (grooveseek's way), or as
`structuredContent` with --structured. Queries that start with `!` choose a failure:

    !is-error        the tool fails: a result with isError
    !rpc-error       a JSON-RPC error (-32602, with data)
    !exit            the server writes to stderr and exits with status 3
    !hang            the call never ends
    !error-result    {"results": [], "error": "index is not built"}, answered as a success
    !not-json        prose instead of JSON
    !absolute        the hit's path as an absolute path under the KB
    !kb              the folder the server was given, as the one hit's path
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

import anyio
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.shared.exceptions import MCPError


def search_folder(kb: Path, query: str, limit: int) -> list[dict[str, object]]:
    words = query.lower().split()
    hits: list[dict[str, object]] = []
    for path in sorted(kb.rglob("*.md")):
        text = path.read_text(encoding="utf-8")
        if words and all(word in text.lower() for word in words):
            heading = next((line.lstrip("#").strip() for line in text.splitlines() if line.startswith("#")), "")
            hits.append({"path": path.relative_to(kb).as_posix(), "heading": heading,
                         "score": float(sum(text.lower().count(word) for word in words))})
    hits.sort(key=lambda hit: -float(str(hit["score"])))
    return hits[:limit]


def answer(kb: Path, query: str, limit: int) -> dict[str, Any]:
    if query == "!is-error":
        raise ToolError("the index is locked by another process")
    if query == "!rpc-error":
        raise MCPError(-32602, "limit must be at most 50", {"limit": limit})
    if query == "!exit":
        print("fatal: the index file vanished", file=sys.stderr, flush=True)
        print("second line of the failure", file=sys.stderr, flush=True)
        os._exit(3)
    if query == "!error-result":
        return {"results": [], "error": "index is not built"}
    if query == "!kb":
        return {"results": [{"path": str(kb), "heading": "", "score": 0.0}]}
    if query == "!absolute":
        return {"results": [{"path": str(kb / "a.md"), "heading": "A", "score": 1.0}]}
    return {"results": search_folder(kb, query, limit)}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("kb", type=Path)
    parser.add_argument("--http", type=int, default=None)
    parser.add_argument("--tool", default="search")
    parser.add_argument("--structured", action="store_true")
    parser.add_argument("--exit-at-start", action="store_true")
    parser.add_argument("--silent", action="store_true")
    options = parser.parse_args()
    if options.exit_at_start:
        print(f"error: no such KB folder: {options.kb}", file=sys.stderr, flush=True)
        sys.exit(2)
    if options.silent:
        time.sleep(3600)
    app: MCPServer[Any] = MCPServer("kb-eval test server")
    kb = options.kb

    if options.structured:
        @app.tool(name=options.tool)
        async def search_structured(query: str, limit: int = 10) -> dict[str, Any]:
            """Search the KB's Markdown files."""
            if query == "!hang":
                await anyio.sleep(3600)
            return answer(kb, query, limit)
    else:
        @app.tool(name=options.tool, structured_output=False)
        async def search_text(query: str, limit: int = 10) -> str:
            """Search the KB's Markdown files."""
            if query == "!hang":
                await anyio.sleep(3600)
            if query == "!not-json":
                return "Found 2 notes about deployment."
            return json.dumps(answer(kb, query, limit))

    @app.tool()
    def read_note(path: str) -> str:
        """Read one note."""
        return (kb / path).read_text(encoding="utf-8")

    if options.http is not None:
        app.run("streamable-http", host="127.0.0.1", port=options.http)
    else:
        app.run()


if __name__ == "__main__":
    main()
