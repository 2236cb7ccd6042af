"""Reading an import's source files, and the rules every importer shares (docno to path, grades)."""

from __future__ import annotations

import urllib.parse
from dataclasses import dataclass
from pathlib import Path

from scanner.foundation.errors import InputError
from scanner.foundation.files import FileRefused, LinkPolicy, Refusal, read_capped
from scanner.golden.file import MAX_GRADE, expected_path_problem
from scanner.golden.imports.records import Judgment

MAX_SOURCE_BYTES = 64 * 1024 * 1024
"""Largest qrels, queries or ratings file read (each is read whole). BEIR's largest queries file
(MS MARCO's 500,000 queries) is 33 MB; the golden file it becomes is bounded separately
(scanner/golden/file.py's MAX_GOLDEN_BYTES and MAX_QUERIES), and checked before writing."""
DOCNO = "{docno}"
DEFAULT_DOC_PATH = DOCNO
"""A docno is a KB-relative path, optionally `path#heading` (what a run file and `--export-trec` write)."""


@dataclass(frozen=True, slots=True)
class SourceText:
    name: str
    """The file as named on the command line."""
    lines: tuple[str, ...]


def read_source(path: Path, flag: str) -> SourceText:
    """The file's lines, or an InputError naming it and the flag. A BOM is dropped (spreadsheets
    write one at the start of a CSV)."""
    try:
        data = read_capped(path, MAX_SOURCE_BYTES, LinkPolicy.FOLLOW)
    except FileRefused as refused:
        hint = "split the file" if refused.refusal is Refusal.TOO_LARGE else f"check the {flag} path"
        raise InputError(f"{flag} file {refused.reason}", file=str(path), field=flag, hint=hint) from None
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        line = data[: error.start].count(b"\n") + 1
        raise InputError(
            f"not valid UTF-8 at byte {error.start}", file=str(path), line=line, field=flag, hint="save the file as UTF-8"
        ) from None
    return SourceText(str(path), tuple(text.splitlines()))


@dataclass(frozen=True, slots=True)
class DocPath:
    """`--doc-path`: how a docno names a KB document (`{docno}.md` for a collection whose docnos are numbers)."""

    template: str = DEFAULT_DOC_PATH

    def judgment(self, docno: str, grade: int, file: str, line: int, field: str) -> Judgment:
        """`path#heading` splits as a run file's docid does; both parts are percent-decoded (a TREC
        field holds no space). The template applies to the path part."""
        path_part, hash_, heading = docno.partition("#")
        path = self.template.replace(DOCNO, urllib.parse.unquote(path_part))
        problem = expected_path_problem(path)
        if problem is not None:
            raise InputError(
                f"docno {docno!r} names no KB path: {problem}", file=file, line=line, field=field,
                hint="give --doc-path a template that makes a KB-relative path of it, e.g. --doc-path 'docs/{docno}.md'",
            )
        decoded = urllib.parse.unquote(heading) if hash_ else None
        return Judgment(path, decoded or None, grade)


def check_doc_path(template: str) -> DocPath:
    if DOCNO not in template:
        raise InputError(
            f"--doc-path {template!r} does not hold {DOCNO}", field="--doc-path",
            hint="e.g. --doc-path '{docno}.md' (each docno becomes that path)",
        )
    return DocPath(template)


def whole_grade(text: str, file: str, line: int, field: str, hint: str) -> tuple[int, bool]:
    """A judgment's grade and whether it was negative (read as 0: judged, not relevant, which is how
    trec_eval counts a negative grade). Anything but a whole number is refused, never rounded: a
    misread grade changes nDCG with nobody told."""
    stripped = text.strip()
    digits = stripped.removeprefix("-").removeprefix("+")
    if not digits.isascii() or not digits.isdigit() or len(digits) > 6:
        raise InputError(f"grade {text!r} is not a whole number", file=file, line=line, field=field, hint=hint)
    value = int(stripped)
    if value > MAX_GRADE:
        raise InputError(
            f"grade {value} is over kb-eval's largest, {MAX_GRADE}", file=file, line=line, field=field, hint=hint
        )
    return max(value, 0), value < 0
