"""Every external retriever call ends by its deadline, reads at most its cap, and sees no secret.

Real programs (the running Python with `-c`) and real HTTP servers on 127.0.0.1; each test is
bounded in time by the deadline it checks, plus a margin for a busy machine.
"""

from __future__ import annotations

import json
import re
import shlex
import socket
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import pytest

from scanner.foundation.errors import InputError
from scanner.foundation.strict_json import MAX_JSON_CONTAINERS
from scanner.retrievers.base import Hit, SearchRequest
from scanner.retrievers.command import (
    EXIT_GRACE_S,
    CommandRetriever,
    CommandSettings,
    command_environment,
    run_bounded,
)
from scanner.retrievers.http import HttpRetriever
from scanner.retrievers.http_settings import HttpSettings, parse_header
from scanner.retrievers.mapping import ResponseMapping
from tests.support.loopback_server import Reply, running

MARGIN_S = 4.0
"""Slack for a loaded 2-core machine; every bound checked is far below a hang."""

ANSWER = json.dumps({"results": [{"path": "a.md", "heading": "A"}]})


def python_command(code: str, timeout_s: float = 10.0, environ: dict[str, str] | None = None,
                   env_names: tuple[str, ...] = ()) -> CommandRetriever:
    template = f"{shlex.quote(sys.executable)} -c {shlex.quote(code)} {{query}}"
    settings = CommandSettings(template, timeout_s, 1, env_names)
    return CommandRetriever(settings, ResponseMapping(), environ)


def ask(retriever: CommandRetriever) -> list[Hit]:
    return retriever.search_all([SearchRequest(query_id="q1", text="alpha", limit=5)])[0]


# A grandchild that inherits stdout and sleeps: the pipe stays open after the program exits.
DAEMON = "import subprocess, sys; subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'])"
# The same grandchild in a session of its own, out of reach of the process-group kill.
ESCAPED_DAEMON = (
    "import subprocess, sys; subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'],"
    " start_new_session=True)"
)


def test_an_answer_printed_before_exit_is_used_although_a_grandchild_holds_the_pipe() -> None:
    started = time.monotonic()
    hits = ask(python_command(f"{DAEMON}; print({ANSWER!r})", timeout_s=30))
    assert hits == [Hit(1, "a.md", "A", None)]
    assert time.monotonic() - started < EXIT_GRACE_S + MARGIN_S


def test_the_same_answer_without_a_grandchild_is_used_at_once() -> None:
    started = time.monotonic()
    assert ask(python_command(f"print({ANSWER!r})")) == [Hit(1, "a.md", "A", None)]
    assert time.monotonic() - started < MARGIN_S


def test_a_program_that_hangs_while_its_own_session_daemon_holds_the_pipe_stops_at_the_deadline() -> None:
    started = time.monotonic()
    with pytest.raises(InputError, match="no answer within 1.0 s"):
        ask(python_command(f"{ESCAPED_DAEMON}; import time; time.sleep(60)", timeout_s=1.0))
    assert time.monotonic() - started < 1.0 + MARGIN_S


def test_a_program_that_closes_its_output_and_keeps_running_stops_at_the_deadline() -> None:
    started = time.monotonic()
    code = "import os, time; os.close(1); os.close(2); time.sleep(60)"
    with pytest.raises(InputError, match="no answer within 1.0 s"):
        ask(python_command(code, timeout_s=1.0))
    assert time.monotonic() - started < 1.0 + MARGIN_S


def test_endless_output_stops_at_the_cap_without_reading_the_rest() -> None:
    started = time.monotonic()
    code = "import sys\nwhile True: sys.stdout.buffer.write(b'x' * 65536)"
    finished = run_bounded([sys.executable, "-c", code], {}, 30.0, 1_000_000)
    assert finished.overflowed and len(finished.stdout) == 1_000_001
    assert time.monotonic() - started < MARGIN_S


def test_output_of_exactly_the_cap_is_read_whole() -> None:
    code = "import sys; sys.stdout.buffer.write(b'x' * 1_000_000)"
    finished = run_bounded([sys.executable, "-c", code], {}, 30.0, 1_000_000)
    assert not finished.overflowed and finished.returncode == 0 and len(finished.stdout) == 1_000_000


def test_endless_stderr_keeps_only_its_tail() -> None:
    code = "import sys\nfor _ in range(200): sys.stderr.buffer.write(b'e' * 65536)\nsys.stderr.write('last words')"
    finished = run_bounded([sys.executable, "-c", code], {}, 30.0, 1000)
    assert finished.stderr_bytes == 200 * 65536 + len("last words")
    assert finished.stderr_tail.endswith(b"last words") and len(finished.stderr_tail) <= 2048


ENV_DUMP = (
    "import json, os; print(json.dumps({'results': [{'path': n + '.md'} for n in sorted(os.environ)]}))"
)
RUNNER_ENVIRONMENT = {
    "PATH": "/usr/bin:/bin",
    "HOME": "/root",
    "LC_ALL": "C.UTF-8",
    "INPUT_GITHUB-TOKEN": "ghs_secret",
    "GITHUB_TOKEN": "ghs_secret",
    "ACTIONS_RUNTIME_TOKEN": "secret",
    "ACTIONS_ID_TOKEN_REQUEST_TOKEN": "secret",
    "KB_TOKEN": "kb-secret",
}


def _environment_seen(env_names: tuple[str, ...] = ()) -> set[str]:
    retriever = python_command(ENV_DUMP, environ=RUNNER_ENVIRONMENT, env_names=env_names)
    seen = retriever.search_all([SearchRequest(query_id="q1", text="alpha", limit=50)])[0]
    return {hit.path.removesuffix(".md") for hit in seen}


def test_the_program_sees_no_action_input_and_no_token() -> None:
    seen = _environment_seen()
    assert {"PATH", "HOME", "LC_ALL"} <= seen
    assert not seen & {"INPUT_GITHUB-TOKEN", "GITHUB_TOKEN", "ACTIONS_RUNTIME_TOKEN",
                       "ACTIONS_ID_TOKEN_REQUEST_TOKEN", "KB_TOKEN"}


def test_a_variable_named_with_command_env_is_passed() -> None:
    assert "KB_TOKEN" in _environment_seen(("KB_TOKEN",))


def test_a_command_env_that_is_not_a_name_is_refused() -> None:
    with pytest.raises(InputError, match="not an environment variable name"):
        command_environment(["KB_TOKEN=x"], {})


# -- HTTP ------------------------------------------------------------------------------------------



@contextmanager
def raw_server(script: Callable[[socket.socket], None]) -> Iterator[str]:
    """A TCP server on 127.0.0.1 that reads one request per connection and then runs `script`
    on the connection: for answers no well-behaved HTTP server would send."""
    listener = socket.create_server(("127.0.0.1", 0))
    stop = threading.Event()

    def serve() -> None:
        listener.settimeout(0.1)
        while not stop.is_set():
            try:
                connection, _ = listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            threading.Thread(target=_answer_once, args=(connection, script, stop), daemon=True).start()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{listener.getsockname()[1]}/search"
    finally:
        stop.set()
        thread.join(timeout=5)
        listener.close()


def _answer_once(connection: socket.socket, script: Callable[[socket.socket], None], stop: threading.Event) -> None:
    with connection:
        connection.settimeout(5)
        received = b""
        try:
            while b"\r\n\r\n" not in received:
                received += connection.recv(65536)
            # The request's body too: a connection closed with unread bytes is reset, and the reset
            # can reach the client before the answer it was sent.
            head, _, body = received.partition(b"\r\n\r\n")
            length = re.search(rb"(?im)^content-length:\s*(\d+)\s*$", head)
            while length is not None and len(body) < int(length.group(1)):
                body += connection.recv(65536)
            script(connection)
        except OSError:
            pass  # the client hung up: that is what most of these tests want


def trickle(prefix: bytes, byte: bytes = b"x", every_s: float = 0.05) -> Callable[[socket.socket], None]:
    def script(connection: socket.socket) -> None:
        connection.sendall(prefix)
        for _ in range(2000):  # 100 s at most, far past every deadline tested
            connection.sendall(byte)
            time.sleep(every_s)

    return script


def http(url: str, timeout_s: float = 1.0, retries: int = 0, retry_after_cap_s: float = 30.0) -> HttpRetriever:
    settings = HttpSettings(url=url, timeout_s=timeout_s, retries=retries, backoff_s=0.01,
                            retry_after_cap_s=retry_after_cap_s)
    return HttpRetriever(settings, ResponseMapping(), {})


def http_ask(retriever: HttpRetriever) -> list[Hit]:
    return retriever.search_all([SearchRequest(query_id="q1", text="alpha", limit=5)])[0]


def test_a_body_trickled_one_byte_at_a_time_stops_at_the_deadline() -> None:
    started = time.monotonic()
    head = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n"
    with raw_server(trickle(head)) as url, pytest.raises(InputError, match="not complete within 1.0 s"):
        http_ask(http(url))
    assert time.monotonic() - started < 1.0 + MARGIN_S


def test_headers_trickled_one_byte_at_a_time_stop_at_the_deadline() -> None:
    started = time.monotonic()
    with raw_server(trickle(b"HTTP/1.1 200 OK\r\nX-Slow: ")) as url, pytest.raises(InputError, match="within 1.0 s"):
        http_ask(http(url))
    assert time.monotonic() - started < 1.0 + MARGIN_S


def test_an_answer_sent_at_once_is_read() -> None:
    body = ANSWER.encode()
    head = f"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n".encode()
    with raw_server(lambda connection: connection.sendall(head + body)) as url:
        assert http_ask(http(url)) == [Hit(1, "a.md", "A", None)]


def test_a_content_length_in_superscript_digits_is_not_a_crash() -> None:
    body = ANSWER.encode()
    head = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: \xb2\r\nConnection: close\r\n\r\n"
    with raw_server(lambda connection: connection.sendall(head + body)) as url:
        assert http_ask(http(url)) == [Hit(1, "a.md", "A", None)]


@pytest.mark.parametrize("retry_after", ["3600", "\xb2", "9" * 5000, "Fri, 31 Dec 9999 23:59:59 GMT"])
def test_repeated_retry_after_cannot_stretch_a_query_past_its_budget(retry_after: str) -> None:
    started = time.monotonic()
    reply = Reply(status=429, body={"message": "slow down"}, headers={"Retry-After": retry_after})
    with running(lambda _: reply) as server, pytest.raises(InputError, match="failed after 4 attempt"):
        http_ask(http(server.url, retries=3, retry_after_cap_s=1.0))
    assert len(server.received) == 4
    assert time.monotonic() - started < 1.0 + MARGIN_S


def test_a_short_retry_after_is_honoured_before_the_next_attempt() -> None:
    replies = iter([Reply(status=429, headers={"Retry-After": "1"}), Reply(body=json.loads(ANSWER))])
    started = time.monotonic()
    with running(lambda _: next(replies)) as server:
        assert http_ask(http(server.url, retries=1)) == [Hit(1, "a.md", "A", None)]
    assert time.monotonic() - started >= 1.0


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        (b"[" * 200_000 + b"]" * 200_000, "nested too deeply"),
        (b'{"results": [{"path": "a.md", "score": 1e400}]}', "out of range"),
        (b'{"results": [{"path": "a.md", "score": ' + b"9" * 5000 + b"}]}", "too many digits"),
        (b'{"results": [{"path": "a.md", "score": NaN}]}', "NaN is not a JSON number"),
        (b"[" + b",".join([b"{}"] * MAX_JSON_CONTAINERS) + b"]", f"more than {MAX_JSON_CONTAINERS} objects and arrays"),
    ],
)
def test_hostile_json_in_an_answer_is_a_refusal_not_a_crash(body: bytes, reason: str) -> None:
    with running(lambda _: Reply(body=body)) as server, pytest.raises(InputError, match=reason):
        http_ask(http(server.url))


def test_a_header_line_without_a_colon_is_named_by_its_number_only() -> None:
    with pytest.raises(InputError) as caught:
        parse_header("ghp_0123456789abcdefSECRET", 2)
    assert "ghp_" not in str(caught.value) and "SECRET" not in str(caught.value)
    assert "header line 2" in str(caught.value)


def test_a_header_line_with_a_colon_is_read() -> None:
    assert parse_header("Authorization: Bearer ${KB_TOKEN}", 1).name == "Authorization"
