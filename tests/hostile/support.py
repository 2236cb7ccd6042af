"""What every hostile case checks besides its own expectation.

Whatever the input, a run must end with a deliberate exit code and no
traceback, no line of stdout or stderr may be a workflow command to the GitHub
runner, and a report that is printed must match the schema.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from scanner.foundation.errors import ExitCode
from scanner.report.document import validation_errors
from tests.conftest import CliResult, run_cli

# The runner runs a line as a command when it starts with `::` after whitespace, and finds the
# legacy `##[cmd]` form anywhere in a line (docs/runner-contract.md#annotations). str.splitlines
# splits on more characters than the runner does (\r and \n), so this check is the stricter one.
COMMAND_LINE = re.compile(r"^\s*::")
LEGACY_COMMAND = "##["

GOLDEN = 'queries:\n  - id: q1\n    query: "alpha beta"\n    expected: [a.md]\n'
"""A golden file whose one query finds `a.md` (see ANSWER)."""
ANSWER = "# Alpha\nalpha beta\n"


def command_lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if COMMAND_LINE.match(line) or LEGACY_COMMAND in line]


def run(kb: Path, *args: str | Path) -> CliResult:
    result = run_cli("--kb-path", kb, *args)
    assert result.code in (ExitCode.OK, ExitCode.BAD_INPUT), result.stderr
    assert "Traceback" not in result.stderr and "internal error" not in result.stderr
    assert command_lines(result.stdout) == [] and command_lines(result.stderr) == []
    return result


def run_json(kb: Path, *args: str | Path) -> tuple[CliResult, dict[str, Any]]:
    """A run that must succeed: exit 0 and a schema-valid report."""
    result = run(kb, "--format", "json", *args)
    assert result.code == ExitCode.OK, result.stderr
    report = result.json()
    assert validation_errors(report) == []
    return result, report


def refused(kb: Path, *args: str | Path) -> str:
    """A run that must stop with exit 2 and nothing on stdout; returns stderr."""
    result = run(kb, "--format", "json", *args)
    assert result.code == ExitCode.BAD_INPUT, result.stdout + result.stderr
    assert result.stdout == ""
    return result.stderr


def warnings(report: dict[str, Any]) -> list[tuple[str, str | None]]:
    """(code, file) of every warning, golden-file warnings left out (they name a temp path)."""
    return [(w["code"], w["file"]) for w in report["warnings"] if w["code"] != "expected-not-in-corpus"]


def documents(report: dict[str, Any]) -> int:
    return int(report["corpus"]["documents"])


def top_paths(report: dict[str, Any], query: int = 0) -> list[str]:
    return [hit["path"] for hit in report["per_query"][query]["top_k"]]
