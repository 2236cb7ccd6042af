"""--baseline-ref: the KB at a git revision, evaluated in the same run, on real git repositories."""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from scanner.cli.main import RunResult, execute, parse_cli
from scanner.compare.comparison import BaseRequest, Comparison, NotComparedCause, Origin
from scanner.corpus.kb_files import MAX_DOCUMENT_BYTES, KbFiles
from scanner.corpus.parse_memo import ParseMemo, Remembered, memo_key
from scanner.corpus.reader import read_corpus, read_given
from scanner.foundation.diagnostics import Diagnostics
from scanner.foundation.errors import ExitCode
from scanner.git.objects import object_size, read_blobs
from scanner.git.repository import Deadline, open_repository
from scanner.git.revision import find_repository
from scanner.git.tree import list_tree
from scanner.pipeline.base import SHALLOW_HINT, ResolvedBase, resolve_base
from tests.conftest import golden_yaml, write_tree

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="needs git")

GIT_ENV = {
    "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
    "HOME": "/nonexistent",
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com",
    "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.com",
    "GIT_COMMITTER_DATE": "2026-11-30T12:00:00Z", "GIT_AUTHOR_DATE": "2026-11-30T12:00:00Z",
}

GOLDEN = golden_yaml(
    ("deploy", "blue green rollout", ["deploy.md"]),
    ("onboard", "first day checklist", ["onboarding.md"]),
    ("rollback", "revert a bad release", ["rollback.md"]),
)
BASE_KB = {
    "deploy.md": "# Deploy\n\nBlue green rollout of the service, step by step.\n",
    "onboarding.md": "# Onboarding\n\nThe first day checklist for new engineers.\n",
    "rollback.md": "# Rollback\n\nRevert a bad release quickly with the previous image.\n",
    ".kb-eval.yml": GOLDEN,
}
#: A note that now answers "first day checklist" better than onboarding.md (which loses the words).
REGRESSING_CHANGE = {
    "onboarding.md": "# Onboarding\n\nWelcome aboard.\n",
    "misc.md": "# Misc\n\nfirst day checklist, first day checklist.\n",
}


def git(repo: Path, *args: str) -> str:
    result = subprocess.run(
        ["git", "-c", "init.defaultBranch=main", "-C", str(repo), *args],
        capture_output=True, env=GIT_ENV, check=True,
    )
    return result.stdout.decode().strip()


def commit(repo: Path, files: dict[str, str | bytes], message: str, kb: str = "kb") -> str:
    write_tree(repo / kb if kb else repo, files)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "--allow-empty", "-m", message)
    return git(repo, "rev-parse", "HEAD")


def new_repo(path: Path) -> Path:
    path.mkdir(parents=True)
    git(path, "init", "-q")
    return path


def run(kb: Path, *flags: str) -> tuple[RunResult, dict[str, Any]]:
    result = execute([f"--kb-path={kb}", "--no-history", "--format=json", *flags])
    report = json.loads(result.stdout_text) if result.stdout_text.strip() else {}
    return result, report


def run_pull_request(kb: Path, base_sha: str, *flags: str) -> tuple[RunResult, dict[str, Any]]:
    """As the Action runs on a pull request: the base commit chosen by the Action, not by the user."""
    settings = parse_cli([f"--kb-path={kb}", "--no-history", "--format=json", *flags])
    chosen = dataclasses.replace(settings, baseline_ref=BaseRequest(base_sha, Origin.PULL_REQUEST, "main"))
    result = execute(chosen)
    report = json.loads(result.stdout_text) if result.stdout_text.strip() else {}
    return result, report


def soon() -> Deadline:
    return Deadline.after(60)


def per_query(report: dict[str, Any]) -> dict[str, float]:
    return {row["id"]: row["metrics"]["reciprocal_rank"] for row in report["per_query"]}


# --- base commit vs head commit ------------------------------------------------------------


def test_the_base_commit_is_evaluated_and_a_regression_against_it_fails_the_gate(tmp_path: Path) -> None:
    repo = new_repo(tmp_path / "repo")
    base = commit(repo, BASE_KB, "base")
    commit(repo, REGRESSING_CHANGE, "head")
    # The threshold alone (`--alpha off`): one query of three cannot be told from chance.
    result, report = run(repo / "kb", "--baseline-ref=HEAD~1", "--fail-on-regression", "--alpha", "off")
    assert result.exit_code == ExitCode.REGRESSION
    assert report["comparison"] == {
        "status": "compared", "source": "git", "reasons": [], "cause": None, "hint": None, "findings_at_base": [],
    }
    assert report["previous"]["source"] == "git"
    assert report["previous"]["commit"] == base and len(base) == 40
    assert report["previous"]["ref"] == "HEAD~1"
    assert report["previous"]["timestamp"] == "2026-11-30T12:00:00Z"  # the base commit's date
    assert report["previous"]["corpus"]["documents"] == 3 and report["corpus"]["documents"] == 4
    assert report["diff"]["queries"]["worse"] == ["onboard"]
    assert report["diff"]["aggregate"]["mrr"]["previous"] == 1.0


def test_a_head_equal_to_its_base_compares_with_no_change(tmp_path: Path) -> None:
    repo = new_repo(tmp_path / "repo")
    commit(repo, BASE_KB, "base")
    commit(repo, {"unrelated.txt.bak": "not indexed"}, "head")
    result, report = run(repo / "kb", "--baseline-ref=main~1", "--fail-on-regression")
    assert result.exit_code == ExitCode.OK
    assert report["comparison"]["status"] == "compared"
    assert report["corpus_changed"] is False
    assert all(d["delta"] == 0 for d in report["diff"]["aggregate"]["recall_at_k"].values())


def test_the_working_tree_is_the_head_side_even_uncommitted(tmp_path: Path) -> None:
    repo = new_repo(tmp_path / "repo")
    commit(repo, BASE_KB, "base")
    write_tree(repo / "kb", REGRESSING_CHANGE)  # not committed
    _, report = run(repo / "kb", "--baseline-ref=HEAD")
    assert report["diff"]["queries"]["worse"] == ["onboard"]
    assert git(repo, "status", "--porcelain") != ""  # left exactly as it was
    assert (repo / "kb/misc.md").exists()


def test_the_base_is_never_written_to_the_history(tmp_path: Path) -> None:
    repo = new_repo(tmp_path / "repo")
    commit(repo, BASE_KB, "base")
    commit(repo, REGRESSING_CHANGE, "head")
    history = tmp_path / "history.json"
    result = execute([f"--kb-path={repo / 'kb'}", f"--history={history}", "--baseline-ref=HEAD~1"])
    assert result.exit_code == ExitCode.OK
    runs = json.loads(history.read_text())["runs"]
    assert len(runs) == 1 and runs[0]["corpus"]["documents"] == 4
    assert result.outcome is not None and result.outcome.document["comparison"]["source"] == "git"


def test_the_files_the_head_read_are_neither_sized_read_nor_parsed_again_for_the_base(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = new_repo(tmp_path / "repo")
    base = commit(repo, BASE_KB, "base")
    commit(repo, REGRESSING_CHANGE, "head")
    memo = ParseMemo()
    read_corpus(repo / "kb", memo=memo)
    resolved = resolve_base(repo / "kb", BaseRequest(base), one_index=False)
    assert isinstance(resolved, ResolvedBase)
    sized: list[str] = []

    def spy(store: object, blob: str) -> int:
        sized.append(blob)
        return object_size(store, blob)  # type: ignore[arg-type]

    monkeypatch.setattr("scanner.git.tree.object_size", spy)
    rules = KbFiles.excluding(())
    files = list_tree(resolved.repository, resolved.commit, rules, Diagnostics(), soon(), memo.sizes)
    assert files is not None
    # Only onboarding.md, which the pull request changed, is sized from git; the near miss: a
    # listing without the head's sizes sizes every file, and lists the same.
    assert [f.path for f in files if f.blob in sized] == ["onboarding.md"]
    sized.clear()
    assert list_tree(resolved.repository, resolved.commit, rules, Diagnostics(), soon()) == files
    assert len(sized) == 3
    held = {f.path: memo.recall(memo_key(f.path, f.blob)) for f in files}
    changed = [f for f in files if held[f.path] is None]
    blobs = iter(read_blobs(resolved.repository, [f.blob for f in changed], soon(), MAX_DOCUMENT_BYTES))
    given: list[tuple[str, bytes | Remembered]] = []
    for f in files:
        remembered = held[f.path]
        given.append((f.path, remembered if remembered is not None else next(blobs)))
    documents = list(read_given(repo / "kb", given))
    assert [(d.path, type(d).__name__) for d in documents] == [
        ("deploy.md", "HeldDocument"), ("onboarding.md", "Document"), ("rollback.md", "HeldDocument"),
    ]
    assert memo.hits == 2


# --- a shallow clone, a missing revision ----------------------------------------------------


def test_a_shallow_clone_without_the_base_completes_and_says_what_to_add(tmp_path: Path) -> None:
    origin = new_repo(tmp_path / "origin")
    base = commit(origin, BASE_KB, "base")
    commit(origin, REGRESSING_CHANGE, "head")
    clone = tmp_path / "clone"
    subprocess.run(
        ["git", "clone", "-q", "--depth", "1", f"file://{origin}", str(clone)], env=GIT_ENV, check=True
    )
    # Without a gate: the run completes and says what to add.
    result, report = run_pull_request(clone / "kb", base)
    assert result.exit_code == ExitCode.OK
    assert report["comparison"]["status"] == "no-previous"
    assert report["comparison"]["cause"] == NotComparedCause.SHALLOW_CLONE.value
    assert report["comparison"]["hint"] == SHALLOW_HINT and "fetch-depth: 0" in SHALLOW_HINT
    assert "shallow" in report["comparison"]["reasons"][0]
    assert report["gate"]["evaluated"] is False
    # With the gate asked for, a gate that compared nothing is not green: exit 2 and the fix.
    gated, report = run_pull_request(clone / "kb", base, "--fail-on-regression")
    assert gated.exit_code == ExitCode.BAD_INPUT
    assert report["gate"]["evaluated"] is False  # the report is still printed
    assert "the regression gate cannot run" in gated.stderr_text and "fetch-depth: 0" in gated.stderr_text
    assert "--fail-on-regression" in gated.stderr_text
    # The same commit named by the user in the shallow clone, without a gate: a warning, not exit 2.
    named, _ = run(clone / "kb", f"--baseline-ref={base}")
    assert named.exit_code == ExitCode.OK


def test_the_full_clone_holds_the_base_and_compares(tmp_path: Path) -> None:
    origin = new_repo(tmp_path / "origin")
    base = commit(origin, BASE_KB, "base")
    commit(origin, REGRESSING_CHANGE, "head")
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", f"file://{origin}", str(clone)], env=GIT_ENV, check=True)
    result, report = run_pull_request(clone / "kb", base)
    assert result.exit_code == ExitCode.OK
    assert report["comparison"]["status"] == "compared"
    assert report["previous"]["ref"] == "main" and report["previous"]["commit"] == base


def test_a_revision_that_does_not_exist_is_exit_2_naming_the_flag(tmp_path: Path) -> None:
    repo = new_repo(tmp_path / "repo")
    commit(repo, BASE_KB, "base")
    result, _ = run(repo / "kb", "--baseline-ref=no-such-branch")
    assert result.exit_code == ExitCode.BAD_INPUT
    assert result.input_error is not None and result.input_error.field == "--baseline-ref"
    assert "no-such-branch" in str(result.input_error)


@pytest.mark.parametrize("revision", ["-n", "--output=/tmp/x", "main\nx", "a b", ""])
def test_a_revision_that_could_be_an_option_is_refused_before_git_sees_it(tmp_path: Path, revision: str) -> None:
    repo = new_repo(tmp_path / "repo")
    commit(repo, BASE_KB, "base")
    result, _ = run(repo / "kb", f"--baseline-ref={revision}")
    assert result.exit_code == ExitCode.BAD_INPUT
    assert result.input_error is not None and result.input_error.field == "--baseline-ref"


def test_the_pull_request_base_missing_from_a_full_clone_is_a_warning_not_exit_2(tmp_path: Path) -> None:
    repo = new_repo(tmp_path / "repo")
    commit(repo, BASE_KB, "base")
    result, report = run_pull_request(repo / "kb", "b" * 40)
    assert result.exit_code == ExitCode.OK
    assert report["comparison"]["cause"] == "revision-unavailable"


def test_a_kb_outside_any_repository(tmp_path: Path) -> None:
    kb = write_tree(tmp_path / "kb", BASE_KB)
    named, _ = run(kb, "--baseline-ref=main")
    assert named.exit_code == ExitCode.BAD_INPUT and named.input_error is not None
    assert named.input_error.field == "--baseline-ref"
    chosen, report = run_pull_request(kb, "b" * 40)
    assert chosen.exit_code == ExitCode.OK
    # The Action's default does not apply without a checkout: compared as without it (nothing here).
    assert report["comparison"]["cause"] == "no-baseline" and report["comparison"]["source"] is None


def test_baseline_and_baseline_ref_together_are_exit_2(tmp_path: Path) -> None:
    repo = new_repo(tmp_path / "repo")
    commit(repo, BASE_KB, "base")
    result, _ = run(repo / "kb", "--baseline-ref=HEAD", f"--baseline={tmp_path / 'x.json'}")
    assert result.exit_code == ExitCode.BAD_INPUT


# --- the golden file and the expected files in a pull request -----------------------------------


def test_a_pull_request_that_edits_the_golden_file_is_still_compared(tmp_path: Path) -> None:
    repo = new_repo(tmp_path / "repo")
    commit(repo, BASE_KB, "base")
    edited = GOLDEN + golden_yaml(("new", "previous image", ["rollback.md"])).removeprefix("queries:\n")
    commit(repo, {".kb-eval.yml": edited}, "edit the golden set")
    _, report = run(repo / "kb", "--baseline-ref=HEAD~1")
    assert report["comparison"]["status"] == "compared"
    # Both sides were scored with this run's golden set: the new query exists on both.
    assert report["diff"]["queries"]["only_in_current"] == []
    # A history comparison of the same change is impossible (the near miss).
    history = tmp_path / "h.json"
    execute([f"--kb-path={repo / 'kb'}", f"--history={history}"])
    git(repo, "checkout", "-q", "HEAD~1", "--", "kb/.kb-eval.yml")
    again = execute([f"--kb-path={repo / 'kb'}", f"--history={history}", "--format=json"])
    assert again.outcome is not None and again.outcome.document["comparison"]["status"] == "incomparable"


def test_a_renamed_expected_file_is_expected_under_its_old_name_at_the_base(tmp_path: Path) -> None:
    repo = new_repo(tmp_path / "repo")
    commit(repo, BASE_KB, "base")
    git(repo, "mv", "kb/rollback.md", "kb/revert.md")
    renamed_golden = GOLDEN.replace('"rollback.md"', '"revert.md"')
    commit(repo, {".kb-eval.yml": renamed_golden}, "rename")
    _, report = run(repo / "kb", "--baseline-ref=HEAD~1")
    assert report["comparison"]["status"] == "compared"
    assert report["diff"]["queries"]["worse"] == [] and report["diff"]["queries"]["better"] == []
    assert per_query(report)["rollback"] == 1.0


def test_an_expected_file_added_by_the_pull_request_is_a_miss_at_the_base(tmp_path: Path) -> None:
    # The near miss of the rename: a new file (the old one deleted, different content) is not
    # mapped to anything, so the base misses it and the query improved.
    repo = new_repo(tmp_path / "repo")
    commit(repo, BASE_KB, "base")
    (repo / "kb/rollback.md").unlink()
    commit(
        repo,
        {"revert.md": "# Revert\n\nRevert a bad release: redeploy the last good tag.\n",
         ".kb-eval.yml": GOLDEN.replace('"rollback.md"', '"revert.md"')},
        "replace",
    )
    _, report = run(repo / "kb", "--baseline-ref=HEAD~1")
    assert report["diff"]["queries"]["better"] == ["rollback"]


# --- the KB's place in the repository, links, ownership --------------------------------------------


def test_a_kb_in_a_subfolder_reads_only_that_folder_at_the_base(tmp_path: Path) -> None:
    repo = new_repo(tmp_path / "repo")
    commit(repo, {"README.md": "# Readme\n\nfirst day checklist\n"}, "root", kb="")
    commit(repo, BASE_KB, "base", kb="docs/kb")
    commit(repo, {"extra.md": "# Extra\n\nnothing\n"}, "head", kb="docs/kb")
    repository = find_repository(repo / "docs/kb")
    assert repository is not None and repository.prefix == "docs/kb" and repository.top == repo.resolve()
    _, report = run(repo / "docs/kb", "--baseline-ref=HEAD~1")
    assert report["previous"]["corpus"]["documents"] == 3  # not README.md of the repository root
    assert report["corpus"]["documents"] == 4


def test_a_kb_folder_absent_at_the_base_is_not_compared(tmp_path: Path) -> None:
    repo = new_repo(tmp_path / "repo")
    commit(repo, {"README.md": "x"}, "root", kb="")
    commit(repo, BASE_KB, "add the kb")
    result, report = run(repo / "kb", "--baseline-ref=HEAD~1")
    assert result.exit_code == ExitCode.OK
    assert report["comparison"]["cause"] == "kb-absent-at-base"
    assert "does not exist" in report["comparison"]["reasons"][0]


def test_a_symlink_in_the_base_tree_pointing_outside_the_kb_is_not_followed(tmp_path: Path) -> None:
    repo = new_repo(tmp_path / "repo")
    (repo / "secret.md").write_text("# Secret\n\nfirst day checklist first day checklist\n")
    (repo / "kb").mkdir()
    os.symlink("../secret.md", repo / "kb/leak.md")
    os.symlink("deploy.md", repo / "kb/alias.md")
    commit(repo, BASE_KB, "base")
    (repo / "kb/leak.md").unlink()
    (repo / "kb/alias.md").unlink()
    commit(repo, {}, "head")
    resolved = resolve_base(repo / "kb", BaseRequest("HEAD~1"), one_index=False)
    assert isinstance(resolved, ResolvedBase)
    diagnostics = Diagnostics()
    files = list_tree(resolved.repository, resolved.commit, KbFiles.excluding(()), diagnostics, soon())
    assert files is not None
    assert [f.path for f in files] == [".kb-eval.yml", "alias.md", "deploy.md", "onboarding.md", "rollback.md"][1:]
    assert [(d.code, d.file) for d in diagnostics.items] == [("symlink-skipped", "leak.md")]
    _, report = run(repo / "kb", "--baseline-ref=HEAD~1")
    assert report["previous"]["corpus"]["documents"] == 4  # alias.md (inside) read, leak.md not


def test_a_repository_owned_by_another_user_is_read_without_an_ownership_check(tmp_path: Path) -> None:
    if os.geteuid() != 0:
        pytest.skip("needs root to give the repository to another user, as the runner's checkout is")
    repo = new_repo(tmp_path / "repo")
    commit(repo, BASE_KB, "base")
    commit(repo, REGRESSING_CHANGE, "head")
    for folder, _dirs, names in os.walk(repo):
        for name in [*names, *_dirs, "."]:
            os.lchown(os.path.join(folder, name), 1001, 1001)
    plain = subprocess.run(["git", "-C", str(repo), "rev-parse", "HEAD"], capture_output=True, env=GIT_ENV, check=False)
    assert plain.returncode != 0 and b"dubious ownership" in plain.stderr  # what git does unasked
    repository = find_repository(repo / "kb")
    assert repository is not None and repository.top == repo.resolve()
    _, report = run(repo / "kb", "--baseline-ref=HEAD~1")
    assert report["comparison"]["status"] == "compared"


def test_reading_the_base_runs_nothing_the_repository_configures(tmp_path: Path) -> None:
    repo = new_repo(tmp_path / "repo")
    commit(repo, BASE_KB, "base")
    commit(repo, REGRESSING_CHANGE, "head")
    marker = tmp_path / "ran"
    program = tmp_path / "program.sh"
    program.write_text(f"#!/bin/sh\ntouch {marker}\n")
    program.chmod(0o755)
    for setting in ("core.fsmonitor", "core.hooksPath", "diff.external", "core.sshCommand"):
        git(repo, "config", setting, str(program) if setting != "core.hooksPath" else str(tmp_path))
    for hook in ("post-checkout", "reference-transaction", "pre-auto-gc"):
        (tmp_path / hook).write_text(program.read_text())
        (tmp_path / hook).chmod(0o755)
    git(repo, "config", "filter.evil.smudge", str(program))
    (repo / ".gitattributes").write_text("*.md filter=evil\n")
    _, report = run(repo / "kb", "--baseline-ref=HEAD~1")
    assert report["comparison"]["status"] == "compared"
    assert not marker.exists()


def test_a_callers_git_dir_does_not_redirect_the_base(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    repo = new_repo(tmp_path / "repo")
    base = commit(repo, BASE_KB, "base")
    other = new_repo(tmp_path / "other")
    commit(other, {"x.md": "# X\n"}, "other")
    monkeypatch.setenv("GIT_DIR", str(other / ".git"))
    _, report = run(repo / "kb", "--baseline-ref=HEAD")
    assert report["previous"]["commit"] == base


def test_the_origin_of_a_request_decides_between_exit_2_and_a_reason(tmp_path: Path) -> None:
    repo = new_repo(tmp_path / "repo")
    commit(repo, BASE_KB, "base")
    chosen = resolve_base(repo / "kb", BaseRequest("c" * 40, Origin.PULL_REQUEST, "main"), one_index=True)
    # A search that answers from one index cannot be the base: a reason, never exit 2 by default.
    assert isinstance(chosen, Comparison) and "answers from one index" in chosen.reasons[0]
    missing = resolve_base(repo / "kb", BaseRequest("c" * 40, Origin.PULL_REQUEST, "main"), one_index=False)
    assert isinstance(missing, Comparison) and missing.cause is NotComparedCause.REVISION_UNAVAILABLE


# --- the tree is read with the folder walk's rules ----------------------------------------------------

TRICKY_TREE: dict[str, str | bytes] = {
    "deploy.md": "# Deploy\n\nBlue green rollout.\n",
    ".hidden.md": "# Hidden file\n\nA dotfile is a note; only dot-folders are tool state.\n",
    ".obsidian/workspace.md": "# Tool state\n",
    "drafts/wip.md": "# Draft\n",
    "notes/keep.md": "---\ntitle: Kept\n---\n# Kept\n\nbody\n",
    "notes/scratch.tmp.md": "# Scratch\n",
    "notes/deep/er/n.markdown": "# Deep\n\nnested\n",
    "plain.txt": "A text note.\n",
    "image.png": b"\x89PNG\r\n",
    "latin1.md": b"# Caf\xe9\n",
    "nul.md": "# Nul\n\x00\n",
    "bad-frontmatter.md": "---\ntitle: [unclosed\n---\n# Body\n",
    "big.md": "# Big\n\n" + "x" * (8 * 1024 * 1024),
}


def make_tricky_tree(repo: Path) -> None:
    kb = repo / "kb"
    write_tree(kb, TRICKY_TREE)
    (kb / "secret-outside.md").unlink(missing_ok=True)
    (repo / "outside.md").write_text("# Outside\n")
    os.symlink("deploy.md", kb / "alias.md")
    os.symlink("alias.md", kb / "chain.md")
    os.symlink("../outside.md", kb / "leak.md")
    os.symlink("../kb/deploy.md", kb / "round-trip.md")
    os.symlink("notes", kb / "folder-link")
    os.symlink("missing.md", kb / "dangling.md")
    # Into folders the walk leaves out (a dot-folder, an excluded one): read as their targets.
    os.symlink(".obsidian/workspace.md", kb / "into-dot.md")
    os.symlink("drafts/wip.md", kb / "into-excluded.md")
    os.symlink(".obsidian", kb / "dot-folder-link")
    os.symlink("loop-b.md", kb / "loop-a.md")
    os.symlink("loop-a.md", kb / "loop-b.md")
    with open(os.fsencode(kb) + b"/caf\xe9.md", "wb") as handle:
        handle.write(b"# Undecodable name\n")
    os.chmod(kb / "notes/keep.md", 0o755)


def test_the_base_tree_gives_the_corpus_and_warnings_the_folder_walk_gives(tmp_path: Path) -> None:
    repo = new_repo(tmp_path / "repo")
    make_tricky_tree(repo)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "tricky")
    exclude = ("drafts", "*.tmp.md")
    on_disk = Diagnostics()
    disk = read_corpus(repo / "kb", exclude, on_disk, workers=1)

    resolved = resolve_base(repo / "kb", BaseRequest("HEAD"), one_index=False)
    assert isinstance(resolved, ResolvedBase)
    in_tree = Diagnostics()
    files = list_tree(resolved.repository, resolved.commit, KbFiles.excluding(exclude), in_tree, soon())
    assert files is not None
    blobs = read_blobs(resolved.repository, [f.blob for f in files], soon(), MAX_DOCUMENT_BYTES)
    tree = tuple(read_given(repo / "kb", ((f.path, b) for f, b in zip(files, blobs)), in_tree))

    assert tree == disk.documents
    paths = [d.path for d in tree]
    assert ".hidden.md" in paths and "alias.md" in paths and "chain.md" in paths and "round-trip.md" in paths
    assert "into-dot.md" in paths and "into-excluded.md" in paths
    assert not any(p.startswith((".obsidian", "drafts", "leak")) or p.endswith(".tmp.md") for p in paths)

    def warnings(diagnostics: Diagnostics) -> list[tuple[str, str, str | None, int | None]]:
        return sorted((d.code, d.message, d.file, d.line) for d in diagnostics.items)

    assert warnings(in_tree) == warnings(on_disk)
    codes = {(d.code, d.file) for d in in_tree.items}
    assert {("symlink-skipped", "leak.md"), ("symlink-skipped", "folder-link"), ("file-skipped", "big.md"),
            ("file-skipped", "latin1.md"), ("file-skipped", "nul.md"), ("file-skipped", "dangling.md"),
            ("file-skipped", "caf\\xe9.md")} <= codes


# --- the base beside the head -----------------------------------------------------------------------


def test_the_base_evaluated_in_process_where_there_is_no_fork_gives_the_same_report(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = new_repo(tmp_path / "repo")
    commit(repo, BASE_KB, "base")
    commit(repo, REGRESSING_CHANGE, "head")
    _, forked = run(repo / "kb", "--baseline-ref=HEAD~1")
    monkeypatch.delattr(os, "fork")
    _, in_process = run(repo / "kb", "--baseline-ref=HEAD~1")
    for key in ("previous", "diff", "comparison", "gate"):
        assert forked[key] == in_process[key], key
    assert forked["diff"]["queries"]["worse"] == ["onboard"]


def test_a_base_evaluation_that_fails_is_an_internal_error_not_a_missing_comparison(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import scanner.pipeline.base

    repo = new_repo(tmp_path / "repo")
    commit(repo, BASE_KB, "base")

    def broken(*_args: object, **_kwargs: object) -> object:
        raise ZeroDivisionError("a bug in the base evaluation")

    monkeypatch.setattr(scanner.pipeline.base, "evaluate_base", broken)
    result, _ = run(repo / "kb", "--baseline-ref=HEAD")
    assert result.exit_code == ExitCode.INTERNAL
    assert "ZeroDivisionError" in result.stderr_text


def test_object_sizes_are_read_from_headers_as_git_gives_them_loose_and_packed_with_deltas(tmp_path: Path) -> None:
    repo = new_repo(tmp_path / "repo")
    text = "".join(f"line {i} of a note that grows\n" for i in range(3000))
    commit(repo, {"a.md": text}, "one")
    commit(repo, {"a.md": text + "one more line\n"}, "two")
    blobs = [git(repo, "rev-parse", f"{rev}:kb/a.md") for rev in ("HEAD~1", "HEAD")]
    repository = find_repository(repo / "kb")
    assert repository is not None

    def sizes() -> list[int]:
        with open_repository(repository) as opened:
            return [object_size(opened.object_store, blob) for blob in blobs]

    expected = [int(git(repo, "cat-file", "-s", blob)) for blob in blobs]
    assert sizes() == expected  # loose objects
    git(repo, "gc", "-q", "--aggressive")
    assert not list((repo / ".git/objects").glob("??/*"))  # all packed now
    packed = git(repo, "verify-pack", "-v", *map(str, (repo / ".git/objects/pack").glob("*.idx")))
    assert any(line.split()[0] in blobs and len(line.split()) > 5 for line in packed.splitlines())  # one is a delta
    assert sizes() == expected and expected[0] != expected[1]
