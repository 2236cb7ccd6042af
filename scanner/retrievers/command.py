"""Answering golden queries by running a program once per query.

The template is split into an argument list once (shlex, POSIX rules) and
the placeholders are substituted inside each argument; no shell ever runs,
so a query is always exactly one literal argument whatever it contains.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import signal
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass

from scanner.errors import InputError
from scanner.retrievers.base import Hit, SearchRequest
from scanner.retrievers.concurrency import map_in_order, validate_concurrency
from scanner.retrievers.mapping import ErrorContext, ResponseMapping, map_response
from scanner.retrievers.templates import PLACEHOLDER, substitute_placeholders

DEFAULT_TIMEOUT_S = 60.0
STDERR_TAIL_BYTES = 2048
"""Enough for a traceback's last frames and the error line, short enough for a CI log."""
MAX_STDOUT_BYTES = 8 * 1024 * 1024
SNIPPET_CHARS = 200


@dataclass(frozen=True, slots=True)
class CommandSettings:
    template: str
    """E.g. `kb-mcp search --format json --limit {limit} {query}`; recorded verbatim."""
    timeout_s: float = DEFAULT_TIMEOUT_S
    """Per query; the program (and its process group) is killed past it."""
    concurrency: int = 1


def split_template(template: str) -> list[str]:
    """The argument list of a command template; refuses what could never work."""
    try:
        argv = shlex.split(template)
    except ValueError as exc:  # unbalanced quotes
        raise InputError(
            f"--command cannot be split into arguments: {exc}",
            field="--command",
            hint="balance the quotes; the template is split like a shell line but never run by a shell",
        ) from None
    if not argv:
        raise InputError("--command is empty", field="--command")
    if not any("{query}" in argument for argument in argv):
        raise InputError(
            "--command never uses {query}, so every query would get the same answer",
            field="--command",
            hint="e.g. --command 'kb-mcp search --format json --limit {limit} {query}'",
        )
    if PLACEHOLDER.search(argv[0]):
        raise InputError("--command must start with a program, not a placeholder", field="--command")
    return argv


class CommandRetriever:
    """Runs the template once per query and reads JSON hits from its stdout."""

    def __init__(self, settings: CommandSettings, mapping: ResponseMapping) -> None:
        self._settings = settings
        self._mapping = mapping
        self._argv = split_template(settings.template)
        program = self._argv[0]
        resolved = shutil.which(program)
        if resolved is None:
            raise InputError(
                f"--command program {program!r} is not found or not executable",
                field="--command",
                hint="install it, or give its full path",
            )
        self._program = resolved
        if not settings.timeout_s > 0:
            raise InputError("--command-timeout must be more than 0", field="--command-timeout")
        validate_concurrency(settings.concurrency)
        self._source = f"command {program}"

    def describe(self) -> dict[str, object]:
        return {"name": "command", "command": self._settings.template, "mapping": self._mapping.describe()}

    def search_all(self, requests: Sequence[SearchRequest]) -> list[list[Hit]]:
        return map_in_order(self._answer, requests, self._settings.concurrency)

    def argv_for(self, request: SearchRequest) -> list[str]:
        """The exact argument list run for one query (program already resolved)."""
        rest = [substitute_placeholders(arg, request.text, request.limit) for arg in self._argv[1:]]
        return [self._program, *rest]

    def _answer(self, request: SearchRequest) -> list[Hit]:
        stdout, stderr, returncode = self._run(request)
        if returncode != 0:
            how = f"exit status {returncode}"
            if returncode < 0:
                how = f"killed by signal {_signal_name(-returncode)}"
            raise InputError(
                f"{self._source}: query {request.query_id!r}: {how}; stderr ends with:\n"
                f"{_tail(stderr)}",
                hint="run the command by hand with this query to see why it fails",
            )
        if len(stdout) > MAX_STDOUT_BYTES:
            raise InputError(
                f"{self._source}: query {request.query_id!r}: printed {len(stdout)} bytes, "
                f"over the {MAX_STDOUT_BYTES}-byte cap",
                hint="the command should print only the JSON hits",
            )
        try:
            body = json.loads(stdout)
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            text = stdout[:SNIPPET_CHARS].decode("utf-8", errors="replace")
            raise InputError(
                f"{self._source}: query {request.query_id!r}: stdout is not JSON ({exc}): {text!r}",
                hint="the command must print one JSON document (e.g. --format json) and send "
                "diagnostics to stderr",
            ) from None
        return map_response(body, self._mapping, request, ErrorContext(self._source))

    def _run(self, request: SearchRequest) -> tuple[bytes, bytes, int]:
        # A new session makes the program a process-group leader, so a timeout
        # also kills whatever it started (a wrapper script's children would
        # otherwise keep the pipes open and the run hanging).
        process = subprocess.Popen(
            self.argv_for(request),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )
        try:
            stdout, stderr = process.communicate(timeout=self._settings.timeout_s)
        except subprocess.TimeoutExpired:
            _kill_group(process)
            process.communicate()
            raise InputError(
                f"{self._source}: query {request.query_id!r}: no answer within "
                f"{self._settings.timeout_s} s (killed)",
                hint="raise --command-timeout, or check that the program does not wait for input",
            ) from None
        return stdout, stderr, process.returncode


def _kill_group(process: subprocess.Popen[bytes]) -> None:
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return str(number)


def _tail(stderr: bytes) -> str:
    tail = stderr[-STDERR_TAIL_BYTES:].decode("utf-8", errors="replace").rstrip()
    prefix = "..." if len(stderr) > STDERR_TAIL_BYTES else ""
    return prefix + tail if tail else "(nothing on stderr)"
