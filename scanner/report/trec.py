"""`--export-trec DIR`: the run and the qrels a report was computed from, in trec_eval's formats.

    trec_eval -c -l <relevance-level> -m recip_rank -m map -m P.<ks> -m recall.<ks> \\
        -m success.<ks> -m ndcg_cut.<ks> DIR/kb-eval.qrels DIR/kb-eval.run

gives the report's aggregates (and `-q` its per-query rows), at the unit where kb-eval's
definitions and trec_eval's coincide: each document (or section) labelled once, path-only or
heading-pinned, never both for one document (scanner/metrics/measures.py; docs/metrics.md says
where they part).

- qrels: `query 0 docno grade`, one line per expected entry of every query that takes part in
  the aggregates. docno is the entry's path, or `path#heading` (the heading as the reader sees
  it, as it is matched) for a heading-pinned entry; an entry with `parent:` or `subsections:`
  adds them, and a group (`any:`) is one docno made of its members' (each entry is one
  judgment, credited to the first hit it accepts).
- run: `query Q0 docno rank score kb-eval`, one line per returned hit. A hit that kb-eval
  credited with an entry (the crediting walk over every entry, grade 0 included) carries that
  entry's docno; any other hit a docno no label has (its path, else `path@rank`), so that
  trec_eval, which counts a docno once, sees what kb-eval counted. The score is the hit count
  minus the rank plus one: trec_eval orders by score and breaks ties by docno, and the
  retriever's own scores may tie, so the rank is written as the score.
- Query ids and docnos are percent-encoded where they hold whitespace, `%` or a non-ASCII
  character (the formats split on whitespace): `notes/on call.md` is `notes/on%20call.md`. In a
  docno, the characters that join its parts (`#`, `<`, `*`, `@`, `|`, `:`) are encoded too where a
  path or a heading holds them, so two different judgments never share a docno: the section
  `y.md` of `x.md` is `x.md#y.md`, the note named `x.md#y.md` is `x.md%23y.md`.

Queries left out of the aggregates (no relevant entry) are left out of both files; `-c` makes
trec_eval average over every query of the qrels, as kb-eval does (a query that returned
nothing scores 0 there too).
"""

from __future__ import annotations

import urllib.parse
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from scanner.evaluation.records import QueryRecord, RunRecord
from scanner.foundation.errors import InputError
from scanner.foundation.files import write_atomically
from scanner.golden.file import ExpectedEntry
from scanner.golden.headings import reader_heading
from scanner.metrics.measures import credited

QRELS_NAME = "kb-eval.qrels"
RUN_NAME = "kb-eval.run"
RUN_TAG = "kb-eval"
_SAFE = "/#@:+,;=!$&'()*[]~-._"
"""Kept as written: every printable ASCII character but whitespace, `%` and the quote-like
characters trec_eval has no trouble with either; quote() adds letters and digits."""


@dataclass(frozen=True, slots=True)
class TrecFiles:
    qrels: str
    run: str


_JOINERS = "#<*@|:"
"""What joins a docno's parts: encoded inside a part, so a docno reads back one way only."""
_PART_SAFE = "".join(c for c in _SAFE if c not in _JOINERS)


def trec_id(text: str) -> str:
    """`text` as one whitespace-free TREC field (percent-encoded UTF-8 where needed)."""
    return urllib.parse.quote(text, safe=_SAFE) or "%00"


def _part(text: str) -> str:
    """A path or heading inside a docno: as trec_id, with the joining characters encoded too."""
    return urllib.parse.quote(text, safe=_PART_SAFE) or "%00"


def entry_docno(entry: ExpectedEntry) -> str:
    if entry.any_of:
        return "any:" + "|".join(entry_docno(member) for member in entry.any_of)
    if entry.heading is None:
        return _part(entry.path)
    docno = f"{_part(entry.path)}#{_part(reader_heading(entry.heading))}"
    if entry.parent is not None:
        docno += f"<{_part(reader_heading(entry.parent))}"
    return docno + ("/*" if entry.subsections else "")


def trec_files(run: RunRecord) -> TrecFiles:
    qrels: list[str] = []
    lines: list[str] = []
    for query in run.queries or ():
        if not query.metrics.counted:
            continue
        qid = trec_id(query.id)
        grades: dict[str, int] = {}
        for entry in query.expected:
            docno = entry_docno(entry)
            # trec_eval keeps one judgment per docno; a document labelled twice keeps its higher grade.
            grades[docno] = max(grade for grade in (entry.grade, grades.get(docno)) if grade is not None)
        qrels.extend(f"{qid} 0 {docno} {grade}" for docno, grade in grades.items())
        lines.extend(f"{qid} Q0 {docno} {rank} {len(query.hits) - rank + 1} {RUN_TAG}"
                     for rank, docno in enumerate(run_docnos(query, set(grades)), 1))
    return TrecFiles("".join(line + "\n" for line in qrels), "".join(line + "\n" for line in lines))


def run_docnos(query: QueryRecord, judged: set[str]) -> Sequence[str]:
    """One docno per hit, in rank order, none repeated (see the module docstring)."""
    taken = dict(credited(query.hits, query.expected))
    used: set[str] = set()
    docnos = []
    for position, hit in enumerate(query.hits, 1):
        entry = taken.get(position)
        if entry is not None:
            docno = entry_docno(entry)
        else:
            docno = _part(hit.path)
            if docno in judged or docno in used:
                docno = f"{_part(hit.path)}@{position}"
        used.add(docno)
        docnos.append(docno)
    return docnos


def export_trec(folder: Path, run: RunRecord) -> None:
    """Write `kb-eval.qrels` and `kb-eval.run` into `folder` (created if missing), each atomically."""
    files = trec_files(run)
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise InputError(
            f"cannot create the folder for --export-trec ({error.strerror})", file=str(folder),
            field="--export-trec", hint="point --export-trec at a folder that can be created and written",
        ) from None
    write_atomically(folder / QRELS_NAME, files.qrels.encode("utf-8"), "export-trec")
    write_atomically(folder / RUN_NAME, files.run.encode("utf-8"), "export-trec")
