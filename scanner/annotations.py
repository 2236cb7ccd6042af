"""What a run becomes as GitHub annotations: pure functions from the report to `Annotation`s.

Printing them (escaping, the per-kind budget, the commands themselves) is
scanner/github.py's job; this module only decides which annotations there
are, where they point and what they say. Paths in the report are relative to
the KB folder (documents) or as the user gave them (the golden file), while
the runner wants them relative to the repository root, so `kb_path` (the KB
folder relative to the workspace) is joined on here.
"""

from __future__ import annotations

import posixpath
from collections.abc import Mapping, Sequence
from typing import Any

from .errors import InputError
from .github import Annotation, AnnotationKind, AnnotationProperties, annotation_file
from .quotes import CHECK_NAME, MIN_QUOTED_QUERIES

KB_RELATIVE_CODES = frozenset({"file-skipped", "symlink-skipped", "folder-skipped", "frontmatter-invalid"})
"""Diagnostic codes whose `file` is relative to the KB folder (scanner/corpus.py). Every other
diagnostic names its file as the user gave it, i.e. relative to the workspace in Action mode."""

DIAGNOSTIC_TITLES = {
    "expected-not-in-corpus": "expected document not in the corpus",
    "file-skipped": "file skipped",
    "symlink-skipped": "symbolic link skipped",
    "folder-skipped": "folder skipped",
    "frontmatter-invalid": "frontmatter ignored",
}

INPUT_ERROR_TITLE = "kb-eval: input error"


def repository_path(path: str, base: str = ".") -> str | None:
    """`path` (relative to `base`, itself relative to the repository root) as the runner wants it.

    None when it cannot be placed in the repository (it would point outside,
    or is the root itself): the annotation then goes out without a file.
    """
    try:
        return annotation_file(posixpath.join(base, path))
    except ValueError:
        return None


def rank_text(rank: int | None) -> str:
    return f"rank {rank}" if rank is not None else "not in top_k"


def finding_annotation(finding: Mapping[str, Any], kb_path: str) -> Annotation:
    """One warning at the first quotation in the file (the one a reader meets first)."""
    quoted: Sequence[Mapping[str, Any]] = finding["quoted"]
    first = min(quoted, key=lambda q: (q["line"], q["column"] or 0))
    names = ", ".join(f"{q['query_id']} ({rank_text(q['rank_in_top_k'])})" for q in quoted)
    message = (
        f"{finding['path']} quotes {len(quoted)} golden queries verbatim "
        f"(a finding needs {MIN_QUOTED_QUERIES} or more): {names}. "
        "Either this note leaked into the corpus (a note about the test set makes the eval look better than "
        "search is), or the queries were written from it and it belongs in their `expected`. "
        "kb-eval changes neither, and a finding never fails the step."
    )
    return Annotation(
        AnnotationKind.WARNING,
        message,
        AnnotationProperties(
            title=CHECK_NAME,
            file=repository_path(finding["path"], kb_path),
            line=first["line"],
            column=first["column"],
        ),
    )


def diagnostic_annotation(warning: Mapping[str, Any], kb_path: str) -> Annotation:
    """One warning per report warning, on its file and line when it has them."""
    code = warning["code"]
    file = warning.get("file")
    where = None
    if file is not None:
        where = repository_path(file, kb_path if code in KB_RELATIVE_CODES else ".")
    return Annotation(
        AnnotationKind.WARNING,
        warning["message"] if where is not None or file is None else f"{file}: {warning['message']}",
        AnnotationProperties(
            title=f"kb-eval: {DIAGNOSTIC_TITLES.get(code, code)}",
            file=where,
            line=warning.get("line") if where is not None else None,
        ),
    )


def corpus_change_annotation(report: Mapping[str, Any]) -> Annotation | None:
    """A notice when the compared run measured another corpus: its deltas may not be retrieval's."""
    diff = report.get("diff")
    corpus = diff.get("corpus") if isinstance(diff, Mapping) else None
    if report.get("corpus_changed") is not True or not isinstance(corpus, Mapping):
        return None
    return Annotation(
        AnnotationKind.NOTICE,
        f"The corpus changed since the compared run ({corpus.get('description', '')}): "
        "a delta may reflect the corpus, not retrieval.",
        AnnotationProperties(title="kb-eval: corpus changed"),
    )


def report_annotations(report: Mapping[str, Any], kb_path: str) -> list[Annotation]:
    """Findings first (they are what the check is for), then warnings, golden-file ones first,
    then the corpus-change notice."""
    findings = [finding_annotation(finding, kb_path) for finding in report["findings"]]
    warnings = sorted(report["warnings"], key=lambda w: w["code"] != "expected-not-in-corpus")
    corpus_note = corpus_change_annotation(report)
    return (
        findings
        + [diagnostic_annotation(warning, kb_path) for warning in warnings]
        + ([corpus_note] if corpus_note is not None else [])
    )


def input_error_annotation(error: InputError) -> Annotation:
    """The exit-2 reason, on the file and line it names when there is one."""
    where = repository_path(error.file) if error.file is not None else None
    message = str(error) if where is None else str(InputError(error.message, None, None, error.field, error.hint))
    return Annotation(
        AnnotationKind.ERROR,
        message,
        AnnotationProperties(
            title=INPUT_ERROR_TITLE,
            file=where,
            line=error.line if where is not None else None,
        ),
    )
