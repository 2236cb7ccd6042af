"""`kb-eval import`: judgments made for other tools, written as a golden file.

    kb-eval import --qrels FILE --queries FILE [--doc-path TEMPLATE] [--output FILE]
    kb-eval import --quepid FILE [--doc-path TEMPLATE] [--output FILE]

The golden file goes to stdout unless --output names a file, which is never overwritten (created
with O_EXCL, as `kb-eval init` creates its files). What the import read differently from how it
was written (a negative grade, a query left out) is said on stderr, one line each.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TextIO

from scanner.cli.init import create_exclusively
from scanner.cli.parser import Parser
from scanner.foundation.errors import ExitCode, InputError
from scanner.foundation.untrusted_text import defused
from scanner.golden.imports.quepid import import_quepid
from scanner.golden.imports.records import Imported
from scanner.golden.imports.source import DEFAULT_DOC_PATH, check_doc_path
from scanner.golden.imports.trec import import_trec
from scanner.golden.imports.write import golden_text


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(
        prog="kb-eval import",
        description="Write a golden file from TREC qrels and their queries, or from Quepid's ratings CSV.",
        epilog=(
            "exit codes: 0 written, 2 bad input or --output already there (nothing written).\n"
            "examples:\n"
            "  kb-eval import --qrels test.qrels --queries queries.tsv --doc-path '{docno}.md' --output kb/.kb-eval.yml\n"
            "  kb-eval import --qrels qrels/test.tsv --queries queries.jsonl > golden.yml\n"
            "  kb-eval import --quepid ratings.csv --output kb/.kb-eval.yml"
        ),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--qrels", type=Path, metavar="FILE", help="TREC qrels: `query iteration docno grade` per line")
    parser.add_argument(
        "--queries", type=Path, metavar="FILE",
        help="the queries the qrels judge: TSV `id<TAB>text`, or JSONL {\"_id\": ..., \"text\": ...} (BEIR)",
    )
    parser.add_argument("--quepid", type=Path, metavar="FILE", help="Quepid's ratings CSV (`query,docid,rating`)")
    parser.add_argument(
        "--doc-path", default=DEFAULT_DOC_PATH, metavar="TEMPLATE",
        help="the KB path of a docno, {docno} standing for it (default: {docno}, the docno is the path; "
        "`path#heading` names a section)",
    )
    parser.add_argument("--output", type=Path, metavar="FILE", help="write the golden file here (default: stdout)")
    return parser


def main(argv: Sequence[str], stdout: TextIO | None = None, stderr: TextIO | None = None) -> int:
    out, err = stdout or sys.stdout, stderr or sys.stderr
    args = build_parser().parse_args(list(argv))
    try:
        imported = read(args)
        text = golden_text(imported)
        if args.output is not None:
            create_exclusively(args.output, text, "golden file", "kb-eval import")
    except InputError as error:
        err.write(f"kb-eval import: error: {error}\n")
        return ExitCode.BAD_INPUT
    for note in imported.notes:
        err.write(f"kb-eval import: note: {defused(note)}\n")
    judgments = sum(len(query.judgments) for query in imported.queries)
    counted = f"{len(imported.queries)} queries, {judgments} judgments"
    if args.output is None:
        out.write(text)
        err.write(f"kb-eval import: {counted}\n")
    else:
        err.write(f"kb-eval import: wrote {defused(str(args.output))}: {counted}\n")
    return ExitCode.OK


def read(args: argparse.Namespace) -> Imported:
    doc_path = check_doc_path(args.doc_path)
    if args.quepid is not None:
        if args.qrels is not None or args.queries is not None:
            raise InputError(
                "--quepid and --qrels/--queries both name judgments", field="--quepid", hint="import one source at a time"
            )
        return import_quepid(args.quepid, doc_path)
    if args.qrels is None or args.queries is None:
        missing = "--qrels" if args.qrels is None else "--queries"
        raise InputError(
            f"{missing} is missing", field=missing,
            hint="give --qrels FILE and --queries FILE together, or --quepid FILE",
        )
    return import_trec(args.qrels, args.queries, doc_path)
