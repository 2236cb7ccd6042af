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

    def flattened(self) -> ChunkFields:
        """Every field but the path (its document's), in declaration order: the one flat form a chunk
        travels in (a worker's message, a parse-cache entry). `Chunk.of` reads it back."""
        return (
            self.heading, self.breadcrumb_parts, self.body, self.start_line, self.end_line, self.heading_line,
            self.body_start_line, self.breadcrumb_lines,
        )

    @classmethod
    def of(cls, path: str, fields: ChunkFields) -> Chunk:
        heading, parts, body, start, end, heading_line, body_start, lines = fields
        return cls(path, heading, tuple(parts), body, start, end, heading_line, body_start, tuple(lines))


ChunkFields = tuple[str, tuple[str, ...], str, int, int, "int | None", int, tuple[int, ...]]
"""A chunk without its path, as `Chunk.flattened` writes it."""


@dataclass(frozen=True, slots=True)
class Document:
    path: str
    title: str
    title_line: int
    """Frontmatter line of `title`, or 1 when the title is the file name."""
    chunks: tuple[Chunk, ...]


@dataclass(frozen=True, slots=True)
class HeldDocument:
    """A document another side of the run has already indexed, with the same path and bytes (a
    file the pull request left as it was): neither read nor parsed again, its chunks are taken
    from that side's index (scanner.search.index.Reuse)."""

    path: str
    sections: int
    """How many chunks it has there."""


@dataclass(frozen=True, slots=True)
class Corpus:
    documents: tuple[Document, ...]
    """Sorted by path, so every derived artefact (index, digest, report) is deterministic."""
