"""Files the Action writes into the workspace are handed back to its owner: the container runs as
root, the job's later steps do not."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path


def make_parent_folders(workspace: Path, relative: str) -> list[Path]:
    """Create the missing folders above `relative`; returns those created (outermost first)."""
    created: list[Path] = []
    parent = (workspace / relative).parent
    missing = []
    while not parent.exists() and parent != workspace:
        missing.append(parent)
        parent = parent.parent
    for folder in reversed(missing):
        folder.mkdir()
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
