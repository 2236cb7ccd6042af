"""Answering golden queries by running a program once per query.

The template is split into an argument list once (shlex, POSIX rules) and
the placeholders are substituted inside each argument; no shell ever runs,
so a query is always exactly one literal argument whatever it contains.
"""

from __future__ import annotations

import os
import re
import selectors
import shlex
import shutil
import signal
import subprocess
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from scanner.foundation.errors import InputError
from scanner.foundation.strict_json import NotJson, loads_strict
from scanner.retrievers.base import AnswerCost, AnswerNote, Hit, NoteKind, RetrieverKind, SearchRequest
from scanner.retrievers.concurrency import map_in_order
from scanner.retrievers.costs import CostLog
from scanner.retrievers.mapping import (
    SERVICE_WORDS_CHARS,
    ErrorContext,
    Notes,
    ResponseMapping,
    map_response,
    scrub_and_cut,
    service_error_words,
)
from scanner.retrievers.templates import (
    PLACEHOLDER,
    QUERY_PLACEHOLDERS,
    SideSlots,
    fill_side,
    substitute_placeholders,
)

DEFAULT_TIMEOUT_S = 60.0
STDERR_TAIL_BYTES = 2048
"""Enough for a traceback's last frames and the error line, short enough for a CI log."""
MAX_STDOUT_BYTES = 8 * 1024 * 1024
"""Reading stops one byte past this and the program is killed: a search answer is kilobytes, and
a program printing hundreds of megabytes must not be buffered whole before it is refused."""
SNIPPET_CHARS = 200
READ_CHUNK_BYTES = 64 * 1024
EXIT_GRACE_S = 1.0
"""After the program exits, its pipes are read for at most this long. A daemon it started may keep
them open forever; what the program printed before exiting is already in the pipe by then."""
KILL_WAIT_S = 5.0
"""How long to wait for a SIGKILLed program to be reaped; never an unbounded wait."""
BASE_ENVIRONMENT = ("PATH", "HOME", "LANG", "LANGUAGE", "TZ", "TMPDIR", "USER", "LOGNAME")
"""Passed to the program from kb-eval's own environment, with every LC_* variable. Nothing else is:
in the Action the environment holds every input (INPUT_*, the token among them) and the runner's
ACTIONS_* tokens, which a search program has no business seeing. Anything more is named with
--command-env NAME."""
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


@dataclass(frozen=True, slots=True)
class CommandSettings:
    template: str
    """E.g. `kb-mcp search --format json --limit {limit} {query}`; recorded verbatim."""
    timeout_s: float = DEFAULT_TIMEOUT_S
    """Per query; the program (and its process group) is killed past it."""
    concurrency: int = 1
    env_names: tuple[str, ...] = ()
    """Extra variables passed from kb-eval's environment (`--command-env NAME`, repeatable)."""


def command_environment(names: Sequence[str], environ: Mapping[str, str]) -> dict[str, str]:
    """The program's whole environment: BASE_ENVIRONMENT, LC_*, and the variables named by the user."""
    for name in names:
        if not _ENV_NAME.fullmatch(name):
            raise InputError(
                f"--command-env {name!r} is not an environment variable name",
                field="--command-env",
                hint="give the name only (e.g. --command-env KB_TOKEN); its value is taken from the environment",
            )
    wanted = set(BASE_ENVIRONMENT) | set(names)
    return {
        name: value for name, value in environ.items()
        if name in wanted or name.startswith("LC_")
    }


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
    if not any(placeholder in argument for argument in argv for placeholder in QUERY_PLACEHOLDERS):
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

    kind = RetrieverKind.COMMAND

    @property
    def path_prefixes(self) -> tuple[str, ...]:
        return self._mapping.shown_prefixes()

    def __init__(
        self, settings: CommandSettings, mapping: ResponseMapping, environ: Mapping[str, str] | None = None,
        slots: SideSlots | None = None,
    ) -> None:
        self._settings = settings
        self._mapping = mapping
        self._argv = split_template(settings.template)
        if slots is not None:
            # The side's folder, work folder and port, once, before any query is put in.
            self._argv = [fill_side(argument, slots, "--command") for argument in self._argv]
        program = self._argv[0]
        self._environment = command_environment(settings.env_names, os.environ if environ is None else environ)
        self._withheld = [name for name in (os.environ if environ is None else environ) if name not in self._environment]
        self._secrets = passed_secrets(self._environment, settings.env_names)
        # Found on kb-eval's PATH, which the program's environment keeps.
        resolved = shutil.which(program, path=self._environment.get("PATH"))
        if resolved is None:
            raise InputError(
                f"--command program {program!r} is not found or not executable",
                field="--command",
                hint="install it, or give its full path",
            )
        self._program = resolved
        if not settings.timeout_s > 0:
            raise InputError("--command-timeout must be more than 0", field="--command-timeout")
        self._source = f"command {program}"
        self._costs = CostLog()
        self._notes = Notes()

    def costs(self) -> tuple[AnswerCost, ...]:
        return self._costs.in_order()

    def close(self) -> None:
        return None

    def notes(self) -> tuple[AnswerNote, ...]:
        return self._notes.items()

    def describe(self) -> dict[str, object]:
        return {"name": self.kind.value, "command": self._settings.template, "mapping": self._mapping.describe()}

    def search_all(self, requests: Sequence[SearchRequest]) -> list[list[Hit]]:
        self._notes = Notes()
        self._costs.start(requests)
        return map_in_order(self._answer, requests, self._settings.concurrency)

    def argv_for(self, request: SearchRequest) -> list[str]:
        """The exact argument list run for one query (program already resolved)."""
        rest = [substitute_placeholders(arg, request.text, request.limit) for arg in self._argv[1:]]
        return [self._program, *rest]

    def _answer(self, request: SearchRequest) -> list[Hit]:
        # The program's whole run (a start-up included: that is what each query costs) and its stdout.
        with self._costs.timing(request) as size:
            finished = run_bounded(
                self.argv_for(request), self._environment, self._settings.timeout_s, MAX_STDOUT_BYTES
            )
            size.append(len(finished.stdout))
        where = f"{self._source}: query {request.query_id!r}"
        if finished.timed_out:
            raise InputError(
                f"{where}: no answer within {self._settings.timeout_s} s (killed)",
                hint="raise --command-timeout, or check that the program does not wait for input",
            )
        if finished.overflowed:
            raise InputError(
                f"{where}: printed more than {MAX_STDOUT_BYTES} bytes; stopped reading and killed it",
                hint="the command should print only the JSON hits",
            )
        returncode = finished.returncode
        if returncode != 0:
            how = exit_words(returncode)
            words = self._service_words(finished.stdout)
            said = f"; it printed the error {words!r}" if words is not None else ""
            raise InputError(
                f"{where}: {how}{said}; its stderr ends with:",
                said=tuple(self._tail(finished.stderr_tail, finished.stderr_bytes).splitlines()),
                hint=withheld_hint(finished.stderr_tail, self._withheld)
                or "run the command by hand with this query to see why it fails",
            )
        if not finished.stdout.strip():
            # `sqlite3 -json` and many tools print nothing at all for zero rows: no hits, not an
            # error for one query; for every query it is (scanner/evaluation/answers.py), and what
            # the program said on stderr is kept to show then.
            self._notes.add(AnswerNote(NoteKind.EMPTY, request.query_id, self._tail(finished.stderr_tail, finished.stderr_bytes)))
            return []
        try:
            body = loads_strict(finished.stdout)
        except NotJson as exc:
            longest = max((len(secret) for secret in self._secrets), default=0)
            window = finished.stdout[: 4 * (SNIPPET_CHARS + longest)].decode("utf-8", errors="replace")
            text = scrub_and_cut(window, self._secrets, SNIPPET_CHARS)
            raise InputError(
                f"{where}: stdout is not JSON ({exc.reason}): {text!r}",
                hint="the command must print one JSON document (e.g. --format json) and send "
                "diagnostics to stderr",
            ) from None
        context = ErrorContext(self._source, secrets=tuple(self._secrets), notes=self._notes)
        hits = map_response(body, self._mapping, request, context)
        if not hits:
            self._notes.add(AnswerNote(NoteKind.EMPTY, request.query_id, self._tail(finished.stderr_tail, finished.stderr_bytes)))
        return hits

    def _service_words(self, stdout: bytes) -> str | None:
        try:
            body = loads_strict(stdout)
        except NotJson:
            return None
        words = service_error_words(body)
        return None if words is None else scrub_and_cut(words, self._secrets, SERVICE_WORDS_CHARS)


    def _tail(self, tail: bytes, total: int) -> str:
        return stderr_tail(tail, total, self._secrets)


def stderr_tail(tail: bytes, total: int, secrets: Sequence[str]) -> str:
    """The end of a program's stderr, scrubbed before it is cut. When the beginning of stderr was
    dropped, the first `longest secret` characters are dropped too: a secret cut in half by the
    drop lies within them and would not be recognised."""
    longest = max((len(secret) for secret in secrets), default=0)
    text = tail.decode("utf-8", errors="replace").rstrip()
    truncated = total > len(tail)
    keep = len(text) - longest if truncated and longest else len(text)
    shown = scrub_and_cut(text, secrets, keep, keep_end=True)
    return ("..." if truncated else "") + shown if shown else "(nothing on stderr)"


def passed_secrets(environment: Mapping[str, str], names: Sequence[str]) -> list[str]:
    """The values passed to a program by name (`--command-env`): they may be tokens, so whatever
    the program echoes of them is scrubbed."""
    return sorted({environment[name] for name in names if len(environment.get(name, "")) >= 4}, key=len, reverse=True)


def exit_words(code: int | None) -> str:
    """How a program ended, in words: `exit status 2`, `killed by signal SIGKILL`."""
    if code is None:
        return "did not end after SIGKILL"
    if code < 0:
        try:
            return f"killed by signal {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return f"exit status {code}"


@dataclass(frozen=True, slots=True)
class Finished:
    """What one bounded run of a program produced."""

    stdout: bytes
    """At most `cap + 1` bytes."""
    stderr_tail: bytes
    """The last STDERR_TAIL_BYTES bytes of stderr."""
    stderr_bytes: int
    """How many bytes stderr had in all."""
    returncode: int | None
    """None when the program could not be reaped after SIGKILL."""
    timed_out: bool
    overflowed: bool


def run_bounded(argv: Sequence[str], env: Mapping[str, str], timeout_s: float, cap: int) -> Finished:
    """Run `argv` and read its output with one wall-clock deadline that nothing can stretch.

    communicate() cannot be used: it reads everything before a size check, and after a timeout
    its second call waits for EOF with no deadline, which never comes while a grandchild holds
    the pipe. Here both pipes are read with select() until EOF, the deadline, or `cap + 1` bytes
    of stdout; then the program's process group is killed and the pipes are closed."""
    # A new session makes the program a process-group leader, so killing the group also kills
    # what it started (a wrapper script's children would otherwise keep running).
    process = subprocess.Popen(
        list(argv), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        start_new_session=True, env=dict(env),
    )
    assert process.stdout is not None and process.stderr is not None
    deadline = time.monotonic() + timeout_s
    stdout = bytearray()
    stderr = bytearray()
    stderr_bytes = 0
    timed_out = overflowed = False
    selector = selectors.DefaultSelector()
    try:
        for pipe in (process.stdout, process.stderr):
            os.set_blocking(pipe.fileno(), False)
            selector.register(pipe, selectors.EVENT_READ)
        while selector.get_map():
            now = time.monotonic()
            if process.poll() is not None:
                deadline = min(deadline, now + EXIT_GRACE_S)
            if now >= deadline:
                timed_out = process.returncode is None
                break
            # Woken at least every 0.1 s to notice the program's exit while a daemon holds the pipes.
            for key, _ in selector.select(min(deadline - now, 0.1)):
                try:
                    chunk = os.read(key.fd, READ_CHUNK_BYTES)
                except BlockingIOError:
                    continue
                if not chunk:
                    selector.unregister(key.fileobj)
                elif key.fileobj is process.stdout:
                    stdout += chunk
                else:
                    stderr_bytes += len(chunk)
                    stderr += chunk
                    del stderr[:-STDERR_TAIL_BYTES]
            if len(stdout) > cap:
                overflowed = True
                del stdout[cap + 1 :]
                break
        if not (timed_out or overflowed) and process.returncode is None:
            # Both pipes closed but the program runs on: it still has until the deadline.
            try:
                process.wait(timeout=max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                timed_out = True
    finally:
        selector.close()
        _kill_group(process)
        process.stdout.close()
        process.stderr.close()
        try:
            returncode: int | None = process.wait(timeout=KILL_WAIT_S)
        except subprocess.TimeoutExpired:  # pragma: no cover - a process that outlives SIGKILL
            returncode = None
    return Finished(bytes(stdout), bytes(stderr), stderr_bytes, returncode, timed_out, overflowed)


def withheld_hint(stderr: bytes, withheld: Iterable[str]) -> str | None:
    """When a program's stderr names a variable kb-eval has but did not pass it (JAVA_HOME, an API
    key's name), the fix: pass it by name. Whole words only: SIGTERM does not name TERM."""
    text = stderr.decode("utf-8", errors="replace")
    named = sorted(name for name in withheld if len(name) >= 3 and re.search(rf"\b{re.escape(name)}\b", text))
    if not named:
        return None
    flags = " ".join(f"--command-env {name}" for name in named[:3])
    return (
        f"its stderr names {', '.join(named[:3])}, which kb-eval has but does not pass to the program: add {flags}"
    )


def _kill_group(process: subprocess.Popen[bytes]) -> None:
    # The group outlives its leader while a member is alive, so this also reaches a grandchild
    # left behind after the program exited; one that started its own session escapes, and only
    # loses its pipes.
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
