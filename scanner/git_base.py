"""Evaluate the KB as it was at a git revision, in this run, and compare this run with it.

`--baseline-ref REV` (Action: `baseline-ref`, or a pull request's base commit by
default) reads the KB folder's files from the tree of commit REV, evaluates them
with THIS run's golden set and settings, and compares this run with that
evaluation. Both sides share the golden file and every setting, so their
fingerprints are equal and the comparison is possible also when the pull request
edits the golden file; what differs is the corpus, which is what a reviewer
wants measured.

The tree is read without a checkout: `git ls-tree` lists it and one
`git cat-file --batch` streams the blobs, so the working tree and the index are
never touched. The listing gets the folder walk's rules (scanner/corpus.py):
dot-folders, excludes, suffixes, undecodable names, the per-file size cap,
symbolic links followed only inside the KB and never to a folder, submodules
skipped. tests/test_git_base.py reads one tree both ways and requires the same
corpus and the same warnings.

Git is run with no shell, a cleaned environment (no inherited `GIT_*`
variable, no system config), settings that keep repository config from running
anything (`core.fsmonitor`, hooks) or reaching the network (a partial clone's
lazy fetch), `safe.directory` for exactly this repository when another user owns
it (the Action's container runs as root over the runner user's checkout), and
one deadline for all its calls.

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
import shutil
import subprocess
import threading
import time
import traceback
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any

from .compare import BaseRequest, BaseRevision, Comparison, NotComparedCause, Origin, compare_runs, no_previous
from .corpus import INDEXED_SUFFIXES, MAX_DOCUMENT_BYTES, compile_excludes
from .diagnostics import Diagnostics
from .errors import InputError
from .evaluate import EvalOptions, run_eval
from .golden import GoldenSet
from .parse_memo import ParseMemo
from .render.json_report import run_document
from .run import RunRecord
from .runrecord import run_from_document

FLAG = "--baseline-ref"

GIT_DEADLINE_SECONDS = 300.0
"""For all git calls of one base evaluation together. Listing and reading a 10,000-file KB
takes about a second (bench/base_and_head.py); the deadline only stops a git that hangs (a
lock, a network file system), and then the run goes on without a comparison."""

MAX_REVISION_CHARS = 256
MAX_SYMLINK_HOPS = 40
"""Linux's limit (ELOOP) for following symbolic links, used for links inside the tree."""

SHALLOW_HINT = "set `fetch-depth: 0` on actions/checkout, so the checkout holds the base commit"

_SAFE_CONFIG = (
    # Repository config is read by every git command; these keep it from running a program
    # (fsmonitor, hooks) or from fetching a partial clone's missing blobs over the network.
    "core.fsmonitor=false",
    "core.hooksPath=/dev/null",
    "protocol.allow=never",
    "core.quotePath=false",
)


@dataclass(frozen=True, slots=True)
class Repository:
    top: Path
    """The folder holding `.git`."""
    prefix: str
    """The KB folder relative to `top`, `/`-separated; "" when the KB is the repository root."""
    safe_directory: str | None
    """Passed as `-c safe.directory=...` when another user owns the repository."""


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
    """Git did not give what was asked (error, timeout, unexpected output)."""


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
        return no_previous(reason, "git", NotComparedCause.REVISION_UNAVAILABLE, hint=hint)

    if external_retriever:
        reason = "the base revision is evaluated with the built-in search; an external retriever answers from its own index"
        if explicit:
            raise InputError(reason, field=FLAG, hint="drop --baseline-ref, or compare with a saved --baseline report")
        return None
    if shutil.which("git") is None:
        if explicit:
            raise InputError("git is not installed", field=FLAG, hint="install git, or drop --baseline-ref")
        return None
    repository = find_repository(kb_path)
    if repository is None:
        reason = f"{kb_path} is not inside a git repository"
        if explicit:
            raise InputError(reason, field=FLAG, hint="run kb-eval on a git checkout, or drop --baseline-ref")
        return None
    deadline = time.monotonic() + GIT_DEADLINE_SECONDS
    try:
        commit = _resolve_commit(repository, request.revision, deadline)
        if commit is None:
            if _is_shallow(repository, deadline):
                return no_previous(
                    f"{_shown_ref(request)} is not in this checkout, which is shallow (a fetch of the last "
                    "commit only): nothing was compared",
                    "git", NotComparedCause.SHALLOW_CLONE, hint=SHALLOW_HINT,
                )
            reason = f"{_shown_ref(request)} does not name a commit in this repository"
            if explicit:
                raise InputError(
                    reason, field=FLAG,
                    hint="give a branch, tag or commit SHA that `git rev-parse` knows (e.g. origin/main after a fetch)",
                )
            return unavailable(reason, SHALLOW_HINT)
        committed_at = _commit_time(repository, commit, deadline)
    except GitFailed as error:
        return unavailable(f"git could not read {_shown_ref(request)}: {error}")
    return ResolvedBase(request, repository, commit, committed_at)


def check_revision_text(revision: str) -> None:
    """A revision is one git name: refused before git sees it when it could be read as an option
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
    """The repository holding the KB folder, found as git finds it (the nearest `.git` above),
    without asking git: git refuses to answer in a repository another user owns until
    `safe.directory` names it, and naming it needs to know where it is."""
    kb = Path(os.path.realpath(kb_path))
    for folder in (kb, *kb.parents):
        marker = folder / ".git"
        if os.path.lexists(marker):
            prefix = kb.relative_to(folder).as_posix()
            return Repository(folder, "" if prefix == "." else prefix, _safe_directory(folder, marker))
    return None


def _safe_directory(top: Path, marker: Path) -> str | None:
    # Named only when needed, and then exactly this repository (never `*`): git's ownership check
    # protects a user from a repository someone else planted, and the KB's own checkout is the one
    # repository this run was asked to read.
    try:
        owners = {os.stat(top).st_uid, os.stat(marker).st_uid}
    except OSError:
        return None
    return None if owners == {os.geteuid()} else str(top)


def _shown_ref(request: BaseRequest) -> str:
    if request.label is not None:
        return f"the base commit {request.revision[:12]} ({request.label})"
    return f"revision {request.revision!r}"


def _resolve_commit(repository: Repository, revision: str, deadline: float) -> str | None:
    result = _git(repository, ["rev-parse", "--verify", "--quiet", f"{revision}^{{commit}}"], deadline, check=False)
    sha = result.stdout.decode("ascii", "replace").strip()
    if result.returncode != 0 or not sha:
        return None
    if len(sha) not in (40, 64) or any(c not in "0123456789abcdef" for c in sha):
        raise GitFailed(f"rev-parse answered {sha[:80]!r}")
    return sha


def _is_shallow(repository: Repository, deadline: float) -> bool:
    return _git(repository, ["rev-parse", "--is-shallow-repository"], deadline).stdout.strip() == b"true"


def _commit_time(repository: Repository, commit: str, deadline: float) -> datetime:
    # The raw commit object, not `git log`: log obeys settings (log.showSignature) that run gpg.
    body = _git(repository, ["cat-file", "commit", commit], deadline).stdout
    for line in body.split(b"\n"):
        if not line:
            break
        if line.startswith(b"committer "):
            try:
                epoch = int(line.rsplit(b" ", 2)[1])
                return datetime.fromtimestamp(epoch, UTC)
            except (ValueError, IndexError, OverflowError, OSError):
                break
    raise GitFailed(f"commit {commit[:12]} has no readable committer date")


# --- running git -------------------------------------------------------------------------


def git_environment(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment git runs in: no inherited GIT_* variable (GIT_DIR, GIT_CONFIG_PARAMETERS,
    GIT_EXTERNAL_DIFF, ... would change what is read or run), no system config, no prompt,
    no replace refs, messages in English."""
    source = os.environ if environ is None else environ
    environment = {name: value for name, value in source.items() if not name.startswith("GIT_")}
    environment.update(
        GIT_CONFIG_NOSYSTEM="1",
        GIT_TERMINAL_PROMPT="0",
        GIT_OPTIONAL_LOCKS="0",
        GIT_NO_REPLACE_OBJECTS="1",
        LC_ALL="C",
    )
    return environment


def git_command(repository: Repository, arguments: Sequence[str]) -> list[str]:
    command = ["git"]
    for setting in _SAFE_CONFIG:
        command += ["-c", setting]
    if repository.safe_directory is not None:
        command += ["-c", f"safe.directory={repository.safe_directory}"]
    return [*command, "-C", str(repository.top), *arguments]


def _git(
    repository: Repository, arguments: Sequence[str], deadline: float, *, check: bool = True
) -> subprocess.CompletedProcess[bytes]:
    remaining = deadline - time.monotonic()
    if remaining <= 0:
        raise GitFailed(f"git took longer than {GIT_DEADLINE_SECONDS:g} s")
    try:
        result = subprocess.run(
            git_command(repository, arguments), capture_output=True, timeout=remaining,
            env=git_environment(), stdin=subprocess.DEVNULL, check=False,
        )
    except subprocess.TimeoutExpired:
        raise GitFailed(f"git took longer than {GIT_DEADLINE_SECONDS:g} s") from None
    except OSError as error:
        raise GitFailed(f"git cannot be started ({error.strerror})") from None
    if check and result.returncode != 0:
        raise GitFailed(_first_line(result.stderr) or f"git {arguments[0]} exited {result.returncode}")
    return result


def _first_line(stderr: bytes) -> str:
    lines = stderr.decode("utf-8", "replace").strip().splitlines()
    return lines[0][:200] if lines else ""


# --- listing the tree with the folder walk's rules ---------------------------------------


def list_tree(
    base: ResolvedBase, exclude: Sequence[str], diagnostics: Diagnostics, deadline: float
) -> list[TreeFile] | None:
    """The KB's indexable files at the base commit; None when the KB folder is not there."""
    repository = base.repository
    kb_tree = f"{base.commit}:{repository.prefix}"
    kind = _git(repository, ["cat-file", "-t", kb_tree], deadline, check=False)
    if kind.returncode != 0 or kind.stdout.strip() != b"tree":
        return None
    listing = _git(repository, ["ls-tree", "-r", "-z", "-l", kb_tree], deadline).stdout
    entries: dict[str, tuple[str, str, int]] = {}
    folders: set[str] = set()
    order: list[str] = []
    for record in listing.split(b"\0"):
        if not record:
            continue
        meta, _, raw_path = record.partition(b"\t")
        fields = meta.split()
        if len(fields) != 4 or not raw_path:
            raise GitFailed(f"ls-tree gave an unexpected line {record[:80]!r}")
        mode, _kind, blob, size_text = (field.decode("ascii", "replace") for field in fields)
        path = raw_path.decode("utf-8", "surrogateescape")
        entries[path] = (mode, blob, int(size_text) if size_text.isdigit() else 0)
        order.append(path)
        parts = path.split("/")
        folders.update("/".join(parts[:i]) for i in range(1, len(parts)))
    links = sorted({blob for mode, blob, _ in entries.values() if mode == "120000"})
    link_texts = dict(zip(links, (_decode_link(data) for data in read_blobs(repository, links, deadline))))
    tree = _Tree(entries, folders, link_texts, repository.prefix)
    return list(_kept_files(order, tree, exclude, diagnostics))


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
            diagnostics.warn("file-skipped", "path is not a valid file name in git; not indexed", _shown(path))
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
                diagnostics.warn("symlink-skipped", "symbolic link to a folder is not followed", _shown(path))
            continue
        if not name.lower().endswith(INDEXED_SUFFIXES) or is_excluded(path):
            continue
        if not _is_utf8(path):
            diagnostics.warn("file-skipped", "file name is not valid UTF-8; rename it", _shown(path))
            continue
        if mode == "120000":
            if link_target == _OUTSIDE:
                diagnostics.warn("symlink-skipped", "symbolic link points outside the KB; not followed", path)
                continue
            if link_target in (_DANGLING, _LOOP) or link_target is None:
                # The walk's words for the same link on disk (os.stat's strerror).
                why = "Too many levels of symbolic links" if link_target == _LOOP else "No such file or directory"
                diagnostics.warn("file-skipped", f"cannot be read ({why}); not indexed", path)
                continue
            mode, blob, size = tree.entries[link_target]
        elif mode not in ("100644", "100755"):
            continue
        if size > MAX_DOCUMENT_BYTES:
            diagnostics.warn(
                "file-skipped", f"{size} bytes is over the {MAX_DOCUMENT_BYTES} byte limit per file; not indexed", path
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
    """Each blob's bytes, in order, from one `git cat-file --batch` (no filters, no textconv).

    Streamed: one blob is held at a time. The requests are written by a thread, since git's
    answers would otherwise fill the pipe while we are still writing; a timer kills git at
    the deadline, and the read that then comes up short raises GitFailed."""
    if not blobs:
        return
    remaining = deadline - time.monotonic()
    if remaining <= 0:
        raise GitFailed(f"git took longer than {GIT_DEADLINE_SECONDS:g} s")
    try:
        process = subprocess.Popen(
            git_command(repository, ["cat-file", "--batch"]),
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=git_environment(),
        )
    except OSError as error:
        raise GitFailed(f"git cannot be started ({error.strerror})") from None
    assert process.stdin is not None and process.stdout is not None  # both are pipes
    expired = threading.Event()

    def kill() -> None:
        expired.set()
        process.kill()

    timer = threading.Timer(remaining, kill)
    timer.daemon = True
    writer = threading.Thread(target=_write_requests, args=(process.stdin, blobs), daemon=True)
    timer.start()
    writer.start()
    try:
        for blob in blobs:
            yield _read_answer(process.stdout, blob, expired)
    finally:
        timer.cancel()
        if process.poll() is None:
            process.kill()
        process.wait()
        writer.join()
        process.stdout.close()


def _write_requests(stdin: IO[bytes], blobs: Sequence[str]) -> None:
    try:
        for blob in blobs:
            stdin.write(blob.encode("ascii") + b"\n")
        stdin.close()
    except (BrokenPipeError, ValueError, OSError):
        pass  # git stopped (killed at the deadline, or failed): the reader reports it


def _read_answer(stdout: IO[bytes], blob: str, expired: threading.Event) -> bytes:
    def failed(what: str) -> GitFailed:
        if expired.is_set():
            return GitFailed(f"git took longer than {GIT_DEADLINE_SECONDS:g} s")
        return GitFailed(what)

    header = stdout.readline()
    fields = header.split()
    if len(fields) != 3 or fields[0].decode("ascii", "replace") != blob or fields[1] != b"blob":
        raise failed(f"cat-file answered {header[:80]!r} for {blob}")
    size = int(fields[2])
    if size > MAX_DOCUMENT_BYTES:
        # Only blobs the listing showed under the cap are asked for; a different size is not them.
        raise failed(f"blob {blob} is {size} bytes, not what the tree listed")
    data = stdout.read(size)
    if len(data) != size or stdout.read(1) != b"\n":
        raise failed(f"cat-file's answer for {blob} ended early")
    return data


# --- the expected files a pull request renamed -------------------------------------------------


def renamed_since(base: ResolvedBase, deadline: float) -> dict[str, str]:
    """KB-relative new path -> old path, for the files git sees renamed from the base commit
    to HEAD (`diff-tree -M`, renames with edits included). Empty when there is no HEAD."""
    repository = base.repository
    head = _resolve_commit(repository, "HEAD", deadline)
    if head is None or head == base.commit:
        return {}
    pathspec = [repository.prefix] if repository.prefix else []
    output = _git(
        repository, ["diff-tree", "-r", "-z", "-M", "--name-status", base.commit, head, "--", *pathspec],
        deadline,
    ).stdout
    fields = output.split(b"\0")
    renames: dict[str, str] = {}
    start = len(repository.prefix) + 1 if repository.prefix else 0
    i = 0
    while i < len(fields) and fields[i]:
        status = fields[i]
        if status.startswith((b"R", b"C")) and i + 2 < len(fields):
            old = fields[i + 1].decode("utf-8", "surrogateescape")[start:]
            new = fields[i + 2].decode("utf-8", "surrogateescape")[start:]
            if status.startswith(b"R"):
                renames[new] = old
            i += 3
        else:
            i += 2
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
                "git", NotComparedCause.REVISION_UNAVAILABLE, revision=base.revision,
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
            "git", NotComparedCause.REVISION_UNAVAILABLE, revision=base.revision,
        )
    return BaseEvaluation(outcome.run, diagnostics, used)


def compare_with_base(current: RunRecord, base: ResolvedBase, evaluated: BaseEvaluation | Comparison) -> Comparison:
    if isinstance(evaluated, Comparison):
        return evaluated
    return compare_runs(current, evaluated.run, "git", base.revision)


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
                reason, "git", NotComparedCause(cause) if cause else NotComparedCause.REVISION_UNAVAILABLE,
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
