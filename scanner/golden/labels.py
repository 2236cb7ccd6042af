"""Every expected entry checked against the corpus it refers to: a path that is not there, or a
heading its document does not have, is a warning on the golden file's line naming what is there.

The labels are still scored as written (a wrong one misses); the warning is what keeps that miss
from being a silent zero. The corpus is given as plain data (the indexed paths, and the sections of
the documents the labels name), so this layer never reads the index itself.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass

from scanner.foundation.diagnostics import Diagnostic, DiagnosticCode
from scanner.golden.file import ExpectedEntry, GoldenQuery, GoldenSet
from scanner.golden.headings import closest, closest_path, reader_heading

MAX_SUGGESTED = 200
"""Entries that get a "did you mean" or the closest headings (each costs a pass over the indexed
paths, or over a document's headings); the rest are still warned about, without one. Bounds the
work a golden file of mistyped labels can cause."""


@dataclass(frozen=True, slots=True)
class SectionInfo:
    """One section of an indexed document, as a label is checked against it."""

    heading: str
    parents: tuple[str, ...]
    """The enclosing headings, outermost first (the document title not included)."""


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
    for query, member in labelled_members(golden):
        if member.path in indexed:
            present += 1
            continue
        guess = None
        if suggested < MAX_SUGGESTED:
            suggested += 1
            guess = closest_path(member.path, indexed)
        hint = f"; did you mean {guess!r}? (paths are relative to the KB folder)" if guess else ""
        warnings.append(
            Diagnostic(
                DiagnosticCode.EXPECTED_NOT_IN_CORPUS,
                f"query {query.id!r} expects {member.path!r}, which is not in the indexed corpus{hint}",
                golden.path, member.line,
            )
        )
    return warnings, present


def check_headings(golden: GoldenSet, sections: Mapping[str, Sequence[SectionInfo]]) -> list[Diagnostic]:
    """A warning per `heading:` (with its `parent:`) that no section of its document has, as the
    reader sees headings, naming the closest headings that document has. A path that is not indexed
    is check_paths' warning, not this one's."""
    warnings: list[Diagnostic] = []
    suggested = 0
    for query, member, field in _members_where(golden):
        if member.heading is None or member.path not in sections:
            continue
        document = sections[member.path]
        wanted = reader_heading(member.heading)
        named = [s for s in document if reader_heading(s.heading) == wanted]
        if not named:
            headings = [s.heading for s in document if s.heading]
            suggested += 1
            near = ", ".join(repr(h) for h in closest(member.heading, headings)) if suggested <= MAX_SUGGESTED else ""
            there = (
                f"closest headings there: {near}" if near
                else "the document has no heading" if not headings
                else f"it has {len(headings)} headings"
            )
            warnings.append(
                Diagnostic(
                    DiagnosticCode.HEADING_NOT_IN_DOCUMENT,
                    f"query {query.id!r} expects heading {member.heading!r} in {member.path!r}, which has no "
                    f"such section ({there}); headings compare as the page shows them, whatever the case "
                    f"(field: {field}.heading)",
                    golden.path, member.line,
                )
            )
            continue
        if member.parent is None:
            continue
        parent = reader_heading(member.parent)
        if not any(parent in (reader_heading(p) for p in s.parents) for s in named):
            above = sorted({p for s in named for p in s.parents}) or ["none: it is at the top level"]
            warnings.append(
                Diagnostic(
                    DiagnosticCode.HEADING_NOT_IN_DOCUMENT,
                    f"query {query.id!r} expects heading {member.heading!r} under {member.parent!r} in "
                    f"{member.path!r}, but no such section is under that heading (headings above "
                    f"{member.heading!r} there: {', '.join(repr(p) for p in above)}) (field: {field}.parent)",
                    golden.path, member.line,
                )
            )
    return warnings
