"""The base is read by the KB's rules only: nothing outside the KB folder is read, renames are looked
for among the KB's files within their caps, and every read is inside a deadline."""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
from pathlib import Path

import pytest

import scanner.corpus.reader
import scanner.git.renames
import scanner.pipeline.base
from scanner.cli.main import execute, parse_cli
from scanner.compare.comparison import BaseRequest, Comparison, NotComparedCause, Origin
from scanner.corpus.kb_files import MAX_DOCUMENT_BYTES, KbFiles
from scanner.foundation.diagnostics import Diagnostics
from scanner.foundation.errors import ExitCode, InputError
from scanner.git.objects import read_blobs
from scanner.git.renames import renamed_since
from scanner.git.repository import Deadline, GitFailed
from scanner.git.revision import MAX_REVISION_CHARS, is_revision_name
from scanner.git.tree import TreeFile, list_tree
from scanner.pipeline.base import SHALLOW_HINT, ResolvedBase, resolve_base
from scanner.settings.declaration import Interface
from tests.git.test_git_base import BASE_KB, GOLDEN, commit, git, new_repo, per_query, run

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="needs git")

#: A note long enough that an edit keeps it over git's 50 % similarity.
LONG_ROLLBACK = "# Rollback\n\nRevert a bad release quickly with the previous image.\n" + "".join(
    f"Step {i}: check the dashboard, then the logs of service {i}.\n" for i in range(40)
)


def _drop_objects(repo: Path, *specs: str) -> list[str]:
    """Delete the loose objects `git rev-parse SPEC` names: reading one of them fails."""
    dropped = [git(repo, "rev-parse", spec) for spec in specs]
    for sha in set(dropped):
        (repo / ".git/objects" / sha[:2] / sha[2:]).unlink()
    return dropped


def test_files_edited_or_added_outside_the_kb_are_never_read_at_the_base(tmp_path: Path) -> None:
    repo = new_repo(tmp_path / "repo")
    outside = {"site/page.md": "# Page\n\nblue green rollout\n", "notes.md": "# Notes\n\nfirst day checklist\n"}
    commit(repo, outside, "outside", kb="")
    commit(repo, {**BASE_KB, ".obsidian/state.md": "# Tool state\n", "drafts/wip.md": "# Draft\n"}, "base")
    base = git(repo, "rev-parse", "HEAD")
    # The pull request edits and adds files outside the KB, among them copies of the KB's notes
    # (what rename detection over the whole repository would compare), and in folders the KB
    # leaves out.
    commit(
        repo,
        {"site/page.md": "# Page\n\nedited\n", "site/new.md": BASE_KB["rollback.md"] + "Copied.\n",
         "vendor/big.md": "# Vendored\n\n" + "filler line\n" * 20_000},
        "outside edits", kb="",
    )
    commit(repo, {".obsidian/state.md": "# Tool state, edited\n", "drafts/wip.md": "# Draft, edited\n"}, "pruned edits")
    # Every object outside the KB's files, at the base and at HEAD, is gone: reading any of them
    # would make the base unreadable, and the comparison would not be made.
    _drop_objects(
        repo,
        f"{base}:site", f"{base}:site/page.md", f"{base}:notes.md",
        "HEAD:site", "HEAD:site/page.md", "HEAD:site/new.md", "HEAD:vendor", "HEAD:vendor/big.md",
        f"{base}:kb/.obsidian", f"{base}:kb/.obsidian/state.md", f"{base}:kb/drafts/wip.md",
        "HEAD:kb/.obsidian", "HEAD:kb/.obsidian/state.md", "HEAD:kb/drafts/wip.md",
    )
    _, report = run(repo / "kb", f"--baseline-ref={base}", "--exclude=drafts")
    assert report["comparison"]["status"] == "compared", report["comparison"]
    assert report["previous"]["commit"] == base


def test_a_kb_file_unreadable_at_the_base_is_not_compared_the_near_miss(tmp_path: Path) -> None:
    repo = new_repo(tmp_path / "repo")
    commit(repo, BASE_KB, "base")
    base = git(repo, "rev-parse", "HEAD")
    commit(repo, {"deploy.md": "# Deploy\n\nedited\n"}, "head")
    [sha] = _drop_objects(repo, f"{base}:kb/deploy.md")
    _, report = run(repo / "kb", f"--baseline-ref={base}")
    assert report["comparison"]["status"] == "no-previous"
    assert report["comparison"]["cause"] == "revision-unavailable"
    assert sha in report["comparison"]["reasons"][0]


def _renamed_with_edits(repo: Path) -> None:
    commit(repo, {**BASE_KB, "rollback.md": LONG_ROLLBACK}, "base")
    git(repo, "mv", "kb/rollback.md", "kb/revert.md")
    commit(
        repo,
        {"revert.md": LONG_ROLLBACK.replace("Step 3:", "Step three:"),
         ".kb-eval.yml": GOLDEN.replace('"rollback.md"', '"revert.md"')},
        "rename with an edit",
    )


def test_a_renamed_and_edited_expected_file_is_expected_under_its_old_name(tmp_path: Path) -> None:
    repo = new_repo(tmp_path / "repo")
    _renamed_with_edits(repo)
    _, report = run(repo / "kb", "--baseline-ref=HEAD~1")
    assert report["comparison"]["status"] == "compared"
    assert per_query(report)["rollback"] == 1.0
    assert report["diff"]["queries"]["better"] == []


def test_past_the_pair_cap_only_exact_renames_are_found(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    repo = new_repo(tmp_path / "repo")
    _renamed_with_edits(repo)
    monkeypatch.setattr(scanner.git.renames, "MAX_RENAME_PAIRS", 0)
    _, report = run(repo / "kb", "--baseline-ref=HEAD~1")
    # Not mapped: the base misses revert.md, so the query looks improved.
    assert report["diff"]["queries"]["better"] == ["rollback"]


def test_past_the_byte_cap_only_exact_renames_are_found(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    repo = new_repo(tmp_path / "repo")
    _renamed_with_edits(repo)
    monkeypatch.setattr(scanner.git.renames, "MAX_RENAME_BYTES", len(LONG_ROLLBACK))
    _, report = run(repo / "kb", "--baseline-ref=HEAD~1")
    assert report["diff"]["queries"]["better"] == ["rollback"]


def test_a_rename_from_outside_the_kb_is_not_a_rename(tmp_path: Path) -> None:
    repo = new_repo(tmp_path / "repo")
    commit(repo, {"elsewhere/rollback.md": LONG_ROLLBACK}, "outside", kb="")
    commit(repo, {k: v for k, v in BASE_KB.items() if k != "rollback.md"}, "base")
    git(repo, "mv", "elsewhere/rollback.md", "kb/rollback.md")
    commit(repo, {}, "moved into the KB")
    _, report = run(repo / "kb", "--baseline-ref=HEAD~1")
    assert report["diff"]["queries"]["better"] == ["rollback"]


def _base_files(tmp_path: Path) -> tuple[ResolvedBase, KbFiles, list[TreeFile]]:
    """A KB whose rollback.md HEAD renamed (with an edit) to revert.md, and its files at the base."""
    repo = new_repo(tmp_path / "repo")
    _renamed_with_edits(repo)
    resolved = resolve_base(repo / "kb", BaseRequest("HEAD~1"), one_index=False)
    assert isinstance(resolved, ResolvedBase)
    rules = KbFiles.excluding(())
    files = list_tree(resolved.repository, resolved.commit, rules, Diagnostics(), Deadline.after(60))
    assert files is not None
    return resolved, rules, files


def test_only_expected_files_the_base_lacks_are_looked_for(tmp_path: Path) -> None:
    resolved, rules, files = _base_files(tmp_path)

    def renames(wanted: set[str]) -> dict[str, str]:
        return renamed_since(resolved.repository, resolved.commit, files, wanted, rules, Deadline.after(60))

    assert renames({"revert.md"}) == {"revert.md": "rollback.md"}
    assert renames({"deploy.md"}) == {} and renames(set()) == {}


def test_every_read_of_the_base_checks_the_deadline(tmp_path: Path) -> None:
    resolved, rules, files = _base_files(tmp_path)
    past = Deadline(0.0, 0.0)
    with pytest.raises(GitFailed, match="longer than"):
        list_tree(resolved.repository, resolved.commit, rules, Diagnostics(), past)
    with pytest.raises(GitFailed, match="longer than"):
        renamed_since(resolved.repository, resolved.commit, files, {"revert.md"}, rules, past)
    with pytest.raises(GitFailed, match="longer than"):
        next(read_blobs(resolved.repository, [files[0].blob], past, MAX_DOCUMENT_BYTES))


def test_a_deadline_of_zero_leaves_the_run_without_a_comparison(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    repo = new_repo(tmp_path / "repo")
    commit(repo, BASE_KB, "base")
    monkeypatch.setattr(scanner.pipeline.base, "GIT_DEADLINE_SECONDS", 0.0)
    result, report = run(repo / "kb", "--baseline-ref=HEAD")
    assert result.exit_code == 0
    assert report["comparison"]["cause"] == "revision-unavailable"
    assert "longer than 0 s" in report["comparison"]["reasons"][0]


def test_the_base_s_reading_has_its_own_deadline_from_when_the_base_starts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The head's evaluation lies between looking the revision up and reading the base: on a large
    KB it took the base's whole time. A lookup deadline long past does not stop the base now."""
    repo = new_repo(tmp_path / "repo")
    commit(repo, BASE_KB, "base")
    commit(repo, {"deploy.md": "# Deploy\n\nedited\n"}, "head")
    resolve = scanner.pipeline.base.resolve_base

    def resolved_long_ago(*args: object, **kwargs: object) -> object:
        found = resolve(*args, **kwargs)  # type: ignore[arg-type]
        assert isinstance(found, ResolvedBase)
        return dataclasses.replace(found, deadline=Deadline(300.0, 0.0))

    monkeypatch.setattr(scanner.pipeline.base, "resolve_base", resolved_long_ago)
    monkeypatch.delattr(os, "fork")  # the base in this process, where its deadlines can be counted
    asked: list[float] = []
    after = Deadline.after
    monkeypatch.setattr(Deadline, "after", classmethod(lambda cls, seconds: asked.append(seconds) or after(seconds)))
    result, report = run(repo / "kb", "--baseline-ref=HEAD~1")
    assert result.exit_code == 0 and report["comparison"]["status"] == "compared", report["comparison"]
    # The listing's deadline, then the reading's, which grows with the files listed.
    files = len([path for path in BASE_KB if path.endswith(".md")])  # the golden file is not a KB file
    assert asked == [
        scanner.pipeline.base.GIT_DEADLINE_SECONDS,  # looking the revision up
        scanner.pipeline.base.GIT_DEADLINE_SECONDS,
        scanner.pipeline.base.GIT_DEADLINE_SECONDS + files * scanner.pipeline.base.GIT_SECONDS_PER_FILE,
    ]


# --- one revision rule, for the flag and for a pull request's base ----------------------------------

EDGES = ["a" * MAX_REVISION_CHARS, "a" * (MAX_REVISION_CHARS + 1), "-n", "main~1", "a\tb", "x\x7f", "origin/main"]


@pytest.mark.parametrize("revision", EDGES)
def test_the_flag_and_a_pull_requests_base_are_held_to_one_revision_rule(tmp_path: Path, revision: str) -> None:
    repo = new_repo(tmp_path / "repo")
    commit(repo, BASE_KB, "base")
    flag, _ = run(repo / "kb", f"--baseline-ref={revision}")
    refused_as_flag = flag.exit_code == ExitCode.BAD_INPUT and "not a git revision" in flag.stderr_text
    assert refused_as_flag is not is_revision_name(revision)
    chosen = resolve_base(repo / "kb", BaseRequest(revision, Origin.PULL_REQUEST, "main"), one_index=False)
    # Named by the pull request's event, none of these is a commit here: a reason, never an exit.
    assert isinstance(chosen, Comparison) and chosen.cause is NotComparedCause.REVISION_UNAVAILABLE
    assert chosen.hint == SHALLOW_HINT and "does not name a commit" in chosen.reasons[0]
    if not is_revision_name(revision):
        with pytest.raises(InputError, match="not a git revision"):
            resolve_base(repo / "kb", BaseRequest(revision), one_index=False)


def test_the_revision_rule_at_its_edges() -> None:
    assert [is_revision_name(text) for text in EDGES] == [True, False, False, True, False, False, True]
    assert not is_revision_name("")


@pytest.mark.parametrize(("edited", "compared"), [(3, True), (4, False)])
def test_a_base_reads_anew_at_most_its_share_of_the_file_cap_or_the_run_goes_on_without_it(
    tmp_path: Path, edited: int, compared: bool
) -> None:
    # Thirty files and --max-files 30: the base may read anew 0.1 of the cap, 3 files. A pull
    # request rewriting more would add to the head's memory more than the caps promise; the head
    # is still evaluated, the comparison named as not made.
    assert scanner.corpus.reader.BASE_ANEW_SHARE == 0.1
    fillers = {f"filler-{n}.md": f"# Filler {n}\n\nplain words {n}\n" for n in range(27)}
    repo = new_repo(tmp_path / "repo")
    base = commit(repo, {**BASE_KB, **fillers}, "base")
    commit(repo, {f"filler-{n}.md": f"# Filler {n}\n\nrewritten {n}\n" for n in range(edited)}, "head")
    result, report = run(repo / "kb", f"--baseline-ref={base}", "--max-files=30")
    assert result.exit_code == ExitCode.OK and report["corpus"]["documents"] == 30
    if compared:
        assert report["comparison"]["status"] == "compared", report["comparison"]
    else:
        assert report["comparison"]["status"] == "no-previous"
        assert report["comparison"]["cause"] == "revision-unavailable"
        assert "4 files (more than 3)" in report["comparison"]["reasons"][0]
        assert "--max-files" in report["comparison"]["hint"]
        # In the Action the settings are inputs, and the hint names them so.
        settings = dataclasses.replace(
            parse_cli([f"--kb-path={repo / 'kb'}", "--no-history", "--format=json", f"--baseline-ref={base}",
                       "--max-files=30"]),
            interface=Interface.ACTION,
        )
        hint = json.loads(execute(settings).stdout_text)["comparison"]["hint"]
        assert "raise max-files and max-mib" in hint and "--max" not in hint
