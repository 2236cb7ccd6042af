"""The records a KB is read into: documents and their chunks (with source line spans)."""

from __future__ import annotations

from dataclasses import dataclass

from scanner.corpus.markdown import BREADCRUMB_SEPARATOR


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
