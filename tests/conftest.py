"""Shared fixtures: build small real KBs on disk and run the CLI in-process."""

from __future__ import annotations

import io
import json
import textwrap
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from scanner.cli import main

REPO = Path(__file__).resolve().parent.parent


@dataclass
class CliResult:
    code: int
    stdout: str
    stderr: str

    def json(self) -> Any:
        return json.loads(self.stdout)


def run_cli(*args: str | Path) -> CliResult:
    out, err = io.StringIO(), io.StringIO()
    code = main([str(a) for a in args], stdout=out, stderr=err)
    return CliResult(int(code), out.getvalue(), err.getvalue())


def write_tree(root: Path, files: dict[str, str | bytes]) -> Path:
    for relative, content in files.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(textwrap.dedent(content).lstrip("\n"), encoding="utf-8")
    return root


@pytest.fixture
def make_kb(tmp_path: Path) -> Callable[[dict[str, str | bytes]], Path]:
    def make(files: dict[str, str | bytes]) -> Path:
        return write_tree(tmp_path / "kb", files)

    return make


def golden_yaml(*queries: tuple[str, str, list[str]]) -> str:
    """queries: (id, text, expected paths)."""
    lines = ["queries:"]
    for query_id, text, expected in queries:
        lines.append(f"  - id: {json.dumps(query_id)}")
        lines.append(f"    query: {json.dumps(text)}")
        lines.append("    expected:")
        lines.extend(f"      - path: {json.dumps(path)}" for path in expected)
    return "\n".join(lines) + "\n"
