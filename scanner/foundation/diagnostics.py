"""Warnings collected during a run.

A warning is a recorded fact, never a silent drop: every skipped file, broken
frontmatter block or unlabelled expected path becomes one of these, goes to
stderr, into the JSON report, and (in Action mode) into an annotation.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum

from scanner.foundation.untrusted_text import defused, shown


class DiagnosticCode(StrEnum):
    """Every warning's stable machine name: the `code` of the JSON report's warnings."""

    FILE_SKIPPED = "file-skipped"
    SYMLINK_SKIPPED = "symlink-skipped"
    FOLDER_SKIPPED = "folder-skipped"
    FRONTMATTER_INVALID = "frontmatter-invalid"
    SECTIONS_CAPPED = "sections-capped"
    CACHE_IGNORED = "cache-ignored"
    CACHE_NOT_SAVED = "cache-not-saved"
    EXPECTED_NOT_IN_CORPUS = "expected-not-in-corpus"
    K_OVER_LIMIT = "k-over-limit"
    QUERY_CUT = "query-cut"
    NO_RELEVANT_ENTRY = "no-relevant-entry"
    STARTER_PLACEHOLDER = "starter-placeholder"
    HEADING_NOT_IN_DOCUMENT = "heading-not-in-document"
    SECTION_TITLE_ONLY = "section-title-only"
    HISTORY_PRUNED = "history-pruned"
    HISTORY_RUN_DROPPED = "history-run-dropped"
    HISTORY_UNPARSABLE = "history-unparsable"
    HITS_OUTSIDE_CORPUS = "hits-outside-corpus"
    OWN_FILE_RETURNED = "own-file-returned"
    ANSWERS_WITHOUT_HEADINGS = "answers-without-headings"
    RETURNED_HEADING_NOT_IN_DOCUMENT = "returned-heading-not-in-document"
    PARTIAL_RESULTS = "partial-results"
    SCORE_NOT_NUMBER = "score-not-number"
    SERVICE_ERRORS = "service-errors"
    TAGS_CAPPED = "tags-capped"
    DUPLICATE_WORDING = "duplicate-wording"
    TITLE_QUERY = "title-query"
    EMPTY_ANSWERS = "empty-answers"

    @property
    def annotation_title(self) -> str:
        """What an annotation's title calls a warning of this kind."""
        return _TITLES[self]

    @property
    def names_a_kb_file(self) -> bool:
        """True when the warning's `file` is relative to the KB folder (a file the corpus walk met);
        every other warning names its file as the user gave it (relative to the workspace)."""
        return self in _KB_RELATIVE


# Warnings about the run rather than a file are titled by their code.
_TITLES: dict[DiagnosticCode, str] = {
    DiagnosticCode.FILE_SKIPPED: "file skipped",
    DiagnosticCode.SYMLINK_SKIPPED: "symbolic link skipped",
    DiagnosticCode.FOLDER_SKIPPED: "folder skipped",
    DiagnosticCode.FRONTMATTER_INVALID: "frontmatter ignored",
    DiagnosticCode.SECTIONS_CAPPED: "too many sections in one file",
    DiagnosticCode.CACHE_IGNORED: "cache-ignored",
    DiagnosticCode.CACHE_NOT_SAVED: "cache-not-saved",
    DiagnosticCode.EXPECTED_NOT_IN_CORPUS: "expected document not in the corpus",
    DiagnosticCode.K_OVER_LIMIT: "k-over-limit",
    DiagnosticCode.QUERY_CUT: "query-cut",
    DiagnosticCode.NO_RELEVANT_ENTRY: "query left out of the aggregates",
    DiagnosticCode.STARTER_PLACEHOLDER: "starter query not rewritten",
    DiagnosticCode.HEADING_NOT_IN_DOCUMENT: "expected heading not in the document",
    DiagnosticCode.SECTION_TITLE_ONLY: "expected section holds only the page title",
    DiagnosticCode.HISTORY_PRUNED: "history-pruned",
    DiagnosticCode.HISTORY_RUN_DROPPED: "history-run-dropped",
    DiagnosticCode.HISTORY_UNPARSABLE: "history-unparsable",
    DiagnosticCode.HITS_OUTSIDE_CORPUS: "returned paths not in the corpus",
    DiagnosticCode.OWN_FILE_RETURNED: "kb-eval's own file returned as a hit",
    DiagnosticCode.ANSWERS_WITHOUT_HEADINGS: "answers without headings",
    DiagnosticCode.RETURNED_HEADING_NOT_IN_DOCUMENT: "returned heading not in the document",
    DiagnosticCode.PARTIAL_RESULTS: "partial results",
    DiagnosticCode.SCORE_NOT_NUMBER: "score not a number",
    DiagnosticCode.SERVICE_ERRORS: "the search service reported errors",
    DiagnosticCode.TAGS_CAPPED: "too many tags to aggregate each",
    DiagnosticCode.DUPLICATE_WORDING: "golden queries with the same wording",
    DiagnosticCode.TITLE_QUERY: "golden query that tests only a title",
    DiagnosticCode.EMPTY_ANSWERS: "queries answered with no hit",
}
_KB_RELATIVE = frozenset({
    DiagnosticCode.FILE_SKIPPED, DiagnosticCode.SYMLINK_SKIPPED, DiagnosticCode.FOLDER_SKIPPED,
    DiagnosticCode.FRONTMATTER_INVALID, DiagnosticCode.SECTIONS_CAPPED,
})


@dataclass(frozen=True, slots=True)
class Diagnostic:
    code: DiagnosticCode
    message: str
    file: str | None = None
    """Path as the user wrote it or KB-relative; None when the warning is about the run."""
    line: int | None = None

    def render(self) -> str:
        """One stderr line. The file name and message may hold pull-request text, so they are
        escaped (untrusted_text.py): the line cannot break or carry a workflow command."""
        where = ""
        if self.file is not None:
            where = shown(self.file) + (f":{self.line}" if self.line is not None else "") + ": "
        return f"kb-eval: warning: {where}{defused(self.message)}"


@dataclass(slots=True)
class Diagnostics:
    """An append-only list, passed to the stages that can warn."""

    items: list[Diagnostic] = field(default_factory=list)

    def warn(self, code: DiagnosticCode, message: str, file: str | None = None, line: int | None = None) -> None:
        self.items.append(Diagnostic(code, message, file, line))
