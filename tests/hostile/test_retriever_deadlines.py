"""Every external retriever call ends by its deadline, reads at most its cap, and sees no secret.

Real programs (the running Python with `-c`) and real HTTP servers on 127.0.0.1; each test is
bounded in time by the deadline it checks, plus a margin for a busy machine.
"""

from __future__ import annotations

import json
import shlex
import sys
import time

import pytest

from scanner.errors import InputError
from scanner.retrievers.base import Hit, SearchRequest
from scanner.retrievers.command import (
    EXIT_GRACE_S,
    CommandRetriever,
    CommandSettings,
    command_environment,
    run_bounded,
)
from scanner.retrievers.mapping import ResponseMapping

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
