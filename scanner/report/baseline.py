"""A baseline: a whole JSON report saved on purpose (`--save-baseline`) and compared with later
(`--baseline`). Unlike the history, a baseline that cannot be read stops the run: it was chosen on
purpose, so comparing against nothing instead would hide the mistake."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from scanner.evaluation.records import RunRecord
from scanner.foundation.errors import InputError
from scanner.foundation.files import write_atomically
from scanner.foundation.strict_json import NotJson, loads_strict
from scanner.report.history import MAX_HISTORY_BYTES, read_report_file
from scanner.report.read import run_from_document, run_record_problems
from scanner.report.serialise import serialise

MAX_BASELINE_PROBLEMS = 5
"""Schema problems named when a baseline is refused; a lazy validator stops there."""


def save_baseline(path: Path, document: Mapping[str, Any], cap_bytes: int = MAX_HISTORY_BYTES) -> int:
    """Write this run's report as a frozen baseline (`--save-baseline FILE`), atomically.

    The file is a whole JSON report, so `--baseline FILE` reads it like any other
    report artifact. Returns the bytes written.
    """
    data = serialise(document).encode("utf-8")
    if len(data) > cap_bytes:
        # Never write a baseline that --baseline would then refuse.
        raise InputError(
            f"the report is {len(data)} bytes, over the {cap_bytes}-byte cap for a baseline",
            file=str(path),
            hint="lower --limit so each query records fewer hits",
        )
    write_atomically(path, data, "baseline")
    return len(data)


def read_baseline(
    path: Path,
    validate: Callable[[Any], Iterable[str]],
    cap_bytes: int = MAX_HISTORY_BYTES,
) -> RunRecord:
    """Read a previous JSON report (`--baseline FILE`) and return its run record.

    `validate` checks the parsed report against the report JSON Schema and
    returns the problems found (empty when valid). Anything unreadable, not
    JSON, not a valid report, or with metrics outside [0, 1] raises InputError
    (exit 2): unlike the history, a baseline was chosen on purpose, so comparing
    against nothing instead would hide the mistake.
    """
    return read_report(path, validate, "baseline", "check the --baseline path (in CI: did the artifact download step run?)",
                       cap_bytes)


def read_report(
    path: Path,
    validate: Callable[[Any], Iterable[str]],
    what: str,
    missing_hint: str,
    cap_bytes: int = MAX_HISTORY_BYTES,
) -> RunRecord:
    """A JSON report kb-eval wrote, chosen by the user (a baseline, a run to compare), as its run
    record; InputError naming `what` when it is missing, not JSON or not a valid report."""
    data = read_report_file(path, what, cap_bytes, allow_links=True)
    if data is None:
        raise InputError(f"the {what} file does not exist", file=str(path), hint=missing_hint)
    try:
        document = loads_strict(data)
    except NotJson as bad:
        raise InputError(
            f"the {what} is not valid JSON: {bad.reason}",
            file=str(path),
            line=bad.line,
            hint="pass the JSON report of an earlier kb-eval run (--format json output)",
        ) from None
    # Only the first few are taken: a lazy validator stops there instead of listing (and sorting)
    # every error of a crafted file.
    problems = list(itertools.islice(validate(document), MAX_BASELINE_PROBLEMS))
    if not problems:
        # The schema cannot say "finite and in [0, 1]" for every number a crafted file holds.
        problems = run_record_problems(document)
    if problems or not isinstance(document, dict):
        raise InputError(
            f"the {what} is not a valid kb-eval report: " + "; ".join(problems[:MAX_BASELINE_PROBLEMS]),
            file=str(path),
            hint="pass the JSON report of an earlier kb-eval run (--format json output)",
        )
    return run_from_document(document)
