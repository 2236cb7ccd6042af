"""Precomputed rankings from a run file: TREC run format or JSONL.

TREC (`qid Q0 docid rank score tag`) is ranked the way trec_eval ranks it,
not by the rank column: trec_eval 9 (get_trec_results.c, form_res_rels.c)
ignores the rank field, sorts a query's lines by score, higher first, and
breaks score ties by docid in DEScending strcmp order; it refuses a docid
listed twice for one query. Lines that are blank or start with `#` are
skipped and fields after the sixth are ignored, as there. One deliberate
difference: trec_eval reads the score with atof, which turns a typo into 0;
here a score that is not a finite number is refused.

A TREC docid is a KB-relative path, optionally `path#heading`; both parts are
percent-decoded because a TREC field cannot hold a space
(`guide.md#Getting%20started`).

JSONL is one object per line, `{"id": ..., "hits": [{"path", "heading"?, "score"?}]}`,
ranked in list order (the same rule as the http and command answers).
"""

from __future__ import annotations

import enum
import hashlib
import math
import urllib.parse
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from scanner.foundation.errors import InputError
from scanner.foundation.files import FileRefused, LinkPolicy, Refusal, read_capped
from scanner.foundation.strict_json import NotJson, loads_strict
from scanner.retrievers.base import AnswerCost, AnswerNote, Hit, RetrieverKind, SearchRequest
from scanner.retrievers.mapping import ErrorContext, Notes, ResponseMapping, map_hits

TREC_FIELD_COUNT = 6
MAX_RUN_FILE_BYTES = 32 * 1024 * 1024
"""Largest run file read (it is read whole). 10,000 queries (the golden cap) x 50 ranked documents,
or 1,000 queries x 500, of ~60-byte TREC lines fit; a deeper run is cut to the depth evaluated."""
MAX_RUN_LINES = 500_000
"""Ranked documents (TREC lines or JSONL hits) kept at once. Each costs records of a few hundred
bytes: 1,000,000 lines peaked at 631 MiB (bench/parser_rss.py), past the 512 MiB a single file may
cost; 500,000 stays well under it."""
JSONL_SUFFIXES = (".jsonl", ".ndjson")
TREC_SUFFIXES = (".trec", ".run", ".res")


class RunFormat(enum.Enum):
    TREC = "trec"
    JSONL = "jsonl"


@dataclass(frozen=True, slots=True)
class TrecLine:
    """One retrieved document of a TREC run, as written."""

    docid: str
    score: float
    line: int


def detect_format(path: Path, text: str) -> RunFormat:
    """By extension when it says; otherwise JSONL when the first content line is an object."""
    suffix = path.suffix.lower()
    if suffix in JSONL_SUFFIXES:
        return RunFormat.JSONL
    if suffix in TREC_SUFFIXES:
        return RunFormat.TREC
    for raw in text.splitlines():
        line = raw.strip()
        if line and not line.startswith("#"):
            return RunFormat.JSONL if line.startswith("{") else RunFormat.TREC
    return RunFormat.TREC


def trec_order(lines: Sequence[TrecLine]) -> list[TrecLine]:
    """trec_eval's ranking: score descending, ties by docid descending (byte order).

    Python compares str by code point, which is the byte order of their UTF-8
    form, so this equals strcmp on the file's bytes.
    """
    by_docid_desc = sorted(lines, key=lambda entry: entry.docid, reverse=True)
    return sorted(by_docid_desc, key=lambda entry: entry.score, reverse=True)


def parse_trec(text: str, file: str) -> dict[str, list[TrecLine]]:
    """Query id -> its lines in file order. Refuses malformed lines and repeated docids."""
    by_query: dict[str, list[TrecLine]] = {}
    seen: dict[tuple[str, str], int] = {}
    for number, raw in enumerate(text.splitlines(), start=1):
        stripped = raw.strip()
        if not stripped or stripped.startswith("#"):
            continue
        if len(seen) >= MAX_RUN_LINES:
            raise _too_many_lines(file, number)
        fields = stripped.split()
        if len(fields) < TREC_FIELD_COUNT:
            raise InputError(
                f"TREC run line has {len(fields)} fields, expected 6 (qid Q0 docid rank score tag)",
                file=file,
                line=number,
                hint="a .jsonl file is read as JSONL; rename it if it is one",
            )
        qid, _iteration, docid, _rank, score_text = fields[:5]
        score = _parse_score(score_text, file, number)
        first = seen.setdefault((qid, docid), number)
        if first != number:
            raise InputError(
                f"docid {docid!r} is listed twice for query {qid!r} (first on line {first})",
                file=file,
                line=number,
                hint="trec_eval refuses duplicate documents too; keep one line per document",
            )
        by_query.setdefault(qid, []).append(TrecLine(docid=docid, score=score, line=number))
    return by_query


def trec_hits(lines: Sequence[TrecLine], file: str) -> list[Hit]:
    """All of a query's documents as hits, in trec_eval order (not cut to a limit)."""
    hits: list[Hit] = []
    for rank, entry in enumerate(trec_order(lines), start=1):
        path, _, heading = entry.docid.partition("#")
        path = urllib.parse.unquote(path)
        if not path:
            raise InputError(f"docid {entry.docid!r} has no path", file=file, line=entry.line)
        hits.append(Hit(rank=rank, path=path, heading=urllib.parse.unquote(heading), score=entry.score))
    return hits


def parse_jsonl(text: str, file: str, notes: Notes | None = None) -> dict[str, list[Hit]]:
    """Query id -> all its hits in list order. Refuses malformed lines and repeated ids."""
    by_query: dict[str, list[Hit]] = {}
    first_line: dict[str, int] = {}
    lines_kept = 0
    for number, raw in enumerate(text.splitlines(), start=1):
        if not raw.strip():
            continue
        try:
            record: object = loads_strict(raw)
        except NotJson as exc:
            raise InputError(f"not a JSON object: {exc.reason}", file=file, line=number) from None
        if not isinstance(record, dict):
            raise InputError("not a JSON object", file=file, line=number, hint=_JSONL_HINT)
        query_id = record.get("id")
        if isinstance(query_id, bool) or not isinstance(query_id, (str, int)):
            raise InputError("needs an \"id\" (string)", file=file, line=number, field="id", hint=_JSONL_HINT)
        query_id = str(query_id)
        hits = record.get("hits")
        if not isinstance(hits, list):
            raise InputError("needs a \"hits\" list", file=file, line=number, field="hits", hint=_JSONL_HINT)
        if query_id in first_line:
            raise InputError(
                f"query id {query_id!r} appears twice (first on line {first_line[query_id]})",
                file=file,
                line=number,
                field="id",
            )
        first_line[query_id] = number
        lines_kept += len(hits)
        if lines_kept > MAX_RUN_LINES:
            raise _too_many_lines(file, number)
        # Every hit is checked now, not only the first `limit` at search time,
        # so a broken line is reported wherever it sits.
        everything = SearchRequest(query_id=query_id, text="", limit=len(hits))
        by_query[query_id] = map_hits(
            hits, ResponseMapping(), everything, ErrorContext(source="run file", file=file, line=number, notes=notes)
        )
    return by_query


class RunFileRetriever:
    """Answers golden queries from rankings computed elsewhere, keyed by golden query id."""

    kind = RetrieverKind.RUN
    path_prefixes: tuple[str, ...] = ()

    def __init__(self, path: Path, template: str | None = None) -> None:
        self._file = str(path)
        self._template = template
        """The path as written, when it names the side's folders: a run file made per side is
        described by that, not by its bytes, so the two sides of a pull request compare."""
        self._notes = Notes()
        data = read_run_file(path)
        self._sha256 = hashlib.sha256(data).hexdigest()
        try:
            text = data.decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            raise InputError(
                f"run file is not UTF-8 (byte {exc.start})", file=self._file, field="--run"
            ) from None
        self._format = detect_format(path, text)
        if self._format is RunFormat.JSONL:
            self._rankings = parse_jsonl(text, self._file, self._notes)
        else:
            self._rankings = {
                qid: trec_hits(lines, self._file) for qid, lines in parse_trec(text, self._file).items()
            }

    @property
    def source_file(self) -> str:
        """The run file as given, for a refusal of its answers to name (never in the fingerprint:
        two checkouts' copies of one run compare)."""
        return self._file

    def describe(self) -> dict[str, object]:
        if self._template is not None:
            return {"name": self.kind.value, "format": self._format.value, "file": self._template}
        return {"name": self.kind.value, "format": self._format.value, "sha256": self._sha256}

    def costs(self) -> tuple[AnswerCost, ...]:
        return ()

    def close(self) -> None:
        return None

    def notes(self) -> tuple[AnswerNote, ...]:
        return self._notes.items()

    def search_all(self, requests: Sequence[SearchRequest]) -> list[list[Hit]]:
        missing = [request.query_id for request in requests if request.query_id not in self._rankings]
        if missing:
            shown = ", ".join(repr(query_id) for query_id in missing[:10])
            more = f" and {len(missing) - 10} more" if len(missing) > 10 else ""
            raise InputError(
                f"run file has no ranking for golden query {shown}{more}",
                file=self._file,
                field="--run",
                hint="a query the run never answered would be scored as a miss; regenerate the run "
                "for the current golden file (an empty ranking is written as hits: [] in JSONL)",
            )
        return [self._rankings[request.query_id][: request.limit] for request in requests]


def read_run_file(path: Path) -> bytes:
    """The file's bytes, or InputError naming it: never a hang on a FIFO, never past the cap.

    A link is followed (a run file is chosen by the user), but a loop or a dangling link is an
    error naming the file, and the opened descriptor must be a regular file."""
    try:
        return read_capped(path, MAX_RUN_FILE_BYTES, LinkPolicy.FOLLOW)
    except FileRefused as refused:
        hint = (
            "cut each query's ranking to the depth you evaluate (e.g. 100 lines per query)"
            if refused.refusal is Refusal.TOO_LARGE else "check the --run path"
        )
        raise InputError(f"run file {refused.reason}", file=str(path), field="--run", hint=hint) from None


def _too_many_lines(file: str, line: int) -> InputError:
    return InputError(
        f"run file has more than {MAX_RUN_LINES} ranked documents", file=file, line=line, field="--run",
        hint="cut each query's ranking to the depth you evaluate (e.g. 100 lines per query)",
    )


_JSONL_HINT = 'each line: {"id": "<golden id>", "hits": [{"path": "a.md", "heading": "H", "score": 1.0}]}'


def _parse_score(text: str, file: str, line: int) -> float:
    try:
        score = float(text)
    except ValueError:
        score = math.nan
    if not math.isfinite(score):
        raise InputError(
            f"score {text!r} is not a finite number",
            file=file,
            line=line,
            field="score",
            hint="the fifth field of a TREC run line is the score (higher ranks first)",
        )
    return score
