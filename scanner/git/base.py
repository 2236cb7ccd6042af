"""Evaluate the KB as it was at a git revision, in this run, and compare this run with it.

`--baseline-ref REV` (Action: `baseline-ref`, or a pull request's base commit by
default) reads the KB folder's files from the tree of commit REV, evaluates them
with THIS run's golden set and settings, and compares this run with that
evaluation. Both sides share the golden file and every setting, so their
fingerprints are equal and the comparison is possible also when the pull request
edits the golden file; what differs is the corpus, which is what a reviewer
wants measured.

The tree is read without a checkout and without the git program: dulwich (a
pure-Python git library) reads the repository's objects in this process, so the
working tree and the index are never touched and the image needs no git (and no
perl). The listing gets the folder walk's rules (scanner/corpus/reader.py):
dot-folders, excludes, suffixes, undecodable names, the per-file size cap,
symbolic links followed only inside the KB and never to a folder, submodules
skipped. tests/git/test_git_base.py reads one tree both ways and requires the same
corpus and the same warnings.

Reading objects runs nothing the repository could name: dulwich has no hooks,
no fsmonitor, no filters or textconv on this path, no lazy fetch of a partial
clone's missing objects (a missing object is a KeyError, reported as a cause),
reads no GIT_* variable when given the repository's path, and has no ownership
check (git's safe.directory), so the runner user's checkout is read by the
container's root as is. One deadline bounds the whole read, checked between
objects.

What cannot be compared is a `Comparison` with a `NotComparedCause` and a hint,
never a stopped run, except when the user named the revision and it is the
user's to fix (`--baseline-ref` naming nothing in a full clone, no repository):
then it is an InputError naming the flag (exit 2). The base's evaluation is
returned for the comparison only; it is never written to the history.
"""

from __future__ import annotations

import json
import os
import posixpath
import time
import traceback
import zlib
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from dulwich.diff_tree import CHANGE_RENAME, RenameDetector, tree_changes
from dulwich.errors import NotGitRepository, WrongObjectException
from dulwich.object_store import DiskObjectStore
from dulwich.objects import Commit, ObjectID, Tag, Tree
from dulwich.objectspec import parse_commit, parse_object
from dulwich.repo import Repo

from scanner.compare.comparison import (
    BaseRequest,
    BaseRevision,
    Comparison,
    NotComparedCause,
    Origin,
    Source,
    compare_runs,
    no_previous,
)
from scanner.corpus.parse_memo import ParseMemo
from scanner.corpus.reader import INDEXED_SUFFIXES, MAX_DOCUMENT_BYTES, compile_excludes
from scanner.evaluation.records import RunRecord
from scanner.foundation.diagnostics import DiagnosticCode, Diagnostics
from scanner.foundation.errors import InputError
from scanner.golden.file import GoldenSet
from scanner.pipeline.evaluate import EvalOptions, run_eval
from scanner.report.document import run_document
from scanner.report.read import run_from_document

FLAG = "--baseline-ref"

GIT_DEADLINE_SECONDS = 300.0
"""For all reads of one base evaluation together, checked between objects. Listing and reading a
10,000-file KB takes about a second (bench/base_and_head.py); the deadline only stops a read
that crawls (a network file system), and then the run goes on without a comparison."""

MAX_REVISION_CHARS = 256
MAX_SYMLINK_HOPS = 40
"""Linux's limit (ELOOP) for following symbolic links, used for links inside the tree."""

SHALLOW_HINT = "set `fetch-depth: 0` on actions/checkout, so the checkout holds the base commit"

@dataclass(frozen=True, slots=True)
class Repository:
    top: Path
    """The folder holding `.git`."""
    prefix: str
    """The KB folder relative to `top`, `/`-separated; "" when the KB is the repository root."""


@dataclass(frozen=True, slots=True)
class ResolvedBase:
    request: BaseRequest
    repository: Repository
    commit: str
    committed_at: datetime

    @property
    def revision(self) -> BaseRevision:
        return BaseRevision(self.commit, self.request.ref)


class GitFailed(Exception):
    """The repository did not give what was asked (a missing or unreadable object, the deadline)."""


@dataclass(frozen=True, slots=True)
class TreeFile:
    path: str
    """KB-relative, as the document will be named (a link's own name, not its target's)."""
    blob: str
    size: int


# --- finding the repository and the revision ----------------------------------------------


def resolve_base(
    kb_path: Path, request: BaseRequest, *, external_retriever: bool
) -> ResolvedBase | Comparison | None:
    """The commit to evaluate, or a Comparison saying why there is none, or None when the pull
    request's base does not apply (no repository, no git, an external retriever): the Action
    chose it by default, so the run then compares as it would without it (history, baseline).

    Raises InputError (exit 2) only for a revision the user named (Origin.FLAG) whose problem
    the user must fix. Called before this run's own evaluation, so a bad flag stops the run
    before anything is written."""
    explicit = request.origin is Origin.FLAG
    if explicit:
        check_revision_text(request.revision)

    def unavailable(reason: str, hint: str | None = None) -> Comparison:
        return no_previous(reason, Source.GIT, NotComparedCause.REVISION_UNAVAILABLE, hint=hint)

    if external_retriever:
        reason = "the base revision is evaluated with the built-in search; an external retriever answers from its own index"
        if explicit:
            raise InputError(reason, field=FLAG, hint="drop --baseline-ref, or compare with a saved --baseline report")
        return None
    repository = find_repository(kb_path)
    if repository is None:
        reason = f"{kb_path} is not inside a git repository"
        if explicit:
            raise InputError(reason, field=FLAG, hint="run kb-eval on a git checkout, or drop --baseline-ref")
        return None
    deadline = time.monotonic() + GIT_DEADLINE_SECONDS
    try:
        with open_repository(repository) as repo:
            commit = _resolve_commit(repo, request.revision)
            shallow = commit is None and bool(repo.get_shallow())
            committed_at = _commit_time(repo, commit) if commit is not None else None
        if commit is None or committed_at is None:
            if shallow:
                return no_previous(
                    f"{_shown_ref(request)} is not in this checkout, which is shallow (a fetch of the last "
                    "commit only): nothing was compared",
                    Source.GIT, NotComparedCause.SHALLOW_CLONE, hint=SHALLOW_HINT,
                )
            reason = f"{_shown_ref(request)} does not name a commit in this repository"
            if explicit:
                raise InputError(
                    reason, field=FLAG,
                    hint="give a branch, tag or commit SHA that `git rev-parse` knows (e.g. origin/main after a fetch)",
                )
            return unavailable(reason, SHALLOW_HINT)
        _check_deadline(deadline)
    except GitFailed as error:
        return unavailable(f"git could not read {_shown_ref(request)}: {error}")
    return ResolvedBase(request, repository, commit, committed_at)


def check_revision_text(revision: str) -> None:
    """A revision is one git name: refused before it is looked up when it could be read as an option
    or holds what no ref name can (control characters, spaces)."""
    bad = (
        not revision
        or len(revision) > MAX_REVISION_CHARS
        or revision.startswith("-")
        or any(c.isspace() or ord(c) < 32 or ord(c) == 127 for c in revision)
    )
    if bad:
        raise InputError(
            f"{FLAG} is {revision[:80]!r}, which is not a git revision",
            field=FLAG,
            hint="give a branch, tag or commit SHA, e.g. origin/main (Action input baseline-ref)",
        )


def find_repository(kb_path: Path) -> Repository | None:
    """The repository holding the KB folder, found as git finds it: the nearest `.git` above, a
    folder or (a worktree, a submodule) a `gitdir:` file, which dulwich's Repo follows."""
    kb = Path(os.path.realpath(kb_path))
    for folder in (kb, *kb.parents):
        marker = folder / ".git"
        if os.path.lexists(marker):
            prefix = kb.relative_to(folder).as_posix()
            return Repository(folder, "" if prefix == "." else prefix)
    return None


def _shown_ref(request: BaseRequest) -> str:
    if request.label is not None:
        return f"the base commit {request.revision[:12]} ({request.label})"
    return f"revision {request.revision!r}"


def open_repository(repository: Repository) -> Repo:
    """The repository, opened by its path: dulwich then reads no GIT_DIR or other GIT_* variable,
    and, unlike git, checks no owner, so the container's root reads the runner user's checkout."""
    try:
        return Repo(str(repository.top))
    except (NotGitRepository, OSError, ValueError) as error:
        raise GitFailed(f"{repository.top} cannot be opened as a repository ({error})") from None


def _resolve_commit(repo: Repo, revision: str) -> str | None:
    """The commit REV names, as `git rev-parse REV^{commit}` finds it, or None. parse_commit knows
    refs (branches, tags, remotes) and full or short SHAs; parse_object also knows `~`, `^` and
    `@{n}`; a tag is followed to its commit."""
    found: object
    try:
        found = parse_commit(repo, revision)
    except (KeyError, ValueError, WrongObjectException):
        try:
            found = parse_object(repo, revision.encode("utf-8"))
            while isinstance(found, Tag):
                found = repo[found.object[1]]
        except (KeyError, ValueError, WrongObjectException):
            return None
    return found.id.decode("ascii") if isinstance(found, Commit) else None


def _commit_time(repo: Repo, commit: str) -> datetime:
    try:
        found = repo[commit.encode("ascii")]
        if not isinstance(found, Commit):
            raise GitFailed(f"{commit[:12]} is not a commit")
        return datetime.fromtimestamp(found.commit_time, UTC)
    except (KeyError, ValueError, OverflowError, OSError) as error:
        raise GitFailed(f"commit {commit[:12]} has no readable committer date ({error})") from None


def _check_deadline(deadline: float) -> None:
    if time.monotonic() > deadline:
        raise GitFailed(f"reading the repository took longer than {GIT_DEADLINE_SECONDS:g} s")


# --- listing the tree with the folder walk's rules ---------------------------------------


def list_tree(
    base: ResolvedBase, exclude: Sequence[str], diagnostics: Diagnostics, deadline: float
) -> list[TreeFile] | None:
    """The KB's indexable files at the base commit; None when the KB folder is not there."""
    repository = base.repository
    with open_repository(repository) as repo:
        return _list_tree(repo, base, exclude, diagnostics, deadline)


def _list_tree(
    repo: Repo, base: ResolvedBase, exclude: Sequence[str], diagnostics: Diagnostics, deadline: float
) -> list[TreeFile] | None:
    repository = base.repository
    store = repo.object_store
    try:
        commit = repo[ObjectID(base.commit.encode("ascii"))]
        if not isinstance(commit, Commit):
            raise GitFailed(f"{base.commit[:12]} is not a commit")
        kb_tree = commit.tree
        if repository.prefix:
            try:
                mode, kb_tree = commit_tree_lookup(store, commit.tree, repository.prefix)
            except KeyError:
                return None
            if mode != 0o040000:
                return None
        entries: dict[str, tuple[str, str, int]] = {}
        folders: set[str] = set()
        order: list[str] = []
        for entry in store.iter_tree_contents(kb_tree):
            _check_deadline(deadline)
            path = entry.path.decode("utf-8", "surrogateescape")
            mode_text = f"{entry.mode:06o}"
            blob = entry.sha.decode("ascii")
            # The size from the object's header, before its body is read (a file over the cap is
            # never inflated); links and submodules need none.
            size = object_size(store, blob) if mode_text in ("100644", "100755") else 0
            entries[path] = (mode_text, blob, size)
            order.append(path)
            parts = path.split("/")
            folders.update("/".join(parts[:i]) for i in range(1, len(parts)))
    except KeyError as error:
        raise GitFailed(f"object {_hex(error)} is missing (a partial clone's blobs are never fetched)") from None
    links = sorted({blob for mode, blob, _ in entries.values() if mode == "120000"})
    link_texts = dict(zip(links, (_decode_link(data) for data in _read(store, links, deadline, None))))
    tree = _Tree(entries, folders, link_texts, repository.prefix)
    return list(_kept_files(sorted(order, key=_git_order), tree, exclude, diagnostics))


def _git_order(path: str) -> bytes:
    # git lists a tree recursively in byte order of the full paths; the walk below depends only on
    # the set, the order is kept so warnings come in the order `git ls-tree -r` gave them.
    return path.encode("utf-8", "surrogateescape")


def _hex(error: KeyError) -> str:
    key = error.args[0] if error.args else b""
    return key.decode("ascii", "replace") if isinstance(key, bytes) else str(key)


def commit_tree_lookup(store: DiskObjectStore, tree_id: bytes, prefix: str) -> tuple[int, bytes]:
    """(mode, id) of the entry at `prefix` under tree `tree_id`; KeyError when there is none."""
    mode, current = 0o040000, tree_id
    for part in prefix.encode("utf-8", "surrogateescape").split(b"/"):
        if mode != 0o040000:
            raise KeyError(part)
        tree = store[ObjectID(current)]
        if not isinstance(tree, Tree):
            raise KeyError(part)
        mode, current = tree[part]
    return mode, current


def object_size(store: DiskObjectStore, blob: str) -> int:
    """An object's size from its header, reading only the first bytes: a loose object's zlib
    stream, or a packed object's entry header (and a delta's first bytes, which hold the size of
    the object it makes). dulwich has no call for this; git's `ls-tree -l` does the same."""
    sha = ObjectID(blob.encode("ascii"))
    for one in _stores(store):
        loose = os.path.join(one.path, blob[:2], blob[2:])
        if os.path.isfile(loose):
            return _loose_size(loose, blob)
        for pack in one.packs:
            try:
                offset = pack.index.object_offset(sha)
            except KeyError:
                continue
            return _packed_size(os.fspath(pack.data.path), offset, blob)
    raise KeyError(sha)


def _stores(store: DiskObjectStore) -> Iterator[DiskObjectStore]:
    # This repository's objects, then its alternates' (a `git clone --shared` or `--reference`).
    yield store
    for alternate in store.alternates:
        if isinstance(alternate, DiskObjectStore):
            yield from _stores(alternate)


_HEADER_BYTES = 64


def _loose_size(path: str, blob: str) -> int:
    inflater = zlib.decompressobj()
    with open(path, "rb") as stream:
        head = inflater.decompress(stream.read(_HEADER_BYTES * 4), _HEADER_BYTES)
    kind, _, rest = head.partition(b" ")
    size_text, nul, _ = rest.partition(b"\0")
    if kind != b"blob" or not nul or not size_text.isdigit():
        raise GitFailed(f"object {blob} is not a readable blob")
    return int(size_text)


_OFS_DELTA, _REF_DELTA = 6, 7


def _packed_size(pack_path: str, offset: int, blob: str) -> int:
    with open(pack_path, "rb") as stream:
        stream.seek(offset)
        head = stream.read(_HEADER_BYTES)
        byte = head[0]
        kind = (byte >> 4) & 7
        size, shift, i = byte & 15, 4, 1
        while byte & 0x80:
            byte = head[i]
            size |= (byte & 0x7F) << shift
            shift, i = shift + 7, i + 1
        if kind not in (_OFS_DELTA, _REF_DELTA):
            return size
        if kind == _REF_DELTA:
            i += 20
        else:
            while head[i] & 0x80:
                i += 1
            i += 1
        stream.seek(offset + i)
        delta = zlib.decompressobj().decompress(stream.read(_HEADER_BYTES * 4), 2 * 10)
    _source_size, at = _varint(delta, 0, blob)
    target_size, _ = _varint(delta, at, blob)
    return target_size


def _varint(data: bytes, at: int, blob: str) -> tuple[int, int]:
    value = shift = 0
    while True:
        if at >= len(data):
            raise GitFailed(f"packed object {blob} has an unreadable delta header")
        byte = data[at]
        value |= (byte & 0x7F) << shift
        shift, at = shift + 7, at + 1
        if not byte & 0x80:
            return value, at


@dataclass(frozen=True, slots=True)
class _Tree:
    entries: Mapping[str, tuple[str, str, int]]
    """KB-relative path -> (mode, blob id, size) for every file, link and submodule."""
    folders: set[str]
    link_texts: Mapping[str, str | None]
    """Link blob id -> its target text (None when it is not UTF-8)."""
    prefix: str


def _decode_link(data: bytes) -> str | None:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def _kept_files(order: Iterable[str], tree: _Tree, exclude: Sequence[str], diagnostics: Diagnostics) -> Iterator[TreeFile]:
    """The folder walk's choices (corpus._indexable_files and corpus._read_bytes), made on a listing."""
    excluded = compile_excludes(exclude)

    def is_excluded(relative: str) -> bool:
        return excluded is not None and excluded.fullmatch(relative) is not None

    for path in order:
        mode, blob, size = tree.entries[path]
        parts = path.split("/")
        if any(part in ("", ".", "..") for part in parts):
            # git fsck refuses such a tree and no checkout can hold it.
            diagnostics.warn(DiagnosticCode.FILE_SKIPPED, "path is not a valid file name in git; not indexed", _shown(path))
            continue
        # Dot-folders and excluded folders are pruned by the walk, silently.
        if any(part.startswith(".") or is_excluded("/".join(parts[: i + 1])) for i, part in enumerate(parts[:-1])):
            continue
        if mode == "160000":
            continue  # a submodule: its files are in another repository, as on disk without `submodules:`
        name = parts[-1]
        link_target = _link_target(path, tree) if mode == "120000" else None
        if link_target == _FOLDER:
            # The walk lists a link to a folder with the folders, whatever its name's suffix.
            if not (name.startswith(".") or is_excluded(path)):
                diagnostics.warn(DiagnosticCode.SYMLINK_SKIPPED, "symbolic link to a folder is not followed", _shown(path))
            continue
        if not name.lower().endswith(INDEXED_SUFFIXES) or is_excluded(path):
            continue
        if not _is_utf8(path):
            diagnostics.warn(DiagnosticCode.FILE_SKIPPED, "file name is not valid UTF-8; rename it", _shown(path))
            continue
        if mode == "120000":
            if link_target == _OUTSIDE:
                diagnostics.warn(DiagnosticCode.SYMLINK_SKIPPED, "symbolic link points outside the KB; not followed", path)
                continue
            if link_target in (_DANGLING, _LOOP) or link_target is None:
                # The walk's words for the same link on disk (scanner/foundation/files.py).
                why = "is a symbolic link loop" if link_target == _LOOP else "is a symbolic link to nothing"
                diagnostics.warn(DiagnosticCode.FILE_SKIPPED, f"file {why}; not indexed", path)
                continue
            mode, blob, size = tree.entries[link_target]
        elif mode not in ("100644", "100755"):
            continue
        if size > MAX_DOCUMENT_BYTES:
            diagnostics.warn(
                DiagnosticCode.FILE_SKIPPED, f"file is {size} bytes, over the {MAX_DOCUMENT_BYTES}-byte cap; not indexed", path
            )
            continue
        yield TreeFile(path, blob, size)


_FOLDER = "\0folder"
_OUTSIDE = "\0outside"
_DANGLING = "\0dangling"
_LOOP = "\0loop"


def _link_target(path: str, tree: _Tree) -> str:
    """Where a symbolic link in the tree leads: a regular file's KB-relative path, or one of
    _FOLDER, _OUTSIDE, _DANGLING, _LOOP. Resolved in repository coordinates, so `../kb/x.md` from
    inside `kb` stays inside, as realpath() finds on disk; an absolute target is outside."""
    prefix = tree.prefix
    current = path
    for _ in range(MAX_SYMLINK_HOPS):
        _mode, blob, _size = tree.entries[current]
        target = tree.link_texts.get(blob)
        if target is None or target.startswith("/"):
            return _OUTSIDE
        joined = posixpath.normpath(posixpath.join(prefix, posixpath.dirname(current), target))
        if prefix:
            if not joined.startswith(prefix + "/"):
                return _FOLDER if joined == prefix else _OUTSIDE
            relative = joined[len(prefix) + 1 :]
        else:
            if joined == ".":
                return _FOLDER
            if joined == ".." or joined.startswith("../"):
                return _OUTSIDE
            relative = joined
        if relative in tree.folders:
            return _FOLDER
        found = tree.entries.get(relative)
        if found is None:
            return _DANGLING
        if found[0] != "120000":
            return relative if found[0] in ("100644", "100755") else _DANGLING
        current = relative
    return _LOOP


def _is_utf8(path: str) -> bool:
    try:
        path.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _shown(path: str) -> str:
    return path.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


# --- reading blobs -------------------------------------------------------------------------


def read_blobs(repository: Repository, blobs: Sequence[str], deadline: float) -> Iterator[bytes]:
    """Each blob's bytes, in order, read in this process (no filters, no textconv: the object as
    stored). Streamed: one blob is held at a time; the deadline is checked before each."""
    with open_repository(repository) as repo:
        yield from _read(repo.object_store, blobs, deadline, MAX_DOCUMENT_BYTES)


def _read(store: DiskObjectStore, blobs: Sequence[str], deadline: float, cap: int | None) -> Iterator[bytes]:
    for blob in blobs:
        _check_deadline(deadline)
        try:
            if cap is not None and object_size(store, blob) > cap:
                # Only blobs the listing showed under the cap are asked for; a larger one is not them.
                raise GitFailed(f"blob {blob} is over {cap} bytes, not what the tree listed")
            kind, data = store.get_raw(ObjectID(blob.encode("ascii")))
        except KeyError:
            raise GitFailed(f"object {blob} is missing (a partial clone's blobs are never fetched)") from None
        if kind != 3:  # a blob
            raise GitFailed(f"object {blob} is not a blob")
        yield data


# --- the expected files a pull request renamed -------------------------------------------------


def renamed_since(base: ResolvedBase, deadline: float) -> dict[str, str]:
    """KB-relative new path -> old path, for the files renamed from the base commit to HEAD as
    `git diff-tree -M` sees them (renames with edits included). Empty when there is no HEAD."""
    with open_repository(base.repository) as repo:
        return _renamed_since(repo, base, deadline)


def _renamed_since(repo: Repo, base: ResolvedBase, deadline: float) -> dict[str, str]:
    repository = base.repository
    head = _resolve_commit(repo, "HEAD")
    if head is None or head == base.commit:
        return {}
    prefix = repository.prefix.encode("utf-8", "surrogateescape") + b"/" if repository.prefix else b""
    try:
        old_tree = repo[base.commit.encode("ascii")]
        new_tree = repo[head.encode("ascii")]
        assert isinstance(old_tree, Commit) and isinstance(new_tree, Commit)  # both resolved as commits
        # git's defaults for `diff-tree -M`: 50% similar, renames with edits included.
        detector = RenameDetector(repo.object_store, rename_threshold=50)
        renames: dict[str, str] = {}
        for change in tree_changes(repo.object_store, old_tree.tree, new_tree.tree, rename_detector=detector):
            _check_deadline(deadline)
            if change.type != CHANGE_RENAME or change.old is None or change.new is None:
                continue
            old, new = change.old.path, change.new.path
            if old is None or new is None or not (old.startswith(prefix) and new.startswith(prefix)):
                continue
            renames[new[len(prefix):].decode("utf-8", "surrogateescape")] = old[len(prefix):].decode(
                "utf-8", "surrogateescape"
            )
    except KeyError as error:
        raise GitFailed(f"object {_hex(error)} is missing (a partial clone's blobs are never fetched)") from None
    return renames


def golden_at_base(golden: GoldenSet, renames: Mapping[str, str], present: set[str]) -> GoldenSet:
    """This run's golden set, with each expected file that the base knows under its old name
    expected under that name: a pull request that renames a labelled note (and its golden
    entry) is then not scored as the base missing it. The file hash, and so the fingerprint,
    stays this run's."""
    queries = []
    for query in golden.queries:
        expected = tuple(
            replace(entry, path=renames[entry.path])
            if entry.path not in present and renames.get(entry.path) in present
            else entry
            for entry in query.expected
        )
        queries.append(replace(query, expected=expected))
    return replace(golden, queries=tuple(queries))


# --- evaluating the base and comparing ------------------------------------------------------


@dataclass(frozen=True, slots=True)
class BaseEvaluation:
    """The base side of a comparison: its run record, and what reading it recorded."""

    run: RunRecord
    diagnostics: Diagnostics
    """Kept apart from this run's warnings: they describe files as they were at the base."""
    renamed: Mapping[str, str]
    """Expected files scored under their old name at the base (new -> old)."""


def evaluate_base(
    base: ResolvedBase, options: EvalOptions, golden: GoldenSet, memo: ParseMemo | None
) -> BaseEvaluation | Comparison:
    """Evaluate the KB at the base commit with this run's golden set and settings."""
    deadline = time.monotonic() + GIT_DEADLINE_SECONDS
    diagnostics = Diagnostics()
    try:
        files = list_tree(base, options.exclude, diagnostics, deadline)
        if files is None:
            return no_previous(
                f"the KB folder {base.repository.prefix or '.'} does not exist at {base.commit[:12]} "
                f"({base.request.ref}): nothing to compare with",
                Source.GIT, NotComparedCause.REVISION_UNAVAILABLE, revision=base.revision,
            )
        present = {file.path for file in files}
        renames = renamed_since(base, deadline)
        base_golden = golden_at_base(golden, renames, present)
        used = {new: old for new, old in renames.items() if any(
            e.path == new for q in golden.queries for e in q.expected) and new not in present and old in present}

        def source(_diagnostics: Diagnostics) -> Iterator[tuple[str, bytes]]:
            blobs = read_blobs(base.repository, [file.blob for file in files], deadline)
            return ((file.path, data) for file, data in zip(files, blobs))

        outcome = run_eval(
            replace(
                options,
                golden=base_golden,
                parse_memo=memo,
                corpus_source=source,
                scan_quotes=False,
                cache_dir=None,
                timestamp=base.committed_at,
            ),
            diagnostics,
        )
    except GitFailed as error:
        return no_previous(
            f"git could not read the KB at {base.commit[:12]} ({base.request.ref}): {error}",
            Source.GIT, NotComparedCause.REVISION_UNAVAILABLE, revision=base.revision,
        )
    return BaseEvaluation(outcome.run, diagnostics, used)


def compare_with_base(current: RunRecord, base: ResolvedBase, evaluated: BaseEvaluation | Comparison) -> Comparison:
    if isinstance(evaluated, Comparison):
        return evaluated
    return compare_runs(current, evaluated.run, Source.GIT, base.revision)


# --- the base beside the head --------------------------------------------------------------


class BaseBesideHead:
    """The base evaluated in a forked child while this process goes on with the head.

    Started from `EvalOptions.after_read`, when the head's corpus is read: the child inherits
    the filled parse memo (copy-on-write, nothing is sent), and the two index builds and
    searches, which are most of an evaluation, run on two cores at once instead of one after
    the other (bench/base_and_head.py). The child sends its run back as the report's JSON run
    document (the history's format, read back by the history's reader) or why it could not
    compare; a child that fails is an internal error, as it would be in process. Where there is
    no fork (Windows) the base is evaluated after the head, in process."""

    def __init__(self, base: ResolvedBase, options: EvalOptions, memo: ParseMemo) -> None:
        self.base = base
        self.options = options
        self.memo = memo
        self._golden: GoldenSet | None = None
        self._child: tuple[int, int] | None = None
        """(pid, read end of its pipe) while a child runs."""

    def start(self, golden: GoldenSet) -> None:
        self._golden = golden
        if not hasattr(os, "fork"):
            return
        read_end, write_end = os.pipe()
        pid = os.fork()
        if pid == 0:  # pragma: no cover - the child's lines are measured by what it sends back
            os.close(read_end)
            self._run_child(write_end, golden)
        os.close(write_end)
        self._child = (pid, read_end)

    def _run_child(self, write_end: int, golden: GoldenSet) -> None:  # pragma: no cover - in the child
        code = 0
        try:
            evaluated = evaluate_base(self.base, self.options, golden, self.memo)
            message: dict[str, object]
            if isinstance(evaluated, Comparison):
                message = {"not_compared": [evaluated.reasons[0], evaluated.cause.value if evaluated.cause else None]}
            else:
                message = {"run": run_document(evaluated.run), "renamed": dict(evaluated.renamed)}
        except BaseException:  # noqa: BLE001 - whatever happens, the parent must hear of it
            message, code = {"error": traceback.format_exc()}, 1
        try:
            with os.fdopen(write_end, "wb") as pipe:
                pipe.write(json.dumps(message).encode("utf-8"))
        finally:
            os._exit(code)  # no atexit handler, no flush of buffers the parent also holds

    def result(self) -> BaseEvaluation | Comparison:
        if self._golden is None:
            raise RuntimeError("the base was never started")  # run_eval calls after_read first
        if self._child is None:
            return evaluate_base(self.base, self.options, self._golden, self.memo)
        pid, read_end = self._child
        self._child = None
        with os.fdopen(read_end, "rb") as pipe:
            data = pipe.read()  # to EOF before waiting: a large run would fill the pipe
        os.waitpid(pid, 0)
        message: dict[str, Any] = (
            json.loads(data) if data else {"error": "the base evaluation's process ended without an answer"}
        )
        if "error" in message:
            raise RuntimeError(f"evaluating the base revision failed:\n{message['error']}")
        if "not_compared" in message:
            reason, cause = message["not_compared"]
            return no_previous(
                reason, Source.GIT, NotComparedCause(cause) if cause else NotComparedCause.REVISION_UNAVAILABLE,
                revision=self.base.revision,
            )
        return BaseEvaluation(run_from_document(message["run"]), Diagnostics(), message.get("renamed", {}))

    def cancel(self) -> None:
        """Stop a child whose answer is no longer wanted (the head's evaluation failed)."""
        if self._child is not None:
            pid, read_end = self._child
            self._child = None
            os.close(read_end)
            try:
                os.kill(pid, 9)
            except ProcessLookupError:
                pass
            os.waitpid(pid, 0)
