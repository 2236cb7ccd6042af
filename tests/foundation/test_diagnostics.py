"""Diagnostic codes are declared once: the enum, its titles and which codes name a KB file."""

from __future__ import annotations

import ast
from pathlib import Path

from scanner.foundation.diagnostics import Diagnostic, DiagnosticCode
from tests.conftest import REPO


def test_every_code_has_an_annotation_title() -> None:
    assert {code: code.annotation_title for code in DiagnosticCode}  # raises KeyError if one is missing
    assert DiagnosticCode.FILE_SKIPPED.annotation_title == "file skipped"


def test_a_corpus_warning_names_a_kb_file_and_a_run_warning_does_not() -> None:
    assert DiagnosticCode.FRONTMATTER_INVALID.names_a_kb_file
    assert not DiagnosticCode.EXPECTED_NOT_IN_CORPUS.names_a_kb_file


def test_the_code_serialises_as_its_stable_name() -> None:
    warning = Diagnostic(DiagnosticCode.K_OVER_LIMIT, "k=20 is larger than the limit 10")
    assert warning.code == "k-over-limit"
    assert f"{warning.code}" == "k-over-limit"


def test_no_module_spells_a_diagnostic_code_as_a_string() -> None:
    # A code spelled as a literal drifts from the enum; the declaration is the one place.
    names = {code.value for code in DiagnosticCode}
    declaration = REPO / "scanner" / "foundation" / "diagnostics.py"
    offenders = [
        f"{path.relative_to(REPO)}:{node.lineno}: {node.value!r}"
        for path in sorted((REPO / "scanner").rglob("*.py")) if path != declaration
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.Constant) and node.value in names
    ]
    assert offenders == []


def test_the_literal_check_sees_a_literal(tmp_path: Path) -> None:
    # The near miss of the check above: a literal code in source is found by the same walk.
    tree = ast.parse('warn("file-skipped", "x")')
    assert any(isinstance(n, ast.Constant) and n.value == "file-skipped" for n in ast.walk(tree))
