"""Real MCP servers that search a folder of Markdown, for the MCP retriever's tests and recipes:
qmd (npm @tobilu/qmd: BM25 over SQLite FTS5, MCP over stdio and Streamable HTTP) under the Node.js 22
it needs (npm `node`, whose package carries the binary), both installed once into the shared npm
cache; the reference filesystem server (npm, the protocol before 2026-07-28); basic-memory (PyPI),
when it is on PATH.

Without them the tests skip, unless KB_EVAL_REQUIRE_MCP=1 (set by .ci/run, which installs qmd),
where a missing qmd is a failure. basic-memory needs Python 3.12 or later, which Debian 12, PyPI and
npm do not provide here: its tests run where `basic-memory` is installed, and fail for its absence
only under KB_EVAL_REQUIRE_BASIC_MEMORY=1.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import NoReturn

import pytest

from tests.support.npm import NpmUnavailable, npm_package

REQUIRE_MCP_ENV = "KB_EVAL_REQUIRE_MCP"
REQUIRE_BASIC_MEMORY_ENV = "KB_EVAL_REQUIRE_BASIC_MEMORY"
NODE_VERSION = "22.23.3"
"""qmd 2.8 declares Node.js >= 22 (its better-sqlite3 13 crashes under Debian 12's Node.js 20)."""
QMD_VERSION = "2.8.3"
FILESYSTEM_VERSION = "2026.8.31"
"""@modelcontextprotocol/server-filesystem, built on the TypeScript SDK 1.x: a server of the protocol
before 2026-07-28, which knows no `server/discover` and is reached through the `initialize` handshake."""


def missing(what: str, require: str = REQUIRE_MCP_ENV) -> NoReturn:
    where = "(.ci/run installs it)" if require == REQUIRE_MCP_ENV else "(install it where Python 3.12+ runs)"
    if os.environ.get(require) == "1":
        pytest.fail(f"{what} is not installed, and {require}=1 says it must be {where}")
    pytest.skip(f"{what} is not installed {where}")


def qmd_path() -> str:
    """A PATH whose first entries are Node.js 22 and qmd (qmd's launcher runs the first `node`)."""
    try:
        node = npm_package("node", NODE_VERSION)
        # Its install scripts would build llama.cpp where no prebuilt binary fits; BM25 search needs
        # none of them (better-sqlite3 13 ships its prebuilt binding in the package).
        qmd = npm_package("@tobilu/qmd", QMD_VERSION, args=["--ignore-scripts"])
    except NpmUnavailable as unavailable:
        missing(f"qmd {QMD_VERSION} under Node.js {NODE_VERSION} ({unavailable})")
    bins = [node / "node_modules" / ".bin", qmd / "node_modules" / ".bin"]
    if not all((folder / name).exists() for folder, name in zip(bins, ("node", "qmd"), strict=True)):
        missing(f"qmd {QMD_VERSION} under Node.js {NODE_VERSION} (installed without its programs)")
    return os.pathsep.join([*(str(folder) for folder in bins), os.environ.get("PATH", "")])


def filesystem_server() -> str:
    """The reference filesystem server's program (Node.js 20 runs it)."""
    try:
        folder = npm_package("@modelcontextprotocol/server-filesystem", FILESYSTEM_VERSION)
    except NpmUnavailable as unavailable:
        missing(f"@modelcontextprotocol/server-filesystem {FILESYSTEM_VERSION} ({unavailable})")
    return str(folder / "node_modules" / ".bin" / "mcp-server-filesystem")


def basic_memory() -> str:
    """The basic-memory program on PATH."""
    program = shutil.which("basic-memory")
    if program is None:
        missing("basic-memory (PyPI; needs Python 3.12+)", REQUIRE_BASIC_MEMORY_ENV)
    return program


def isolated_home(work: Path) -> Path:
    """A HOME for a server that keeps its state under ~ (qmd: ~/.cache/qmd, ~/.config/qmd)."""
    home = work / "home"
    home.mkdir(exist_ok=True)
    return home
