"""History and baseline files a pull request controls: no data loss, bounded warnings and work.

Real files and real concurrent processes.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import scanner.foundation.strict_json
import scanner.report.history
from scanner.foundation.errors import InputError
from scanner.report.baseline import MAX_BASELINE_PROBLEMS, read_baseline
from scanner.report.document import validation_errors as iter_validation_errors
from scanner.report.history import (
    DETAILED_DROP_WARNINGS,
    MAX_HISTORY_RUNS,
    lock_path,
    plan_history,
    read_history,
    write_history,
)
from tests.support.history import record_run
from tests.support.run_records import make_run

ROOT = Path(__file__).resolve().parents[2]


def history_bytes(runs: list[Any]) -> bytes:
    return json.dumps({"format": "kb-eval-history", "schema_version": 1, "runs": runs}, separators=(",", ":")).encode()


def timestamp(n: int) -> str:
    return f"2026-12-{1 + n // 86400 % 28:02}T{n // 3600 % 24:02}:{n // 60 % 60:02}:{n % 60:02}Z"


# -- concurrency ---------------------------------------------------------------------------------

_RECORDER = """
import sys
sys.path[:0] = [{root!r}]
from pathlib import Path
from tests.support.history import record_run
from tests.support.run_records import make_run
path, writer, count = Path(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
for n in range(count):
    record_run(path, make_run(timestamp=sys.argv[4 + n]), max_runs=1000)
"""


@pytest.mark.slow
def test_concurrent_runs_on_one_history_keep_every_record(tmp_path: Path) -> None:
    path = tmp_path / ".kb-eval-history.json"
    writers, each = 4, 15
    stamps = [[timestamp(w * 100 + n) for n in range(each)] for w in range(writers)]
    children = [
        subprocess.Popen([sys.executable, "-c", _RECORDER.format(root=str(ROOT)), str(path), str(w), str(each), *stamps[w]])
        for w in range(writers)
    ]
    for child in children:
        assert child.wait(timeout=120) == 0
    saved = {run["timestamp"] for run in read_history(path).documents}
    assert saved == {stamp for stamps_of_one in stamps for stamp in stamps_of_one}


def test_a_run_saved_by_another_process_during_the_eval_is_kept(tmp_path: Path) -> None:
    path = tmp_path / "h.json"
    record_run(path, make_run(timestamp=timestamp(1)))
    seen_before_the_eval = read_history(path)  # this run read one run, then evaluated for a while
    plan = plan_history(path, [make_run(timestamp=timestamp(3)), *seen_before_the_eval.documents])
    record_run(path, make_run(timestamp=timestamp(2)))  # meanwhile another run saved
    write_history(path, plan)
    assert [run["timestamp"] for run in read_history(path).documents] == [timestamp(3), timestamp(2), timestamp(1)]


def test_without_a_concurrent_save_the_plan_is_written_as_made(tmp_path: Path) -> None:
    path = tmp_path / "h.json"
    record_run(path, make_run(timestamp=timestamp(1)))
    plan = plan_history(path, [make_run(timestamp=timestamp(3)), *read_history(path).documents])
    write_history(path, plan)
    assert path.read_bytes() == plan.data


def test_a_link_at_the_lock_path_is_refused_and_not_followed(tmp_path: Path) -> None:
    path = tmp_path / "h.json"
    target = tmp_path / "elsewhere"
    lock_path(path).symlink_to(target)
    with pytest.raises(InputError, match="lock file is a symbolic link"):
        record_run(path, make_run())
    assert not target.exists() and not path.exists()


def test_the_lock_file_is_a_plain_file_beside_the_history(tmp_path: Path) -> None:
    path = tmp_path / "h.json"
    record_run(path, make_run())
    assert lock_path(path).is_file() and not lock_path(path).is_symlink()


# -- amplification --------------------------------------------------------------------------------


def test_many_invalid_runs_become_a_bounded_number_of_warnings(tmp_path: Path) -> None:
    path = tmp_path / "h.json"
    path.write_bytes(history_bytes([{}] * 50_000))  # 150 KB of runs that cannot be compared
    read = read_history(path)
    assert read.runs == ()
    assert len(read.warnings) == DETAILED_DROP_WARNINGS + 2
    assert f"{MAX_HISTORY_RUNS - DETAILED_DROP_WARNINGS} more history runs" in read.warnings[-2].message
    assert "holds 50000 runs" in read.warnings[-1].message


def test_a_few_invalid_runs_are_each_named(tmp_path: Path) -> None:
    path = tmp_path / "h.json"
    path.write_bytes(history_bytes([{}, make_run(), {}]))
    read = read_history(path)
    assert len(read.runs) == 1
    assert [w.message.split(" cannot")[0] for w in read.warnings] == ["history run #1", "history run #3"]


def test_a_history_past_the_run_count_keeps_its_newest_runs(tmp_path: Path) -> None:
    path = tmp_path / "h.json"
    runs = [make_run(timestamp=timestamp(n)) for n in range(MAX_HISTORY_RUNS + 5)]
    path.write_bytes(history_bytes(runs))
    read = read_history(path)
    assert len(read.runs) == MAX_HISTORY_RUNS and read.documents[0]["timestamp"] == timestamp(0)


def test_a_baseline_with_thousands_of_schema_errors_stops_after_the_first_few(tmp_path: Path) -> None:
    report = make_run()
    report["per_query"] = [{"id": 1}] * 20_000  # every row breaks the schema several times
    path = tmp_path / "baseline.json"
    path.write_text(json.dumps(report))
    taken: list[str] = []

    def counting(document: Any) -> Iterator[str]:
        for problem in iter_validation_errors(document):
            taken.append(problem)
            yield problem

    started = time.monotonic()
    with pytest.raises(InputError, match="not a valid kb-eval report"):
        read_baseline(path, counting)
    assert len(taken) == MAX_BASELINE_PROBLEMS
    assert time.monotonic() - started < 30


def test_a_baseline_with_fewer_problems_than_the_cap_names_them_all(tmp_path: Path) -> None:
    path = tmp_path / "baseline.json"
    path.write_text(json.dumps(make_run()))
    with pytest.raises(InputError) as caught:
        read_baseline(path, lambda document: iter(["first problem", "second problem"]))
    assert "first problem; second problem" in caught.value.message


# -- hostile JSON inside a history that is ours -------------------------------------------------


@pytest.mark.parametrize(
    "extra",
    [
        pytest.param("[" * 500 + "]" * 500, id="nested 500 deep"),
        pytest.param("9" * 4000, id="4,000-digit integer"),
    ],
)
def test_hostile_values_inside_a_comparable_run_never_crash_a_save(tmp_path: Path, extra: str) -> None:
    run = json.dumps(make_run())
    path = tmp_path / "h.json"
    path.write_bytes(history_bytes([]).replace(b'"runs":[]', b'"runs":[' + run[:-1].encode() + b',"x":' + extra.encode() + b"}]"))
    try:
        record_run(path, make_run(timestamp=timestamp(5)))
    except InputError:
        pass  # refusing is fine; a crash (exit 3) is not
    assert os.path.exists(path)


@pytest.mark.parametrize("key", ["9" * 5000, "\xb2", "1" * 7])
def test_a_hostile_k_key_drops_the_run_instead_of_crashing(tmp_path: Path, key: str) -> None:
    run = make_run()
    run["aggregate"]["recall_at_k"][key] = 0.5
    path = tmp_path / "h.json"
    path.write_bytes(history_bytes([run, make_run(timestamp=timestamp(9))]))
    read = read_history(path)
    assert [r["timestamp"] for r in read.documents] == [timestamp(9)]


@pytest.mark.parametrize(("runs", "fresh"), [(10, False), (11, True)])
def test_a_history_past_the_container_cap_is_not_parsed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, runs: int, fresh: bool
) -> None:
    monkeypatch.setattr(scanner.foundation.strict_json, "MAX_JSON_CONTAINERS", 12)  # the outer object, "runs", then the runs
    path = tmp_path / "h.json"
    path.write_bytes(history_bytes([{}] * runs))
    read = read_history(path)
    if fresh:
        assert [w.code for w in read.warnings] == ["history-unparsable"]
        assert "more than 12 objects and arrays" in read.warnings[0].message
    else:
        assert all(w.code == "history-run-dropped" for w in read.warnings)
