"""The pull request's own git objects: a deep tree costs its size, a large tree meets the deadline,
and a partial clone's missing objects make the base unavailable, never an internal error. Real
repositories, made and cloned by git."""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest

import scanner.git.repository
from scanner.compare.comparison import NotComparedCause
from scanner.corpus.kb_files import KbFiles
from scanner.foundation.diagnostics import Diagnostics
from scanner.foundation.errors import ExitCode
from scanner.git.repository import Deadline, GitFailed
from scanner.git.revision import find_repository
from scanner.git.tree import ENTRIES_PER_DEADLINE_CHECK, list_tree
from tests.git.test_git_base import BASE_KB, GIT_ENV, commit, git, new_repo, run_pull_request
from tests.support.counting import steps

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="needs git")


def _deep(tmp_path: Path, depth: int, files: int) -> tuple[Path, str]:
    """A KB whose files sit `depth` folders down, none of them indexable (the base reader lists
    them and reads none)."""
    repo = new_repo(tmp_path / f"deep-{depth}")
    folder = repo / "kb" / "/".join(["d"] * depth)
    folder.mkdir(parents=True)
    for n in range(files):
        (folder / f"f{n}.bin").write_bytes(b"x")
    (repo / "kb" / "a.md").write_text("# A\nalpha\n", encoding="utf-8")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "deep")
    return repo, git(repo, "rev-parse", "HEAD")


def _listing(repo: Path, sha: str) -> list[str]:
    repository = find_repository(repo / "kb")
    assert repository is not None
    files = list_tree(repository, sha, KbFiles.excluding(()), Diagnostics(), Deadline.after(60))
    assert files is not None
    return [file.path for file in files]


def test_a_tree_four_times_deeper_costs_its_folders_more_not_its_files_times_its_depth(tmp_path: Path) -> None:
    # 5,000 files 1,500 levels down cost the square of the depth per file (99 s against 3 s).
    files = 1500
    shallow, deep = _deep(tmp_path, 25, files), _deep(tmp_path, 100, files)
    assert _listing(*deep) == ["a.md"]
    ratio = steps(lambda: _listing(*deep)) / steps(lambda: _listing(*shallow))
    # Files x depth counted 2.8 here (4 in the limit); the 75 more folders alone add 1.4.
    assert ratio < 2.0


def test_the_deadline_is_checked_inside_one_large_tree(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    repo = new_repo(tmp_path / "wide")
    for n in range(3 * ENTRIES_PER_DEADLINE_CHECK):
        (repo / "kb").mkdir(exist_ok=True)
        (repo / "kb" / f"f{n}.bin").write_bytes(b"x")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "wide")
    sha = git(repo, "rev-parse", "HEAD")
    looks: list[float] = []

    class Clock:
        """time.monotonic that counts its calls: the deadline ends after the second look."""

        @staticmethod
        def monotonic() -> float:
            looks.append(0.0)
            return 0.0 if len(looks) <= 1 else 100.0

    assert _listing(repo, sha) == []  # the near miss: within the deadline, the tree is listed
    monkeypatch.setattr(scanner.git.repository, "time", Clock)
    with pytest.raises(GitFailed, match="longer than"):
        list_tree(find_repository(repo / "kb"), sha, KbFiles.excluding(()), Diagnostics(), Deadline(1.0, 1.0))  # type: ignore[arg-type]
    assert len(looks) == 2  # one before the tree, one inside it


def _partial_clone(tmp_path: Path, retarget: bool, blobless: bool = True) -> tuple[Path, str]:
    """A blobless clone (served over file:// with filters allowed) of a repository whose head commit
    retargets (or keeps) a link in the KB; with `blobless` False, a full clone of the same."""
    origin = new_repo(tmp_path / "origin")
    commit(origin, {**BASE_KB, "b.md": "# B\nother words\n"}, "base")
    os.symlink("deploy.md", origin / "kb" / "link.md")
    git(origin, "add", "-A")
    git(origin, "commit", "-q", "-m", "link")
    base = git(origin, "rev-parse", "HEAD")
    if retarget:
        (origin / "kb" / "link.md").unlink()
        os.symlink("b.md", origin / "kb" / "link.md")
    commit(origin, {"rollback.md": "# Rollback\n\nRevert a bad release with the previous image.\n"}, "head")
    git(origin, "config", "uploadpack.allowFilter", "true")
    clone = tmp_path / "clone"
    subprocess.run(
        ["git", "clone", "-q", *(["--filter=blob:none"] if blobless else []), f"file://{origin}", str(clone)],
        env=GIT_ENV, check=True, capture_output=True,
    )
    missing = subprocess.run(
        ["git", "-C", str(clone), "rev-list", "--objects", "--missing=print", "--all"],
        env=GIT_ENV, check=True, capture_output=True, text=True,
    ).stdout
    assert ("?" in missing) == blobless  # the base's blobs are not in a partial clone
    return clone, base


@pytest.mark.parametrize("retarget", [True, False], ids=["link-retargeted", "link-kept"])
def test_a_partial_clone_missing_the_bases_objects_makes_the_base_unavailable_not_exit_3(
    tmp_path: Path, retarget: bool
) -> None:
    clone, base = _partial_clone(tmp_path, retarget)
    started = time.monotonic()
    result, report = run_pull_request(clone / "kb", base)
    assert result.exit_code == ExitCode.OK, result.stderr_text
    assert report["comparison"]["cause"] == NotComparedCause.REVISION_UNAVAILABLE.value
    assert "is missing" in " ".join(report["comparison"]["reasons"])
    assert time.monotonic() - started < 60


def test_the_same_pull_request_in_a_full_clone_is_compared(tmp_path: Path) -> None:
    # The near miss: every object is there, and the base is read through the retargeted link.
    clone, base = _partial_clone(tmp_path, retarget=True, blobless=False)
    result, report = run_pull_request(clone / "kb", base)
    assert result.exit_code == ExitCode.OK, result.stderr_text
    assert report["comparison"]["status"] == "compared"


def _trees(repo: Path, sha: str) -> list[str]:
    return [line.split()[2] for line in git(repo, "ls-tree", "-r", "-t", sha).splitlines() if line.split()[1] == "tree"]


def test_a_tree_is_read_from_the_packs_first_and_holds_what_dulwichs_tree_holds(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from dulwich.object_store import DiskObjectStore
    from dulwich.objects import Tree
    from dulwich.repo import Repo

    from scanner.git.tree import tree_entries

    repo = new_repo(tmp_path / "packed")
    for version in range(3):  # three versions of every tree, so the packs hold deltas of them
        commit(repo, {f"d{n % 4}/e{n % 3}/note-{n}.md": f"# N{n}\nv{version}\n" for n in range(40)}, f"v{version}")
    git(repo, "gc", "-q", "--aggressive")
    loose_commit = commit(repo, {"d0/e0/new.md": "# New\nloose\n"}, "loose")  # its trees stay loose
    store_reads: list[bytes] = []
    store_raw = DiskObjectStore.get_raw

    def counted(self: DiskObjectStore, name: bytes) -> tuple[int, bytes]:
        store_reads.append(name)
        return store_raw(self, name)  # type: ignore[arg-type]

    monkeypatch.setattr(DiskObjectStore, "get_raw", counted)
    with Repo(str(repo)) as opened:
        store = opened.object_store
        packed = _trees(repo, "HEAD~1")
        loose = set(_trees(repo, loose_commit)) - set(packed)
        assert packed and loose
        for tree_id in [*packed, *loose]:
            got = tree_entries(store, tree_id.encode("ascii"))
            store_reads.clear()
            tree = opened[tree_id.encode("ascii")]
            assert isinstance(tree, Tree)
            assert got == {item.path: (item.mode, item.sha) for item in tree.iteritems()}
        store_reads.clear()
        for tree_id in packed:
            tree_entries(store, tree_id.encode("ascii"))
        assert store_reads == []  # the packs answered; the near miss asks the store for each
        for tree_id in loose:
            tree_entries(store, tree_id.encode("ascii"))
        assert len(store_reads) == len(loose)


def test_a_tree_object_that_is_not_what_its_id_names_makes_the_base_unreadable(tmp_path: Path) -> None:
    import zlib

    repo = new_repo(tmp_path / "planted")
    sha = commit(repo, {"a.md": "# A\nalpha\n", "sub/b.md": "# B\nbeta\n"}, "base")
    assert _listing(repo, sha) == ["a.md", "sub/b.md"]  # the near miss: as written, it lists
    sub = git(repo, "rev-parse", f"{sha}:kb/sub")
    other = git(repo, "rev-parse", f"{sha}:kb")  # another tree's bytes, under the sub-folder's id
    raw = subprocess.run(["git", "-C", str(repo), "cat-file", "tree", other], capture_output=True, check=True).stdout
    path = repo / ".git" / "objects" / sub[:2] / sub[2:]
    path.chmod(0o644)
    path.write_bytes(zlib.compress(b"tree %d\x00" % len(raw) + raw))
    with pytest.raises(GitFailed, match="cannot be read"):
        _listing(repo, sha)
