"""Reading and writing the history and baseline files: what is refused, forgiven and kept."""

from __future__ import annotations

import json
import os
import shutil
import signal
import tempfile
from collections.abc import Iterator
from pathlib import Path
from types import FrameType
from typing import Any

import pytest

from scanner.foundation.errors import InputError
from scanner.report.baseline import read_baseline, save_baseline
from scanner.report.document import run_document
from scanner.report.history import MAX_HISTORY_BYTES, MAX_HISTORY_RUNS, read_history
from scanner.report.read import run_from_document
from tests.conftest import run_cli
from tests.support.history import save_history
from tests.support.run_records import make_run, run_with_a_finding


def _history_bytes(runs: list[dict[str, Any]]) -> bytes:
    return json.dumps({"format": "kb-eval-history", "schema_version": 1, "runs": runs}).encode()


@pytest.fixture
def history(tmp_path: Path) -> Path:
    path = tmp_path / ".kb-eval-history.json"
    path.write_bytes(_history_bytes([make_run(timestamp="2026-12-01T00:00:00Z")]))
    return path


@pytest.fixture
def no_hang() -> Iterator[None]:
    """Fail instead of hanging if something opens a FIFO for a blocking read."""

    def timeout(signum: int, frame: FrameType | None) -> None:
        raise TimeoutError("the history read blocked")

    previous = signal.signal(signal.SIGALRM, timeout)
    signal.alarm(5)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def _refused_by_read_and_save(path: Path) -> list[InputError]:
    """Both halves of the pipeline's contract: the read stops, and a save would stop too."""
    errors = []
    with pytest.raises(InputError) as read_error:
        read_history(path)
    errors.append(read_error.value)
    with pytest.raises(InputError) as save_error:
        save_history(path, [make_run(timestamp="2026-12-02T00:00:00Z")])
    errors.append(save_error.value)
    return errors


# --- absent and good ----------------------------------------------------------------


def test_an_absent_history_is_an_empty_one(tmp_path: Path) -> None:
    read = read_history(tmp_path / "missing.json")
    assert read.documents == () and read.warnings == ()


def test_a_saved_history_reads_back_newest_first(tmp_path: Path) -> None:
    path = tmp_path / "h.json"
    runs = [make_run(timestamp=f"2026-12-0{day}T00:00:00Z") for day in (3, 2, 1)]
    saved = save_history(path, runs, max_runs=10)
    read = read_history(path)
    assert saved.kept == 3 and saved.warnings == ()
    assert [run["timestamp"] for run in read.documents] == [r["timestamp"] for r in runs]
    assert read.documents[0] == runs[0] and read.warnings == ()


def test_a_history_entry_is_the_run_without_its_comparison(tmp_path: Path) -> None:
    # The pipeline writes run_document(run): a report's comparison keys never reach the history.
    path = tmp_path / "h.json"
    run = run_with_a_finding()
    save_history(path, [run_document(run)])
    stored = read_history(path).documents[0]
    assert not {"previous", "diff", "corpus_changed", "comparison", "gate"} & stored.keys()
    assert stored["findings"] and stored["per_query"]


# --- refused: stops the run, leaves the file untouched ---------------------------------


def test_a_symlinked_history_is_refused_and_its_target_untouched(
    tmp_path: Path,
) -> None:
    target = tmp_path / "real.json"
    target.write_bytes(_history_bytes([make_run()]))
    before = target.read_bytes()
    link = tmp_path / ".kb-eval-history.json"
    link.symlink_to(target)

    errors = _refused_by_read_and_save(link)

    assert "symbolic link" in str(errors[0]) and str(link) in str(errors[0])
    assert errors[0].hint
    assert link.is_symlink() and target.read_bytes() == before


def test_a_fifo_history_is_refused_without_blocking(tmp_path: Path, no_hang: None) -> None:
    fifo = tmp_path / ".kb-eval-history.json"
    os.mkfifo(fifo)
    errors = _refused_by_read_and_save(fifo)
    assert "FIFO" in str(errors[0])
    assert fifo.exists() and not fifo.is_file()


def test_a_directory_at_the_history_path_is_refused(tmp_path: Path) -> None:
    folder = tmp_path / ".kb-eval-history.json"
    folder.mkdir()
    (folder / "keep").write_text("x")
    errors = _refused_by_read_and_save(folder)
    assert "directory" in str(errors[0])
    assert (folder / "keep").read_text() == "x"


def test_a_hard_linked_history_is_refused_and_both_names_untouched(
    history: Path,
) -> None:
    other = history.with_name("other-name.json")
    os.link(history, other)
    before = history.read_bytes()
    errors = _refused_by_read_and_save(history)
    assert "hard links" in str(errors[0])
    assert history.read_bytes() == before and other.read_bytes() == before
    assert os.stat(history).st_ino == os.stat(other).st_ino


def test_a_history_over_the_real_cap_is_refused_untouched(tmp_path: Path) -> None:
    path = tmp_path / ".kb-eval-history.json"
    with path.open("wb") as handle:  # sparse: costs no disk
        handle.truncate(MAX_HISTORY_BYTES + 1)
    errors = _refused_by_read_and_save(path)
    assert "over the" in str(errors[0])
    assert path.stat().st_size == MAX_HISTORY_BYTES + 1


def test_a_history_at_exactly_the_cap_is_read(tmp_path: Path) -> None:
    path = tmp_path / "h.json"
    content = _history_bytes([make_run()])
    path.write_bytes(content)
    assert len(read_history(path, cap_bytes=len(content)).documents) == 1
    with pytest.raises(InputError):
        read_history(path, cap_bytes=len(content) - 1)


def _read_as_nobody(path: Path) -> str:
    """Read the history in a forked child running as nobody; return 'ok' or the error text."""
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # child: never returns into pytest
        os.close(read_end)
        try:
            os.setgid(65534)
            os.setuid(65534)
            os.stat(path)  # the folder is traversable, so a refusal is about the file itself
            try:
                read_history(path)
                message = "ok"
            except InputError as error:
                message = str(error)
        except BaseException as error:  # noqa: BLE001 - reported to the parent
            message = f"setup failed: {error!r}"
        os.write(write_end, message.encode())
        os._exit(0)
    os.close(write_end)
    with os.fdopen(read_end, "rb") as pipe:
        message = pipe.read().decode()
    os.waitpid(pid, 0)
    return message


def test_an_unreadable_history_is_refused_untouched() -> None:
    # chmod 000 does not stop root from reading, so as root the read runs in a child
    # that has dropped to nobody; a folder outside pytest's 0700 tmp is needed for that.
    folder = Path(tempfile.mkdtemp(prefix="kb-eval-unreadable-"))
    try:
        folder.chmod(0o755)
        path = folder / ".kb-eval-history.json"
        path.write_bytes(_history_bytes([make_run()]))
        before = path.read_bytes()
        path.chmod(0o000)
        if os.geteuid() == 0:
            message = _read_as_nobody(path)
            if message.startswith("setup failed"):
                pytest.skip(f"running as root and cannot drop to nobody: {message}")
            path.chmod(0o644)
            readable = _read_as_nobody(path)
            assert readable == "ok"  # the near miss: same file, same user, readable
        else:
            with pytest.raises(InputError) as error:
                read_history(path)
            with pytest.raises(InputError):
                save_history(path, [make_run()])
            message = str(error.value)
            path.chmod(0o644)
        assert "cannot be read" in message and "Permission denied" in message
        assert str(path) in message
        assert path.read_bytes() == before
    finally:
        shutil.rmtree(folder)


# --- bad content: forgiven when the file is ours, refused when it is not -------------------
#
# One table, so each near miss sits beside its case: a file that starts the way kb-eval writes
# its history is ours and damaged (a killed writer, a bad merge), so the run starts a fresh
# history with a warning; anything else may be another tool's file and is never overwritten.

FRESH_WITH_A_WARNING, REFUSED_UNTOUCHED = "fresh history with a warning", "refused, left untouched"
OURS = b'{"format":"kb-eval-history","schema_version":1,'


@pytest.mark.parametrize(
    ("content", "outcome"),
    [
        pytest.param(b"", FRESH_WITH_A_WARNING, id="empty file"),
        pytest.param(b" \n", FRESH_WITH_A_WARNING, id="only whitespace"),
        pytest.param(OURS + b'"runs":[', FRESH_WITH_A_WARNING, id="ours, truncated"),
        pytest.param(b' {"format":"kb-eval-history", "runs": [', REFUSED_UNTOUCHED, id="not how kb-eval writes"),
        pytest.param(OURS + b'"runs":[NaN]}', FRESH_WITH_A_WARNING, id="NaN"),
        pytest.param(OURS + b'"x":Infinity}', FRESH_WITH_A_WARNING, id="Inf"),
        pytest.param(OURS + b'"x":1e400}', FRESH_WITH_A_WARNING, id="1e400"),
        pytest.param(b'{"format":"kb-eval-history","schema_version":0,"runs":[]}', FRESH_WITH_A_WARNING, id="v0"),
        pytest.param(b'{"format":"kb-eval-history","runs":[]}', FRESH_WITH_A_WARNING, id="no version"),
        pytest.param(OURS + b'"runs":{}}', FRESH_WITH_A_WARNING, id="runs"),
        pytest.param(OURS + b'"x":' + b"[" * 100_000, FRESH_WITH_A_WARNING, id="ours, deep"),
        pytest.param(b"[" * 100_000 + b"]" * 100_000, REFUSED_UNTOUCHED, id="deeply nested"),
        pytest.param(OURS + b'"n":' + b"9" * 5000 + b"}", FRESH_WITH_A_WARNING, id="ours, huge int"),
        pytest.param(b'{"n":' + b"9" * 5000 + b"}", REFUSED_UNTOUCHED, id="huge integer"),
        pytest.param(b'{"name":"some-package","version":"1.0.0"}', REFUSED_UNTOUCHED, id="another tool"),
        pytest.param(b'{"format":"kb-eval-history","schema_version":2,"runs":[]}', REFUSED_UNTOUCHED, id="newer"),
        pytest.param(b'{"format":"other-tool-history","runs":[]}', REFUSED_UNTOUCHED, id="another format"),
        pytest.param(b'{"format":null,"runs":[]}', REFUSED_UNTOUCHED, id="format null"),
        pytest.param(b"[1, 2, 3]", REFUSED_UNTOUCHED, id="a top-level array"),
        pytest.param(b'"a string"', REFUSED_UNTOUCHED, id="a top-level string"),
        pytest.param(b"{not json", REFUSED_UNTOUCHED, id="not JSON"),
        pytest.param(b"title: my notes\n", REFUSED_UNTOUCHED, id="YAML"),
        pytest.param(b"\xff\xfe\x00garbage", REFUSED_UNTOUCHED, id="not UTF-8"),
    ],
)
def test_bad_content_starts_a_fresh_history_when_ours_and_stops_the_run_untouched_when_not(
    tmp_path: Path, content: bytes, outcome: str
) -> None:
    path = tmp_path / ".kb-eval-history.json"
    path.write_bytes(content)
    if outcome == FRESH_WITH_A_WARNING:
        read = read_history(path)
        assert read.documents == ()
        assert [w.code for w in read.warnings] == ["history-unparsable"]
        assert read.warnings[0].file == str(path)
        # and the next save replaces it with a good history
        save_history(path, [make_run()])
        assert len(read_history(path).documents) == 1
    else:
        with pytest.raises(InputError) as caught:
            read_history(path)
        assert caught.value.file == str(path) and "untouched" in caught.value.message
        assert path.read_bytes() == content


@pytest.mark.parametrize(
    ("content", "named"),
    [(b"[1, 2]", "array"), (b'"notes"', "string"), (b"3.5", "number"), (b"null", "null"), (b"true", "boolean")],
)
def test_a_history_that_is_not_a_json_object_is_refused_naming_the_json_type_it_holds(
    tmp_path: Path, content: bytes, named: str
) -> None:
    path = tmp_path / ".kb-eval-history.json"
    path.write_bytes(content)
    with pytest.raises(InputError) as caught:
        read_history(path)
    assert f"holds a JSON {named}, not a kb-eval history object" in caught.value.message
    # The near miss: an object is read as one, and refused for what it lacks.
    path.write_bytes(b"{}")
    with pytest.raises(InputError) as caught:
        read_history(path)
    assert "holds a JSON" not in caught.value.message and 'without "format"' in caught.value.message


def test_a_run_with_an_impossible_metric_is_dropped_and_the_others_kept(
    tmp_path: Path,
) -> None:
    path = tmp_path / "h.json"
    bad = make_run(timestamp="2026-12-02T00:00:00Z")
    bad["aggregate"]["mrr"] = 1.5
    good = make_run(timestamp="2026-12-01T00:00:00Z")
    path.write_bytes(_history_bytes([bad, good]))
    read = read_history(path)
    assert [run["timestamp"] for run in read.documents] == ["2026-12-01T00:00:00Z"]
    assert [w.code for w in read.warnings] == ["history-run-dropped"]
    assert "aggregate.mrr" in read.warnings[0].message


def test_a_run_with_a_repeated_query_id_is_dropped(tmp_path: Path) -> None:
    path = tmp_path / "h.json"
    bad = make_run()
    bad["per_query"][1]["id"] = bad["per_query"][0]["id"]
    path.write_bytes(_history_bytes([bad]))
    read = read_history(path)
    assert read.documents == () and "appears twice" in read.warnings[0].message


def test_an_old_history_without_newer_fields_loads(tmp_path: Path) -> None:
    old_run = {
        "timestamp": "2026-01-01T00:00:00Z",
        "fingerprint": {"limit": 10},
        "aggregate": {"mrr": 0.5, "recall_at_k": {"5": 0.5}},
        "per_query": [{"id": "q1", "metrics": {"rr": 0.5, "recall_at_k": {"5": 0.5}}}],
    }
    path = tmp_path / "h.json"
    path.write_bytes(_history_bytes([old_run]))
    read = read_history(path)
    assert read.documents == (old_run,) and read.warnings == ()


# --- saving: pruning and its limits ------------------------------------------------------


def _runs(count: int) -> list[dict[str, Any]]:
    return [make_run(timestamp=f"2026-12-{count - i:02d}T00:00:00Z") for i in range(count)]


def test_pruning_by_count_keeps_the_newest_runs_without_a_warning(
    tmp_path: Path,
) -> None:
    path = tmp_path / "h.json"
    runs = _runs(5)
    saved = save_history(path, runs, max_runs=2)
    assert saved.kept == 2 and saved.dropped_for_count == 3 and saved.warnings == ()
    assert [r["timestamp"] for r in read_history(path).documents] == [r["timestamp"] for r in runs[:2]]


def test_pruning_by_size_keeps_the_newest_runs_that_fit_and_warns(
    tmp_path: Path,
) -> None:
    path = tmp_path / "h.json"
    runs = _runs(5)
    full = save_history(tmp_path / "all.json", runs, cap_bytes=10**9).data.__len__()
    one_run = len(json.dumps(runs[0], separators=(",", ":")))
    cap = full - 2 * one_run + 10  # room for 3 runs, not 4

    saved = save_history(path, runs, max_runs=10, cap_bytes=cap)

    assert saved.kept == 3 and saved.dropped_for_size == 2
    assert path.stat().st_size <= cap
    assert [r["timestamp"] for r in read_history(path, cap).documents] == [r["timestamp"] for r in runs[:3]]
    assert [w.code for w in saved.warnings] == ["history-pruned"]
    assert "kept the newest 3 of 5 runs" in saved.warnings[0].message


def test_a_history_exactly_at_the_cap_is_not_pruned(tmp_path: Path) -> None:
    path = tmp_path / "h.json"
    runs = _runs(4)
    full = save_history(tmp_path / "all.json", runs, cap_bytes=10**9).data.__len__()
    saved = save_history(path, runs, cap_bytes=full)
    assert saved.kept == 4 and saved.warnings == () and path.stat().st_size == full


def test_a_single_run_too_big_for_the_cap_is_an_error_and_saves_nothing(
    tmp_path: Path,
) -> None:
    path = tmp_path / "h.json"
    save_history(path, _runs(1))
    before = path.read_bytes()
    with pytest.raises(InputError) as error:
        save_history(path, _runs(2), cap_bytes=200)
    assert "cannot be saved" in str(error.value) and "--no-history" in (error.value.hint or "")
    assert path.read_bytes() == before


@pytest.mark.parametrize("value", ["0", "1001"])
def test_a_history_size_outside_what_the_history_holds_is_refused_where_declared(value: str, tmp_path: Path) -> None:
    result = run_cli("--kb-path", tmp_path, "--history-size", value)
    assert result.code == 2 and "--history-size" in result.stderr and "from 1 to 1000" in result.stderr


def test_the_largest_history_size_is_what_the_history_reads() -> None:
    from scanner.settings.declaration import setting

    assert setting("history-size").parse(str(MAX_HISTORY_RUNS)) == MAX_HISTORY_RUNS


def test_saving_into_a_missing_folder_is_an_input_error(tmp_path: Path) -> None:
    with pytest.raises(InputError) as error:
        save_history(tmp_path / "no" / "such" / "h.json", _runs(1))
    assert "cannot create" in str(error.value)


def test_a_new_history_file_gets_ordinary_permissions_and_no_temp_files_remain(
    tmp_path: Path,
) -> None:
    path = tmp_path / "h.json"
    save_history(path, _runs(2))
    umask = os.umask(0o022)
    os.umask(umask)
    assert path.stat().st_mode & 0o777 == 0o666 & ~umask
    assert sorted(p.name for p in tmp_path.iterdir()) == ["h.json"]


@pytest.mark.parametrize("code", [[], {"a": 1}, "no-such-code", 7])
def test_a_recorded_warning_whose_code_is_not_one_of_ours_is_left_out_and_the_run_kept(code: object) -> None:
    # Found by the history fuzz: a list as the code was looked up in a set (exit 3).
    known = {"code": "k-over-limit", "message": "kept", "file": None, "line": None}
    record = run_from_document(make_run() | {"warnings": [{"code": code, "message": "m"}, known]})
    assert [warning.message for warning in record.warnings] == ["kept"]


# --- baselines ------------------------------------------------------------------------


def _no_schema_problems(document: object) -> list[str]:
    return []


def test_a_saved_baseline_reads_back_as_its_run_record(tmp_path: Path) -> None:
    path = tmp_path / "baseline.json"
    report = make_run() | {"previous": None, "diff": None, "corpus_changed": None}
    save_baseline(path, report)
    record = read_baseline(path, _no_schema_problems)
    assert record == run_from_document(make_run())


def test_a_baseline_the_schema_rejects_is_an_input_error(tmp_path: Path) -> None:
    path = tmp_path / "baseline.json"
    save_baseline(path, make_run())
    with pytest.raises(InputError) as error:
        read_baseline(path, lambda document: ["'aggregate' is a required property"])
    assert "not a valid kb-eval report" in str(error.value) and "aggregate" in str(error.value)


@pytest.mark.parametrize(
    "content",
    [b"{oops", b'{"aggregate": NaN}', b"\xff"],
    ids=["bad JSON", "NaN", "not UTF-8"],
)
def test_an_unparsable_baseline_is_an_input_error(tmp_path: Path, content: bytes) -> None:
    path = tmp_path / "baseline.json"
    path.write_bytes(content)
    with pytest.raises(InputError) as error:
        read_baseline(path, _no_schema_problems)
    assert str(path) in str(error.value)


def test_a_baseline_with_a_metric_outside_0_1_is_an_input_error(tmp_path: Path) -> None:
    path = tmp_path / "baseline.json"
    report = make_run()
    report["per_query"][0]["metrics"]["recall_at_k"]["5"] = 2.0
    path.write_text(json.dumps(report))
    with pytest.raises(InputError) as error:
        read_baseline(path, _no_schema_problems)
    assert "per_query[0].metrics.recall_at_k.5" in str(error.value)


def test_a_missing_baseline_is_an_input_error(tmp_path: Path) -> None:
    with pytest.raises(InputError) as error:
        read_baseline(tmp_path / "nope.json", _no_schema_problems)
    assert "does not exist" in str(error.value)


def test_a_baseline_that_is_a_fifo_is_refused_without_blocking(tmp_path: Path, no_hang: None) -> None:
    path = tmp_path / "baseline.json"
    os.mkfifo(path)
    with pytest.raises(InputError) as error:
        read_baseline(path, _no_schema_problems)
    assert "FIFO" in str(error.value)


def test_a_baseline_too_big_for_the_cap_is_not_written(tmp_path: Path) -> None:
    path = tmp_path / "baseline.json"
    with pytest.raises(InputError):
        save_baseline(path, make_run(), cap_bytes=100)
    assert not path.exists()
