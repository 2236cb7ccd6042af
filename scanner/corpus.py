"""Read a knowledge base folder into documents and their chunks.

This is the only module that touches the KB's files. Everything it cannot
read is a recorded skip (a `Diagnostic` naming the file), never a silent drop
and never a stopped run: a pull request can put anything into the tree.
"""

from __future__ import annotations

import multiprocessing
import os
import re
import stat
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Sequence

from .chunking import BREADCRUMB_SEPARATOR, ParsedDocument, parse_document
from .diagnostics import Diagnostic, Diagnostics

INDEXED_SUFFIXES = (".md", ".markdown", ".txt")

MAX_DOCUMENT_BYTES = 8 * 1024 * 1024
"""Files larger than this are skipped with a warning. Real notes are kilobytes; the cap
keeps a generated or hostile file (a 200 MB log renamed .md) from taking the runner's
memory, and it is well above the largest hand-written Markdown file we have seen (~1 MB)."""


@dataclass(frozen=True, slots=True)
class Chunk:
    """One section of a document: the unit that is indexed, searched and scanned."""

    path: str
    """KB-relative path with `/` separators."""
    heading: str
    breadcrumb_parts: tuple[str, ...]
    """The document title, then each enclosing heading (the strings are shared, not copied)."""
    body: str
    start_line: int
    end_line: int
    heading_line: int | None
    body_start_line: int
    breadcrumb_lines: tuple[int, ...]
    """Source line of each breadcrumb part: the title's (frontmatter line, or 1 for a
    title taken from the file name), then each enclosing heading's."""

    @property
    def breadcrumb(self) -> str:
        return BREADCRUMB_SEPARATOR.join(self.breadcrumb_parts)


@dataclass(frozen=True, slots=True)
class Document:
    path: str
    title: str
    title_line: int
    """Frontmatter line of `title`, or 1 when the title is the file name."""
    chunks: tuple[Chunk, ...]


@dataclass(frozen=True, slots=True)
class Corpus:
    documents: tuple[Document, ...]
    """Sorted by path, so every derived artefact (index, digest, report) is deterministic."""

    @property
    def chunk_count(self) -> int:
        return sum(len(d.chunks) for d in self.documents)


PARALLEL_MIN_FILES = 500
"""Below this many files one process reads the KB: starting workers costs more than it saves."""


def read_corpus(
    root: Path, exclude: Sequence[str] = (), diagnostics: Diagnostics | None = None, *, workers: int | None = None
) -> Corpus:
    """Walk `root`, then read and parse every indexable file under it.

    Parsing is split over `workers` processes (default: one per CPU) when there are enough
    files. The walk comes first and results are collected in walk order, so documents and
    warnings come out identical whatever the number of workers."""
    diagnostics = diagnostics if diagnostics is not None else Diagnostics()
    files = list(_indexable_files(root, exclude, diagnostics))
    workers = workers if workers is not None else (os.cpu_count() or 1)
    if workers > 1 and len(files) >= PARALLEL_MIN_FILES:
        context = multiprocessing.get_context("fork") if "fork" in multiprocessing.get_all_start_methods() else None
        with ProcessPoolExecutor(max_workers=workers, mp_context=context) as pool:
            packed = pool.map(_read_packed, files, chunksize=max(1, len(files) // (workers * 8)))
            results = [(_unpack(document), warnings) for document, warnings in packed]
    else:
        results = [_read_alone(item) for item in files]
    documents = []
    for document, warnings in results:
        diagnostics.items.extend(warnings)
        if document is not None:
            documents.append(document)
    documents.sort(key=lambda d: d.path)
    return Corpus(tuple(documents))


def _read_alone(item: tuple[str, Path]) -> tuple[Document | None, list[Diagnostic]]:
    """One file, with its own warnings."""
    local = Diagnostics()
    document = _read_document(item[0], item[1], local)
    return document, local.items


_PackedDocument = tuple[str, str, int, list[tuple[object, ...]]]


def _read_packed(item: tuple[str, Path]) -> tuple[_PackedDocument | None, list[Diagnostic]]:
    """What a worker sends back: plain tuples, because pickling slotted dataclasses costs as
    much as parsing the file did (measured: 51 MB of documents took ~5 s to pickle and load)."""
    document, warnings = _read_alone(item)
    if document is None:
        return None, warnings
    chunks = [
        (c.path, c.heading, c.breadcrumb_parts, c.body, c.start_line, c.end_line, c.heading_line,
         c.body_start_line, c.breadcrumb_lines)
        for c in document.chunks
    ]
    return (document.path, document.title, document.title_line, chunks), warnings


def _unpack(packed: _PackedDocument | None) -> Document | None:
    if packed is None:
        return None
    path, title, title_line, chunks = packed
    return Document(path, title, title_line, tuple(Chunk(*fields) for fields in chunks))  # type: ignore[arg-type]


def build_document(relative: str, text: str, diagnostics: Diagnostics) -> Document:
    """Turn one file's text into a Document (pure apart from the warnings it records)."""
    stem = relative.rsplit("/", 1)[-1]
    stem = stem.rsplit(".", 1)[0] if "." in stem else stem
    parsed: ParsedDocument = parse_document(text, stem)
    for line, problem in parsed.problems:
        diagnostics.warn("frontmatter-invalid", problem, relative, line)
    frontmatter = parsed.frontmatter
    if frontmatter is not None and frontmatter.title is not None:
        title, title_line = frontmatter.title, frontmatter.title_line or 1
    else:
        title, title_line = stem, 1
    chunks = tuple(
        Chunk(
            path=relative,
            heading=section.heading,
            breadcrumb_parts=(title, *(text for text, _ in section.ancestors)),
            body=section.body,
            start_line=section.start_line,
            end_line=section.end_line,
            heading_line=section.heading_line,
            body_start_line=section.body_start_line,
            breadcrumb_lines=(title_line, *(line for _, line in section.ancestors)),
        )
        for section in parsed.sections
    )
    return Document(relative, title, title_line, chunks)


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


def _indexable_files(
    root: Path, exclude: Sequence[str], diagnostics: Diagnostics
) -> Iterable[tuple[str, Path]]:
    excluded = compile_excludes(exclude)
    real_root = os.path.realpath(root)
    for folder, dirnames, filenames in os.walk(root, followlinks=False, onerror=_walk_error(root, diagnostics)):
        relative_folder = os.path.relpath(folder, root)
        relative_folder = "" if relative_folder == "." else relative_folder.replace(os.sep, "/") + "/"
        kept = []
        for name in sorted(dirnames):
            relative = relative_folder + name
            # Dot-folders are tool state (.git, .github, .obsidian), never notes.
            if name.startswith(".") or (excluded is not None and excluded.fullmatch(relative)):
                continue
            if os.path.islink(os.path.join(folder, name)):
                diagnostics.warn("symlink-skipped", "symbolic link to a folder is not followed", _shown(relative))
                continue
            kept.append(name)
        dirnames[:] = kept
        for name in sorted(filenames):
            if not name.lower().endswith(INDEXED_SUFFIXES):
                continue
            relative = relative_folder + name
            if excluded is not None and excluded.fullmatch(relative):
                continue
            absolute = Path(folder, name)
            if not _is_readable_name(relative):
                diagnostics.warn("file-skipped", "file name is not valid UTF-8; rename it", _shown(relative))
                continue
            if absolute.is_symlink():
                target = os.path.realpath(absolute)
                if os.path.commonpath([real_root, target]) != real_root:
                    diagnostics.warn("symlink-skipped", "symbolic link points outside the KB; not followed", relative)
                    continue
            yield relative, absolute


def _walk_error(root: Path, diagnostics: Diagnostics):  # type: ignore[no-untyped-def]
    def record(error: OSError) -> None:
        name = os.path.relpath(error.filename, root).replace(os.sep, "/") if error.filename else str(root)
        diagnostics.warn("folder-skipped", f"folder cannot be read ({error.strerror}); its files are not indexed", name)

    return record


def _read_document(relative: str, absolute: Path, diagnostics: Diagnostics) -> Document | None:
    def skip(reason: str) -> None:
        diagnostics.warn("file-skipped", f"{reason}; not indexed", relative)

    try:
        # stat() after the symlink check above: a link inside the KB is read as its target.
        info = os.stat(absolute)
    except OSError as error:
        skip(f"cannot be read ({error.strerror})")
        return None
    if not stat.S_ISREG(info.st_mode):
        skip("not a regular file (a FIFO, device or socket)")
        return None
    if info.st_size > MAX_DOCUMENT_BYTES:
        skip(f"{info.st_size} bytes is over the {MAX_DOCUMENT_BYTES} byte limit per file")
        return None
    try:
        with open(absolute, "rb") as handle:
            # Read one byte past the cap: a file that grew after stat() is still refused.
            data = handle.read(MAX_DOCUMENT_BYTES + 1)
    except OSError as error:
        skip(f"cannot be read ({error.strerror})")
        return None
    if len(data) > MAX_DOCUMENT_BYTES:
        skip(f"over the {MAX_DOCUMENT_BYTES} byte limit per file")
        return None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        skip(f"not valid UTF-8 (byte {error.start})")
        return None
    if "\x00" in text:
        skip("contains NUL bytes (binary data?)")
        return None
    return build_document(relative, text, diagnostics)


def _is_readable_name(relative: str) -> bool:
    try:
        relative.encode("utf-8")
    except UnicodeEncodeError:  # undecodable bytes survive os.walk as lone surrogates
        return False
    return True


def _shown(relative: str) -> str:
    return relative.encode("utf-8", "backslashreplace").decode("utf-8")
