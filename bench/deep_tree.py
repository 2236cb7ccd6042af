"""What listing the KB at a commit costs for a deep tree, against a shallow one of the same files.

    python bench/deep_tree.py [--files 5000] [--depth 1500] [--rounds 3]

Builds, with dulwich, a repository whose commit holds `kb/` with FILES non-indexable files at the
bottom of DEPTH nested folders (the red team's tree), and the same files DEPTH/4 folders down, and
times the base reader's listing of each (scanner.git.tree.list_tree), paired per round. Linear cost
shows a ratio well under 4 (the extra folders only); the square of the depth per file showed 30.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from dulwich.objects import Blob, Commit, Tree
from dulwich.repo import Repo

from scanner.corpus.kb_files import KbFiles
from scanner.foundation.diagnostics import Diagnostics
from scanner.git.repository import Deadline
from scanner.git.revision import find_repository
from scanner.git.tree import list_tree


def build(folder: Path, files: int, depth: int) -> str:
    repo = Repo.init(str(folder), mkdir=True)
    store = repo.object_store
    blob = Blob.from_string(b"x")
    store.add_object(blob)
    bottom = Tree()
    for n in range(files):
        bottom.add(f"f{n}.bin".encode(), 0o100644, blob.id)
    store.add_object(bottom)
    current = bottom
    for _ in range(depth):
        parent = Tree()
        parent.add(b"d", 0o040000, current.id)
        store.add_object(parent)
        current = parent
    root = Tree()
    root.add(b"kb", 0o040000, current.id)
    store.add_object(root)
    commit = Commit()
    commit.tree = root.id
    commit.author = commit.committer = b"b <b@example.com>"
    commit.author_time = commit.commit_time = 0
    commit.author_timezone = commit.commit_timezone = 0
    commit.message = b"deep"
    store.add_object(commit)
    (folder / "kb").mkdir()
    return commit.id.decode("ascii")


def listed(folder: Path, sha: str) -> float:
    repository = find_repository(folder / "kb")
    assert repository is not None
    start = time.perf_counter()
    list_tree(repository, sha, KbFiles.excluding(()), Diagnostics(), Deadline.after(3600))
    return time.perf_counter() - start


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=5000)
    parser.add_argument("--depth", type=int, default=1500)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as work:
        deep, shallow = Path(work) / "deep", Path(work) / "shallow"
        deep_sha, shallow_sha = build(deep, args.files, args.depth), build(shallow, args.files, args.depth // 4)
        pairs = [(listed(deep, deep_sha), listed(shallow, shallow_sha)) for _ in range(args.rounds)]
    a, b = statistics.median(p[0] for p in pairs), statistics.median(p[1] for p in pairs)
    print(f"{args.files} files {args.depth} folders down {a:.3f} s, {args.depth // 4} down {b:.3f} s, ratio {a / b:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
