"""Adding one run to a history file the way a run of kb-eval does, for tests of concurrent and
hostile histories."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from scanner.report.history import (
    DEFAULT_HISTORY_SIZE,
    MAX_HISTORY_BYTES,
    HistoryPlan,
    plan_history,
    read_history,
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
