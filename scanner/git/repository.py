"""Opening the repository and finding the commit a revision names, with dulwich, in this process.

Reading objects runs nothing the repository could name: dulwich has no hooks, no fsmonitor, no
filters or textconv on this path, no lazy fetch of a partial clone's missing objects (a missing
object is a KeyError, reported as a GitFailed), reads no GIT_* variable when given the
repository's path, and has no ownership check (git's safe.directory), so the runner user's
checkout is read by the container's root as is.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from datetime import UTC, datetime
from enum import Enum

from dulwich.errors import NotGitRepository, WrongObjectException
from dulwich.objects import Commit, Tag
from dulwich.objectspec import parse_commit, parse_object
from dulwich.repo import Repo

from scanner.git.revision import Repository


class GitFailed(Exception):
    """The repository did not give what was asked (a missing or unreadable object, the deadline)."""


@dataclass(frozen=True, slots=True)
class Deadline:
    """One wall-clock limit for every read of one revision, checked between objects."""

    seconds: float
    ends: float

    @classmethod
    def after(cls, seconds: float) -> Deadline:
        return cls(seconds, time.monotonic() + seconds)

    def check(self) -> None:
        if time.monotonic() > self.ends:
            raise GitFailed(f"reading the repository took longer than {self.seconds:g} s")


class Absent(Enum):
    """Why a revision names no commit here."""

    UNKNOWN = "unknown"
    """No ref, SHA or expression of that name in this repository."""
    SHALLOW = "shallow"
    """Unknown, and the clone is shallow: a full fetch could hold it."""


@dataclass(frozen=True, slots=True)
class CommitAt:
    commit: str
    """The full SHA."""
    committed_at: datetime


def open_repository(repository: Repository) -> Repo:
    """The repository, opened by its path: dulwich then reads no GIT_DIR or other GIT_* variable,
    and, unlike git, checks no owner, so the container's root reads the runner user's checkout."""
    try:
        return Repo(str(repository.top))
    except (NotGitRepository, OSError, ValueError) as error:
        raise GitFailed(f"{repository.top} cannot be opened as a repository ({error})") from None


def resolve_commit(repository: Repository, revision: str, deadline: Deadline) -> CommitAt | Absent:
    """The commit `revision` names and its committer date; GitFailed when the repository cannot be read."""
    with open_repository(repository) as repo:
        commit = find_commit(repo, revision)
        if commit is None:
            return Absent.SHALLOW if repo.get_shallow() else Absent.UNKNOWN
        committed_at = _commit_time(repo, commit)
    deadline.check()
    return CommitAt(commit, committed_at)


def find_commit(repo: Repo, revision: str) -> str | None:
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


def missing(error: KeyError) -> GitFailed:
    key = error.args[0] if error.args else b""
    shown = key.decode("ascii", "replace") if isinstance(key, bytes) else str(key)
    return GitFailed(f"object {shown} is missing (a partial clone's blobs are never fetched)")
