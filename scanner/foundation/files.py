"""The one way kb-eval reads a file a pull request could have planted (the golden file, a KB
document, a run file, a history or baseline), and the one way it writes its own (`write_atomically`).

Every refusal is a `FileRefused` whose `reason` completes the sentence "the <what> file ...";
each caller says what the file is and what to do, and either stops (exit 2) or skips it with a
warning. The rules, for every caller alike:
- checked with lstat before opening, so a FIFO is never opened for a blocking read;
- opened with O_NONBLOCK (a FIFO swapped in after the check cannot hang the run) and, where links
  are refused, O_NOFOLLOW (a link swapped in fails);
- checked again on the open descriptor, which is the file actually read;
- read one chunk at a time, stopping one byte past the cap (a file that grows is still refused).
"""

from __future__ import annotations

import errno
import os
import stat
import tempfile
from enum import Enum
from pathlib import Path

from scanner.foundation.errors import InputError

READ_CHUNK_BYTES = 1024 * 1024


class LinkPolicy(Enum):
    """What a symbolic link at the path means."""

    REFUSE = "refuse"
    """A file kb-eval may replace (history) or whose link a pull request could point anywhere on
    the runner (the golden file): a link is refused."""
    FOLLOW = "follow"
    """A file the user chose by path (run file, baseline) or a KB file whose link the corpus walk
    already kept inside the KB: the target is read; a loop or a dangling link is refused."""


class Refusal(Enum):
    MISSING = "missing"
    LINK = "link"
    NOT_REGULAR = "not-regular"
    HARD_LINKED = "hard-linked"
    TOO_LARGE = "too-large"
    UNREADABLE = "unreadable"


class FileRefused(Exception):
    """Why a file was not read; `reason` completes "the <what> file ..."."""

    def __init__(self, refusal: Refusal, reason: str) -> None:
        super().__init__(reason)
        self.refusal = refusal
        self.reason = reason


def read_capped(path: str | Path, cap_bytes: int, links: LinkPolicy, refuse_hard_links: bool = False) -> bytes:
    """The bytes of the regular file at `path`, at most `cap_bytes`; FileRefused otherwise.

    `refuse_hard_links`: for a file kb-eval replaces by rename, which would detach it from its
    other names (keeping a stale copy) while writing through would change a file elsewhere."""
    before = _inspect(path, links)
    _check(before, cap_bytes, refuse_hard_links)
    flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
    if links is LinkPolicy.REFUSE:
        flags |= os.O_NOFOLLOW
    fd = _open(path, flags, links)
    try:
        # A concurrent writer may have renamed a new file into place since lstat; that file is
        # fine to read as long as it passes the same checks.
        _check(os.fstat(fd), cap_bytes, refuse_hard_links)
        chunks: list[bytes] = []
        total = 0
        while total <= cap_bytes:
            chunk = os.read(fd, READ_CHUNK_BYTES)
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
    except OSError as error:
        raise _unreadable(error) from None
    finally:
        os.close(fd)
    if total > cap_bytes:
        raise _too_large(total, cap_bytes)  # it grew after fstat
    return b"".join(chunks)


def check_replaceable(path: Path, cap_bytes: int) -> None:
    """FileRefused unless `path` is absent or a file `read_capped(..., REFUSE, refuse_hard_links=True)`
    would read: what the next read would refuse is never replaced either. Opens and closes without
    reading."""
    try:
        status = _inspect(path, LinkPolicy.REFUSE)
    except FileRefused as refused:
        if refused.refusal is Refusal.MISSING:
            return
        raise
    _check(status, cap_bytes, refuse_hard_links=True)
    try:
        os.close(_open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0), LinkPolicy.REFUSE))
    except FileRefused as refused:
        if refused.refusal is not Refusal.MISSING:
            raise


def file_kind(mode: int) -> str:
    """What a non-regular file is, in words."""
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISLNK(mode):
        return "a symbolic link"
    return "a special file"


def _inspect(path: str | Path, links: LinkPolicy) -> os.stat_result:
    try:
        status = os.lstat(path)
    except FileNotFoundError:
        raise FileRefused(Refusal.MISSING, "was not found") from None
    except OSError as error:
        raise _unreadable(error) from None
    if stat.S_ISLNK(status.st_mode):
        if links is LinkPolicy.REFUSE:
            raise FileRefused(Refusal.LINK, "is a symbolic link")
        try:
            status = os.stat(path)
        except OSError as error:
            raise _broken_link(error) from None
    return status


def _open(path: str | Path, flags: int, links: LinkPolicy) -> int:
    try:
        return os.open(path, flags)
    except FileNotFoundError:
        raise FileRefused(Refusal.MISSING, "was not found") from None
    except OSError as error:
        if error.errno == errno.ELOOP:
            if links is LinkPolicy.REFUSE:
                raise FileRefused(Refusal.LINK, "is a symbolic link") from None
            raise _broken_link(error) from None
        raise _unreadable(error) from None


def _check(status: os.stat_result, cap_bytes: int, refuse_hard_links: bool) -> None:
    if not stat.S_ISREG(status.st_mode):
        raise FileRefused(Refusal.NOT_REGULAR, f"is {file_kind(status.st_mode)}, not a regular file")
    if refuse_hard_links and status.st_nlink > 1:
        raise FileRefused(Refusal.HARD_LINKED, f"has {status.st_nlink} hard links")
    if status.st_size > cap_bytes:
        raise _too_large(status.st_size, cap_bytes)


def _too_large(size: int, cap_bytes: int) -> FileRefused:
    return FileRefused(Refusal.TOO_LARGE, f"is {size} bytes, over the {cap_bytes}-byte cap")


def _broken_link(error: OSError) -> FileRefused:
    if error.errno == errno.ELOOP:
        return FileRefused(Refusal.LINK, "is a symbolic link loop")
    if isinstance(error, FileNotFoundError):
        return FileRefused(Refusal.LINK, "is a symbolic link to nothing")
    return _unreadable(error)


def _unreadable(error: OSError) -> FileRefused:
    return FileRefused(Refusal.UNREADABLE, f"cannot be read ({error.strerror or type(error).__name__})")


def _new_file_mode(path: Path) -> int:
    try:
        existing = os.lstat(path)
        if stat.S_ISREG(existing.st_mode):
            # The permission bits only: a planted file's setuid or sticky bit is not carried over.
            return stat.S_IMODE(existing.st_mode) & 0o777
    except OSError:
        pass
    # mkstemp creates 0600; a new file gets what open() would have given it. Reading the
    # umask means setting it, which is safe here: the CLI writes from one thread.
    umask = os.umask(0o022)
    os.umask(umask)
    return 0o666 & ~umask


def write_atomically(path: Path, data: bytes, what: str) -> None:
    """Write `data` to a temp file beside `path`, fsync it, rename it over `path`, fsync the folder.

    The one writer of every file kb-eval produces (report, baseline, history, parse cache). `what` names
    the file in errors (`report`, `baseline`, `history`).

    rename(2) within one file system is atomic: a reader (or the next run after a
    kill) sees the whole old file or the whole new one. A temp file left by a
    killed writer is named `.<name>.*.tmp` and is never read.
    """
    folder = path.parent
    mode = _new_file_mode(path)
    try:
        fd, temp_name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=folder)
    except OSError as error:
        raise InputError(
            f"cannot create a file in {folder} to save the {what} ({error.strerror})",
            file=str(path),
            hint=f"make the folder exist and be writable, or point --{what} elsewhere",
        ) from None
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fchmod(handle.fileno(), mode)
            os.fsync(handle.fileno())
        os.replace(temp_name, path)
    except BaseException as error:
        try:
            os.unlink(temp_name)
        except OSError:
            pass
        if isinstance(error, OSError):
            raise InputError(
                f"cannot save the {what} ({error.strerror})",
                file=str(path),
                hint=f"make sure {path} is not a directory and the disk is not full",
            ) from None
        raise
    _fsync_folder(folder)


def _fsync_folder(folder: Path) -> None:
    # Makes the rename itself durable across a power loss; not every file system
    # allows opening a directory, and the rename is already atomic without this.
    try:
        fd = os.open(folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
