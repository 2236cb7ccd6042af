"""TREC qrels (`query iteration docno grade`) with a queries file: TSV (`id<TAB>text`, as
ir_datasets and MS MARCO write them) or BEIR's JSONL (`{"_id": ..., "text": ...}`).

Read as trec_eval reads qrels: whitespace-separated fields, the second ignored, a docno judged at
most once per query (trec_eval refuses a repeat too). Queries are written in the queries file's
order; a query the qrels do not judge is left out (a BEIR queries file holds every split), and a
query the qrels judge that the queries file lacks is refused: its text is what is searched.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from scanner.foundation.errors import InputError
from scanner.foundation.strict_json import NotJson, loads_strict
from scanner.golden.imports.records import Imported, ImportedQuery, Judgment
from scanner.golden.imports.source import DocPath, SourceText, read_source, whole_grade

QRELS_FIELDS = 4
JSONL_ID_KEYS = ("_id", "query_id", "id")
"""BEIR writes `_id`, ir_datasets' JSONL export `query_id`; the first one present is the id."""
JSONL_TEXT_KEYS = ("text", "query")
_QRELS_HINT = "each line is `query iteration docno grade`, e.g. `q1 0 guides/deploy.md 2`"


@dataclass(frozen=True, slots=True)
class QueryText:
    id: str
    text: str
    line: int


def read_qrels(source: SourceText, doc_path: DocPath) -> tuple[dict[str, list[Judgment]], int]:
    """Query id -> its judgments in file order, and how many grades were negative."""
    judged: dict[str, list[Judgment]] = {}
    seen: dict[tuple[str, str], int] = {}
    negative = 0
    for number, raw in enumerate(source.lines, start=1):
        fields = raw.split()
        if not fields:
            continue
        if len(fields) != QRELS_FIELDS:
            raise InputError(
                f"qrels line has {len(fields)} fields, expected {QRELS_FIELDS}", file=source.name, line=number,
                field="--qrels", hint=_QRELS_HINT,
            )
        query_id, _iteration, docno, grade_text = fields
        first = seen.setdefault((query_id, docno), number)
        if first != number:
            raise InputError(
                f"docno {docno!r} is judged twice for query {query_id!r} (first on line {first})",
                file=source.name, line=number, field="docno", hint="keep one judgment per document and query",
            )
        grade, below_zero = whole_grade(grade_text, source.name, number, "grade", _QRELS_HINT)
        negative += below_zero
        judged.setdefault(query_id, []).append(doc_path.judgment(docno, grade, source.name, number, "docno"))
    if not judged:
        raise InputError("the qrels file holds no judgment", file=source.name, field="--qrels", hint=_QRELS_HINT)
    return judged, negative


def read_queries(source: SourceText) -> list[QueryText]:
    """JSONL when the first non-blank line is an object, else TSV."""
    first = next((line.strip() for line in source.lines if line.strip()), "")
    rows = _jsonl_queries(source) if first.startswith("{") else _tsv_queries(source)
    seen: dict[str, int] = {}
    for row in rows:
        earlier = seen.setdefault(row.id, row.line)
        if earlier != row.line:
            raise InputError(
                f"query id {row.id!r} appears twice (first on line {earlier})", file=source.name, line=row.line,
                field="id", hint="give each query one line",
            )
    return rows


def _tsv_queries(source: SourceText) -> list[QueryText]:
    rows = []
    for number, raw in enumerate(source.lines, start=1):
        if not raw.strip():
            continue
        query_id, tab, text = raw.partition("\t")
        if not tab:
            raise InputError(
                "queries line has no tab between the id and the text", file=source.name, line=number, field="--queries",
                hint="each line is `id<TAB>text` (or give a .jsonl file of {\"_id\": ..., \"text\": ...})",
            )
        rows.append(_query(query_id.strip(), text, source.name, number))
    return rows


def _jsonl_queries(source: SourceText) -> list[QueryText]:
    rows = []
    for number, raw in enumerate(source.lines, start=1):
        if not raw.strip():
            continue
        try:
            # The strict reader: a line nested past the recursion limit is a refusal, not exit 3.
            value = loads_strict(raw)
        except NotJson as error:
            raise InputError(
                f"not a JSON object ({error.reason})", file=source.name, line=number, field="--queries",
                hint='each line is {"_id": "q1", "text": "..."} (BEIR\'s queries.jsonl)',
            ) from None
        if not isinstance(value, dict):
            raise InputError("not a JSON object", file=source.name, line=number, field="--queries")
        id_key = next((key for key in JSONL_ID_KEYS if key in value), None)
        text_key = next((key for key in JSONL_TEXT_KEYS if key in value), None)
        for key, names in ((id_key, JSONL_ID_KEYS), (text_key, JSONL_TEXT_KEYS)):
            if key is None:
                raise InputError(
                    f"the object has none of {', '.join(names)}", file=source.name, line=number, field=names[0],
                    hint='each line is {"_id": "q1", "text": "..."} (BEIR\'s queries.jsonl)',
                )
        query_id, text = value[id_key], value[text_key]
        if isinstance(query_id, int) and not isinstance(query_id, bool):
            query_id = str(query_id)
        for key, item in ((id_key, query_id), (text_key, text)):
            if not isinstance(item, str):
                raise InputError(f"`{key}` is not a string", file=source.name, line=number, field=str(key))
        rows.append(_query(query_id, text, source.name, number))
    return rows


def _query(query_id: str, text: str, file: str, line: int) -> QueryText:
    if not query_id:
        raise InputError("the query id is empty", file=file, line=line, field="id", hint="give each query an id")
    if not text.strip():
        raise InputError(f"query {query_id!r} has no text", file=file, line=line, field="text")
    return QueryText(query_id, text.strip(), line)


def import_trec(qrels: Path, queries: Path, doc_path: DocPath) -> Imported:
    qrels_source = read_source(qrels, "--qrels")
    judged, negative = read_qrels(qrels_source, doc_path)
    texts = read_queries(read_source(queries, "--queries"))
    by_id = {row.id: row for row in texts}
    for number, raw in enumerate(qrels_source.lines, start=1):
        fields = raw.split()
        if fields and fields[0] not in by_id:
            raise InputError(
                f"query {fields[0]!r} is judged here but not in {queries}", file=qrels_source.name, line=number,
                field="query", hint="give --queries the file of the queries these qrels judge (the same split)",
            )
    imported = tuple(ImportedQuery(row.id, row.text, tuple(judged[row.id])) for row in texts if row.id in judged)
    notes = []
    left_out = len(texts) - len(imported)
    if left_out:
        notes.append(f"{left_out} of the {len(texts)} queries in {queries} have no judgment in {qrels}; left out")
    if negative:
        notes.append(f"{negative} negative grades read as 0 (judged, not relevant), as trec_eval counts them")
    return Imported(imported, (str(qrels), str(queries)), tuple(notes))
