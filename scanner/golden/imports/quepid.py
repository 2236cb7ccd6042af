"""Quepid's ratings CSV: the `query,docid,rating` export (Quepid's "basic" format, which its
import takes back), or the detailed export's `Query Text`, `Doc ID` and `Rating` columns.

Columns are found by their header, in any order and case; other columns are ignored. A row whose
rating is empty (a document shown, never rated) is left out and counted. Quepid has no query id:
each query's id is its first ID_FROM_TEXT_CHARS characters, the id the golden file gives a query
written without one, made unique with ` (2)`, ` (3)` where two queries share it.
"""

from __future__ import annotations

import csv
from pathlib import Path

from scanner.foundation.errors import InputError
from scanner.golden.file import ID_FROM_TEXT_CHARS
from scanner.golden.imports.records import Imported, ImportedQuery, Judgment
from scanner.golden.imports.source import DocPath, read_source, whole_grade

COLUMNS = {"query": ("query", "querytext"), "docid": ("docid",), "rating": ("rating",)}
"""Each column kb-eval reads, and the header names (lower case, spaces and `_` removed) it goes by."""
_HINT = "Quepid's ratings export starts with the header `query,docid,rating`"


def import_quepid(path: Path, doc_path: DocPath) -> Imported:
    source = read_source(path, "--quepid")
    rows = list(csv.reader(source.lines))
    if not rows:
        raise InputError("the ratings file is empty", file=source.name, field="--quepid", hint=_HINT)
    header = [cell.strip().lower().replace(" ", "").replace("_", "") for cell in rows[0]]
    where: dict[str, int] = {}
    for column, names in COLUMNS.items():
        found = next((at for at, cell in enumerate(header) if cell in names), None)
        if found is None:
            raise InputError(
                f"the header has no `{column}` column (it has {', '.join(rows[0]) or 'nothing'})",
                file=source.name, line=1, field=column, hint=_HINT,
            )
        where[column] = found
    judged: dict[str, list[Judgment]] = {}
    seen: dict[tuple[str, str], int] = {}
    unrated = negative = 0
    for number, row in enumerate(rows[1:], start=2):
        if not any(cell.strip() for cell in row):
            continue
        if len(row) <= max(where.values()):
            raise InputError(
                f"the row has {len(row)} columns, the header {len(header)}", file=source.name, line=number,
                field="--quepid", hint="quote a value that holds a comma",
            )
        text, docno, rating = (row[where[column]].strip() for column in COLUMNS)
        if not text:
            raise InputError("the query is empty", file=source.name, line=number, field="query")
        if not docno:
            raise InputError("the docid is empty", file=source.name, line=number, field="docid")
        if not rating:
            unrated += 1
            continue
        first = seen.setdefault((text, docno), number)
        if first != number:
            raise InputError(
                f"docid {docno!r} is rated twice for this query (first on line {first})", file=source.name,
                line=number, field="docid", hint="keep one rating per document and query",
            )
        grade, below_zero = whole_grade(rating, source.name, number, "rating", "a Quepid rating is a whole number")
        negative += below_zero
        judged.setdefault(text, []).append(doc_path.judgment(docno, grade, source.name, number, "docid"))
    if not judged:
        raise InputError("the ratings file holds no rating", file=source.name, field="--quepid", hint=_HINT)
    queries = []
    taken: set[str] = set()
    renamed = 0
    for text, judgments in judged.items():
        query_id, count = text[:ID_FROM_TEXT_CHARS], 1
        while query_id in taken:
            count += 1
            query_id = f"{text[:ID_FROM_TEXT_CHARS]} ({count})"
        renamed += count > 1
        taken.add(query_id)
        queries.append(ImportedQuery(query_id, text, tuple(judgments)))
    notes = []
    if unrated:
        notes.append(f"{unrated} rows without a rating left out")
    if negative:
        notes.append(f"{negative} negative ratings read as 0 (judged, not relevant)")
    if renamed:
        notes.append(f"{renamed} queries share their first {ID_FROM_TEXT_CHARS} characters with another: ids end in (2), (3)...")
    return Imported(tuple(queries), (str(path),), tuple(notes))
