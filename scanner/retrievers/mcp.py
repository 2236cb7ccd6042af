"""Answering golden queries with a search tool of an MCP server, over stdio or Streamable HTTP.

One session per `search_all` (one side of a run): the server is started (stdio) or reached (HTTP),
the protocol version negotiated by the official SDK (`server/discover`, falling back to the
`initialize` handshake for servers before 2026-07-28), the tool looked up in `tools/list`, every
query sent as one `tools/call`, and the session closed (a stdio server and its children stopped)
whatever happens. The answer is the tool result's `structuredContent`, else its text parsed as
JSON, read by the same mapping as an HTTP answer (mapping.py).

The SDK is asynchronous; each `search_all` runs it in one `anyio.run`, and every wait has a
deadline: the start and handshake, the tool listing, each call, and the close. What goes wrong is an
InputError in the server's own words: a tool error (`isError`), a JSON-RPC error, a server that exits
or never answers, a tool the server does not offer (with the ones it does), an error answered as a
result (`{"results": [], "error": "..."}`); the end of the server's stderr comes with it.
"""

from __future__ import annotations

import contextvars
import logging
import math
import os
import shlex
import shutil
import tempfile
import time
import urllib.parse
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from typing import Any, TextIO, cast

import anyio
import httpx2
import mcp_types
import pydantic
from mcp import Client
from mcp.client import Transport
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from scanner.foundation.errors import InputError
from scanner.foundation.strict_json import NotJson, loads_strict
from scanner.retrievers.base import AnswerCost, AnswerNote, Hit, RetrieverKind, SearchRequest
from scanner.retrievers.command import command_environment
from scanner.retrievers.http_settings import DEFAULT_MAX_RESPONSE_BYTES
from scanner.retrievers.mapping import (
    SERVICE_WORDS_CHARS,
    ErrorContext,
    Notes,
    ResponseMapping,
    map_response,
    redact_url,
    scrub_and_cut,
    service_error_words,
)
from scanner.retrievers.mcp_settings import McpSettings
from scanner.retrievers.templates import (
    SideSlots,
    fill_side,
    fill_side_in_json,
    parse_json_template,
    render_json_template,
    resolve_env,
    resolve_env_in_json,
)

CLOSE_GRACE_S = 10.0
"""The close of a session: the SDK closes a stdio server's input, waits 2 s, sends SIGTERM, waits
2 s, then SIGKILLs its process tree; an HTTP session sends one DELETE. Past this it is abandoned."""
TOOL_PAGES_CAP = 100
"""`tools/list` pages read at most: a server whose cursor never ends cannot hang the run."""
TOOLS_SHOWN = 30
"""Tool names listed when the asked-for one is missing; a server with hundreds is cut."""
STDERR_TAIL_BYTES = 2048
"""Enough for a traceback's last frames and the error line, short enough for a CI log."""
SNIPPET_CHARS = 200
SNIPPET_BYTES = 64 * 1024
"""Of an HTTP error's body, read for the service's words in it."""
_SDK_HTTP_STAND_INS = frozenset({"Server returned an error response", "Not Found", "Session terminated"})
"""The messages the SDK's Streamable HTTP client puts in place of an HTTP error status (mcp 2.3)."""
CLIENT_NAME = "kb-eval"
MAX_ANSWER_BYTES = DEFAULT_MAX_RESPONSE_BYTES
"""The HTTP retriever's cap: a search answer of `limit` hits is kilobytes; megabytes mean another tool
or whole documents. Checked once the SDK has the result (it reads a message whole)."""

_SDK_LOG: contextvars.ContextVar[list[str] | None] = contextvars.ContextVar("kb_eval_mcp_log", default=None)
"""What the SDK logged during the current session (a line the server printed that is not JSON-RPC)."""


class McpRetriever:
    """Sends each golden query as one call of one tool, in one session per `search_all`."""

    kind = RetrieverKind.MCP

    @property
    def path_prefixes(self) -> tuple[str, ...]:
        return self._mapping.shown_prefixes()

    def __init__(
        self, settings: McpSettings, mapping: ResponseMapping, env: Mapping[str, str] | None = None,
        slots: SideSlots | None = None, transport: Callable[[], Transport] | None = None,
    ) -> None:
        """`slots`: the side this retriever answers for, filled into the command, the URL and the
        arguments (`{kb}`, `{work}`, `{port}`); None leaves them as written. `transport`, for tests
        only: a factory of the transport to an in-process server, used instead of `command` and `url`
        (both then None)."""
        environ = os.environ if env is None else env
        self._settings = settings
        self._mapping = mapping
        self._secrets: list[str] = []
        self._transport = transport
        if transport is not None:
            if settings.command is not None or settings.url is not None:
                raise ValueError("an in-process transport replaces command and url")
        elif (settings.command is None) == (settings.url is None):
            raise InputError(
                "give --mcp-command or --mcp-url, not both", field="--mcp-command",
                hint="--mcp-command starts a server over stdio; --mcp-url reaches a running one",
            )
        if not settings.tool.strip():
            raise InputError("--mcp-tool is empty", field="--mcp-tool", hint="e.g. --mcp-tool search")
        if not settings.timeout_s > 0:
            raise InputError("--mcp-timeout must be more than 0", field="--mcp-timeout")
        template = parse_json_template(settings.arguments, "--mcp-arguments")
        if not isinstance(template, dict):
            raise InputError(
                "--mcp-arguments must be a JSON object (a tool's arguments are named)",
                field="--mcp-arguments", hint='e.g. {"query": "{query}", "limit": {limit}}',
            )
        self._arguments_for_describe = template
        if slots is not None:
            template = fill_side_in_json(template, slots, "--mcp-arguments")
        self._arguments, used = resolve_env_in_json(template, environ, "--mcp-arguments")
        self._secrets.extend(used)
        self._argv: list[str] = []
        self._environment: dict[str, str] = {}
        self._url = ""
        self._headers: dict[str, str] = {}
        if transport is not None:
            self._source = "mcp server (in process)"
        elif settings.command is not None:
            if settings.headers:
                raise InputError(
                    "--http-header applies to --mcp-url, not to a server started with --mcp-command",
                    field="--http-header", hint="pass a stdio server its secrets with --command-env NAME",
                )
            self._start_stdio(settings.command, settings.env_names, environ, slots)
            # As written, {kb} and all: the same words on both sides, and no local folder in a log.
            shown = settings.command if len(settings.command) <= 60 else settings.command[:57] + "..."
            self._source = f"mcp server {shown!r}"
        else:
            assert settings.url is not None  # exactly one of command and url, checked above
            # --command-env is left to the index and serve commands (sides.py): a server reached by
            # URL gets nothing of kb-eval's environment from here.
            self._reach_http(fill_side(settings.url, slots, "--mcp-url") if slots is not None else settings.url, environ)
            self._source = f"mcp {redact_url(settings.url)}"
        self._secrets = sorted({secret for secret in self._secrets if len(secret) >= 4}, key=len, reverse=True)
        self._notes = Notes()
        self._costs: tuple[AnswerCost, ...] = ()
        _capture_sdk_logging()

    # -- the retriever interface ------------------------------------------------------------------

    def describe(self) -> dict[str, object]:
        """The command line with `{kb}` as written (the base's and the head's runs are comparable),
        the URL redacted, header names only."""
        return {
            "name": self.kind.value,
            "command": self._settings.command,
            "url": None if self._settings.url is None else redact_url(self._settings.url),
            "tool": self._settings.tool,
            "arguments": self._arguments_for_describe,
            "header_names": sorted({spec.name for spec in self._settings.headers}),
            "mapping": self._mapping.describe(),
        }

    def notes(self) -> tuple[AnswerNote, ...]:
        return self._notes.items()

    def costs(self) -> tuple[AnswerCost, ...]:
        """Per request of the last `search_all`, in its order (empty when it failed)."""
        return self._costs

    def close(self) -> None:
        """Nothing is held between calls: each `search_all` closes its own session."""

    def search_all(self, requests: Sequence[SearchRequest]) -> list[list[Hit]]:
        self._notes = Notes()
        self._costs = ()
        if not requests:
            return []
        with cast(TextIO, tempfile.TemporaryFile("w+", encoding="utf-8", errors="replace")) as stderr:
            log: list[str] = []
            token = _SDK_LOG.set(log)
            try:
                session = _Session(self, requests, stderr)
                anyio.run(session.run)
            finally:
                _SDK_LOG.reset(token)
            if session.bug is not None:
                raise session.bug
            if session.refusal is not None:
                raise self._with_server_words(session.refusal, stderr, log)
        answers = session.answers
        self._costs = tuple(cost for _hits, cost in answers)
        return [hits for hits, _cost in answers]

    # -- settings -----------------------------------------------------------------------------------

    def _start_stdio(
        self, command: str, env_names: Sequence[str], environ: Mapping[str, str], slots: SideSlots | None,
    ) -> None:
        try:
            argv = shlex.split(command)
        except ValueError as exc:  # unbalanced quotes
            raise InputError(
                f"--mcp-command cannot be split into arguments: {exc}", field="--mcp-command",
                hint="balance the quotes; the command is split like a shell line but never run by a shell",
            ) from None
        if not argv:
            raise InputError("--mcp-command is empty", field="--mcp-command")
        # The side inside each argument after the split: a folder with spaces stays one argument.
        if slots is not None:
            argv = [fill_side(argument, slots, "--mcp-command") for argument in argv]
        self._environment = command_environment(env_names, environ)
        self._secrets.extend(self._environment[name] for name in env_names if name in self._environment)
        program = shutil.which(argv[0], path=self._environment.get("PATH"))
        if program is None:
            raise InputError(
                f"--mcp-command program {argv[0]!r} is not found or not executable", field="--mcp-command",
                hint="install the server, or give its full path",
            )
        self._argv = [program, *argv[1:]]

    def _reach_http(self, template: str, environ: Mapping[str, str]) -> None:
        url, used = resolve_env(template, environ, "--mcp-url")
        self._secrets.extend(used)
        parts = urllib.parse.urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise InputError(
                f"--mcp-url must be an http:// or https:// URL, got {redact_url(template)!r}", field="--mcp-url",
                hint="e.g. --mcp-url http://127.0.0.1:8000/mcp",
            )
        if parts.username is not None or parts.password is not None:
            raise InputError(
                "--mcp-url carries a user or password", field="--mcp-url",
                hint="send credentials as a header: --http-header 'Authorization: Bearer ${KB_TOKEN}'",
            )
        self._secrets.extend(value for _name, value in urllib.parse.parse_qsl(parts.query, keep_blank_values=True))
        for spec in self._settings.headers:
            value, used = resolve_env(spec.value_template, environ, f"--http-header {spec.name}")
            self._secrets.extend([*used, value])
            self._headers[spec.name] = value
        self._url = url

    # -- the server's words -------------------------------------------------------------------------

    def refuse(self, message: str, hint: str, query_id: str | None = None) -> InputError:
        where = self._source if query_id is None else f"{self._source}: query {query_id!r}"
        return InputError(f"{where}: {self._scrub(message)}", hint=hint)

    def context(self) -> ErrorContext:
        return ErrorContext(self._source, secrets=tuple(self._secrets), notes=self._notes)

    def snippet(self, text: str) -> str:
        return repr(scrub_and_cut(text, self._secrets, SNIPPET_CHARS)) + ("..." if len(text) > SNIPPET_CHARS else "")

    def words(self, text: str) -> str:
        return scrub_and_cut(text, self._secrets, SERVICE_WORDS_CHARS)

    def _scrub(self, text: str) -> str:
        return scrub_and_cut(text, self._secrets, len(text))

    def _with_server_words(self, refusal: InputError, stderr: TextIO, log: Sequence[str]) -> InputError:
        """The refusal with what the client library logged (one line) and the end of a stdio server's
        stderr, each of its lines shown on a line of its own."""
        message = refusal.message
        if log:
            message += f"; the MCP client said: {self._scrub(log[-1])}"
        said: tuple[str, ...] = ()
        tail = self._stderr_tail(stderr) if self._settings.command is not None else None
        if tail is not None:
            message += "; its stderr ends with:"
            said = tuple(tail.splitlines())
        return InputError(message, refusal.file, refusal.line, refusal.field, refusal.hint, said=(*refusal.said, *said))

    def _stderr_tail(self, stderr: TextIO) -> str | None:
        stderr.flush()
        stderr.seek(0, os.SEEK_END)
        size = stderr.tell()
        # A text file seeks to opaque cookies; the tail is read through the binary buffer instead.
        raw = stderr.buffer if hasattr(stderr, "buffer") else None
        if raw is None:  # pragma: no cover - TemporaryFile in text mode always has one
            return "(stderr not readable)"
        raw.seek(max(0, size - STDERR_TAIL_BYTES))
        text = raw.read().decode("utf-8", errors="replace").rstrip()
        if not text:
            return None
        longest = max((len(secret) for secret in self._secrets), default=0)
        truncated = size > STDERR_TAIL_BYTES
        keep = len(text) - longest if truncated and longest else len(text)
        return ("..." if truncated else "") + scrub_and_cut(text, self._secrets, keep, keep_end=True)


class _Session:
    """One conversation with the server: start, list, ask every request, close.

    Failures are recorded, not raised, inside the SDK's task groups (they would come out wrapped in
    exception groups); `refusal` is the first, by request order for the calls."""

    def __init__(self, owner: McpRetriever, requests: Sequence[SearchRequest], stderr: TextIO) -> None:
        self._owner = owner
        self._settings = owner._settings
        self._requests = requests
        self._stderr = stderr
        self.answers: list[tuple[list[Hit], AnswerCost]] = []
        self.refusal: InputError | None = None
        self.bug: BaseException | None = None
        self._http_error: tuple[int, bytes] | None = None
        """The last HTTP error answer's status and the start of its body (Streamable HTTP)."""
        """An exception of kb-eval's own reading of an answer: re-raised after the session closes,
        so that a bug is exit 3, never passed off as the server's fault."""
        self._stage = (
            "starting the server and negotiating the protocol" if owner._settings.url is None
            else "connecting and negotiating the protocol"
        )

    async def run(self) -> None:
        timeout = self._settings.timeout_s
        results: list[tuple[list[Hit], AnswerCost] | None] = [None] * len(self._requests)
        failures: dict[int, InputError] = {}
        # One scope around the session's whole life: its deadline is moved before each step that
        # could wait (start, close). The calls have their own deadlines inside it.
        with anyio.CancelScope() as scope:
            scope.deadline = anyio.current_time() + timeout
            try:
                async with self._client() as client:
                    scope.deadline = math.inf
                    try:
                        await self._converse(client, results, failures)
                        self._stage = "closing the session"
                    finally:
                        # However the conversation ended, closing it has its own deadline.
                        scope.deadline = anyio.current_time() + CLOSE_GRACE_S
            except Exception as exc:  # noqa: BLE001 - every failure of the SDK or server is translated
                if self.refusal is None and not failures:
                    self.refusal = self._translate(exc, None)
        if scope.cancelled_caught and self.refusal is None and not failures:
            self.refusal = self._owner.refuse(
                f"no answer within {timeout:g} s while {self._stage}",
                "raise --mcp-timeout, or check that the server starts with this command and speaks MCP on stdout"
                if self._settings.command is not None else
                "raise --mcp-timeout, or check that --mcp-url is the server's MCP endpoint",
            )
        if failures:
            self.refusal = failures[min(failures)]
            return
        if self.refusal is None:
            self.answers = [answer for answer in results if answer is not None]

    async def _converse(
        self, client: Client, results: list[tuple[list[Hit], AnswerCost] | None], failures: dict[int, InputError],
    ) -> None:
        timeout = self._settings.timeout_s
        self._stage = "listing the tools"
        with anyio.fail_after(timeout):
            offered = await _list_tools(client)
        if self._check_tool(offered) is None:
            return
        limiter = anyio.CapacityLimiter(self._settings.concurrency)
        async with anyio.create_task_group() as group:
            for index, request in enumerate(self._requests):
                group.start_soon(self._ask, client, limiter, index, request, results, failures)

    @asynccontextmanager
    async def _client(self) -> AsyncIterator[Client]:
        owner = self._owner
        transport: Any
        info = mcp_types.Implementation(name=CLIENT_NAME, version=_version())
        if owner._transport is not None:
            async with Client(
                owner._transport(), read_timeout_seconds=self._settings.timeout_s, cache=None, client_info=info,
            ) as client:
                yield client
            return
        if self._settings.command is not None:
            parameters = StdioServerParameters(
                command=owner._argv[0], args=owner._argv[1:], env=owner._environment,
            )
            transport = stdio_client(parameters, errlog=self._stderr)
            async with Client(
                transport, read_timeout_seconds=self._settings.timeout_s, cache=None,
                client_info=info,
            ) as client:
                yield client
            return
        async with httpx2.AsyncClient(
            headers=owner._headers, timeout=httpx2.Timeout(self._settings.timeout_s),
            event_hooks={"response": [self._note_http_error]},
        ) as http:
            transport = streamable_http_client(owner._url, http_client=http)
            async with Client(
                transport, read_timeout_seconds=self._settings.timeout_s, cache=None,
                client_info=info,
            ) as client:
                yield client

    async def _note_http_error(self, response: httpx2.Response) -> None:
        """The status and body of an HTTP error answer, which the SDK replaces with a JSON-RPC
        stand-in ("Server returned an error response"): kept to show in the server's words. The
        body is read here (an error body is small; the SDK reads the cached copy after)."""
        if response.status_code < 400:
            return
        try:
            body = await response.aread()
        except httpx2.HTTPError:
            body = b""
        self._http_error = (response.status_code, body[:SNIPPET_BYTES])

    def _check_tool(self, offered: Sequence[mcp_types.Tool]) -> mcp_types.Tool | None:
        wanted = self._settings.tool
        for tool in offered:
            if tool.name == wanted:
                problem = _arguments_problem(tool, self._owner._arguments)
                if problem is not None:
                    self.refusal = self._owner.refuse(
                        f"the tool {wanted!r} {problem}",
                        "write --mcp-arguments with the tool's own argument names, e.g. "
                        + _example_arguments(tool),
                    )
                    return None
                return tool
        names = [tool.name for tool in offered]
        shown = ", ".join(names[:TOOLS_SHOWN]) + (f" and {len(names) - TOOLS_SHOWN} more" if len(names) > TOOLS_SHOWN else "")
        self.refusal = self._owner.refuse(
            f"the server offers no tool {wanted!r}; it offers {shown or 'no tools at all'}",
            "set --mcp-tool to the server's search tool",
        )
        return None

    async def _ask(
        self, client: Client, limiter: anyio.CapacityLimiter, index: int, request: SearchRequest,
        results: list[tuple[list[Hit], AnswerCost] | None], failures: dict[int, InputError],
    ) -> None:
        async with limiter:
            if failures:
                return  # an earlier request failed: the run stops, the rest is not asked
            arguments = render_json_template(self._owner._arguments, request.text, request.limit)
            assert isinstance(arguments, dict)  # checked to be an object when the retriever was built
            started = time.perf_counter()
            try:
                with anyio.fail_after(self._settings.timeout_s):
                    result = await client.call_tool(self._settings.tool, arguments)
            except Exception as exc:  # noqa: BLE001 - translated into the server's words
                failures[index] = self._translate(exc, request.query_id)
                return
            seconds = time.perf_counter() - started
        try:
            # The tool result as JSON (the answer's `result`, re-serialised compactly by the SDK): what
            # an MCP client holds and caps, without the JSON-RPC framing, which the SDK does not hand over.
            size = len(result.model_dump_json(by_alias=True, exclude_none=True).encode("utf-8"))
            if size > MAX_ANSWER_BYTES:
                raise self._owner.refuse(
                    f"the tool's answer is {size} bytes, over the {MAX_ANSWER_BYTES}-byte cap",
                    "check that --mcp-tool is the search tool and --mcp-arguments asks for {limit} hits",
                    request.query_id,
                )
            hits = map_response(_body(result, self._owner, request), self._owner._mapping, request, self._owner.context())
        except InputError as refusal:
            failures[index] = refusal
            return
        except Exception as bug:  # noqa: BLE001 - kept apart from the server's failures, re-raised after
            self.bug = bug
            failures[index] = self._owner.refuse("(not the server's doing)", "", request.query_id)
            return
        results[index] = (hits, AnswerCost(seconds, size))

    def _translate(self, exc: BaseException, query_id: str | None) -> InputError:
        """An exception of the SDK, the transport or the server as an InputError in its words."""
        owner = self._owner
        cause = _innermost(exc)
        stdio = self._settings.command is not None
        if isinstance(cause, InputError):
            return cause
        if isinstance(cause, TimeoutError) or (isinstance(cause, MCPError) and cause.code == mcp_types.REQUEST_TIMEOUT):
            return owner.refuse(
                f"no answer within {self._settings.timeout_s:g} s while "
                + ("answering" if query_id is not None else self._stage),
                "raise --mcp-timeout, or check the server", query_id,
            )
        if isinstance(cause, MCPError) and cause.code == mcp_types.CONNECTION_CLOSED:
            what = "the server exited or closed its output" if stdio else "the server closed the connection"
            return owner.refuse(
                f"{what} while " + ("answering" if query_id is not None else self._stage),
                "run the server's command by hand to see why it stops" if stdio else "check the server's log",
                query_id,
            )
        if isinstance(cause, MCPError) and cause.message in _SDK_HTTP_STAND_INS and self._http_error is not None:
            status, body = self._http_error
            try:
                words = service_error_words(loads_strict(body))
            except NotJson:
                words = None
            said = repr(owner.words(words)) if words is not None else owner.snippet(body.decode("utf-8", errors="replace"))
            hint = (
                "check --http-header and that its ${ENV} variable holds a valid token" if status in (401, 403)
                else "check --mcp-url (the server's MCP endpoint, often /mcp)"
            )
            return owner.refuse(f"HTTP {status} from the server: {said}", hint, query_id)
        if isinstance(cause, MCPError):
            data = f" ({owner.words(str(cause.data))})" if cause.data not in (None, "", {}, []) else ""
            return owner.refuse(
                f"the server answered with JSON-RPC error {cause.code}: {owner.words(cause.message)!r}{data}",
                "fix what the server says (in --mcp-arguments, or the server's setup)", query_id,
            )
        if isinstance(cause, OSError) and stdio and query_id is None and self._stage.startswith("starting"):
            return owner.refuse(f"could not start the server: {cause.strerror or cause}", "check --mcp-command")
        if isinstance(cause, httpx2.HTTPStatusError):
            status = cause.response.status_code
            hint = (
                "check --http-header and that its ${ENV} variable holds a valid token" if status in (401, 403)
                else "check --mcp-url (the server's MCP endpoint, often /mcp)"
            )
            return owner.refuse(f"HTTP {status} from the server", hint, query_id)
        if isinstance(cause, httpx2.HTTPError):
            return owner.refuse(
                f"could not talk to the server: {type(cause).__name__}: {cause}",
                "check that the server runs and --mcp-url is its MCP endpoint", query_id,
            )
        if isinstance(cause, pydantic.ValidationError):
            first = cause.errors()[0] if cause.errors() else {"msg": str(cause), "loc": ()}
            where = ".".join(str(part) for part in first.get("loc", ()))
            return owner.refuse(
                f"the server's answer does not follow the MCP specification: {where} {first.get('msg', '')}".strip(),
                "the server must speak MCP; check its version", query_id,
            )
        if isinstance(cause, Exception):
            return owner.refuse(
                f"the MCP session failed: {type(cause).__name__}: {cause}", "check the server", query_id,
            )
        raise exc  # KeyboardInterrupt and the like are not the server's doing


async def _list_tools(client: Client) -> list[mcp_types.Tool]:
    tools: list[mcp_types.Tool] = []
    cursor: str | None = None
    for _page in range(TOOL_PAGES_CAP):
        listing = await client.list_tools(cursor=cursor)
        tools.extend(listing.tools)
        cursor = listing.next_cursor
        if not cursor:
            break
    return tools


def _body(result: mcp_types.CallToolResult, owner: McpRetriever, request: SearchRequest) -> object:
    """The JSON a tool result carries: `structuredContent`, else its text parsed as JSON.

    `{"result": "<text>"}` is how the Python SDK's servers wrap a tool that returns a string: the
    text inside is read. Several text blocks are read as a list, one value each (servers that turn a
    returned list into one block per item). An `error` beside the hits is an error, not zero hits."""
    texts = [block.text for block in result.content if isinstance(block, mcp_types.TextContent)]
    if result.is_error:
        said = " ".join(texts).strip() or "(no words)"
        raise owner.refuse(
            f"the tool answered with an error (isError): {owner.words(said)!r}",
            "fix what the server says (in --mcp-arguments, or the server's setup)", request.query_id,
        )
    structured = result.structured_content
    if isinstance(structured, dict) and set(structured) == {"result"} and isinstance(structured["result"], str):
        texts = [structured["result"]]
        structured = None
    if structured is not None:
        body: object = structured
    elif not texts:
        kinds = ", ".join(sorted({block.type for block in result.content})) or "nothing"
        raise owner.refuse(
            f"the tool answered with no structuredContent and no text (it sent {kinds})",
            "use a tool that answers with JSON", request.query_id,
        )
    else:
        values = []
        for text in texts:
            try:
                values.append(loads_strict(text))
            except NotJson as exc:
                raise owner.refuse(
                    f"the tool's text is not JSON ({exc.reason}): {owner.snippet(text)}",
                    "kb-eval reads hits from JSON: use the server's JSON output (an option or another tool)",
                    request.query_id,
                ) from None
        body = values[0] if len(values) == 1 else values
    # An error answered as a result (`{"results": [], "error": ...}`) is the shared mapping's rule.
    return body


def _arguments_problem(tool: mcp_types.Tool, arguments: object) -> str | None:
    """What the tool's input schema says against the arguments kb-eval will send, before any call:
    a required argument missing, or one the schema forbids. None when they fit (or it says nothing)."""
    schema = tool.input_schema if isinstance(tool.input_schema, dict) else {}
    given = set(arguments) if isinstance(arguments, dict) else set()
    required = [name for name in schema.get("required", []) if isinstance(name, str)]
    missing = [name for name in required if name not in given]
    if missing:
        return f"requires {', '.join(map(repr, missing))}, which --mcp-arguments does not give"
    properties = schema.get("properties")
    if isinstance(properties, dict) and schema.get("additionalProperties") is False:
        unknown = sorted(given - set(properties))
        if unknown:
            return f"takes no {', '.join(map(repr, unknown))} (it takes {', '.join(map(repr, properties))})"
    return None


def _example_arguments(tool: mcp_types.Tool) -> str:
    schema = tool.input_schema if isinstance(tool.input_schema, dict) else {}
    properties = schema.get("properties")
    names = list(properties) if isinstance(properties, dict) else []
    query = next((name for name in names if name in ("query", "q", "text", "search", "question")), None)
    if query is None:
        required = [name for name in schema.get("required", []) if isinstance(name, str)]
        query = required[0] if required else "query"
    return '{"' + query + '": "{query}"}'


def _innermost(exc: BaseException) -> BaseException:
    """The first leaf of nested exception groups (the SDK's task groups wrap what they raise)."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return exc


class _SdkLog(logging.Handler):
    def emit(self, record: logging.LogRecord) -> None:
        sink = _SDK_LOG.get()
        if sink is not None:
            sink.append(record.getMessage().splitlines()[0] if record.getMessage() else record.levelname)


_HANDLER = _SdkLog(logging.WARNING)


def _capture_sdk_logging() -> None:
    """The SDK logs a server's stray output with a traceback on kb-eval's stderr; it is kept for the
    refusal instead (one line), and nothing of it reaches the log otherwise."""
    logger = logging.getLogger("mcp")
    if _HANDLER not in logger.handlers:
        logger.addHandler(_HANDLER)
        logger.propagate = False


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("kb-eval")
    except PackageNotFoundError:  # pragma: no cover - a checkout that was never installed
        return "0"
