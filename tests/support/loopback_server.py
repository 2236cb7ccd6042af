"""A real HTTP server on 127.0.0.1 for tests: ephemeral port, one thread per request.

Tests give it a `respond(request) -> Reply` function; it records every
request it saw (method, path, query parameters, headers, body) so a test can
check what actually went over the wire. Reusable for end-to-end runs: see
`serve_rankings`, which answers like kb-mcp's `{"results": [...]}` from a
table of rankings keyed by query text.
"""

from __future__ import annotations

import json
import threading
import urllib.parse
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


@dataclass(frozen=True, slots=True)
class Received:
    """One request as the server saw it."""

    method: str
    path: str
    params: dict[str, list[str]]
    headers: dict[str, str]
    body: bytes

    def json(self) -> object:
        return json.loads(self.body) if self.body else None

    def query_text(self) -> str:
        """The query sent, from a JSON body's `query` or a `query` parameter."""
        if self.method == "GET":
            return self.params["query"][0]
        body = self.json()
        assert isinstance(body, dict)
        return str(body["query"])

    def limit(self) -> int:
        if self.method == "GET":
            return int(self.params["limit"][0])
        body = self.json()
        assert isinstance(body, dict)
        return int(body["limit"])


@dataclass(frozen=True, slots=True)
class Reply:
    status: int = 200
    body: object = None
    """bytes are sent as they are; anything else is sent as JSON."""
    headers: Mapping[str, str] = field(default_factory=dict)
    delay_s: float = 0.0
    """Wait before answering (interrupted when the server stops)."""
    send_length: bool = True
    """False sends no Content-Length: the body ends when the connection closes."""


Responder = Callable[[Received], Reply]


class LoopbackServer:
    def __init__(self, respond: Responder) -> None:
        self.respond = respond
        self.received: list[Received] = []
        self.in_flight = 0
        self.max_in_flight = 0
        self.stopping = threading.Event()
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler_for(self))
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def start(self) -> LoopbackServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self.stopping.set()
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)

    def _record(self, received: Received) -> None:
        with self._lock:
            self.received.append(received)
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)

    def _done(self) -> None:
        with self._lock:
            self.in_flight -= 1


@contextmanager
def running(respond: Responder) -> Iterator[LoopbackServer]:
    server = LoopbackServer(respond).start()
    try:
        yield server
    finally:
        server.stop()


def serve_rankings(rankings: Mapping[str, Sequence[Mapping[str, object]]]) -> Responder:
    """Answer `{"results": rankings[query][:limit]}`, like `kb-mcp search --format json`."""

    def respond(request: Received) -> Reply:
        hits = list(rankings.get(request.query_text(), []))[: request.limit()]
        return Reply(body={"results": hits})

    return respond


def sequence_per_query(replies: Sequence[Reply]) -> Responder:
    """The n-th request for a query text gets replies[n] (the last one repeats)."""
    counts: dict[str, int] = {}
    lock = threading.Lock()

    def respond(request: Received) -> Reply:
        with lock:
            seen = counts.get(request.query_text(), 0)
            counts[request.query_text()] = seen + 1
        return replies[min(seen, len(replies) - 1)]

    return respond


def _handler_for(server: LoopbackServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self._serve()

        def do_POST(self) -> None:
            self._serve()

        def do_PATCH(self) -> None:
            self._serve()

        def do_DELETE(self) -> None:
            self._serve()

        def log_message(self, format: str, *args: object) -> None:
            pass  # keep pytest output clean

        def _serve(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            parts = urllib.parse.urlsplit(self.path)
            received = Received(
                method=self.command,
                path=parts.path,
                params=urllib.parse.parse_qs(parts.query, keep_blank_values=True),
                headers=dict(self.headers.items()),
                body=self.rfile.read(length) if length else b"",
            )
            server._record(received)
            answered = False
            try:
                reply = server.respond(received)
                if reply.delay_s and server.stopping.wait(reply.delay_s):
                    return
                payload = reply.body if isinstance(reply.body, bytes) else json.dumps(reply.body).encode()
                self.send_response(reply.status)
                self.send_header("Content-Type", "application/json")
                if reply.send_length:
                    self.send_header("Content-Length", str(len(payload)))
                for name, value in reply.headers.items():
                    self.send_header(name, value)
                self.end_headers()
                # No longer in flight once the body goes out: a client sending one request at a
                # time sends its next as soon as this body arrives, maybe before this thread runs
                # again, and that request must not count as overlapping this one.
                server._done()
                answered = True
                self.wfile.write(payload)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client gave up (a timeout test); nothing to answer
            finally:
                if not answered:
                    server._done()
                self.close_connection = True

    return Handler
