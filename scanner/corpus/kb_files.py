"""Which files a KB holds: one rule for the folder on disk and for the KB at a git revision.

The folder walk (scanner/corpus/reader.py) and the listing of a git tree (scanner/git/tree.py)
both ask this module, entry by entry, so the two cannot drift: a file indexed from the checkout
is indexed from the base commit's tree, with the same warnings in the same words, and a file the
walk leaves out (a dot-folder, an excluded glob, another suffix) is never read at the base either.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from scanner.foundation.diagnostics import DiagnosticCode, Diagnostics
from scanner.foundation.errors import InputError

INDEXED_SUFFIXES = (".md", ".markdown", ".txt")

MAX_DOCUMENT_BYTES = 3 * 1024 * 1024
"""Files larger than this are skipped with a warning. Real notes are kilobytes; the cap
keeps a generated or hostile file (a 200 MB log renamed .md) from taking the runner's
memory, and it is well above the largest hand-written Markdown file we have seen (~1 MB).
It is what keeps one file under 512 MiB of peak memory in every script: a file's cost is its
distinct terms, and Han text has the most per byte (each character is a term and starts a
bigram). Random Han words peaked at 861 MiB at 8 MiB and 504-521 MiB at 4 MiB, so the cap is
3 MiB (docs/limits-and-safety.md has the per-script table and its command)."""


@dataclass(frozen=True, slots=True)
class KbFiles:
    """The rule, for one set of `--exclude` globs. Paths are KB-relative and `/`-separated."""

    excluded: re.Pattern[str] | None

    @classmethod
    def excluding(cls, patterns: Iterable[str]) -> KbFiles:
        return cls(compile_excludes(patterns))

    def is_excluded(self, relative: str) -> bool:
        return self.excluded is not None and self.excluded.fullmatch(relative) is not None

    def prunes_folder(self, relative: str) -> bool:
        """A folder whose files are not the KB's, left out silently: dot-folders are tool state
        (.git, .github, .obsidian), never notes; excluded folders are what the user asked."""
        return relative.rsplit("/", 1)[-1].startswith(".") or self.is_excluded(relative)

    def enters_folder(self, relative: str, *, is_link: bool, diagnostics: Diagnostics) -> bool:
        """Whether the walk goes into this folder (a link to a folder is never followed: it could
        lead anywhere, and twice to the same notes)."""
        if self.prunes_folder(relative):
            return False
        if is_link:
            diagnostics.warn(DiagnosticCode.SYMLINK_SKIPPED, "symbolic link to a folder is not followed", shown(relative))
            return False
        return True

    def is_candidate(self, relative: str) -> bool:
        """A file the KB holds by its name (a dotfile is a note; only dot-folders are left out)."""
        return relative.lower().endswith(INDEXED_SUFFIXES) and not self.is_excluded(relative)

    def holds_file(self, relative: str, diagnostics: Diagnostics, *, link_leaves_kb: bool = False) -> bool:
        """Whether a candidate file (in a folder the walk entered) is read; a skip is recorded.
        `link_leaves_kb`: the file is a symbolic link whose target is outside the KB."""
        if not self.is_candidate(relative):
            return False
        if not is_readable_name(relative):
            diagnostics.warn(DiagnosticCode.FILE_SKIPPED, "file name is not valid UTF-8; rename it", shown(relative))
            return False
        if link_leaves_kb:
            diagnostics.warn(DiagnosticCode.SYMLINK_SKIPPED, "symbolic link points outside the KB; not followed", relative)
            return False
        return True


def skipped_file(relative: str, reason: str, diagnostics: Diagnostics) -> None:
    """A held file that could not be read: `reason` completes "file ..." (scanner.foundation.files'
    refusals), whichever reader met it."""
    diagnostics.warn(DiagnosticCode.FILE_SKIPPED, f"file {reason}; not indexed", relative)


def too_large(size: int) -> str:
    """The reason for a file over MAX_DOCUMENT_BYTES, in scanner.foundation.files' words."""
    return f"is {size} bytes, over the {MAX_DOCUMENT_BYTES}-byte cap"


def compile_excludes(patterns: Iterable[str]) -> re.Pattern[str] | None:
    """Glob patterns over KB-relative paths: `*` and `?` stay within one folder, `**` spans
    folders, and a pattern without `/` matches a file or folder name at any depth (as in
    .gitignore), so `drafts` and `*.tmp.md` do what people expect."""
    parts = []
    for pattern in patterns:
        pattern = pattern.strip().strip("/")
        if not pattern:
            continue
        anchored = "/" in pattern
        regex = ""
        i = 0
        while i < len(pattern):
            if pattern.startswith("**/", i):
                regex += "(?:.*/)?"
                i += 3
            elif pattern.startswith("**", i):
                regex += ".*"
                i += 2
            elif pattern[i] == "*":
                regex += "[^/]*"
                i += 1
            elif pattern[i] == "?":
                regex += "[^/]"
                i += 1
            else:
                regex += re.escape(pattern[i])
                i += 1
        parts.append(regex if anchored else f"(?:.*/)?{regex}")
    if not parts:
        return None
    # A match on a folder excludes everything below it.
    return re.compile(f"(?:{'|'.join(parts)})(?:/.*)?", re.DOTALL)


def is_readable_name(relative: str) -> bool:
    try:
        relative.encode("utf-8")
    except UnicodeEncodeError:  # undecodable bytes survive os.walk (and a tree's names) as lone surrogates
        return False
    return True


def shown(relative: str) -> str:
    """A name with undecodable bytes, spelled with the bytes escaped (`caf\\xe9.md`), as the user
    would recognise it; its lone surrogates could not be written to the report or the terminal."""
    return relative.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


def check_kb_folder(kb_path: Path, hint: str) -> None:
    """A mistyped kb-path is said in those words, before the golden-file lookup in it would report
    "no golden file found" and send the user looking for the wrong thing. `hint`: the fix in the
    words of the command that was given the path."""
    if kb_path.is_dir():
        return
    raise InputError(
        "knowledge base folder not found" if not os.path.lexists(kb_path) else "knowledge base path is not a folder",
        file=str(kb_path),
        hint=hint,
    )
