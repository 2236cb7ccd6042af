"""A pull request that churns large files outside the KB folder costs the base evaluation nothing.

The base is read by the KB's rules (scanner.git.tree, scanner.git.renames): files outside the KB
folder are never sized, read or compared for renames. Before that, rename detection covered the
whole repository and loaded every added and edited file whole: 40 files of 2 MB outside the KB
drove a run past 640 MiB, and 60 edited plus 60 added files took 47 s (here, 40 and 40: 37 s
and 200 MiB more than without them). The run here is the CLI in a
child process under a 1 GiB address-space limit (prlimit), so a regression fails fast with
MemoryError instead of swapping CI, and its time is held against the same pull request without
the churn.
"""

from __future__ import annotations

import json
import random
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.git.test_git_base import BASE_KB, commit, git, new_repo

ROOT = Path(__file__).resolve().parents[2]
AS_LIMIT_BYTES = 1024 * 1024 * 1024
CLI = "from scanner.cli.main import run; run()"
MEASURED = (
    "import os, subprocess, sys\n"
    "child = subprocess.Popen(sys.argv[1:])\n"
    "_pid, status, usage = os.wait4(child.pid, 0)\n"
    "print(usage.ru_maxrss)\n"
    "sys.exit(os.waitstatus_to_exitcode(status))\n"
)
"""Runs a command and prints its peak RSS in KiB (its own or a child's it waited for, as the base's).
A small process starts it: Linux carries the peak over exec, so a run forked straight from this
test would report the test's own peak."""
FILE_BYTES = 2 * 1024 * 1024
FILES = 40

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(shutil.which("git") is None, reason="needs git"),
    pytest.mark.skipif(shutil.which("prlimit") is None, reason="needs prlimit (util-linux)"),
]


LETTERS_SPACES_NEWLINES = bytes(
    b"abcdefghijklmnopqrstuvwxyz"[i % 26] if i < 224 else (0x20 if i < 252 else 0x0A) for i in range(256)
)
"""Random bytes mapped to words: seven in eight a letter, one in nine a space, one in 64 a newline."""


def _text(rng: random.Random, size: int) -> bytes:
    """Markdown of random words: every 64-byte block distinct, the worst case for comparing contents
    (made from random bytes by one translation: generated word by word, 160 MB took 8 s of the test;
    bytes, which write_tree writes as they are, where it dedents text)."""
    return b"# Generated\n" + rng.randbytes(size).translate(LETTERS_SPACES_NEWLINES) + b"\n"


def _pull_request(tmp_path: Path, churn: bool) -> Path:
    rng = random.Random(7)
    repo = new_repo(tmp_path / ("churn" if churn else "clean"))
    # Objects stored uncompressed: zlib over 160 MB of random words was most of the test's time,
    # and how git stores a blob changes nothing the run reads or leaves unread.
    git(repo, "config", "core.compression", "0")
    outside = {f"generated/old-{i}.md": _text(rng, FILE_BYTES) for i in range(FILES)} if churn else {}
    commit(repo, {"README.md": "# Readme\n", **outside}, "outside", kb="")
    commit(repo, BASE_KB, "base")
    commit(repo, {"deploy.md": BASE_KB["deploy.md"] + "\nOne more line.\n"}, "the KB's change")
    if churn:
        # Every old file edited and as many new ones: what a repository-wide rename detection
        # compares and reads whole.
        edited = {path: text + b"edited\n" for path, text in outside.items()}
        added = {f"generated/new-{i}.md": _text(rng, FILE_BYTES) for i in range(FILES)}
        commit(repo, {**edited, **added}, "churn outside the KB", kb="")
    return repo


def _run(repo: Path, tmp_path: Path) -> tuple[float, int, dict[str, object]]:
    """Wall seconds, peak RSS in KiB (the run or the child it forks for the base, from wait4), and
    the report's comparison."""
    report = tmp_path / f"{repo.name}.json"
    stderr = tmp_path / f"{repo.name}.err"
    started = time.monotonic()
    with stderr.open("wb") as errors:
        result = subprocess.run(
            [sys.executable, "-c", MEASURED, "prlimit", f"--as={AS_LIMIT_BYTES}", sys.executable, "-c", CLI,
             "--kb-path", str(repo / "kb"), "--no-history",
             "--baseline-ref", git(repo, "rev-parse", "HEAD~2" if repo.name == "churn" else "HEAD~1"),
             "--format", "json", "--output", str(report)],
            cwd=ROOT, stdout=subprocess.PIPE, stderr=errors, text=True, check=False, timeout=600,
        )
    elapsed = time.monotonic() - started
    assert result.returncode == 0, stderr.read_text()[-2000:]
    comparison: dict[str, object] = json.loads(report.read_text())["comparison"]
    return elapsed, int(result.stdout.split()[-1]), comparison


def test_large_files_a_pull_request_churns_outside_the_kb_cost_neither_memory_nor_time(tmp_path: Path) -> None:
    churned = _pull_request(tmp_path, churn=True)
    clean = _pull_request(tmp_path, churn=False)
    clean_seconds, clean_kib, clean_comparison = _run(clean, tmp_path)
    churn_seconds, churn_kib, churn_comparison = _run(churned, tmp_path)
    assert clean_comparison["status"] == churn_comparison["status"] == "compared"
    assert churn_kib < clean_kib + 48 * 1024, (churn_kib, clean_kib)
    # Same work on the KB's side; a shared CI machine's noise aside, no time for the churn.
    assert churn_seconds < 2 * clean_seconds + 5, (churn_seconds, clean_seconds)
