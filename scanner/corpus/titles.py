"""A page's title counts once, wherever the page writes it: the heading and breadcrumb that search scores.

Markdown sites write a page's title in three ways: a frontmatter `title:` only (Hugo,
Docusaurus), a `# Title` line only (MkDocs, most note apps), or both with the same text. Read as
written, the three score the same page differently: with both, the title is the first section's
heading and the breadcrumb of every section (twice in the breadcrumb of a section under the
`# Title`), so the title's words count three or four times; with the heading only, the file
name takes the breadcrumb's place. Search scores every layout as if the title were written once,
in the breadcrumb, which is where a frontmatter-only page has it:

- The page's title is its frontmatter `title`; else a heading that encloses the whole page (the
  first thing in it, every other section under it), as a `# Title` line does; else the file name.
- The breadcrumb is that title, then the enclosing headings that are not the title.
- A section whose heading is the title has no heading of its own to score.
- A section that holds nothing but the title (its heading is the title, its body blank, and
  other sections carry the title in their breadcrumbs) is not scored at all: a frontmatter-only
  page has no such section, and counting it in the collection statistics would change every
  other score. It is still read, scanned and reported as written.

"The same text" means equal after case folding and whitespace collapsing. Only what search
scores changes: the chunk table keeps each section's heading and breadcrumb as written, which
the quote scan reads, reports and the corpus digest cover (docs/adr/0005-a-title-counts-once.md).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

from scanner.corpus.documents import ChunkFields, Document
from scanner.corpus.markdown import BREADCRUMB_SEPARATOR, MAX_BREADCRUMB_PART_CHARS


class ScoredFields(NamedTuple):
    """The heading and breadcrumb that search scores for one section, and whether it is scored.

    A named tuple: one is made per section while a document's table rows are made (table.py),
    where a slotted dataclass's initialiser was a tenth of the cost."""

    heading: str
    breadcrumb: str
    scored: bool = True


def _key(text: str) -> str:
    return " ".join(text.split()).casefold()


def _enclosing_heading(chunks: Sequence[ChunkFields]) -> str | None:
    """The first section's heading when it encloses the whole page: nothing before it, and every
    other section under it (its first enclosing heading is that one, by source line)."""
    heading, _, _, _, _, heading_line, _, _ = chunks[0]
    if heading_line is None or not heading.strip():
        return None
    for chunk in chunks[1:]:
        if chunk[7][1:2] != (heading_line,):
            return None
    return heading


def page_title(document: Document) -> str:
    """The title search scores: frontmatter, else an enclosing heading, else the file name."""
    return title_of(document.title, document.title_line, [chunk.flattened() for chunk in document.chunks])


def title_of(title: str, title_line: int, chunks: Sequence[ChunkFields]) -> str:
    """page_title of a document given as its title, the title's line and its chunks' flat fields."""
    # title_line is the frontmatter line of `title` (2 or more), or 1 for a file-name title.
    if title_line > 1 or not chunks:
        return title
    return _enclosing_heading(chunks) or title


def scored_fields(document: Document) -> list[ScoredFields]:
    """Per chunk of `document`, in order: the heading and breadcrumb search scores."""
    return scored_fields_of(document.title, document.title_line, [chunk.flattened() for chunk in document.chunks])


def scored_fields_of(title: str, title_line: int, chunks: Sequence[ChunkFields]) -> list[ScoredFields]:
    """scored_fields of a document given as its title, the title's line and its chunks' flat fields."""
    if not chunks:
        return []
    title = title_of(title, title_line, chunks)
    short_title = title[:MAX_BREADCRUMB_PART_CHARS]
    title_key, short_key = _key(title), _key(short_title)
    # Breadcrumb parts are shared by every section under a heading: each is compared once.
    is_title: dict[str, bool] = {}
    fields = []
    several = len(chunks) > 1
    for heading, breadcrumb_parts, body, _, _, _, _, _ in chunks:
        own = "" if _key(heading) == title_key else heading
        parents = []
        for part in breadcrumb_parts[1:]:
            same = is_title.get(part)
            if same is None:
                same = is_title[part] = _key(part) == short_key
            if not same:
                parents.append(part)
        if own == "" and heading and several and not body.strip():
            fields.append(ScoredFields("", "", scored=False))
            continue
        fields.append(ScoredFields(own, BREADCRUMB_SEPARATOR.join([short_title, *parents])))
    return fields
