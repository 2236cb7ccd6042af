"""What is in the tree besides regular files: links, loops, pipes, devices, unreadable entries."""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from scanner.report.document import validation_errors
from tests.conftest import REPO, write_tree
from tests.hostile.support import ANSWER, GOLDEN, command_lines, documents, refused, run, run_json, warnings

AS_ROOT = os.geteuid() == 0


@pytest.fixture
def kb(tmp_path: Path) -> Path:
    return write_tree(tmp_path / "kb", {".kb-eval.yml": GOLDEN, "a.md": ANSWER})


def test_symlinks_to_a_file_and_a_folder_outside_the_kb_are_skipped_and_named(kb: Path, tmp_path: Path) -> None:
    outside = write_tree(tmp_path / "outside", {"secret.md": "# Secret\nalpha beta secret\n"})
    (kb / "leak.md").symlink_to(outside / "secret.md")
    (kb / "leakdir").symlink_to(outside)
    (kb / "passwd.md").symlink_to("/etc/passwd")
    _, report = run_json(kb)
    assert documents(report) == 1
    assert warnings(report) == [
        ("symlink-skipped", "leakdir"), ("symlink-skipped", "leak.md"), ("symlink-skipped", "passwd.md"),
    ]
    assert "secret" not in str(report["per_query"])


def test_a_relative_symlink_that_climbs_out_with_dotdot_is_skipped(kb: Path, tmp_path: Path) -> None:
    write_tree(tmp_path, {"sibling.md": "# S\nalpha beta\n"})
    (kb / "up.md").symlink_to("../sibling.md")
    _, report = run_json(kb)
    assert documents(report) == 1 and warnings(report) == [("symlink-skipped", "up.md")]


def test_a_file_symlink_loop_is_skipped_as_unreadable(kb: Path) -> None:
    (kb / "loop.md").symlink_to("loop.md")
    (kb / "ping.md").symlink_to("pong.md")
    (kb / "pong.md").symlink_to("ping.md")
    _, report = run_json(kb)
    assert documents(report) == 1
    assert warnings(report) == [("file-skipped", "loop.md"), ("file-skipped", "ping.md"), ("file-skipped", "pong.md")]
    assert all("is a symbolic link loop" in w["message"] for w in report["warnings"])


def test_a_folder_symlink_loop_is_not_followed(kb: Path) -> None:
    (kb / "sub").mkdir()
    (kb / "sub" / "again").symlink_to("..")
    (kb / "self").symlink_to(".")
    _, report = run_json(kb)
    assert documents(report) == 1
    assert warnings(report) == [("symlink-skipped", "self"), ("symlink-skipped", "sub/again")]


def test_a_dangling_symlink_is_skipped_with_a_warning(kb: Path) -> None:
    (kb / "gone.md").symlink_to("nowhere.md")
    _, report = run_json(kb)
    assert documents(report) == 1 and warnings(report) == [("file-skipped", "gone.md")]
    assert "is a symbolic link to nothing" in report["warnings"][0]["message"]


def test_a_symlinked_golden_file_is_refused_even_when_it_points_inside_the_kb(kb: Path) -> None:
    (kb / "real.yml").write_text(GOLDEN, encoding="utf-8")
    (kb / ".kb-eval.yml").unlink()
    (kb / ".kb-eval.yml").symlink_to("real.yml")
    stderr = refused(kb)
    assert "golden file is a symbolic link" in stderr and ".kb-eval.yml" in stderr


def test_a_golden_file_that_is_a_fifo_is_refused_without_blocking(kb: Path) -> None:
    (kb / ".kb-eval.yml").unlink()
    os.mkfifo(kb / ".kb-eval.yml")
    assert "not a regular file" in refused(kb)


def test_a_golden_path_that_is_a_folder_is_refused(kb: Path) -> None:
    assert "not a regular file" in refused(kb, "--golden", kb)


def test_a_fifo_in_the_tree_is_skipped_without_being_opened(kb: Path) -> None:
    # Opening a FIFO for reading blocks until a writer comes: the test would hang if it were read.
    os.mkfifo(kb / "pipe.md")
    _, report = run_json(kb)
    assert documents(report) == 1 and warnings(report) == [("file-skipped", "pipe.md")]
    assert "not a regular file" in report["warnings"][0]["message"]


def test_a_socket_in_the_tree_is_skipped(kb: Path) -> None:
    import socket

    with socket.socket(socket.AF_UNIX) as server:
        try:
            server.bind(str(kb / "sock.md"))
        except OSError as error:  # AF_UNIX paths are limited to 107 bytes
            pytest.skip(f"cannot bind a unix socket here: {error}")
        _, report = run_json(kb)
    assert documents(report) == 1 and warnings(report) == [("file-skipped", "sock.md")]


def test_a_character_device_in_the_tree_is_skipped_without_being_read(kb: Path) -> None:
    try:
        # /dev/zero's numbers: read, it would never end.
        os.mknod(kb / "zero.md", 0o644 | stat.S_IFCHR, os.makedev(1, 5))
    except PermissionError as error:
        pytest.skip(f"creating a device node needs CAP_MKNOD, which this process lacks ({error})")
    _, report = run_json(kb)
    assert documents(report) == 1 and warnings(report) == [("file-skipped", "zero.md")]
    assert "not a regular file" in report["warnings"][0]["message"]


SETPRIV = shutil.which("setpriv")


def run_unprivileged(kb: Path) -> tuple[int, dict[str, Any] | None, str]:
    """Run the CLI in a child that permissions apply to: in-process when not root; as root,
    under `setpriv` with CAP_DAC_OVERRIDE and CAP_DAC_READ_SEARCH dropped (root reads any file
    while it holds them, so chmod 000 alone proves nothing). Returns (exit, report, stderr)."""
    if not AS_ROOT:
        result = run(kb, "--format", "json")
        return result.code, result.json() if result.code == 0 else None, result.stderr
    if SETPRIV is None:
        pytest.skip("running as root without setpriv: cannot drop the capabilities that let root read any file")
    completed = subprocess.run(
        [SETPRIV, "--bounding-set=-dac_override,-dac_read_search", "--", sys.executable, "-c",
         "from scanner.cli.main import run; run()", "--kb-path", str(kb), "--format", "json"],
        check=False, cwd=REPO, capture_output=True, text=True, timeout=60,
    )
    assert "Traceback" not in completed.stderr
    assert command_lines(completed.stdout) == [] and command_lines(completed.stderr) == []
    report = json.loads(completed.stdout) if completed.returncode == 0 else None
    if report is not None:
        assert validation_errors(report) == []
    return completed.returncode, report, completed.stderr


def test_an_unreadable_file_is_skipped_with_a_warning(kb: Path) -> None:
    (kb / "locked.md").write_text("# L\nalpha beta\n", encoding="utf-8")
    (kb / "locked.md").chmod(0)
    code, report, _ = run_unprivileged(kb)
    assert code == 0 and report is not None
    assert documents(report) == 1 and warnings(report) == [("file-skipped", "locked.md")]
    assert report["warnings"][0]["message"] == "file cannot be read (Permission denied); not indexed"


def test_an_unreadable_folder_is_skipped_with_a_warning(kb: Path) -> None:
    write_tree(kb, {"locked/inside.md": "# L\nalpha beta\n"})
    (kb / "locked").chmod(0)
    try:
        code, report, _ = run_unprivileged(kb)
    finally:
        (kb / "locked").chmod(0o755)
    assert code == 0 and report is not None
    assert documents(report) == 1 and warnings(report) == [("folder-skipped", "locked")]
    assert report["warnings"][0]["message"] == (
        "folder cannot be read (Permission denied); its files are not indexed"
    )


def test_an_unreadable_golden_file_is_exit_2_naming_it(kb: Path) -> None:
    (kb / ".kb-eval.yml").chmod(0)
    code, report, stderr = run_unprivileged(kb)
    assert code == 2 and report is None
    assert ".kb-eval.yml: golden file cannot be read (Permission denied)" in stderr
