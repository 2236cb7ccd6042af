"""Real MCP servers that search a folder of Markdown, for the MCP retriever's tests and recipes:
qmd (npm @tobilu/qmd: BM25 over SQLite FTS5, MCP over stdio and Streamable HTTP) under the Node.js 22
it needs (npm `node`, whose package carries the binary), both installed once into the shared npm
cache; the reference filesystem server (npm, the protocol before 2026-07-28); basic-memory (PyPI),
which needs Python 3.12+: .ci/run installs it into a virtual environment of pyenv's 3.12 and names
that environment's bin folder in KB_EVAL_BASIC_MEMORY_BIN (else `basic-memory` on PATH is used).

Without them the tests skip, unless KB_EVAL_REQUIRE_MCP=1 (set by .ci/run, which installs qmd),
where a missing qmd is a failure, and KB_EVAL_REQUIRE_BASIC_MEMORY=1 (set by .ci/run when its
install succeeded), where a missing basic-memory is.
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
BASIC_MEMORY_BIN_ENV = "KB_EVAL_BASIC_MEMORY_BIN"
BASIC_MEMORY_VERSION = "0.24.1"
"""The version .ci/run installs; its tool, arguments and answer shape are what the recipe reads."""
NODE_VERSION = "22.23.3"
"""qmd 2.8 declares Node.js >= 22 (its better-sqlite3 13 crashes under Debian 12's Node.js 20)."""
QMD_VERSION = "2.8.3"
FILESYSTEM_VERSION = "2026.8.31"
"""@modelcontextprotocol/server-filesystem, built on the TypeScript SDK 1.x: a server of the protocol
before 2026-07-28, which knows no `server/discover` and is reached through the `initialize` handshake."""


def missing(what: str, require: str = REQUIRE_MCP_ENV) -> NoReturn:
    where = "(.ci/run installs it)" if require == REQUIRE_MCP_ENV else "(.ci/run installs it where pyenv's 3.12 is)"
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


def basic_memory_path() -> str:
    """A PATH on which `basic-memory` is found: its environment's bin folder last, so that folder's
    `python` never shadows the tests' own."""
    path = os.environ.get("PATH", "")
    folder = os.environ.get(BASIC_MEMORY_BIN_ENV)
    if folder:
        path = os.pathsep.join([path, folder])
    if shutil.which("basic-memory", path=path) is None:
        missing(f"basic-memory {BASIC_MEMORY_VERSION} (PyPI; needs Python 3.12+)", REQUIRE_BASIC_MEMORY_ENV)
    return path


def isolated_home(work: Path) -> Path:
    """A HOME for a server that keeps its state under ~ (qmd: ~/.cache/qmd, ~/.config/qmd)."""
    home = work / "home"
    home.mkdir(exist_ok=True)
    return home
