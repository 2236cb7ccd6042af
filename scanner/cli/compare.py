"""`kb-eval compare REPORT...`: several runs' reports side by side (scanner/compare/runs.py).

    kb-eval compare base.json bm25.json dense.json [--format text|json|markdown] [--alpha A] [--tag TAG]

Prints the table on stdout; exit 0, or 2 when a report cannot be read or the arguments are wrong.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TextIO

from scanner.cli.parser import Parser
from scanner.compare.runs import DEFAULT_COMPARE_ALPHA, NamedRun, compare_named_runs, tags_of
from scanner.foundation.errors import ExitCode, InputError
from scanner.render.runs_table import render_runs_markdown, render_runs_text
from scanner.report.baseline import read_report
from scanner.report.document import validation_errors
from scanner.report.runs_table import runs_table_document
from scanner.report.serialise import serialise
from scanner.settings import values
from scanner.settings.values import Refused

FORMATS = ("text", "json", "markdown")
MAX_RUNS = 20
"""Columns past this stop fitting a terminal or a summary; compare them in groups."""


def _alpha(text: str) -> float:
    try:
        parsed: float = values.float_in(0.0, 1.0, low_open=True, high_open=False, example="0.05")(text)
    except Refused as refused:
        raise argparse.ArgumentTypeError(f"{text!r}: {refused.problem}") from None
    return parsed


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(
        prog="kb-eval compare",
        description=(
            "Compare the JSON reports of several kb-eval runs (e.g. of several search configurations on one golden\n"
            "set): a row per metric, a column per run, each later run's change against the first with a paired\n"
            "sign-flip test where the runs measured the same queries the same way, and the reason where not."
        ),
        epilog=(
            "exit codes: 0 compared, 2 a report unreadable or the arguments wrong.\n"
            "examples:\n"
            "  kb-eval compare bm25.json dense.json hybrid.json\n"
            "  kb-eval compare bm25.json dense.json --format markdown >> \"$GITHUB_STEP_SUMMARY\""
        ),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("reports", nargs="+", type=Path, metavar="REPORT", help="JSON reports kb-eval wrote (--report)")
    parser.add_argument("--format", choices=FORMATS, default="text", help="what is printed (default: text)")
    parser.add_argument(
        "--alpha", type=_alpha, default=DEFAULT_COMPARE_ALPHA, metavar="A",
        help=f"mark a change significant when the paired test's p < A (default: {DEFAULT_COMPARE_ALPHA:g})",
    )
    parser.add_argument("--tag", metavar="TAG", help="compare only the queries carrying this tag (their means and tests)")
    return parser


def main(argv: Sequence[str], stdout: TextIO | None = None, stderr: TextIO | None = None) -> int:
    out, err = stdout or sys.stdout, stderr or sys.stderr
    args = build_parser().parse_args(list(argv))
    try:
        if not 2 <= len(args.reports) <= MAX_RUNS:
            raise InputError(
                f"{len(args.reports)} reports given; compare needs 2 to {MAX_RUNS}", field="REPORT",
                hint="name the first run's report, then the others",
            )
        runs = [NamedRun(str(path), read_report(path, validation_errors, "report", "check the report's path"))
                for path in args.reports]
        if args.tag is not None and args.tag not in tags_of(runs):
            there = ", ".join(tags_of(runs)) or "none"
            raise InputError(
                f"no query of these runs carries the tag {args.tag!r} (tags: {there})", field="--tag",
                hint="name one of the tags the golden file gives its queries",
            )
    except InputError as error:
        err.write(f"kb-eval compare: error: {error}\n")
        return ExitCode.BAD_INPUT
    table = compare_named_runs(runs, args.alpha, args.tag)
    if args.format == "json":
        out.write(serialise(runs_table_document(table)))
    elif args.format == "markdown":
        out.write(render_runs_markdown(table))
    else:
        out.write(render_runs_text(table))
    return ExitCode.OK
