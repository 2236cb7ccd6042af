"""What a search with its own index needs once per side of a run, and gives back after it.

A pull request is measured twice, on the head's KB and on the base commit's, so a search that
keeps its own index must be built from each tree and asked on each. For one side this module:
makes an empty work folder (`{work}`), runs `--index-command` on the side's KB folder (`{kb}`)
under a deadline, starts `--serve-command` on a free loopback port (`{port}`) and waits until
it accepts connections, and, whatever happens after, stops the server with everything it
started and removes the work folder. The retriever is built only once all of that is ready.

Every program runs without a shell, its template split once like the command retriever's, with
the command retriever's environment (BASE_ENVIRONMENT plus `--command-env` names): the inputs and
the runner's tokens never reach it.
"""

from __future__ import annotations

import os
import shlex
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import urllib.parse
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from scanner.foundation.errors import InputError
from scanner.retrievers.command import STDERR_TAIL_BYTES, exit_words, run_bounded, stderr_tail, withheld_hint
from scanner.retrievers.templates import SideSlots, fill_side

DEFAULT_INDEX_TIMEOUT_S = 600.0
"""Building an index of a few thousand notes takes seconds to minutes (a model load and an
embedding pass included); past ten minutes something waits for input or loops."""
DEFAULT_SERVE_TIMEOUT_S = 120.0
"""How long a started server has to accept a connection: a server that loads a model first takes
tens of seconds."""
INDEX_OUTPUT_CAP = 64 * 1024 * 1024
"""What an index command may print on stdout before it is stopped: progress, never an answer."""
STOP_GRACE_S = 10.0
"""After SIGTERM, how long a server has to exit before its process group is killed."""
POLL_S = 0.1


@dataclass(frozen=True, slots=True)
class SidePrograms:
    """The per-side settings, as the user wrote them (recorded in the fingerprint)."""

    index_command: str | None = None
    index_timeout_s: float = DEFAULT_INDEX_TIMEOUT_S
    serve_command: str | None = None
    serve_timeout_s: float = DEFAULT_SERVE_TIMEOUT_S
    address: str | None = None
    """The URL the retriever asks (`--http-url`, `--mcp-url`), whose host and port tell when the
    server answers; None: 127.0.0.1 and `{port}`."""


class Side:
    """One side's work folder, index and server; `close` undoes all of it and may be called twice."""

    def __init__(self, kb: Path, programs: SidePrograms, environment: Mapping[str, str],
                 withheld: Sequence[str], secrets: Sequence[str] = ()) -> None:
        if "{" in str(kb):
            raise InputError(
                f"the KB folder's path {str(kb)!r} holds a brace, which the templates would read as a placeholder",
                field="--kb-path", hint="run kb-eval from a folder whose path has no { or }",
            )
        self._programs = programs
        self._environment = dict(environment)
        self._withheld = withheld
        self._secrets = secrets
        """The values passed by name (`--command-env`): scrubbed from whatever the programs print."""
        self._work = Path(tempfile.mkdtemp(prefix="kb-eval-side-"))
        self._server: subprocess.Popen[bytes] | None = None
        self._server_log: Path | None = None
        port = free_port() if programs.serve_command is not None else None
        self.slots = SideSlots(kb.resolve(), self._work, port)

    def open(self) -> SideSlots:
        """Build the index and start the server (each when asked for); the slots to fill."""
        try:
            if self._programs.index_command is not None:
                self._index(self._programs.index_command)
            if self._programs.serve_command is not None:
                self._serve(self._programs.serve_command)
        except BaseException:
            self.close()
            raise
        return self.slots

    def _argv(self, template: str, flag: str) -> list[str]:
        try:
            argv = shlex.split(template)
        except ValueError as exc:
            raise InputError(f"{flag} cannot be split into arguments: {exc}", field=flag,
                             hint="balance the quotes; it is split like a shell line but never run by a shell") from None
        if not argv:
            raise InputError(f"{flag} is empty", field=flag)
        argv = [fill_side(argument, self.slots, flag) for argument in argv]
        program = shutil.which(argv[0], path=self._environment.get("PATH"))
        if program is None:
            raise InputError(f"{flag} program {argv[0]!r} is not found or not executable", field=flag,
                             hint="install it, or give its full path")
        return [program, *argv[1:]]

    def _index(self, template: str) -> None:
        flag = "--index-command"
        argv = self._argv(template, flag)
        finished = run_bounded(argv, self._environment, self._programs.index_timeout_s, INDEX_OUTPUT_CAP)
        where = f"{flag} on {self.slots.kb}"
        if finished.timed_out:
            raise InputError(f"{where}: not finished within {self._programs.index_timeout_s:g} s (killed)",
                             field=flag, hint="raise --index-timeout, or check that it does not wait for input")
        if finished.overflowed:
            raise InputError(f"{where}: printed more than {INDEX_OUTPUT_CAP} bytes on stdout; stopped it",
                             field=flag, hint="send its progress to a file or to stderr")
        if finished.returncode != 0:
            raise InputError(
                f"{where}: {exit_words(finished.returncode)}; its stderr ends with:",
                field=flag, said=tuple(stderr_tail(finished.stderr_tail, finished.stderr_bytes, self._secrets).splitlines()),
                hint=withheld_hint(finished.stderr_tail, self._withheld)
                or "run it by hand on the KB folder to see why it fails",
            )

    def _serve(self, template: str) -> None:
        flag = "--serve-command"
        argv = self._argv(template, flag)
        self._server_log = self._work / ".serve-stderr"
        with open(self._server_log, "wb") as log:
            # Its own session, so stopping it stops what it started too.
            self._server = subprocess.Popen(
                argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=log,
                start_new_session=True, env=self._environment,
            )
        host, port = self._address()
        deadline = time.monotonic() + self._programs.serve_timeout_s
        while True:
            code = self._server.poll()
            if code is not None:
                said = self._log_tail()
                raise InputError(
                    f"{flag} ended ({exit_words(code)}) before it answered on {host}:{port}; its stderr ends with:",
                    field=flag, said=tuple(said.splitlines()), hint=withheld_hint(said.encode(), self._withheld)
                    or "run it by hand to see why it stops; it must stay up and listen on {port}",
                )
            if _accepts(host, port):
                return
            if time.monotonic() >= deadline:
                raise InputError(
                    f"{flag} did not answer on {host}:{port} within {self._programs.serve_timeout_s:g} s; "
                    "its stderr ends with:",
                    field=flag, said=tuple(self._log_tail().splitlines()), hint="raise --serve-timeout, or make it listen on {port} (and the URL use {port})",
                )
            time.sleep(POLL_S)

    def _address(self) -> tuple[str, int]:
        if self._programs.address is not None:
            parsed = urllib.parse.urlsplit(fill_side(self._programs.address, self.slots, "--http-url"))
            default = 443 if parsed.scheme == "https" else 80
            try:
                return parsed.hostname or "127.0.0.1", parsed.port or default
            except ValueError:
                pass  # a malformed port: the retriever refuses the URL in its own words
        assert self.slots.port is not None  # a server is started only with a port
        return "127.0.0.1", self.slots.port

    def _log_tail(self) -> str:
        if self._server_log is None:
            return "(nothing on stderr)"
        try:
            with open(self._server_log, "rb") as log:
                size = log.seek(0, os.SEEK_END)
                log.seek(max(0, size - STDERR_TAIL_BYTES))
                data = log.read()
        except OSError:
            return "(nothing on stderr)"
        return stderr_tail(data, size, self._secrets)

    def close(self) -> None:
        server, self._server = self._server, None
        if server is not None:
            stop_group(server)
        shutil.rmtree(self._work, ignore_errors=True)


def free_port() -> int:
    """A loopback port nothing listens on now (the server binds it a moment later)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _accepts(host: str, port: int) -> bool:
    try:
        with socket.create_connection((host, port), timeout=POLL_S * 5):
            return True
    except OSError:
        return False


def stop_group(process: subprocess.Popen[bytes]) -> None:
    """SIGTERM to the process group, SIGKILL after STOP_GRACE_S; never an unbounded wait."""
    for sent, wait in ((signal.SIGTERM, STOP_GRACE_S), (signal.SIGKILL, STOP_GRACE_S)):
        try:
            os.killpg(process.pid, sent)
        except (ProcessLookupError, PermissionError):
            pass
        try:
            process.wait(timeout=wait)
        except subprocess.TimeoutExpired:
            continue
        # The leader is gone; members of its group may live on: they get the same signal once more.
        try:
            os.killpg(process.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        return


def withheld(passed: Mapping[str, str], environ: Mapping[str, str]) -> tuple[str, ...]:
    """The names of kb-eval's variables a program does not get."""
    return tuple(name for name in environ if name not in passed)
