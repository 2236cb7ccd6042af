"""Headings as the reader sees them: how a golden file's `heading:` is compared with a section's.

A section's heading keeps its Markdown (`` `virtualenvs.in-project` ``, `**Install**`,
`[Options](#options)`); the person labelling writes what the rendered page shows. Both sides are
brought to the rendered text before they are compared, so the two spellings are one heading.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Iterator

from scanner.golden.similarity import Guesses

_BACKTICKS = re.compile(r"`+")
_IMAGE_OR_LINK = re.compile(r"!?\[([^\[\]]*)\](?:\([^()]*\)|\[[^\[\]]*\])")
"""Brackets and parentheses are not nested inside: each attempt then stops at the next bracket,
so a heading of thousands of `[` or `[a](` costs its length, not its length squared."""
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
COMPARED_CHARS = 200
"""How much of a heading (and of a path) a closeness guess compares."""


def reader_heading(text: str) -> str:
    """The heading as a reader of the rendered page sees it, for comparing: inline code, emphasis,
    links, images (their alt text stays), HTML tags and backslash escapes removed, whitespace
    collapsed, case folded. The text inside a code span is kept as written."""
    pieces: list[str] = []
    position = 0
    for start, inside, closing, end in _code_spans(text):
        pieces.append(_inline(text[position:start]))
        pieces.append(text[inside:closing])
        position = end
    pieces.append(_inline(text[position:]))
    return _SPACE.sub(" ", "".join(pieces)).strip().casefold()


def _code_spans(text: str) -> Iterator[tuple[int, int, int, int]]:
    """(start, content start, content end, end) of each code span, as CommonMark reads them: a run
    of backticks opens one that the next run of the same length closes; an opening run with no
    such run after it is text. One pass over the runs (a regular expression that backtracks over a
    heading of backticks took seconds for a thousand of them, growing with the cube)."""
    runs = [(match.start(), match.end()) for match in _BACKTICKS.finditer(text)]
    closer: list[int | None] = [None] * len(runs)
    seen: dict[int, int] = {}
    for i in range(len(runs) - 1, -1, -1):
        length = runs[i][1] - runs[i][0]
        closer[i] = seen.get(length)
        seen[length] = i
    i = 0
    while i < len(runs):
        j = closer[i]
        if j is None:
            i += 1
            continue
        yield runs[i][0], runs[i][1], runs[j][0], runs[j][1]
        i = j + 1


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
    return closest_shown(wanted, shown_headings(candidates), count) or []


def shown_headings(candidates: Iterable[str]) -> dict[str, str]:
    """Each heading as the reader sees it -> the first heading written so, in document order."""
    shown: dict[str, str] = {}
    for candidate in candidates:
        shown.setdefault(reader_heading(candidate), candidate)
    return shown


def closest_shown(
    wanted: str, shown: dict[str, str], count: int = CLOSEST_HEADINGS, guesses: Guesses | None = None
) -> list[str] | None:
    """closest() over headings already brought to the reader's form (shown_headings); None when
    `guesses` has no budget left for this one."""
    # Compared by their first characters: a heading can be a line of megabytes.
    prefixes: dict[str, str] = {}
    for key in shown:
        prefixes.setdefault(key[:COMPARED_CHARS], key)
    guesses = guesses if guesses is not None else Guesses()
    near = guesses.closest(reader_heading(wanted)[:COMPARED_CHARS], list(prefixes), count, cutoff=0.5)
    if near is None:
        return None
    return [shown[prefixes[key]] for key in near] or list(shown.values())[:count]


MAX_SUFFIXES = 32
"""Repository-relative guesses tried per path (`a/b/c.md` -> `b/c.md`, `c.md`): real paths are far
shallower, and a path of thousands of `/` must not cost thousands of lookups."""
MAX_TYPO_CANDIDATES = 2_000
"""Indexed paths a typo guess compares with (golden/similarity.py): those of the same folder, else those
of about the same length. Bounds a guess to milliseconds in a corpus of 200,000 paths."""


class PathGuesser:
    """The one indexed path a mistyped `path:` most likely meant, over one corpus (what every guess
    needs is computed once).

    Tried in order: the path without `./` or with `\\` as `/`; the same name in another Unicode
    normalization form (`café` typed composed, the file's name decomposed); the path written relative to the
    repository instead of the KB folder (`docs/cli.md` for the KB's `cli.md`: a suffix of it that
    is indexed); a different letter case; a typo (bigram likeness at least 0.8, golden/similarity.py)."""

    def __init__(self, paths: Iterable[str]) -> None:
        self.known = frozenset(paths)
        self.composed: dict[str, str] = {}
        self.folded: dict[str, str] = {}
        self.by_folder: dict[str, list[str]] = {}
        self.by_length: dict[int, list[str]] = {}
        for path in sorted(self.known):
            self.composed.setdefault(unicodedata.normalize("NFC", path), path)
            self.folded.setdefault(path.casefold(), path)
            self.by_folder.setdefault(path.rpartition("/")[0], []).append(path)
            self.by_length.setdefault(len(path), []).append(path)

    def guess(self, wanted: str, *, typo: bool = True, guesses: Guesses | None = None) -> str | None:
        cleaned = wanted.replace("\\", "/")
        while cleaned.startswith("./"):
            cleaned = cleaned[2:]
        cleaned = re.sub(r"/(?:\./)+", "/", cleaned)
        if cleaned != wanted and cleaned in self.known:
            return cleaned
        composed = self.composed.get(unicodedata.normalize("NFC", cleaned))
        if composed is not None:
            return composed
        cuts = [i + 1 for i, char in enumerate(cleaned) if char == "/"][:MAX_SUFFIXES]
        for cut in cuts:
            if cleaned[cut:] in self.known:
                return cleaned[cut:]
        if cleaned.casefold() in self.folded:
            return self.folded[cleaned.casefold()]
        if not typo:
            return None
        candidates = self.by_folder.get(cleaned.rpartition("/")[0])
        if not candidates:
            candidates = [p for size in range(len(cleaned) - 2, len(cleaned) + 3) for p in self.by_length.get(size, ())]
        if len(cleaned) > COMPARED_CHARS:
            return None
        guesses = guesses if guesses is not None else Guesses()
        # A likeness of 0.8 needs lengths within a factor of 1.5: longer paths are not read at all.
        near = guesses.closest(
            cleaned, [p for p in candidates[:MAX_TYPO_CANDIDATES] if len(p) <= 1.5 * len(cleaned) + 2], 1, 0.8
        )
        return near[0] if near else None


def closest_path(wanted: str, paths: Iterable[str]) -> str | None:
    """PathGuesser(paths).guess(wanted), for one path."""
    return PathGuesser(paths).guess(wanted)
