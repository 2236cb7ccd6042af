"""Headings as the reader sees them: how a golden file's `heading:` is compared with a section's.

A section's heading keeps its Markdown (`` `virtualenvs.in-project` ``, `**Install**`,
`[Options](#options)`); the person labelling writes what the rendered page shows. Both sides are
brought to the rendered text before they are compared, so the two spellings are one heading.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable

_CODE_SPAN = re.compile(r"(`+)(.+?)(?<!`)\1(?!`)", re.DOTALL)
_IMAGE_OR_LINK = re.compile(r"!?\[([^\]]*)\](?:\([^)]*\)|\[[^\]]*\])")
_AUTOLINK = re.compile(r"<((?:https?|mailto):[^>\s]*)>", re.IGNORECASE)
_HTML_TAG = re.compile(r"</?[A-Za-z][A-Za-z0-9-]*(?:\s[^<>]*)?/?>")
_ESCAPE = re.compile(r"\\([!-/:-@\[-`{-~])")
_STARS_AND_TILDES = re.compile(r"\*+|~~")
_UNDERSCORE_EMPHASIS = re.compile(r"(?<![0-9A-Za-z])_+|_+(?![0-9A-Za-z])")
"""An underscore run is emphasis only at a word's edge: `in_project` keeps its underscore."""
_ESCAPED = "\x00"
_SPACE = re.compile(r"\s+")

CLOSEST_HEADINGS = 3
"""How many of a document's headings a warning names when a label matches none of them."""


def reader_heading(text: str) -> str:
    """The heading as a reader of the rendered page sees it, for comparing: inline code, emphasis,
    links, images (their alt text stays), HTML tags and backslash escapes removed, whitespace
    collapsed, case folded. The text inside a code span is kept as written."""
    pieces: list[str] = []
    position = 0
    for match in _CODE_SPAN.finditer(text):
        pieces.append(_inline(text[position : match.start()]))
        pieces.append(match.group(2))
        position = match.end()
    pieces.append(_inline(text[position:]))
    return _SPACE.sub(" ", "".join(pieces)).strip().casefold()


def _inline(text: str) -> str:
    # Escaped characters are set aside first, so `\*` stays a star and `\[` never opens a link.
    escaped: list[str] = []

    def keep(match: re.Match[str]) -> str:
        escaped.append(match.group(1))
        return _ESCAPED

    text = _ESCAPE.sub(keep, text.replace(_ESCAPED, ""))
    text = _IMAGE_OR_LINK.sub(r"\1", text)
    text = _AUTOLINK.sub(r"\1", text)
    text = _HTML_TAG.sub("", text)
    text = _STARS_AND_TILDES.sub("", text)
    text = _UNDERSCORE_EMPHASIS.sub("", text)
    restored = iter(escaped)
    return re.sub(_ESCAPED, lambda _: next(restored), text)


def closest(wanted: str, candidates: Iterable[str], count: int = CLOSEST_HEADINGS) -> list[str]:
    """Up to `count` of `candidates` closest to `wanted` as the reader sees them, best first; when
    none is close, the first of them in document order (so a warning always shows what is there)."""
    shown: dict[str, str] = {}
    for candidate in candidates:
        shown.setdefault(reader_heading(candidate), candidate)
    near = difflib.get_close_matches(reader_heading(wanted), list(shown), n=count, cutoff=0.5)
    return [shown[key] for key in near] or list(shown.values())[:count]


def closest_path(wanted: str, paths: Iterable[str]) -> str | None:
    """The one indexed path a mistyped `path:` most likely meant, or None when none is close.

    Tried in order: the path without `./` or with `\\` as `/`; the path written relative to the
    repository instead of the KB folder (`docs/cli.md` for the KB's `cli.md`: a suffix of it that
    is indexed); a different letter case; a typo (difflib's ratio at least 0.8)."""
    known = set(paths)
    cleaned = wanted.replace("\\", "/")
    while cleaned.startswith("./"):
        cleaned = cleaned[2:]
    cleaned = re.sub(r"/(?:\./)+", "/", cleaned)
    if cleaned != wanted and cleaned in known:
        return cleaned
    parts = cleaned.split("/")
    for start in range(1, len(parts)):
        suffix = "/".join(parts[start:])
        if suffix in known:
            return suffix
    folded = {path.casefold(): path for path in sorted(known)}
    if cleaned.casefold() in folded:
        return folded[cleaned.casefold()]
    near = difflib.get_close_matches(cleaned, sorted(known), n=1, cutoff=0.8)
    return near[0] if near else None
