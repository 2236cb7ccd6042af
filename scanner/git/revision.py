"""A git revision as the user names it, and the repository that holds a KB folder.

Neither needs dulwich (the settings check a revision at start, and a run that reads no revision
never imports it): the name rule is text, and the repository is found as git finds it, by the
nearest `.git` above the folder.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

MAX_REVISION_CHARS = 256
"""Far above any ref name or SHA a person types; a longer text is not a revision."""


def is_revision_name(text: str) -> bool:
    """Whether `text` can be one git name (a branch, tag, SHA, `HEAD~1`): refused before it is
    looked up when it could be read as an option or holds what no ref name can (control
    characters, spaces). Whether it names a commit is the repository's to say."""
    return bool(text) and len(text) <= MAX_REVISION_CHARS and not text.startswith("-") and not any(
        c.isspace() or ord(c) < 32 or ord(c) == 127 for c in text
    )


@dataclass(frozen=True, slots=True)
class Repository:
    top: Path
    """The folder holding `.git`."""
    prefix: str
    """The KB folder relative to `top`, `/`-separated; "" when the KB is the repository root."""


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
