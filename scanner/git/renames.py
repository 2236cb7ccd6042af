"""Which of the KB's files a commit renamed since the base: for expected files only.

When a pull request renames a labelled note (and its golden entry), the base does not have the
new name; scored as it is, the base would miss the answer only because of the rename. Both sides
here are the KB's files by the folder walk's rules (scanner.git.tree at the base and at HEAD), so
nothing outside the KB folder, no file over the per-file cap and no name the walk leaves out is
ever compared or read. Only the new names the caller asks about (expected files the base lacks)
are looked for, and the work is bounded three ways: a content rename (not an exact one) is
looked for among at most MAX_RENAME_PAIRS pairs and MAX_RENAME_BYTES read, and the deadline is
checked between blobs. Past a bound, exact renames are still found (git skips inexact detection
past its rename limit the same way).

Similarity is git's measure (`diff-tree -M`): content cut at line ends and every 64 bytes, the
bytes both sides share over the larger side's size, a rename at 50 % or more (git's default),
each old file the rename of at most one new file, best score first.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from collections.abc import Set as AbstractSet

from scanner.corpus.kb_files import KbFiles
from scanner.foundation.diagnostics import Diagnostics
from scanner.git.objects import read_blobs
from scanner.git.repository import Deadline, find_commit, open_repository
from scanner.git.revision import Repository
from scanner.git.tree import TreeFile, list_tree

RENAME_THRESHOLD_PERCENT = 50
"""git's default for `-M`."""

MAX_RENAME_PAIRS = 200 * 200
"""New files times old files compared by content; past it only exact renames are found."""

MAX_RENAME_BYTES = 64 * 1024 * 1024
"""Bytes read to compare contents (both sides together); past it only exact renames are found."""

_BLOCK_BYTES = 64


def renamed_since(
    repository: Repository,
    base_commit: str,
    base_files: Sequence[TreeFile],
    wanted: AbstractSet[str],
    rules: KbFiles,
    deadline: Deadline,
) -> dict[str, str]:
    """KB-relative new path -> old path, for each path in `wanted` that HEAD's commit holds, the
    base does not, and that was renamed from a file the base holds and HEAD does not. Empty when
    there is no HEAD commit or it is the base."""
    base_paths = {file.path for file in base_files}
    wanted = {path for path in wanted if path not in base_paths}
    if not wanted:
        return {}
    with open_repository(repository) as repo:
        head = find_commit(repo, "HEAD")
    if head is None or head == base_commit:
        return {}
    # The head's own warnings are this run's (the walk of the checkout gives them); not repeated.
    head_files = list_tree(repository, head, rules, Diagnostics(), deadline) or []
    head_paths = {file.path for file in head_files}
    targets = [file for file in head_files if file.path in wanted]
    sources = [file for file in base_files if file.path not in head_paths]
    renames: dict[str, str] = {}
    by_blob: dict[str, str] = {}
    for source in sources:
        by_blob.setdefault(source.blob, source.path)
    for target in targets:
        old = by_blob.pop(target.blob, None)
        if old is not None:
            renames[target.path] = old
    left = {path for path in by_blob.values()}
    targets = [file for file in targets if file.path not in renames]
    sources = [file for file in sources if file.path in left]
    renames.update(_content_renames(repository, targets, sources, deadline))
    return renames


def _content_renames(
    repository: Repository, targets: Sequence[TreeFile], sources: Sequence[TreeFile], deadline: Deadline
) -> dict[str, str]:
    # A pair whose sizes differ by more than the threshold allows cannot reach it: never read.
    sources = [s for s in sources if any(_may_match(s.size, t.size) for t in targets)]
    if not targets or not sources or len(targets) * len(sources) > MAX_RENAME_PAIRS:
        return {}
    if sum(file.size for file in (*targets, *sources)) > MAX_RENAME_BYTES:
        return {}
    blocks = [_blocks(data) for data in read_blobs(repository, [t.blob for t in targets], deadline, _cap(targets))]
    scored: list[tuple[int, str, str]] = []
    for source, data in zip(sources, read_blobs(repository, [s.blob for s in sources], deadline, _cap(sources))):
        source_blocks = _blocks(data)
        for target, target_blocks in zip(targets, blocks):
            if not _may_match(source.size, target.size):
                continue
            larger = max(source.size, target.size)
            common = sum(min(count, target_blocks[key]) for key, count in source_blocks.items() if key in target_blocks)
            if larger and common * 100 >= RENAME_THRESHOLD_PERCENT * larger:
                # Best first; ties go to the old path first in path order, then the new one.
                scored.append((-(common * 10_000 // larger), source.path, target.path))
    renames: dict[str, str] = {}
    used: set[str] = set()
    for _score, old, new in sorted(scored):
        if new not in renames and old not in used:
            renames[new] = old
            used.add(old)
    return renames


def _cap(files: Iterable[TreeFile]) -> int:
    return max((file.size for file in files), default=0)


def _may_match(a: int, b: int) -> bool:
    return min(a, b) * 100 >= RENAME_THRESHOLD_PERCENT * max(a, b)


def _blocks(data: bytes) -> Counter[int]:
    """Bytes per block of content (each line, cut every 64 bytes), keyed by the block's hash: the
    blocks themselves are not kept, so a file's counts cost a fraction of its bytes."""
    counts: Counter[int] = Counter()
    for line in data.splitlines(keepends=True):
        for start in range(0, len(line), _BLOCK_BYTES):
            block = line[start : start + _BLOCK_BYTES]
            counts[hash(block)] += len(block)
    return counts
