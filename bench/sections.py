"""A small Markdown section splitter for the baseline systems in the benchmark.

bm25s and tantivy know nothing about Markdown, so the benchmark gives them
the same unit kb-eval indexes: one entry per section (heading + the text
under it, up to the next heading of any level), with the document title from
frontmatter or the file name. This is deliberately simple (no CommonMark
edge cases beyond fences, ATX closing hashes and setext underlines) and lives
in bench/ only; kb-eval's own parser is scanner.corpus.reader.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

import yaml

ATX = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$")
SETEXT = re.compile(r"^ {0,3}(=+|-+)[ \t]*$")
FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
LIST_ITEM = re.compile(r"^ {0,3}(?:[-*+]|\d+[.)])[ \t]")


@dataclass(frozen=True, slots=True)
class Chunk:
    path: str
    title: str
    heading: str
    breadcrumb: str
    body: str


def split_frontmatter(text: str) -> tuple[dict[str, object], str]:
    if not text.startswith("---\n"):
        return {}, text
    end = text.find("\n---\n", 4)
    if end < 0:
        return {}, text
    try:
        meta = yaml.safe_load(text[4:end])
    except yaml.YAMLError:
        return {}, text
    return (meta if isinstance(meta, dict) else {}), text[end + 5 :]


def split_sections(path: str, text: str) -> list[Chunk]:
    meta, body = split_frontmatter(text)
    title_value = meta.get("title")
    title = str(title_value) if title_value else Path(path).stem
    lines = body.split("\n")
    chunks: list[Chunk] = []
    stack: list[tuple[int, str]] = []
    heading = ""
    buffer: list[str] = []
    fence: str | None = None

    def flush() -> None:
        text_body = "\n".join(buffer).strip()
        if heading or text_body:
            crumbs = [title, *(h for _, h in stack[:-1])] if heading else [title]
            chunks.append(Chunk(path, title, heading, " > ".join(crumbs), text_body))

    def open_heading(level: int, text_heading: str) -> None:
        nonlocal heading, buffer
        flush()
        while stack and stack[-1][0] >= level:
            stack.pop()
        stack.append((level, text_heading))
        heading = text_heading
        buffer = []

    for i, line in enumerate(lines):
        fence_match = FENCE.match(line)
        if fence is not None:
            buffer.append(line)
            if fence_match and fence_match.group(1)[0] == fence[0] and len(fence_match.group(1)) >= len(fence):
                fence = None
            continue
        if fence_match:
            fence = fence_match.group(1)
            buffer.append(line)
            continue
        atx = ATX.match(line)
        if atx:
            open_heading(len(atx.group(1)), (atx.group(2) or "").strip())
            continue
        if (
            SETEXT.match(line)
            and buffer
            and buffer[-1].strip()
            and not LIST_ITEM.match(buffer[-1])
            and (len(buffer) == 1 or not buffer[-2].strip())
        ):
            text_heading = buffer.pop().strip()
            open_heading(1 if line.strip()[0] == "=" else 2, text_heading)
            continue
        buffer.append(line)
    flush()
    return chunks


def read_chunks(root: Path) -> list[Chunk]:
    """Walk `root` for *.md files (sorted, so runs are comparable) and split each."""
    chunks: list[Chunk] = []
    paths: list[str] = []
    for directory, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
        for name in filenames:
            if name.endswith(".md"):
                paths.append(os.path.relpath(os.path.join(directory, name), root).replace(os.sep, "/"))
    paths.sort()
    for rel in paths:
        text = (root / rel).read_text(encoding="utf-8", errors="replace")
        chunks.extend(split_sections(rel, text))
    return chunks
