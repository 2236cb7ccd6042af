"""A document as the index's chunk table takes it: one row per section, made where it was parsed.

A reading worker sends its documents to the parent as these rows (marshal data), with the bytes
the corpus digest takes of them, and scanner.search.index writes them as they are: the parent
builds no Chunk it would only turn into a row, encodes no text for the digest, and works out no
breadcrumb or scored field (at 20,000 bench documents the parent spent 1.7 s of CPU on that
round trip). A Document given to the index (a test's, a cache's) is turned into rows by the same
function, so both ways write the same table and the same digest.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from scanner.corpus.documents import ChunkFields, Document
from scanner.corpus.markdown import BREADCRUMB_SEPARATOR
from scanner.corpus.titles import scored_fields_of

TableRow = tuple[str, str, str, str, int, int, "int | None", int, str, str, "str | None", "str | None"]
"""A chunk-table row without its id: path, heading, breadcrumb, body, start_line, end_line,
heading_line, body_start_line, breadcrumb_lines (comma-separated), breadcrumb_part_lengths
(characters, comma-separated), scored_heading and scored_breadcrumb (None where search scores
the text as written, titles.py)."""


@dataclass(frozen=True, slots=True)
class TableDocument:
    """A parsed document as its chunk-table rows."""

    path: str
    digested: bytes
    """What the corpus digest takes of the rows: each row's path, heading, breadcrumb and body,
    in order, each `prefixed` (bytes SQLite binding and sha256 read without a copy; strings SQLite
    binds faster than bytes it must cast to text: 1.0 against 1.4 s at 213,846 rows)."""
    rows: list[TableRow]

    @property
    def sections(self) -> int:
        return len(self.rows)


def prefixed(value: str) -> bytes:
    """`value` as the corpus digest takes it: its UTF-8 length in 8 bytes, then the UTF-8."""
    # Strict: SQLite takes no lone surrogate, so such text fails here as it would there.
    encoded = value.encode("utf-8")
    return len(encoded).to_bytes(8, "big") + encoded


def table_document(path: str, title: str, title_line: int, chunks: Sequence[ChunkFields]) -> TableDocument:
    """The rows of the document at `path` with this title and these chunks (`Chunk.flattened`'s form)."""
    encoded_path = prefixed(path)
    rows: list[TableRow] = []
    digested: list[bytes] = []
    # Sections under one heading share their breadcrumb: joined, measured and encoded once.
    parts: tuple[str, ...] | None = None
    lines: tuple[int, ...] | None = None
    breadcrumb = lengths = lines_text = ""
    encoded_breadcrumb = b""
    for (heading, breadcrumb_parts, body, start, end, heading_line, body_start, breadcrumb_lines), scored in zip(
        chunks, scored_fields_of(title, title_line, chunks), strict=True
    ):
        if breadcrumb_parts != parts:
            parts = breadcrumb_parts
            breadcrumb = BREADCRUMB_SEPARATOR.join(parts)
            lengths = ",".join([str(len(part)) for part in parts])
            encoded_breadcrumb = prefixed(breadcrumb)
        if breadcrumb_lines != lines:
            lines = breadcrumb_lines
            lines_text = ",".join(map(str, lines))
        digested += (encoded_path, prefixed(heading), encoded_breadcrumb, prefixed(body))
        rows.append((
            path, heading, breadcrumb, body, start, end, heading_line, body_start, lines_text, lengths,
            None if scored.heading == heading else scored.heading,
            None if scored.breadcrumb == breadcrumb else scored.breadcrumb,
        ))
    return TableDocument(path, b"".join(digested), rows)


def document_table(document: Document) -> TableDocument:
    """A Document's rows (table_document of its fields)."""
    return table_document(document.path, document.title, document.title_line, [c.flattened() for c in document.chunks])
