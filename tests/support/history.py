"""Writing a history file for tests and benchmarks: one run added the way a run of kb-eval adds
it (for concurrent and hostile histories), or exactly the runs given."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from scanner.report.history import (
    DEFAULT_HISTORY_SIZE,
    MAX_HISTORY_BYTES,
    HistoryPlan,
    plan_history,
    read_history,
    replace_history,
    write_history,
)


def record_run(
    path: Path, run: Mapping[str, Any], max_runs: int = DEFAULT_HISTORY_SIZE, cap_bytes: int = MAX_HISTORY_BYTES
) -> HistoryPlan:
    """Add `run` (a run document) as the newest run of the history at `path`: read, plan, and
    write under the lock, which reads the file again and keeps a run saved meanwhile (the
    pipeline's path)."""
    plan = plan_history(path, [run, *read_history(path, cap_bytes).documents], max_runs, cap_bytes)
    write_history(path, plan, cap_bytes)
    return plan


def save_history(
    path: Path, runs: Sequence[Mapping[str, Any]], max_runs: int = DEFAULT_HISTORY_SIZE,
    cap_bytes: int = MAX_HISTORY_BYTES,
) -> HistoryPlan:
    """Plan and write exactly `runs` in one step: no lock, no merge with what is on disk."""
    plan = plan_history(path, runs, max_runs, cap_bytes)
    replace_history(path, plan, cap_bytes)
    return plan
