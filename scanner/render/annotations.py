"""What a run becomes as GitHub annotations: pure functions from the records to `Annotation`s.

Printing them (escaping, the per-kind budget, the commands themselves) is
scanner/github/workflow.py's job; this module only decides which annotations there
are, where they point and what they say. Paths in the report are relative to
the KB folder (documents) or as the user gave them (the golden file), while
the runner wants them relative to the repository root, so `kb_path` (the KB
folder relative to the workspace) is joined on here.
"""

from __future__ import annotations

import posixpath

from scanner.compare.comparison import NotComparedCause
from scanner.compare.findings import FindingAtBase
from scanner.compare.report import Report
from scanner.evaluation.records import LocatedFinding, displacing_first
from scanner.foundation.diagnostics import Diagnostic, DiagnosticCode
from scanner.foundation.errors import InputError
from scanner.foundation.untrusted_text import is_control, visible
from scanner.github.workflow import Annotation, AnnotationKind, AnnotationProperties, annotation_file
from scanner.render import phrases
from scanner.scan.quotes import CHECK_NAME, MIN_QUOTED_QUERIES

INPUT_ERROR_TITLE = "kb-eval: input error"


def repository_path(path: str, base: str = ".") -> str | None:
    """`path` (relative to `base`, itself relative to the repository root) as the runner wants it.

    None when it cannot be placed in the repository (it would point outside,
    or is the root itself), or holds a control character (an ANSI escape in a file name would reach
    the log's command line raw; spelled out, it names no file): the annotation then goes out
    without a file, its message naming the file spelled out.
    """
    if any(is_control(char) for char in path):
        return None
    try:
        return annotation_file(posixpath.join(base, path))
    except ValueError:
        return None


def finding_annotation(located: LocatedFinding, kb_path: str, at_base: FindingAtBase | None = None) -> Annotation:
    """One warning at the first quotation in the file (the one a reader meets first)."""
    finding = located.finding
    first = min(located.locations, key=lambda at: (at.line, at.column or 0))
    names = ", ".join(f"{q.query_id} ({phrases.quoted_phrase(q, at_base)})" for q in finding.quoted)
    message = (
        f"{finding.path} quotes {len(finding.quoted)} golden queries verbatim "
        f"(a finding needs {MIN_QUOTED_QUERIES} or more): {names}. {phrases.TWO_CAUSES}"
    )
    return Annotation(
        AnnotationKind.WARNING,
        visible(message),
        AnnotationProperties(
            title=CHECK_NAME,
            file=repository_path(finding.path, kb_path),
            line=first.line,
            column=first.column,
        ),
    )


def diagnostic_annotation(warning: Diagnostic, kb_path: str) -> Annotation:
    """One warning per report warning, on its file and line when it has them."""
    where = None
    if warning.file is not None:
        where = repository_path(warning.file, kb_path if warning.code.names_a_kb_file else ".")
    return Annotation(
        AnnotationKind.WARNING,
        # What a reviewer reads shows every character that is there (`visible`); `file` places it.
        visible(warning.message if where is not None or warning.file is None else f"{warning.file}: {warning.message}"),
        AnnotationProperties(
            title=f"kb-eval: {warning.code.annotation_title}",
            file=where,
            line=warning.line if where is not None else None,
        ),
    )


def corpus_change_annotation(report: Report) -> Annotation | None:
    """A notice when the compared run measured another corpus: its deltas may not be retrieval's."""
    corpus = report.comparison.corpus
    if not report.comparison.compared or corpus is None or corpus.changed is not True:
        return None
    note = phrases.corpus_note(report.comparison)
    if note is None:
        return None  # against a pull request's base the corpus change is what is measured: nothing to say
    return Annotation(AnnotationKind.NOTICE, note, AnnotationProperties(title="kb-eval: corpus changed"))


def gate_not_run_annotation(report: Report) -> Annotation:
    """fail-on-regression with nothing comparable: a warning, never silence."""
    return Annotation(
        AnnotationKind.WARNING,
        phrases.gate_not_run(report.gate, report.comparison),
        AnnotationProperties(title="kb-eval: regression gate not run"),
    )


GIT_BASE_MISSED = frozenset({NotComparedCause.SHALLOW_CLONE, NotComparedCause.REVISION_UNAVAILABLE})
"""A comparison with a git revision was meant and could not happen: worth a warning even without a gate,
because the person expected a comparison and would otherwise read the absolute figures as a verdict."""


def base_not_compared_annotation(report: Report) -> Annotation | None:
    if report.comparison.cause not in GIT_BASE_MISSED:
        return None
    return Annotation(
        AnnotationKind.WARNING,
        phrases.not_compared_reason(report.comparison),
        AnnotationProperties(title="kb-eval: nothing compared"),
    )


def report_annotations(report: Report, kb_path: str) -> list[Annotation]:
    """Findings first, those that displaced a labelled answer leading (they are what the check is
    for), then warnings, golden-file ones first, then the corpus-change notice."""
    # A finding the pull request's base already had is in the summary, not annotated again: an
    # annotation asks the reviewer about a line this pull request wrote.
    by_path = report.findings_at_base_by_path()
    findings = [
        finding_annotation(located, kb_path, by_path.get(located.finding.path))
        for located in displacing_first(report.run.findings)
        if not _already_at_base(by_path.get(located.finding.path))
    ]
    warnings = sorted(report.run.warnings, key=lambda w: w.code != DiagnosticCode.EXPECTED_NOT_IN_CORPUS)
    corpus_note = corpus_change_annotation(report)
    return (
        findings
        + [diagnostic_annotation(warning, kb_path) for warning in warnings]
        + ([corpus_note] if corpus_note is not None else [])
    )


def _already_at_base(at_base: FindingAtBase | None) -> bool:
    return at_base is not None and at_base.present_at_base


def input_error_annotation(error: InputError) -> Annotation:
    """The exit-2 reason, on the file and line it names when there is one."""
    where = repository_path(error.file) if error.file is not None else None
    message = str(error) if where is None else str(InputError(error.message, None, None, error.field, error.hint, error.said))
    return Annotation(
        AnnotationKind.ERROR,
        visible(message),
        AnnotationProperties(
            title=INPUT_ERROR_TITLE,
            file=where,
            line=error.line if where is not None else None,
        ),
    )
