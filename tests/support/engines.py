"""Real search engines for the recipe tests: the recipes read from docs/retrievers.md, the engines
started and stopped here (loopback only, every wait bounded).

Without an engine the tests skip, unless KB_EVAL_REQUIRE_ENGINES=1 (set by .ci/run, which installs
them), where a missing engine is a failure: CI never passes by skipping what it should have run.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
import uuid
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import IO, NoReturn

import pytest

from tests.support.npm import NpmUnavailable, npm_package

REPO = Path(__file__).resolve().parents[2]
RETRIEVERS_DOC = REPO / "docs" / "retrievers.md"
PULL_REQUEST_DOC = REPO / "docs" / "pull-request-loop.md"
RECIPES = REPO / "docs" / "recipes"
REQUIRE_ENGINES_ENV = "KB_EVAL_REQUIRE_ENGINES"
POSTGRAPHILE_VERSION = "4.14.1"
"""PostGraphile 4's last release line with a one-command CLI (`postgraphile -c ...`)."""
OMEGA = Path("/usr/lib/cgi-bin/omega/omega")
"""Where Debian's xapian-omega installs the CGI program."""
STEP_TIMEOUT_S = 120.0
"""Any one step (an index build, a kb-eval run); the examples take about a second."""
START_TIMEOUT_S = 60.0
"""A server to answer its first request (PostGraphile reads the schema first)."""

_RECIPE = re.compile(r"<!-- recipe: ([a-z0-9-]+) -->\n```sh\n(.*?)\n```", re.DOTALL)


def recipes() -> dict[str, str]:
    """Every recipe block of docs/retrievers.md and docs/pull-request-loop.md, by the name in the
    comment before it."""
    return {
        name: block for doc in (RETRIEVERS_DOC, PULL_REQUEST_DOC)
        for name, block in _RECIPE.findall(doc.read_text(encoding="utf-8"))
    }


def missing(what: str) -> NoReturn:
    if os.environ.get(REQUIRE_ENGINES_ENV) == "1":
        pytest.fail(f"{what} is not installed, and {REQUIRE_ENGINES_ENV}=1 says it must be (.ci/run installs it)")
    pytest.skip(f"{what} is not installed (.ci/run installs it)")


def recipe_environment(kb: Path, work: Path, **extra: str) -> dict[str, str]:
    """What a recipe block sees: this interpreter's kb-eval first on PATH, and its variables."""
    environ = dict(os.environ)
    environ["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), environ.get("PATH", "")])
    environ.update({"KB": str(kb), "WORK": str(work), "RECIPES": str(RECIPES), **extra})
    return environ


def run_recipe(name: str, environ: Mapping[str, str], timeout_s: float = STEP_TIMEOUT_S) -> subprocess.CompletedProcess[str]:
    """The block, exactly as the docs write it, in bash with errors stopping it."""
    script = recipes()[name]
    return subprocess.run(
        ["bash", "-euo", "pipefail", "-c", script], env=dict(environ), capture_output=True, text=True,
        timeout=timeout_s, check=False,
    )


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


# --- PostgreSQL ---------------------------------------------------------------------------------


def postgres_bin() -> Path:
    found = sorted(Path("/usr/lib/postgresql").glob("*/bin/initdb"))
    if not found:
        missing("PostgreSQL (Debian's postgresql)")
    return found[-1].parent


@dataclass(frozen=True)
class Postgres:
    """A throwaway cluster on 127.0.0.1, trust authentication, one database."""

    host: str
    port: int
    user: str
    database: str

    def environment(self) -> dict[str, str]:
        return {"PGHOST": self.host, "PGPORT": str(self.port), "PGUSER": self.user, "PGDATABASE": self.database}


POSTGRES_SERVER_ENV = "KB_EVAL_POSTGRES"
"""`postgres://USER@127.0.0.1:PORT` of a server .ci/run started: each test then makes its own
database there (and drops it). Without it, each test starts and stops its own cluster."""


@contextlib.contextmanager
def postgres() -> Iterator[Postgres]:
    """A database for one test, dropped or stopped after it, whatever happens."""
    given = os.environ.get(POSTGRES_SERVER_ENV)
    if given:
        with _database_on(given) as server:
            yield server
    else:
        with _own_cluster() as server:
            yield server


@contextlib.contextmanager
def _database_on(url: str) -> Iterator[Postgres]:
    parts = urllib.parse.urlsplit(url)
    if parts.hostname not in ("127.0.0.1", "localhost", "::1") or parts.port is None:
        raise AssertionError(f"{POSTGRES_SERVER_ENV} must be a loopback server with a port, not {url!r}")
    name = f"kb_{uuid.uuid4().hex[:12]}"
    server = Postgres(parts.hostname, parts.port, parts.username or "postgres", name)
    common = ["-h", server.host, "-p", str(server.port), "-U", server.user]
    subprocess.run(["createdb", *common, name], check=True, capture_output=True, timeout=STEP_TIMEOUT_S)
    try:
        yield server
    finally:
        subprocess.run(["dropdb", "--force", *common, name], check=False, capture_output=True, timeout=STEP_TIMEOUT_S)


@contextlib.contextmanager
def _own_cluster() -> Iterator[Postgres]:
    """Started for the test and stopped after it. PostgreSQL refuses to run as root, so as root the
    cluster belongs to the `postgres` user Debian's package creates."""
    binaries = postgres_bin()
    as_user: list[str] = []
    folder = Path(tempfile.mkdtemp(prefix="kb-eval-pg-"))
    if os.geteuid() == 0:
        as_user = ["runuser", "-u", "postgres", "--"]
        shutil.chown(folder, "postgres")
    data = folder / "data"
    port = free_port()
    log = folder / "server.log"

    def run(*argv: str, timeout: float = STEP_TIMEOUT_S) -> None:
        subprocess.run([*as_user, *argv], check=True, capture_output=True, timeout=timeout)

    try:
        run(str(binaries / "initdb"), "-D", str(data), "-A", "trust", "-U", "kbeval", "--no-sync")
        run(
            str(binaries / "pg_ctl"), "-D", str(data), "-l", str(log), "-w", "-t", str(int(START_TIMEOUT_S)),
            "-o", f"-h 127.0.0.1 -p {port} -k {folder} -F", "start",
        )
        try:
            subprocess.run(
                [str(binaries / "createdb"), "-h", "127.0.0.1", "-p", str(port), "-U", "kbeval", "kb"],
                check=True, capture_output=True, timeout=STEP_TIMEOUT_S,
            )
            yield Postgres("127.0.0.1", port, "kbeval", "kb")
        finally:
            run(str(binaries / "pg_ctl"), "-D", str(data), "-m", "immediate", "-w", "-t", "30", "stop")
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def psql_rows(server: Postgres, sql: str, variables: Mapping[str, str]) -> list[list[str]]:
    """Rows of one query, its values bound with psql's `:'name'` (never pasted into the SQL)."""
    argv = ["psql", "-X", "-q", "-A", "-t", "-F", "\t", "-v", "ON_ERROR_STOP=1"]
    for name, value in variables.items():
        argv += ["-v", f"{name}={value}"]
    done = subprocess.run(
        argv, input=sql, env={**os.environ, **server.environment()}, capture_output=True, text=True,
        timeout=STEP_TIMEOUT_S, check=True,
    )
    return [line.split("\t") for line in done.stdout.splitlines() if line]


# --- PostGraphile (npm) ---------------------------------------------------------------------------


def postgraphile_bin() -> Path:
    """node_modules/.bin of PostGraphile at the pinned version, installed once per version."""
    try:
        return npm_package("postgraphile", POSTGRAPHILE_VERSION) / "node_modules" / ".bin"
    except NpmUnavailable as missing_part:
        missing(str(missing_part))


@contextlib.contextmanager
def serving(name: str, environ: Mapping[str, str], ready_url: str, ready_body: bytes) -> Iterator[None]:
    """A recipe block that starts a server, run until the test ends; ready once `ready_url`
    answers a POST of `ready_body` with HTTP 200 (bounded by START_TIMEOUT_S)."""
    with tempfile.TemporaryFile() as log:
        yield from _serve(name, environ, ready_url, ready_body, log)


def _serve(name: str, environ: Mapping[str, str], ready_url: str, ready_body: bytes, log: IO[bytes]) -> Iterator[None]:
    process = subprocess.Popen(
        ["bash", "-euo", "pipefail", "-c", "exec " + recipes()[name]], env=dict(environ),
        stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
    )
    try:
        deadline = time.monotonic() + START_TIMEOUT_S
        while True:
            if process.poll() is not None:
                log.seek(0)
                raise AssertionError(f"{name} exited with {process.returncode}: {log.read()[-2000:]!r}")
            try:
                request = urllib.request.Request(
                    ready_url, data=ready_body, headers={"Content-Type": "application/json"}, method="POST"
                )
                with urllib.request.urlopen(request, timeout=5) as answer:
                    if answer.status == 200:
                        break
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                pass
            if time.monotonic() > deadline:
                raise AssertionError(f"{name} did not answer within {START_TIMEOUT_S} s")
            time.sleep(0.3)
        yield
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, 15)
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, 9)
            process.wait(timeout=10)


def post_json(url: str, body: object) -> object:
    request = urllib.request.Request(
        url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"}, method="POST"
    )
    with urllib.request.urlopen(request, timeout=30) as answer:
        return json.loads(answer.read())


# --- Xapian ----------------------------------------------------------------------------------------


def xapian_tools() -> None:
    if shutil.which("omindex") is None or not OMEGA.is_file():
        missing("Xapian Omega (Debian's xapian-omega)")
    if shutil.which("quest") is None:
        missing("Xapian's quest (Debian's xapian-tools)")


def quest_paths(database: Path, query: str, limit: int) -> list[str]:
    """Xapian's own command-line search of the same database (English stemming, OR, BM25, as
    Omega's defaults): the `url=` of each hit in rank order."""
    done = subprocess.run(
        ["quest", "-d", str(database), "-m", str(limit), "-o", "or", "--", query],
        capture_output=True, text=True, timeout=STEP_TIMEOUT_S, check=True,
    )
    return [line.removeprefix("url=") for line in done.stdout.splitlines() if line.startswith("url=")]
