"""Command line: parse, wire, print, return an exit code. No rule lives here.

Results go to stdout, diagnostics to stderr. Exit codes are `errors.ExitCode`.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import traceback
from pathlib import Path
from typing import Sequence, TextIO

from . import __version__
from .diagnostics import Diagnostics
from .errors import ExitCode, InputError
from .evaluate import DEFAULT_KS, EvalOptions, EvalOutcome, run_eval
from .quotes import render_warning
from .report import ReportInvalid, render_text, to_json, validate_report
from .retrievers.builtin import FieldWeights, Tokenization
from .retrievers.factory import add_retriever_arguments, external_retriever_factory, options_from_namespace


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        self.print_usage(sys.stderr)
        sys.stderr.write(f"kb-eval: error: {message}\n")
        raise SystemExit(ExitCode.BAD_INPUT)


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="kb-eval",
        description="Measure a Markdown knowledge base's search against a golden query set.",
    )
    parser.add_argument("--version", action="version", version=f"kb-eval {__version__}")
    parser.add_argument("--kb-path", type=Path, default=Path("."), help="the knowledge base folder (default: .)")
    parser.add_argument(
        "--golden", type=Path, default=None,
        help="golden query file (default: <kb>/.kb-eval.yml, then .kb-mcp-eval.yml, .groove-eval.yml)",
    )
    parser.add_argument("--exclude", action="append", default=[], metavar="GLOB", help="skip matching paths (repeatable)")
    parser.add_argument("--limit", type=_positive_int, default=None, help="hits per query (default: golden defaults.limit, else 10)")
    parser.add_argument("--k", type=_k_list, default=DEFAULT_KS, help="cut-offs, comma separated (default: 1,5,10)")
    parser.add_argument("--format", choices=("text", "json"), default="text", help="stdout format (default: text)")
    parser.add_argument("--output", type=Path, default=None, help="also write the JSON report to this file")
    parser.add_argument(
        "--tokenization", choices=[t.value for t in Tokenization], default=Tokenization.AUTO.value,
        help="built-in retriever: auto (by the query's script, default), fused (both indexes), word or trigram",
    )
    parser.add_argument(
        "--weights", type=_weights, default=FieldWeights(),
        help="built-in retriever bm25 weights heading,breadcrumb,body (default: 2,1,1)",
    )
    add_retriever_arguments(parser)
    return parser


def main(argv: Sequence[str] | None = None, stdout: TextIO | None = None, stderr: TextIO | None = None) -> int:
    stdout = stdout or sys.stdout
    stderr = stderr or sys.stderr
    try:
        args = build_parser().parse_args(argv)
    except SystemExit as exit_:
        return int(exit_.code or 0)
    diagnostics = Diagnostics()
    try:
        outcome = run_eval(options_from_args(args), diagnostics)
        validate_report(outcome.report)
    except InputError as error:
        _print_diagnostics(diagnostics, stderr)
        stderr.write(f"kb-eval: error: {error}\n")
        return ExitCode.BAD_INPUT
    except ReportInvalid as error:
        stderr.write(f"kb-eval: internal error: {error}\n")
        return ExitCode.INTERNAL
    except Exception:  # noqa: BLE001 - anything else is a bug, and must not pass for bad input
        stderr.write("kb-eval: internal error (please report this):\n" + traceback.format_exc())
        return ExitCode.INTERNAL
    _print_diagnostics(diagnostics, stderr)
    stderr.write(render_warning([f.finding for f in outcome.findings]))
    return emit(outcome, args, stdout, stderr)


def options_from_args(args: argparse.Namespace) -> EvalOptions:
    return EvalOptions(
        kb_path=args.kb_path,
        golden_path=args.golden,
        exclude=tuple(args.exclude),
        limit=args.limit,
        ks=tuple(args.k),
        weights=args.weights,
        tokenization=Tokenization(args.tokenization),
        external_retriever=external_retriever_factory(options_from_namespace(args)),
    )


def emit(outcome: EvalOutcome, args: argparse.Namespace, stdout: TextIO, stderr: TextIO) -> int:
    document = to_json(outcome.report)
    if args.output is not None:
        try:
            write_atomically(args.output, document)
        except OSError as error:
            stderr.write(f"kb-eval: error: {args.output}: cannot write the report ({error.strerror})\n")
            return ExitCode.BAD_INPUT
    stdout.write(document if args.format == "json" else render_text(outcome.report))
    return ExitCode.OK


def write_atomically(path: Path, text: str) -> None:
    """Temp file in the same folder, then rename: a reader never sees half a report."""
    folder = path.parent if str(path.parent) else Path(".")
    fd, temporary = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=folder)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as handle:
            handle.write(text)
            handle.flush()
            # mkstemp creates 0600; a report is for later steps (upload-artifact runs as another user).
            os.fchmod(handle.fileno(), 0o644)
            os.fsync(handle.fileno())
        os.replace(temporary, path)
    except BaseException:
        try:
            os.unlink(temporary)
        except FileNotFoundError:
            pass
        raise


def _print_diagnostics(diagnostics: Diagnostics, stderr: TextIO) -> None:
    for item in diagnostics.items:
        stderr.write(item.render() + "\n")


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
    if not 1 <= value <= 1000:
        raise argparse.ArgumentTypeError(f"{value} is not between 1 and 1000")
    return value


def _k_list(text: str) -> tuple[int, ...]:
    values = tuple(_positive_int(part.strip()) for part in text.split(",") if part.strip())
    if not values:
        raise argparse.ArgumentTypeError("give at least one cut-off, e.g. 1,5,10")
    return values


def _weights(text: str) -> FieldWeights:
    parts = text.split(",")
    try:
        values = [float(p) for p in parts]
    except ValueError:
        values = []
    if len(values) != 3 or not all(0 < v < 1000 for v in values):
        raise argparse.ArgumentTypeError(f"{text!r}: give three positive numbers heading,breadcrumb,body, e.g. 2,1,1")
    return FieldWeights(*values)


def run() -> None:
    """Console-script entry point."""
    raise SystemExit(main())
