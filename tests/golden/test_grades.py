"""`grade:` on an expected entry: a whole number from 0 (judged, not relevant) up; 1 when absent."""

from __future__ import annotations

from pathlib import Path

import pytest

from scanner.foundation.errors import InputError
from scanner.golden.file import DEFAULT_GRADE, MAX_GRADE, load_golden


def write(tmp_path: Path, entry: str) -> Path:
    path = tmp_path / "golden.yml"
    path.write_text(f"queries:\n  - id: q\n    query: rollback\n    expected:\n      - {entry}\n", encoding="utf-8")
    return path


@pytest.mark.parametrize(("entry", "grade"), [
    ("a.md", DEFAULT_GRADE),
    ("{path: a.md}", DEFAULT_GRADE),
    ("{path: a.md, grade: 0}", 0),
    ("{path: a.md, grade: 3}", 3),
    ("{path: a.md, heading: Setup, grade: 2}", 2),
    ("{path: a.md, grade: null}", DEFAULT_GRADE),
    (f"{{path: a.md, grade: {MAX_GRADE}}}", MAX_GRADE),
])
def test_a_grade_is_read_and_an_entry_without_one_is_grade_1(tmp_path: Path, entry: str, grade: int) -> None:
    golden = load_golden(write(tmp_path, entry))
    assert golden.queries[0].expected[0].grade == grade


@pytest.mark.parametrize("value", ["-1", "2.5", "true", "'2'", "0x2", "high", str(MAX_GRADE + 1), "[1]"])
def test_a_grade_that_is_not_a_whole_number_from_0_up_is_refused_naming_line_and_field(
    tmp_path: Path, value: str
) -> None:
    with pytest.raises(InputError) as raised:
        load_golden(write(tmp_path, f"{{path: a.md, grade: {value}}}"))
    error = raised.value
    assert error.line == 5
    assert error.field == "queries[q].expected[0].grade"
    assert "grade" in error.message and error.hint and "0 means judged not relevant" in error.hint
