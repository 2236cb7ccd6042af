"""The run history file: safe reading, pruned atomic writing (a baseline is report/baseline.py).

The history is the only place earlier runs live, so the rule that decides
everything here is: never write over a history that could not be read.

- A history that cannot be *read* (a symbolic link, a hard link, not a regular
  file, over the size cap, permission denied) raises `InputError` (exit 2).
  The pipeline reads the history before evaluating, so the run stops before
  anything is saved over it.
- Content that kb-eval did not write is refused the same way (InputError,
  exit 2) and never replaced: another tool's JSON object, a top-level array
  or scalar, a different `format` value, a newer schema version, or bytes
  that are not JSON at all (ADR 0002). Only an empty file, or a file that
  starts the way kb-eval writes one (`{"format":"kb-eval-history"`) but is
  damaged or of an older shape, is recorded as a warning and replaced by a
  fresh history: there is nothing in it that anyone else could lose.
- A run record inside a good history that cannot be compared (e.g. a metric
  of 1e400) is dropped with a warning; the other runs are kept.
- Saving keeps the newest runs: at most `max_runs`, and no more than fit under
  the size cap, because a history the next read would refuse must never be
  written. The write is atomic (temp file in the same folder, fsync, rename),
  so a killed or concurrent writer leaves either the old or the new file,
  never a truncated one. `write_history` holds an exclusive lock (flock on
  `.<name>.lock` beside the history) from re-reading the file to renaming the
  new one into place; a run saved meanwhile by a concurrent kb-eval is kept,
  so concurrent runs on one history serialise and none loses another's run.

File format (`HISTORY_FORMAT`, version `HISTORY_SCHEMA_VERSION`), compact JSON:

    {"format": "kb-eval-history", "schema_version": 1, "runs": [<run record>, ...]}

with runs newest first; a run record is described in `scanner.report.read`.
"""

from __future__ import annotations

import errno
import fcntl
import json
import os
import stat
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from scanner.evaluation.records import RunRecord
from scanner.foundation.diagnostics import Diagnostic, DiagnosticCode
from scanner.foundation.errors import InputError
from scanner.foundation.files import FileRefused, LinkPolicy, Refusal, check_replaceable, read_capped, write_atomically
from scanner.foundation.strict_json import NotJson, json_type, loads_strict
from scanner.report.read import run_from_document, run_record_problems
from scanner.report.serialise import serialise

HISTORY_FORMAT = "kb-eval-history"
"""Marks the file as ours, so another tool's JSON is never mistaken for a history."""

HISTORY_SCHEMA_VERSION = 1

DEFAULT_HISTORY_SIZE = 10
"""Runs kept by default (`--history-size`)."""

MAX_HISTORY_BYTES = 32 * 1024 * 1024
"""Largest history (and baseline) file read or written: 32 MiB (33,554,432 bytes).

Measured with `python bench/history_size.py 100 300 500 1000 2000` (synthetic
runs, top_k 10, paths of ~35 and headings of ~30 characters, k = 1, 5, 10,
compact JSON as written here): 1,710 bytes per query per run, so a 10-run
history is 5.1 MB at 300 queries, 8.6 MB at 500 and 17.1 MB at 1,000; 32 MiB
holds 10 runs of about 1,950 queries. Reading a 32.5 MB history (1,900 queries
x 10 runs) took 0.76 s with a peak RSS of 186 MB. A bigger file was not
written by kb-eval, which prunes to fit."""

MAX_HISTORY_RUNS = 1000
"""Runs read from a history (the newest; the rest are left out with one warning) and the largest
--history-size. Each run is checked before use, and a 32 MiB file of tiny invalid runs would
otherwise be ~1.5 million checks and as many warnings."""

DETAILED_DROP_WARNINGS = 3
"""Dropped runs described one by one; the rest are counted in one summary warning."""

_OUR_HEAD = b'{"format":"kb-eval-history"'
"""How every history kb-eval writes begins (compact JSON, `format` first)."""

@dataclass(frozen=True, slots=True)
class HistoryRead:
    """What reading the history produced."""

    runs: tuple[RunRecord, ...]
    """Comparable run records, newest first; empty when the file was absent or started fresh."""
    documents: tuple[dict[str, Any], ...]
    """The same runs as read, for writing back unchanged (an older entry keeps what it recorded)."""
    warnings: tuple[Diagnostic, ...]
    """Unparsable content (code history-unparsable) or dropped runs (history-run-dropped);
    empty for a clean read. Add them to the run's Diagnostics."""


def read_history(path: Path, cap_bytes: int = MAX_HISTORY_BYTES) -> HistoryRead:
    """Read the history at `path`; see the module docstring for what is refused and what is forgiven.

    Raises InputError when the file exists but cannot be read safely.
    """
    data = read_report_file(path, "history", cap_bytes, allow_links=False)
    if data is None:
        return HistoryRead(runs=(), documents=(), warnings=())
    if not data.strip():
        return _fresh(path, "is empty")
    try:
        document = loads_strict(data)
    except NotJson as bad:
        if data.startswith(_OUR_HEAD):
            return _fresh(path, f"is damaged ({bad.reason})")
        raise _not_ours(path, f"is not JSON ({bad.reason})", bad.line) from None
    if not isinstance(document, dict):
        raise _not_ours(path, f"holds a JSON {json_type(document)}, not a kb-eval history object")
    if document.get("format") != HISTORY_FORMAT:
        if "format" in document:
            raise _not_ours(path, f'has "format": {json.dumps(document["format"])[:60]}, not "{HISTORY_FORMAT}"')
        # Valid JSON that some other tool wrote (`--history package.json`).
        raise _not_ours(path, f'is a JSON object without "format": "{HISTORY_FORMAT}": another tool\'s file')
    version = document.get("schema_version")
    if isinstance(version, int) and not isinstance(version, bool) and version > HISTORY_SCHEMA_VERSION:
        raise InputError(
            f"was written by a newer kb-eval (history schema_version {version}); left untouched",
            file=str(path), hint="upgrade kb-eval, or point --history at another file",
        )
    if version != HISTORY_SCHEMA_VERSION:
        return _fresh(
            path,
            f"has history schema_version {json.dumps(version)[:40]}, "
            f"this kb-eval reads version {HISTORY_SCHEMA_VERSION}",
        )
    runs = document.get("runs")
    if not isinstance(runs, list):
        return _fresh(path, 'has no "runs" list')

    kept: list[dict[str, Any]] = []
    warnings: list[Diagnostic] = []
    dropped = 0
    for index, run in enumerate(runs[:MAX_HISTORY_RUNS]):
        problems = run_record_problems(run)
        if not problems:
            kept.append(run)
            continue
        dropped += 1
        if dropped <= DETAILED_DROP_WARNINGS:
            warnings.append(
                Diagnostic(
                    DiagnosticCode.HISTORY_RUN_DROPPED,
                    f"history run #{index + 1} cannot be compared and was dropped: " + "; ".join(problems[:3]),
                    str(path),
                )
            )
    if dropped > DETAILED_DROP_WARNINGS:
        # One warning for the rest: 100,000 crafted runs must not become 100,000 warnings.
        warnings.append(
            Diagnostic(
                DiagnosticCode.HISTORY_RUN_DROPPED,
                f"{dropped - DETAILED_DROP_WARNINGS} more history runs cannot be compared and were dropped "
                f"({dropped} in all)",
                str(path),
            )
        )
    if len(runs) > MAX_HISTORY_RUNS:
        warnings.append(
            Diagnostic(
                DiagnosticCode.HISTORY_RUN_DROPPED,
                f"the history holds {len(runs)} runs; only the newest {MAX_HISTORY_RUNS} were read",
                str(path),
            )
        )
    return HistoryRead(
        runs=tuple(run_from_document(run) for run in kept), documents=tuple(kept), warnings=tuple(warnings)
    )


def _not_ours(path: Path, why: str, line: int | None = None) -> InputError:
    return InputError(
        f"{why}; kb-eval did not write this file and left it untouched",
        file=str(path),
        line=line,
        hint="point --history at a file kb-eval writes (or a new path), or delete this one to start a fresh history",
    )


def _fresh(path: Path, why: str) -> HistoryRead:
    warning = Diagnostic(
        DiagnosticCode.HISTORY_UNPARSABLE,
        f"the history file {why}; starting a fresh history (it will be replaced when this run is saved)",
        str(path),
    )
    return HistoryRead(runs=(), documents=(), warnings=(warning,))


@dataclass(frozen=True, slots=True)
class HistoryPlan:
    """What saving the history will write, decided before anything is written."""

    data: bytes
    kept: int
    """Runs written."""
    dropped_for_count: int
    """Oldest runs left out because of max_runs (expected, not warned about)."""
    dropped_for_size: int
    """Oldest runs left out so the file stays under the size cap (warned about)."""
    warnings: tuple[Diagnostic, ...]
    """history-pruned when runs were dropped for size; part of this run's warnings."""
    runs: tuple[Mapping[str, Any], ...] = ()
    """What was planned from: this run's entry, then the runs read (for re-planning under the lock)."""
    max_runs: int = DEFAULT_HISTORY_SIZE


def plan_history(
    path: Path,
    runs: Sequence[Mapping[str, Any]],
    max_runs: int = DEFAULT_HISTORY_SIZE,
    cap_bytes: int = MAX_HISTORY_BYTES,
) -> HistoryPlan:
    """The file for `runs` (newest first, this run's entry at index 0), pruned by count and size.

    Pure: the pipeline plans first, so the pruning warning is in the report that is validated
    before any file is written. Raises InputError when even the newest run alone does not fit
    under the cap.
    """
    if not runs:
        raise ValueError("plan_history needs at least the current run")
    records = runs[:max_runs]
    dropped_for_count = len(runs) - len(records)

    head = (
        json.dumps(
            {"format": HISTORY_FORMAT, "schema_version": HISTORY_SCHEMA_VERSION},
            separators=(",", ":"),
        )[:-1].encode()
        + b',"runs":['
    )
    tail = b"]}\n"
    # The same serialiser as every other file kb-eval writes (one line per entry, no newline).
    encoded = [serialise(record, compact=True).rstrip("\n").encode("utf-8") for record in records]
    # Size of the file keeping the first `count` runs, without re-serialising each time.
    size = len(head) + len(tail) + sum(len(text) for text in encoded) + len(encoded) - 1
    count = len(encoded)
    while size > cap_bytes and count > 1:
        count -= 1
        size -= len(encoded[count]) + 1
    if size > cap_bytes:
        raise InputError(
            f"this run alone is {size} bytes as a history entry, over the "
            f"{cap_bytes}-byte history cap, so it cannot be saved",
            file=str(path),
            hint="pass --no-history (and keep the JSON report as a --baseline instead), "
            "or lower --limit so each query records fewer hits",
        )
    warnings: list[Diagnostic] = []
    dropped_for_size = len(encoded) - count
    if dropped_for_size:
        warnings.append(
            Diagnostic(
                DiagnosticCode.HISTORY_PRUNED,
                f"the history would exceed {cap_bytes} bytes: kept the newest {count} of {len(encoded)} runs",
                str(path),
            )
        )
    data = head + b",".join(encoded[:count]) + tail
    return HistoryPlan(data, count, dropped_for_count, dropped_for_size, tuple(warnings), tuple(runs), max_runs)


def write_history(path: Path, plan: HistoryPlan, cap_bytes: int = MAX_HISTORY_BYTES) -> None:
    """Replace the history with `plan`, atomically, under the history's lock.

    The file is read again under the lock: when a concurrent kb-eval saved a run since this one
    read the history, the plan is made again from this run's entry and the runs there now, so
    that run is kept, not overwritten. (The pruning warning of that late plan is not in this
    run's report, which was built from the first plan.)"""
    with history_lock(path):
        # The pipeline read this path before the eval; reading it again also refuses a file that
        # became unreadable or foreign meanwhile, so it never loses its runs to this write.
        current = read_history(path, cap_bytes)
        if plan.runs and current.documents != tuple(plan.runs[1:]):
            plan = plan_history(path, [plan.runs[0], *current.documents], plan.max_runs, cap_bytes)
        replace_history(path, plan, cap_bytes)


def replace_history(path: Path, plan: HistoryPlan, cap_bytes: int = MAX_HISTORY_BYTES) -> None:
    """Write `plan` over the history at `path`, atomically, when what is there may be replaced
    (kb-eval's own history or nothing); without the lock and the merge, which `write_history` adds."""
    _check_safe_to_replace(path, "history", cap_bytes)
    write_atomically(path, plan.data, "history")


DEFAULT_HISTORY_NAME = ".kb-eval-history.json"
"""The history's name in the KB folder when no other is given (`<kb>/.kb-eval-history.json`)."""


def lock_path(path: Path) -> Path:
    """The lock file beside a history: `.<name>.lock`."""
    return path.with_name(f".{path.name}.lock")


@contextmanager
def history_lock(path: Path) -> Iterator[None]:
    """An exclusive flock on `lock_path(path)`, created without following a link.

    The lock file is left in place: deleting it while another process waits on it would let a
    third lock a new file of the same name, and two writers would run at once."""
    name = lock_path(path)
    flags = os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(name, flags, 0o644)
    except OSError as error:
        if error.errno == errno.ELOOP:
            raise InputError(
                "the history's lock file is a symbolic link; kb-eval does not follow it",
                file=str(name), hint="remove the link",
            ) from None
        raise InputError(
            f"cannot create the history's lock file ({error.strerror})",
            file=str(name),
            hint="make the history's folder exist and be writable, or point --history elsewhere",
        ) from None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise InputError("the history's lock file is not a regular file", file=str(name), hint="remove it")
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing the descriptor releases the lock


# --- reading -----------------------------------------------------------------


def read_report_file(path: Path, what: str, cap_bytes: int, allow_links: bool) -> bytes | None:
    """The bytes of `path`, None when absent; InputError when it is not safe to read
    (scanner/foundation/files.py). A history is replaced by rename, so it may be neither a link
    nor hard-linked; a baseline is only read, and is read through a link."""
    links = LinkPolicy.FOLLOW if allow_links else LinkPolicy.REFUSE
    try:
        return read_capped(path, cap_bytes, links, refuse_hard_links=not allow_links)
    except FileRefused as refused:
        if refused.refusal is Refusal.MISSING:
            return None
        raise _refused(str(path), what, refused) from None


def _check_safe_to_replace(path: Path, what: str, cap_bytes: int) -> None:
    """Raise InputError unless `path` is absent or a file `read_history` would accept."""
    try:
        check_replaceable(path, cap_bytes)
    except FileRefused as refused:
        raise _refused(str(path), what, refused) from None


def _refused(name: str, what: str, refused: FileRefused) -> InputError:
    hints = {
        Refusal.LINK: f"kb-eval does not follow it (saving would replace the link, not its target): "
        f"point --{what} at the real file, or replace the link with the file itself",
        Refusal.NOT_REGULAR: f"remove it or point --{what} at a regular file",
        Refusal.HARD_LINKED: "replacing it would detach it from its other names: copy it to a file of its own "
        f"(cp FILE FILE.new && mv FILE.new FILE) or point --{what} elsewhere",
        Refusal.TOO_LARGE: f"kb-eval never writes one this big: move the file away to start a fresh {what}, "
        "or pass --no-history",
        Refusal.UNREADABLE: f"make the {what} file readable by the user running kb-eval (see ls -l), "
        f"or check the --{what} path",
    }
    return InputError(
        f"the {what} file {refused.reason}; kb-eval stopped before saving anything",
        file=name,
        hint=hints.get(refused.refusal),
    )
