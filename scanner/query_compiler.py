"""Compile untrusted query text into FTS5 MATCH expressions that cannot fail.

Every fragment is emitted as an FTS5 string ("..."), the one construct in
which no character is an operator: `*`, `-`, `:`, `NEAR`, `AND`, parentheses
and column filters all become plain text. Fragments are joined with OR so a
natural-language question matches documents that do not contain it verbatim;
BM25 then rewards documents that match more (and rarer) fragments.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

QUERY_COMPILER_VERSION = 1
"""Recorded in the fingerprint: a change here changes the numbers."""

MAX_TERMS = 64
"""Fragments kept per index. An OR of n phrases costs n posting-list reads; questions
have well under 64 words, so this only bounds hostile or pasted-paragraph queries."""

_QUOTED = re.compile(r'"([^"]*)"')
# A word as SQLite's unicode61 tokenizer sees it: letters and digits (underscore separates).
_WORD = re.compile(r"[^\W_]+")
_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af\uff66-\uff9f]")


@dataclass(frozen=True, slots=True)
class CompiledQuery:
    word: str | None
    """Expression for the word index (porter unicode61), or None when no word survives."""
    trigram: str | None
    """Expression for the trigram index, or None when no fragment has three characters."""


def compile_query(text: str) -> CompiledQuery | None:
    """None when nothing searchable survives (the golden loader refuses such a query)."""
    phrases: list[list[str]] = []
    rest = []
    last = 0
    for match in _QUOTED.finditer(text):
        rest.append(text[last : match.start()])
        words = _WORD.findall(match.group(1))
        if words:
            phrases.append(words)
        last = match.end()
    rest.append(text[last:])
    for segment in rest:
        phrases.extend([word] for word in _WORD.findall(segment))
    if not phrases:
        return None

    word_terms = _unique(" ".join(words).lower() for words in phrases)
    trigram_terms = _unique(
        fragment
        for words in phrases
        for fragment in _trigram_fragments(" ".join(words).lower())
    )
    return CompiledQuery(_or(word_terms), _or(trigram_terms))


def _trigram_fragments(phrase: str) -> list[str]:
    """Latin words stay whole (a word is a run of adjacent trigrams); a CJK run is cut into
    overlapping three-character windows, because CJK text has no spaces and a paraphrased
    question shares short character runs with its answer, not the whole sentence."""
    if not _CJK.search(phrase):
        return [phrase] if len(phrase) >= 3 else []
    fragments = []
    for word in phrase.split(" "):
        if _CJK.search(word) and len(word) > 3:
            fragments.extend(word[i : i + 3] for i in range(len(word) - 2))
        elif len(word) >= 3:
            fragments.append(word)
    return fragments


def _unique(terms) -> list[str]:  # type: ignore[no-untyped-def]
    return list(dict.fromkeys(terms))[:MAX_TERMS]


def _or(terms: list[str]) -> str | None:
    if not terms:
        return None
    # Fragments hold only letters, digits and spaces, so doubling quotes is belt and braces.
    return " OR ".join('"' + term.replace('"', '""') + '"' for term in terms)
