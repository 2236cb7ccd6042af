"""The pull request's base: the KB as it was at a git revision, evaluated in this run.

`--baseline-ref REV` (Action: `baseline-ref`, or a pull request's base commit by
default) reads the KB folder's files from the tree of commit REV (scanner.git),
evaluates them with THIS run's golden set and settings, and compares this run
with that evaluation. Both sides share the golden file and every setting, so
their fingerprints are equal and the comparison is possible also when the pull
request edits the golden file; what differs is the corpus, which is what a
reviewer wants measured.

Three phases, each a function of records: `resolve_base` (before the head's
evaluation, so a bad flag stops the run before anything is written),
`evaluate_base` (the KB's files at the commit, read under one deadline) and
`compare_with_base`. What cannot be compared is a `Comparison` with a
`NotComparedCause` and a hint, never a stopped run, except when the user named the
revision and it is the user's to fix (`--baseline-ref` naming nothing in a full
clone, no repository): then it is an InputError naming the flag (exit 2). The
base's evaluation is returned for the comparison only; it is never written to the
history.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime
from pathlib import Path

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
from scanner.corpus.kb_files import MAX_DOCUMENT_BYTES, KbFiles
from scanner.corpus.parse_memo import ParseMemo, Remembered, blob_id, memo_key
from scanner.corpus.reader import BASE_ANEW_SHARE, CorpusCaps, capped
from scanner.evaluation.records import RunRecord
from scanner.foundation.diagnostics import Diagnostics
from scanner.foundation.errors import InputError
from scanner.foundation.files import FileRefused, LinkPolicy, read_capped
from scanner.git.objects import read_blobs
from scanner.git.renames import renamed_since
from scanner.git.repository import Absent, Deadline, GitFailed, resolve_commit
from scanner.git.revision import Repository, find_repository, is_revision_name
from scanner.git.tree import TreeFile, list_tree
from scanner.golden.file import ExpectedEntry, GoldenSet
from scanner.pipeline.evaluate import EvalOptions, Plan, Side, evaluate_side
from scanner.retrievers.base import RetrieverKind
from scanner.search.index import Index
from scanner.settings.declaration import interface_words

FLAG = "--baseline-ref"

GIT_DEADLINE_SECONDS = 300.0
"""For resolving the revision, and again for listing the KB's tree at the base, checked between
objects. Listing and reading a 10,000-file KB takes about a second (bench/base_and_head.py); the
deadline only stops a read that crawls (a network file system, a hostile history), and then the
run goes on without a comparison."""
GIT_SECONDS_PER_FILE = 0.001
"""Added to the deadline for finding renames and reading the blobs, per file the base's tree
lists: ten times the 0.1 ms a file costs to read (a second for 10,000), so the deadline grows with
what there is to read and a KB of a million files is not cut off where one of 10,000 is not."""

SHALLOW_HINT = "set `fetch-depth: 0` on actions/checkout, so the checkout holds the base commit"
ONE_INDEX_HINT = (
    "build its index per side with --index-command (its {kb} is each side's KB folder), start it per side "
    "with --serve-command (and {port} in the URL), or name {kb} in the command or URL; or compare with a "
    "saved --baseline report"
)


@dataclass(frozen=True, slots=True)
class ResolvedBase:
    request: BaseRequest
    repository: Repository
    commit: str
    committed_at: datetime
    deadline: Deadline
    """Started when the revision was looked up, for looking it up: the base's reading has its own
    (`evaluate_base`), which starts when the base starts, after the head's whole evaluation."""

    @property
    def revision(self) -> BaseRevision:
        return BaseRevision(commit=self.commit, ref=self.request.ref)


@dataclass(frozen=True, slots=True)
class BaseEvaluation:
    """The base side of a comparison: its run record, and what reading it recorded."""

    run: RunRecord
    diagnostics: Diagnostics
    """Kept apart from this run's warnings: they describe files as they were at the base."""
    renamed: Mapping[str, str]
    """Expected files scored under their old name at the base (new -> old)."""
    quoted: Mapping[str, tuple[str, ...]]
    """The base's findings among the documents the pull request changed: each quoting document's
    path and the golden query ids it quotes."""
    unchanged: frozenset[str] = frozenset()
    """The base's documents whose path and bytes are the head's: not scanned again, their
    findings are the head's (a finding is a function of the document's text and the golden set)."""
    quoted_by_content: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    """The same findings as `quoted`, by the quoting document's git blob id (parse_memo.blob_id):
    how a page the pull request moved without editing is recognised under its new path."""


def resolve_base(
    kb_path: Path, request: BaseRequest, *, one_index: bool
) -> ResolvedBase | Comparison | None:
    """The commit to evaluate, or a Comparison saying why there is none, or None when the pull
    request's base does not apply (no repository, no git): the Action chose it by default, so the
    run then compares as it would without it (history, baseline). `one_index`: the configured
    search answers from one index whatever tree it is given, so it cannot answer for the base.

    Raises InputError (exit 2) only for a revision the user named (Origin.FLAG) whose problem
    the user must fix."""
    explicit = request.origin is Origin.FLAG

    def unavailable(reason: str, hint: str | None = None) -> Comparison:
        return no_previous(reason, Source.GIT, NotComparedCause.REVISION_UNAVAILABLE, hint=hint)

    if not is_revision_name(request.revision):
        # The flag's text was checked where it is declared; this is a pull request's event naming
        # something no commit is called.
        if explicit:
            raise InputError(
                f"{FLAG} is {request.revision[:80]!r}, which is not a git revision", field=FLAG,
                hint="give a branch, tag or commit SHA, e.g. origin/main (Action input baseline-ref)",
            )
        return unavailable(f"{_shown_ref(request)} does not name a commit in this repository", SHALLOW_HINT)
    if one_index:
        reason = (
            "the configured search answers from one index whatever tree it is given, so it cannot answer "
            f"for {_shown_ref(request)}"
        )
        if explicit:
            raise InputError(reason, field=FLAG, hint=ONE_INDEX_HINT)
        return unavailable(reason, ONE_INDEX_HINT)
    repository = find_repository(kb_path)
    if repository is None:
        reason = f"{kb_path} is not inside a git repository"
        if explicit:
            raise InputError(reason, field=FLAG, hint="run kb-eval on a git checkout, or drop --baseline-ref")
        return None
    deadline = Deadline.after(GIT_DEADLINE_SECONDS)
    try:
        found = resolve_commit(repository, request.revision, deadline)
    except GitFailed as error:
        return unavailable(f"git could not read {_shown_ref(request)}: {error}")
    if found is Absent.SHALLOW:
        return no_previous(
            f"{_shown_ref(request)} is not in this checkout, which is shallow (a fetch of the last "
            "commit only): nothing was compared",
            Source.GIT, NotComparedCause.SHALLOW_CLONE, hint=SHALLOW_HINT,
        )
    if found is Absent.UNKNOWN:
        reason = f"{_shown_ref(request)} does not name a commit in this repository"
        if explicit:
            raise InputError(
                reason, field=FLAG,
                hint="give a branch, tag or commit SHA that `git rev-parse` knows (e.g. origin/main after a fetch)",
            )
        return unavailable(reason, SHALLOW_HINT)
    return ResolvedBase(request, repository, found.commit, found.committed_at, deadline)


def _shown_ref(request: BaseRequest) -> str:
    if request.label is not None:
        return f"the base commit {request.revision[:12]} ({request.label})"
    return f"revision {request.revision!r}"


def evaluate_base(
    base: ResolvedBase, options: EvalOptions, plan: Plan, memo: ParseMemo | None, head: Index | None = None,
    *, head_done: bool = False,
) -> BaseEvaluation | Comparison:
    """Evaluate the KB at the base commit with this run's golden set and settings: only the files
    the KB folder holds there, by the folder walk's rules, each read once, inside the deadline.

    Which of them the pull request left as they were is decided from the tree's listing before
    any is read: the path and blob id the head's read remembered (`memo`). With the head's index
    (built with `keep_analysis` and analysed), those are neither sized, read nor parsed: the
    base's index takes their rows and analysis from the head's and analyses only the others
    (Reuse): the work of a pull request's base grows with what the pull request changed, and its
    rankings are those of a fresh index. `head_done`: the head's index searches no more in this
    process (a forked child's copy), so its analyzer is taken rather than copied."""
    diagnostics = Diagnostics()
    rules = KbFiles.excluding(options.exclude)
    golden = plan.golden
    try:
        # Its own deadline, from now: the head was read and analysed since the revision was looked
        # up, and a large KB's head must not use up the base's time.
        files = list_tree(
            base.repository, base.commit, rules, diagnostics, Deadline.after(GIT_DEADLINE_SECONDS),
            memo.sizes if memo is not None else {},
        )
        if files is None:
            return no_previous(
                f"the KB folder {base.repository.prefix or '.'} does not exist at {base.commit[:12]} "
                f"({base.request.ref}): nothing to compare with",
                Source.GIT, NotComparedCause.KB_ABSENT_AT_BASE, revision=base.revision,
            )
        deadline = Deadline.after(GIT_DEADLINE_SECONDS + len(files) * GIT_SECONDS_PER_FILE)
        expected = {member.path for query in golden.queries for entry in query.expected for member in entry.members}
        renames = renamed_since(base.repository, base.commit, files, expected, rules, deadline)
        present = {file.path for file in files}
        base_plan = replace(plan, golden=golden_at_base(golden, renames, present))
        unchanged = frozenset(
            file.path for file in files if memo is not None and memo.holds(memo_key(file.path, file.blob))
        )
        # Taken from the head's index, rows and analysis, when there is one to take them from.
        held: dict[str, Remembered] = {}
        if memo is not None and head is not None:
            for file in files:
                remembered = memo.recall(memo_key(file.path, file.blob))
                if remembered is not None:
                    held[file.path] = remembered

        anew = [file for file in files if file.path not in held]
        too_much = _anew_past_share(anew, options.corpus_caps)
        if too_much is not None:
            return no_previous(
                f"the pull request changes {too_much} of the KB at {base.commit[:12]} ({base.request.ref}) for its base "
                "to be evaluated within the memory the corpus caps promise", Source.GIT,
                NotComparedCause.REVISION_UNAVAILABLE, revision=base.revision,
                hint=interface_words(options.interface)(
                    "raise --max-files and --max-mib on a runner with the memory for it (docs/limits-and-safety.md)"
                ),
            )

        def source(_diagnostics: Diagnostics) -> Iterator[tuple[str, bytes | Remembered]]:
            """Every file of the listing in path order (parsed as it comes, never held): the bytes
            of those the head does not hold, read now."""
            ordered = sorted(anew, key=lambda file: file.path)
            blobs = read_blobs(base.repository, [file.blob for file in ordered], deadline, MAX_DOCUMENT_BYTES)
            for file in sorted(files, key=lambda file: file.path):
                yield file.path, held[file.path] if file.path in held else next(blobs)

        reuse = head if held else None
        if options.retriever.kind is RetrieverKind.BUILTIN:
            side = Side(
                kb_path=options.kb_path, source=source, unchanged=unchanged, reuse=reuse, take_analyzer=head_done,
                refuse_impossible=False,
                timestamp=base.committed_at,
            )
            outcome = evaluate_side(options, base_plan, side, diagnostics)
        else:
            # A search with its own index is built from a folder: the base's KB written out (the
            # files the reader would read, under its caps) for its `{kb}`; kb-eval reads it as above.
            with tempfile.TemporaryDirectory(prefix="kb-eval-base-") as work:
                folder = Path(work) / "kb"
                every = read_blobs(base.repository, [file.blob for file in files], deadline, MAX_DOCUMENT_BYTES)
                write_out(folder, capped(folder, zip((file.path for file in files), every), options.corpus_caps))
                side = Side(
                    kb_path=folder, source=source, unchanged=unchanged, reuse=reuse, take_analyzer=head_done,
                    refuse_impossible=False,
                    timestamp=base.committed_at,
                )
                outcome = evaluate_side(options, base_plan, side, diagnostics)
    except GitFailed as error:
        return no_previous(
            f"git could not read the KB at {base.commit[:12]} ({base.request.ref}): {error}",
            Source.GIT, NotComparedCause.REVISION_UNAVAILABLE, revision=base.revision,
        )
    used = {new: old for new, old in renames.items() if old in present}
    quoted = {
        located.finding.path: tuple(quoted.query_id for quoted in located.finding.quoted)
        for located in outcome.run.findings
    }
    blob_of = {file.path: file.blob for file in files}
    by_content = {blob_of[path]: ids for path, ids in quoted.items() if path in blob_of and path not in unchanged}
    return BaseEvaluation(outcome.run, diagnostics, used, quoted, unchanged, by_content)


def _anew_past_share(anew: list[TreeFile], caps: CorpusCaps) -> str | None:
    """What of the files the base reads anew (those the head does not hold) is past their share of
    the caps (BASE_ANEW_SHARE of max-files and of max-mib), said as a count; None within it."""
    files = caps.files * BASE_ANEW_SHARE
    if len(anew) > files:
        return f"{len(anew):,} files (more than {int(files):,})"
    size, limit = sum(file.size for file in anew), caps.bytes * BASE_ANEW_SHARE
    if size > limit:
        return f"{size / 2**20:,.0f} MiB of files (more than {limit / 2**20:,.0f})"
    return None


def moved_findings(run: RunRecord, base: BaseEvaluation, kb_path: Path) -> dict[str, tuple[str, ...]]:
    """The head's findings on documents the base held under another path with the same bytes (a
    page the pull request moved without editing): path here -> the query ids it quoted there.
    Each such document is read once more, and only when the base had findings to match."""
    if not base.quoted_by_content:
        return {}
    moved: dict[str, tuple[str, ...]] = {}
    claimed: set[str] = set()
    for located in sorted(run.findings, key=lambda found: found.finding.path):
        path = located.finding.path
        if path in base.quoted or path in base.unchanged:
            continue
        try:
            data = read_capped(kb_path / path, MAX_DOCUMENT_BYTES, LinkPolicy.FOLLOW)
        except FileRefused:
            continue  # gone or changed since it was indexed: nothing to tell it by
        blob = blob_id(data)
        ids = base.quoted_by_content.get(blob)
        # One page moved is one page: its copies (the first by path keeps the standing) are new.
        if ids is not None and blob not in claimed:
            claimed.add(blob)
            moved[path] = ids
    return moved


def write_out(folder: Path, files: Iterable[tuple[str, bytes]]) -> None:
    """Each (KB-relative path, bytes) as a file under `folder`, which must not exist yet. Every
    folder here is made by this function, so no link can lead a write outside it; a path that
    names no file under it (`..`, an absolute path) is refused as a kb-eval bug would be."""
    folder.mkdir(parents=True)
    root = folder.resolve()
    for relative, data in files:
        parts = relative.split("/")
        if relative.startswith("/") or any(part in ("", ".", "..") for part in parts):
            raise GitFailed(f"the tree names a file {relative!r} that is not inside the KB folder")
        target = root.joinpath(*parts)
        target.parent.mkdir(parents=True, exist_ok=True)
        descriptor = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o644)
        with os.fdopen(descriptor, "wb") as out:
            out.write(data)


def golden_at_base(golden: GoldenSet, renames: Mapping[str, str], present: set[str]) -> GoldenSet:
    """This run's golden set, with each expected file that the base knows under its old name
    expected under that name: a pull request that renames a labelled note (and its golden
    entry) is then not scored as the base missing it. The file hash, and so the fingerprint,
    stays this run's."""
    def at_base(entry: ExpectedEntry) -> ExpectedEntry:
        if entry.any_of:
            members = tuple(at_base(member) for member in entry.any_of)
            return replace(entry, path=members[0].path, any_of=members)
        if entry.path not in present and renames.get(entry.path) in present:
            return replace(entry, path=renames[entry.path])
        return entry

    queries = []
    for query in golden.queries:
        expected = tuple(at_base(entry) for entry in query.expected)
        queries.append(replace(query, expected=expected))
    return replace(golden, queries=tuple(queries))


def compare_with_base(current: RunRecord, base: ResolvedBase, evaluated: BaseEvaluation | Comparison) -> Comparison:
    if isinstance(evaluated, Comparison):
        return evaluated
    return compare_runs(current, evaluated.run, Source.GIT, base.revision)
