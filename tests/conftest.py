"""Shared fixtures: build small real KBs on disk and run the CLI in-process."""

from __future__ import annotations

import io
import json
import textwrap
from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import Any

import pytest
from hypothesis import settings

from scanner.cli.main import main

REPO = Path(__file__).resolve().parent.parent


def pytest_configure(config: pytest.Config) -> None:
    """The quick subset (-m "not slow") gives the same verdict on every run: Hypothesis draws each
    property test's examples from a seed of the test's own, with no database of earlier failures.
    The full suite keeps drawing new examples, which is where a new counterexample is found."""
    if "not slow" in (config.option.markexpr or ""):
        settings.register_profile("quick", derandomize=True, database=None)
        settings.load_profile("quick")


class Launch(Enum):
    """How a test starts entrypoint.py: in this process (fast) or as its own process (as the runner does)."""

    IN_PROCESS = "in-process"
    SUBPROCESS = "subprocess"


@pytest.fixture(
    params=[Launch.IN_PROCESS, pytest.param(Launch.SUBPROCESS, marks=pytest.mark.slow)],
    ids=lambda launch: launch.value,
)
def launch(request: pytest.FixtureRequest) -> Launch:
    """Each Action-mode case runs both ways: in process in the quick subset (-m "not slow"), where it
    costs no interpreter start-up and import (~1 s each on the CI machine), and as a real process in
    the full suite, which alone sees what differs between the two (interpreter flags, stdio encoding,
    module state left by an earlier run)."""
    launch: Launch = request.param
    return launch


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
