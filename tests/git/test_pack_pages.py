"""Reading blobs scattered over a large pack keeps few of its pages mapped in this process: dulwich
maps a pack whole, and each read maps the pages around its object too (a pull request's base read
the 1,000 edited files of a 100,000-document KB with 99 MiB of the pack resident, its peak)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from scanner.git import objects
from scanner.git.objects import read_from
from scanner.git.repository import Deadline
from tests.git.test_git_base import GIT_ENV

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/self/smaps")

BLOBS = 800
BLOB_BYTES = 8 * 1024


def packed_repository(root: Path) -> tuple[Path, list[str]]:
    """A repository whose one pack holds BLOBS incompressible blobs (6.5 MB), and their ids."""
    root.mkdir()
    for number in range(BLOBS):
        (root / f"note-{number:04d}.md").write_bytes(os.urandom(BLOB_BYTES // 2).hex().encode())
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-q", "-m", "notes"], ["repack", "-a", "-d", "-q"]):
        subprocess.run(["git", "-C", str(root), *args], env=GIT_ENV, check=True)
    listing = subprocess.run(
        ["git", "-C", str(root), "ls-tree", "HEAD"], env=GIT_ENV, check=True, capture_output=True, text=True
    ).stdout
    return root, [line.split()[2] for line in listing.splitlines()]


def pack_resident_kib() -> int:
    """KiB of this process's mappings of .pack files that are resident."""
    total, in_pack = 0, False
    with open("/proc/self/smaps", encoding="utf-8") as maps:
        for line in maps:
            fields = line.split()
            if "-" in fields[0] and len(fields) >= 5 and ":" in fields[3]:
                in_pack = len(fields) > 5 and fields[5].endswith(".pack")
            elif in_pack and fields[0] == "Rss:":
                total += int(fields[1])
    return total


def most_resident_while_reading(repository: Path, blobs: list[str], every: int) -> int:
    """The most of the pack resident, looked at after each `every` reads (what is mapped only
    grows until the packs are closed) and at the end."""
    from dulwich.repo import Repo

    with Repo(str(repository)) as repo:
        most = 0
        for count, data in enumerate(read_from(repo.object_store, blobs, Deadline.after(60), None), start=1):
            assert len(data) == BLOB_BYTES
            if count % every == 0 or count == len(blobs):
                most = max(most, pack_resident_kib())
        return most


def test_blobs_scattered_over_a_pack_leave_at_most_a_few_dozen_reads_of_it_mapped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repository, blobs = packed_repository(tmp_path / "repo")
    scattered = blobs[::3]
    pack_kib = sum(path.stat().st_size for path in (repository / ".git/objects/pack").glob("*.pack")) // 1024
    monkeypatch.setattr(objects, "PACK_PAGES_RELEASED_EVERY", 8)
    # Each read maps its object's pages and the system's fault-around window (64 KiB by default)
    # around them: eight reads' worth at most, then the packs are closed.
    bounded = most_resident_while_reading(repository, scattered, 8)
    assert bounded <= 8 * (64 + 2 * BLOB_BYTES // 1024 + 8), bounded
    # The near miss: never released, the reads leave most of the pack mapped.
    monkeypatch.setattr(objects, "PACK_PAGES_RELEASED_EVERY", 10**9)
    unbounded = most_resident_while_reading(repository, scattered, len(scattered))
    assert unbounded > pack_kib // 2 and unbounded > 4 * bounded, (unbounded, pack_kib, bounded)
