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

from dataclasses import dataclass

from scanner.corpus.documents import Chunk, Document
from scanner.corpus.markdown import BREADCRUMB_SEPARATOR, MAX_BREADCRUMB_PART_CHARS


@dataclass(frozen=True, slots=True)
class ScoredFields:
    """The heading and breadcrumb that search scores for one section, and whether it is scored."""

    heading: str
    breadcrumb: str
    scored: bool = True


def _key(text: str) -> str:
    return " ".join(text.split()).casefold()


def _enclosing_heading(chunks: tuple[Chunk, ...]) -> str | None:
    """The first section's heading when it encloses the whole page: nothing before it, and every
    other section under it (its first enclosing heading is that one, by source line)."""
    first = chunks[0]
    if first.heading_line is None or not first.heading.strip():
        return None
    for chunk in chunks[1:]:
        if chunk.breadcrumb_lines[1:2] != (first.heading_line,):
            return None
    return first.heading


def page_title(document: Document) -> str:
    """The title search scores: frontmatter, else an enclosing heading, else the file name."""
    # title_line is the frontmatter line of `title` (2 or more), or 1 for a file-name title.
    if document.title_line > 1 or not document.chunks:
        return document.title
    return _enclosing_heading(document.chunks) or document.title


def scored_fields(document: Document) -> list[ScoredFields]:
    """Per chunk of `document`, in order: the heading and breadcrumb search scores."""
    chunks = document.chunks
    if not chunks:
        return []
    title = page_title(document)
    short_title = title[:MAX_BREADCRUMB_PART_CHARS]
    title_key, short_key = _key(title), _key(short_title)
    # Breadcrumb parts are shared by every section under a heading: each is compared once.
    is_title: dict[str, bool] = {}
    fields = []
    for chunk in chunks:
        heading = "" if _key(chunk.heading) == title_key else chunk.heading
        parents = []
        for part in chunk.breadcrumb_parts[1:]:
            same = is_title.get(part)
            if same is None:
                same = is_title[part] = _key(part) == short_key
            if not same:
                parents.append(part)
        if heading == "" and chunk.heading and not chunk.body.strip() and len(chunks) > 1:
            fields.append(ScoredFields("", "", scored=False))
            continue
        fields.append(ScoredFields(heading, BREADCRUMB_SEPARATOR.join([short_title, *parents])))
    return fields
