"""The heavy libraries only some runs need are imported by those runs, not by every run.

requests (an HTTP retriever, a PR comment), dulwich (a git revision) and jsonschema (validation, after
the evaluation) were a third of a run's memory at start, and the peak of a small KB's run is reached
while its index is analysed: imported at start, they are carried through it."""

from __future__ import annotations

import subprocess
import sys

HEAVY = ("requests", "urllib3", "dulwich", "jsonschema", "mcp", "pydantic", "anyio")


def loaded_after(code: str) -> set[str]:
    probe = f"import sys\n{code}\nprint(' '.join(m for m in {HEAVY!r} if m in sys.modules))"
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, check=True)
    return set(result.stdout.split())


def test_reading_the_settings_and_evaluating_import_none_of_them() -> None:
    assert loaded_after("import scanner.cli.main, scanner.action.mode, scanner.pipeline.run, scanner.pipeline.evaluate") == set()


def test_each_is_imported_by_the_run_that_needs_it() -> None:
    build_http = (
        "from scanner.cli.main import parse_cli\nfrom scanner.settings.retriever import build_retriever\n"
        "build_retriever(parse_cli(['--http-url', 'http://127.0.0.1:9/search']), None, [])"
    )
    assert {"requests", "urllib3"} <= loaded_after(build_http)
    assert "dulwich" in loaded_after("import scanner.git.repository")
    build_mcp = (
        "from scanner.cli.main import parse_cli\nfrom scanner.settings.retriever import build_retriever\n"
        "build_retriever(parse_cli(['--mcp-url', 'http://127.0.0.1:9/mcp']), None, [])"
    )
    assert {"mcp", "pydantic", "anyio"} <= loaded_after(build_mcp)
    assert "jsonschema" in loaded_after("from scanner.report.document import validation_errors\nvalidation_errors({})")
