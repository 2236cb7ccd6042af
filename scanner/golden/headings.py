"""Headings as the reader sees them: how a golden file's `heading:` is compared with a section's.

A section's heading keeps its Markdown (`` `virtualenvs.in-project` ``, `**Install**`,
`[Options](#options)`); the person labelling writes what the rendered page shows. Both sides are
brought to the rendered text before they are compared, so the two spellings are one heading.

MkDocs sites write more into a heading than the page shows, and a heading can be read in more than
one form (`heading_forms`):
- an attribute list at its end (`## With pip { #with-pip data-toc-label="pip" }`, Python-Markdown's
  `attr_list`) is not shown, and its `data-toc-label` (Python-Markdown's `toc`) is the name the
  table of contents shows: a second form;
- an inline HTML element (`<small>recommended</small>`) shows its text; the heading without it is
  a second form, as a reader who took it for a badge writes it;
- an HTML comment is not shown; a heading that is only a comment (a build hook fills it in, which
  kb-eval cannot run) is named by the comment's text, and by its last word.
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
_ATTRIBUTE = re.compile(r"""([^ =}]+)="([^"]*)"|([^ =}]+)='([^']*)'|([^ =}]+)=([^ =}]+)|([^ =}]+)| """)
"""One item of an attribute list, in the order Python-Markdown's attr_list scanner tries them:
`key="value"`, `key='value'`, `key=value`, a word (`#id`, `.class`, a bare key), a space."""
_ELEMENT = re.compile(r"<([A-Za-z][A-Za-z0-9-]*)(?:\s[^<>]*)?>[^<]*</\1\s*>")
"""An inline HTML element holding text only (`<small>recommended</small>`)."""
TOC_LABEL = "data-toc-label"

CLOSEST_HEADINGS = 3
"""How many of a document's headings a warning names when a label matches none of them."""
COMPARED_CHARS = 200
"""How much of a heading (and of a path) a closeness guess compares."""


def reader_heading(text: str) -> str:
    """The heading as a reader of the rendered page sees it, for comparing: inline code, emphasis,
    links, images (their alt text stays), HTML tags and comments, a trailing attribute list and
    backslash escapes removed, whitespace collapsed, case folded. The text inside a code span is
    kept as written. A heading that is only an HTML comment reads as the comment's text."""
    return heading_forms(text)[0]


def heading_forms(text: str) -> tuple[str, ...]:
    """Every form a reader may write `text` in, the page's first (reader_heading): then its table
    of contents label (`data-toc-label`), the heading without its inline HTML elements, and for a
    heading that is only a comment, the comment's last word. None repeated."""
    body, attributes = split_attribute_list(text) if "{" in text else (text, None)
    body, comments = _without_comments(body) if "<!--" in body else (body, [])
    forms = [_reader_text(body)]
    if len(forms) == 1 and not comments and attributes is None and "<" not in body:
        return (forms[0],)  # the common heading: one form
    if not forms[0] and comments:
        words = " ".join(comments).split()
        forms = [_reader_text(" ".join(words)), *([_reader_text(words[-1])] if words else [])]
    label = attributes.get(TOC_LABEL) if attributes else None
    if label is not None:
        forms.append(_reader_text(_without_comments(label)[0]))
    if "<" in body:
        forms.append(_reader_text(_ELEMENT.sub("", body)))
    return tuple(dict.fromkeys(form for form in forms if form or form is forms[0]))


def split_attribute_list(text: str) -> tuple[str, dict[str, str | None] | None]:
    """(the heading without its attribute list, the list's attributes), as Python-Markdown's
    `attr_list` reads a heading: `{...}` after one or more spaces at the end, outside code spans,
    the leftmost such brace that can open one; a list whose items leave a `}` unread is text. Then,
    as Python-Markdown does, closing `#`s before it go too. (text, None) when there is none."""
    stripped = text.rstrip(" ")
    spans = list(_code_spans(stripped))
    after_code = spans[-1][3] if spans else 0
    if not stripped.endswith("}") or len(stripped) - after_code < 3:
        return text, None
    end = len(stripped) - 1  # the closing brace
    at = stripped.find(" {", after_code)
    while at != -1:
        # Read by index, never sliced per brace: a heading of thousands of ` {` costs its length.
        start = _skip_spaces(stripped, at + 2, end)
        if start < end and stripped[start] == ":":
            after_colon = _skip_spaces(stripped, start + 1, end)
            if after_colon < end and stripped[after_colon] != "}":
                start = after_colon
        if start < end and stripped[start] != "}":
            attributes = _attribute_items(stripped[start:end])
            if attributes is None:
                return text, None  # Python-Markdown does not try a brace further right either
            return stripped[:at].rstrip(" ").rstrip("#").rstrip(), attributes
        at = stripped.find(" {", at + 1)
    return text, None


def _skip_spaces(text: str, position: int, end: int) -> int:
    while position < end and text[position] == " ":
        position += 1
    return position


def _attribute_items(content: str) -> dict[str, str | None] | None:
    """The items of an attribute list's content (`#id .class key="value"`); None when the scan
    stops before a `}` (Python-Markdown then leaves the braces as text)."""
    items: dict[str, str | None] = {}
    position = 0
    while position < len(content):
        match = _ATTRIBUTE.match(content, position)
        if match is None or match.end() == position:
            break
        position = match.end()
        key = match[1] or match[3] or match[5] or match[7]
        if key:
            items[key] = next((v for v in (match[2], match[4], match[6]) if v is not None), None)
    return None if "}" in content[position:] else items


def _without_comments(text: str) -> tuple[str, list[str]]:
    """`text` without its HTML comments, and the comments' contents. One pass: an unclosed `<!--`
    is text to the end (as a browser's parser would hide it, it shows nothing either way)."""
    kept: list[str] = []
    comments: list[str] = []
    position = 0
    while (start := text.find("<!--", position)) != -1:
        end = text.find("-->", start + 4)
        kept.append(text[position:start])
        if end == -1:
            comments.append(text[start + 4:])
            position = len(text)
            break
        comments.append(text[start + 4:end])
        position = end + 3
    kept.append(text[position:])
    return "".join(kept), comments


_MARKUP = frozenset("`\\[<*~_\x00")
"""The characters that can make a heading's text differ from what the page shows."""


def _reader_text(text: str) -> str:
    if _MARKUP.isdisjoint(text):
        return _SPACE.sub(" ", text).strip().casefold()
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
    """Each form of each heading as the reader sees it -> the first heading written so, in document order."""
    shown: dict[str, str] = {}
    for candidate in candidates:
        for form in heading_forms(candidate):
            shown.setdefault(form, candidate)
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
    # A heading reached through two of its forms is named once.
    return list(dict.fromkeys(shown[prefixes[key]] for key in near)) or list(dict.fromkeys(shown.values()))[:count]


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
    is indexed); a different letter case; the only indexed page of that file name, in another
    folder; a typo (bigram likeness at least 0.8, golden/similarity.py)."""

    def __init__(self, paths: Iterable[str]) -> None:
        self.known = frozenset(paths)
        self.composed: dict[str, str] = {}
        self.folded: dict[str, str] = {}
        self.by_folder: dict[str, list[str]] = {}
        self.by_length: dict[int, list[str]] = {}
        self.by_name: dict[str, list[str]] = {}
        for path in sorted(self.known):
            self.by_name.setdefault(path.rpartition("/")[2].casefold(), []).append(path)
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
        # The same file name in another folder (`images.md` for `reference/images.md`), when only
        # one indexed page has it: two would make the guess a coin toss.
        named = self.by_name.get(cleaned.rpartition("/")[2].casefold(), [])
        if len(named) == 1:
            return named[0]
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
