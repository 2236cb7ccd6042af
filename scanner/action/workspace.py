"""Files the Action writes into the workspace are handed back to its owner: the container runs as
root, the job's later steps do not."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from scanner.foundation.errors import InputError


def make_parent_folders(workspace: Path, relative: str, setting: str = "report") -> list[Path]:
    """Create the missing folders above `relative`; returns those created (outermost first).

    InputError (exit 2) naming `setting` when one cannot be made: a name on the way is a file, or a
    link to nothing (a link is never replaced: lexists, not exists, so a dangling one is not taken
    for a missing folder)."""
    created: list[Path] = []
    parent = (workspace / relative).parent
    missing = []
    while not os.path.lexists(parent) and parent != workspace:
        missing.append(parent)
        parent = parent.parent
    for folder in reversed(missing):
        try:
            folder.mkdir()
        except OSError as error:
            raise InputError(
                f"cannot create the folder {folder.relative_to(workspace)} for {relative} ({error.strerror})",
                file=relative, field=setting,
                hint=f"point {setting} at a path whose folders are folders (not files or broken links)",
            ) from None
        created.append(folder)
    return created


def hand_to_workspace_owner(workspace: Path, paths: Sequence[Path]) -> None:
    """chown what this run wrote to the owner of the workspace.

    The container runs as root while the runner's later steps (and the next
    checkout) run as the runner user, who could then neither delete nor
    replace a root-owned file in the workspace (docs/runner-contract.md#user-and-file-ownership). Outside a
    container the files already belong to whoever runs this.
    """
    owner = os.stat(workspace)
    for path in paths:
        try:
            status = os.lstat(path)
        except FileNotFoundError:
            continue
        if (status.st_uid, status.st_gid) != (owner.st_uid, owner.st_gid):
            try:
                os.lchown(path, owner.st_uid, owner.st_gid)
            except PermissionError:
                pass  # not root: the file is ours, and ours is what the next step will be too
