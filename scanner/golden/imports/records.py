"""What an importer reads, before it is written as a golden file."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Judgment:
    """One judged document of one query."""

    path: str
    """KB-relative path of the judged document (the docno mapped through `--doc-path`)."""
    heading: str | None
    """The section, when the docno was `path#heading` (the run file's form); None for the whole document."""
    grade: int
    """0 is judged not relevant; higher is more relevant (a negative TREC grade is read as 0)."""


@dataclass(frozen=True, slots=True)
class ImportedQuery:
    id: str
    """As the source file spells it (a TREC query id); derived from the text for Quepid, which has none."""
    text: str
    judgments: tuple[Judgment, ...]
    """In the source file's order."""


@dataclass(frozen=True, slots=True)
class Imported:
    queries: tuple[ImportedQuery, ...]
    sources: tuple[str, ...]
    """The files read, as named on the command line (the golden file's header names them)."""
    notes: tuple[str, ...]
    """What was read differently from how it was written, or left out, for stderr (one line each)."""
