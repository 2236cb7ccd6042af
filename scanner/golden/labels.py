"""Every expected entry checked against the corpus it refers to: a path that is not there, or a
heading its document does not have, is a warning on the golden file's line naming what is there.

The labels are still scored as written (a wrong one misses); the warning is what keeps that miss
from being a silent zero. The corpus is given as plain data (the indexed paths, and the sections of
the documents the labels name), so this layer never reads the index itself.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Iterator, Mapping, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass

from scanner.foundation.diagnostics import Diagnostic, DiagnosticCode
from scanner.golden.file import ExpectedEntry, GoldenQuery, GoldenSet
from scanner.golden.headings import PathGuesser, closest_shown, heading_forms, reader_heading
from scanner.golden.similarity import Guesses

CLOSEST_PARENTS = 10
"""How many enclosing headings a wrong `parent:` warning names (a heading repeated under many)."""
MAX_SUGGESTED = 200
"""Entries that get a "did you mean" or the closest headings (each costs lookups in the indexed
paths, or a pass over a document's headings); the rest are still warned about, without one. Bounds
the work a golden file of mistyped labels can cause."""
MAX_TYPO_GUESSES = 50
"""Of those, the paths that also look for a typo (over up to 2,000 paths each, within the check's
budget of characters: golden/similarity.py)."""
MAX_CLOSEST_HEADINGS = 20
"""Of those, the headings that name the closest ones (over every heading of the document, within the
check's budget of characters: golden/similarity.py); later wrong headings say how many the document has."""


SHOWN_CHARS = 120
"""A heading longer than this is shown cut, with an ellipsis, in a warning (a heading can be a line
of megabytes, and a warning reaches the log, an annotation and the summary)."""


def quoted_heading(text: str) -> str:
    """A heading as a warning quotes it: repr'd, cut to SHOWN_CHARS."""
    return repr(text if len(text) <= SHOWN_CHARS else text[: SHOWN_CHARS - 1] + "…")


@dataclass(frozen=True, slots=True)
class SectionInfo:
    """One section of an indexed document, as a label is checked against it."""

    heading: str
    parents: tuple[str, ...]
    """The enclosing headings, outermost first (the document title not included)."""
    searchable: bool = True
    """False for a section holding nothing but the page's title: the built-in search scores the
    title with every section of the page, and never returns this one (corpus/titles.py)."""


def labelled_members(golden: GoldenSet) -> Iterator[tuple[GoldenQuery, ExpectedEntry]]:
    """Every answer a label names, a group's members one by one, with its query."""
    for query, member, _ in _members_where(golden):
        yield query, member


def _members_where(golden: GoldenSet) -> Iterator[tuple[GoldenQuery, ExpectedEntry, str]]:
    """labelled_members, with each member's field as the golden file's refusals name it."""
    for query in golden.queries:
        for n, entry in enumerate(query.expected):
            where = f"queries[{query.id}].expected[{n}]"
            if entry.any_of:
                for m, member in enumerate(entry.any_of):
                    yield query, member, f"{where}.any[{m}]"
            else:
                yield query, entry, where


def paths_with_headings(golden: GoldenSet) -> set[str]:
    """The documents whose sections the heading check needs."""
    return {member.path for _, member in labelled_members(golden) if member.heading is not None}


def check_paths(golden: GoldenSet, indexed: AbstractSet[str]) -> tuple[list[Diagnostic], int]:
    """A warning per expected path not in the corpus, with a "did you mean" when one indexed path is
    close; and how many labelled paths are in the corpus (0: nothing can be measured)."""
    warnings: list[Diagnostic] = []
    present = 0
    suggested = 0
    guesser: PathGuesser | None = None
    guesses = Guesses()
    for query, member in labelled_members(golden):
        if member.path in indexed:
            present += 1
            continue
        guess = None
        if suggested < MAX_SUGGESTED:
            suggested += 1
            guesser = guesser or PathGuesser(indexed)
            guess = guesser.guess(member.path, typo=suggested <= MAX_TYPO_GUESSES, guesses=guesses)
        hint = _did_you_mean(member.path, guess) if guess else ""
        warnings.append(
            Diagnostic(
                DiagnosticCode.EXPECTED_NOT_IN_CORPUS,
                f"query {query.id!r} expects {member.path!r}, which is not in the indexed corpus{hint}",
                golden.path, member.line,
            )
        )
    return warnings, present


@dataclass(frozen=True, slots=True)
class _Headings:
    """One document's sections by heading as the reader sees it, each computed once: checking a
    label is then a lookup, whatever the number of labels and sections."""

    sections: dict[str, list[SectionInfo]]
    enclosing: dict[str, set[str]]
    """Per heading: every enclosing heading (reader's form) of a section with it."""
    searchable: set[str]
    """The headings at least one searchable section has."""
    shown: dict[str, str]
    """The document's non-empty headings: as the reader sees each -> as first written."""

    @classmethod
    def of(cls, document: Sequence[SectionInfo]) -> _Headings:
        sections: dict[str, list[SectionInfo]] = {}
        enclosing: dict[str, set[str]] = {}
        shown: dict[str, str] = {}
        searchable: set[str] = set()
        # A heading's forms made once per document: an enclosing heading is every subsection's
        # parent, and was formed again for each of them.
        forms: dict[str, tuple[str, ...]] = {}

        def forms_of(heading: str) -> tuple[str, ...]:
            if heading not in forms:
                forms[heading] = heading_forms(heading)
            return forms[heading]

        for section in document:
            above = {form for p in section.parents for form in forms_of(p)}
            # Every form a reader may write the heading in names it (a table-of-contents label).
            for key in forms_of(section.heading):
                sections.setdefault(key, []).append(section)
                if section.searchable:
                    searchable.add(key)
                enclosing.setdefault(key, set()).update(above)
                if section.heading:
                    shown.setdefault(key, section.heading)
        return cls(sections, enclosing, searchable, shown)


def _by_heading_as_written(document: Sequence[SectionInfo]) -> dict[str, list[SectionInfo]]:
    by_heading: dict[str, list[SectionInfo]] = {}
    for section in document:
        by_heading.setdefault(section.heading, []).append(section)
    return by_heading


def _found_as_written(member: ExpectedEntry, as_written: Mapping[str, Sequence[SectionInfo]], builtin: bool) -> bool:
    """True when sections whose heading is the label's, character for character, pass every check
    check_headings makes (a section that a hit can be, under `parent:` when one is given): no
    warning then, and no form of the document's other headings is made. A section written so has
    the label's reader form (reader_heading of the same text), so these sections are among those
    the full check finds; False leaves the decision, and any warning, to the full check. Labels
    copied from their pages (the common case) cost a lookup each, where every heading of every
    labelled page was formed (the 10,000 bench queries over 76,000 sections: 0.37 s of CPU, now
    0.06-0.18)."""
    found = as_written.get(member.heading or "")
    if not found:
        return False
    if builtin and not member.subsections and not any(section.searchable for section in found):
        return False
    if member.parent is None:
        return True
    parent = reader_heading(member.parent)
    return any(parent in heading_forms(above) for section in found for above in section.parents)


def _did_you_mean(written: str, guess: str) -> str:
    if unicodedata.normalize("NFC", written) == unicodedata.normalize("NFC", guess):
        return (
            f"; did you mean {guess!a}? (the same name with other Unicode code points: the file's "
            "name and the golden file must spell it alike)"
        )
    return f"; did you mean {guess!r}? (paths are relative to the KB folder)"


def check_headings(
    golden: GoldenSet, sections: Mapping[str, Sequence[SectionInfo]], *, builtin: bool = True
) -> list[Diagnostic]:
    """A warning per `heading:` (with its `parent:`) that no section of its document has, as the
    reader sees headings, naming the closest headings that document has; and, for the built-in
    search (`builtin`), per heading whose only sections hold nothing but the page's title, which no
    hit can be. A path that is not indexed is check_paths' warning, not this one's."""
    warnings: list[Diagnostic] = []
    suggested = 0
    guesses = Guesses()
    documents: dict[str, _Headings] = {}
    written: dict[str, dict[str, list[SectionInfo]]] = {}
    for query, member, field in _members_where(golden):
        if member.heading is None or member.path not in sections:
            continue
        as_written = written.get(member.path)
        if as_written is None:
            as_written = written[member.path] = _by_heading_as_written(sections[member.path])
        if _found_as_written(member, as_written, builtin):
            continue
        document = documents.get(member.path)
        if document is None:
            document = documents[member.path] = _Headings.of(sections[member.path])
        wanted = reader_heading(member.heading)
        named = document.sections.get(wanted)
        if not named:
            headings = document.shown
            suggested += 1
            closest = closest_shown(member.heading, headings, guesses=guesses) if suggested <= MAX_CLOSEST_HEADINGS else None
            near = ", ".join(quoted_heading(h) for h in closest or ())
            there = (
                f"closest headings there: {near}" if near
                else "the document has no heading: remove `heading:` to count the page" if not headings
                else f"it has {len(headings)} headings"
            )
            warnings.append(
                Diagnostic(
                    DiagnosticCode.HEADING_NOT_IN_DOCUMENT,
                    f"query {query.id!r} expects heading {quoted_heading(member.heading)} in {member.path!r}, which has no "
                    f"such section ({there}); headings compare as the page shows them, whatever the case "
                    f"(field: {field}.heading)",
                    golden.path, member.line,
                )
            )
            continue
        if builtin and not member.subsections and wanted not in document.searchable:
            warnings.append(
                Diagnostic(
                    DiagnosticCode.SECTION_TITLE_ONLY,
                    f"query {query.id!r} expects heading {quoted_heading(member.heading)} in {member.path!r}: that section "
                    "holds nothing but the page's title, which the built-in search scores with every section of "
                    f"the page, so no hit is that section (field: {field}.heading); add `subsections: true` to "
                    "count the sections under it, or remove `heading:` to count any section of the page",
                    golden.path, member.line,
                )
            )
            continue
        if member.parent is None or reader_heading(member.parent) in document.enclosing[wanted]:
            continue
        above = sorted({p for s in named[:CLOSEST_PARENTS] for p in s.parents}) or ["none: it is at the top level"]
        warnings.append(
            Diagnostic(
                DiagnosticCode.HEADING_NOT_IN_DOCUMENT,
                f"query {query.id!r} expects heading {quoted_heading(member.heading)} under {quoted_heading(member.parent)} in "
                f"{member.path!r}, but no such section is under that heading (headings above "
                f"{quoted_heading(member.heading)} there: {', '.join(quoted_heading(p) for p in above[:CLOSEST_PARENTS])}) "
                f"(field: {field}.parent)",
                golden.path, member.line,
            )
        )
    return warnings
