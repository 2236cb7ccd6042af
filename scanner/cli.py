"""Command line: parse, wire, print, return an exit code. No rule lives here.

Results go to stdout, diagnostics to stderr. Exit codes are `errors.ExitCode`.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import sys
import tempfile
import traceback
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from . import __version__
from .compare import Comparison, compare_runs, compare_with_history, no_previous
from .diagnostics import Diagnostic, Diagnostics
from .errors import ExitCode, InputError
from .evaluate import DEFAULT_KS, EvalOptions, EvalOutcome, LocatedFinding, run_eval
from .gate import DEFAULT_REGRESSION_THRESHOLD, GateResult, check_gate_settings, evaluate_gate
from .history import (
    DEFAULT_HISTORY_SIZE,
    HistoryRead,
    check_history_size,
    read_baseline,
    read_history,
    save_baseline,
    save_history,
)
from .quotes import render_warning
from .report import ReportInvalid, render_text, to_json, validate_report, validation_errors
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
        "--cache-dir", type=Path, default=None, metavar="DIR",
        help="keep parsed documents here between runs (e.g. with actions/cache); unchanged files are not parsed again",
    )
    parser.add_argument(
        "--tokenization", choices=[t.value for t in Tokenization], default=Tokenization.AUTO.value,
        help="built-in retriever: auto (by the query's script, default), fused (both indexes), word or trigram",
    )
    parser.add_argument(
        "--weights", type=_weights, default=FieldWeights(),
        help="built-in retriever bm25 weights heading,breadcrumb,body (default: 2,1,1)",
    )
    history = parser.add_argument_group("history, baseline and the regression gate")
    history.add_argument(
        "--history", type=Path, default=None, metavar="FILE",
        help="run history to compare with and append to (default: <kb>/.kb-eval-history.json)",
    )
    history.add_argument("--no-history", action="store_true", help="neither read nor write a history")
    history.add_argument(
        "--history-size", type=int, default=DEFAULT_HISTORY_SIZE, metavar="N",
        help=f"runs kept in the history (default: {DEFAULT_HISTORY_SIZE})",
    )
    history.add_argument(
        "--baseline", type=Path, default=None, metavar="FILE",
        help="compare with this JSON report (e.g. the default branch's) instead of the history",
    )
    history.add_argument(
        "--save-baseline", type=Path, default=None, metavar="FILE",
        help="also write this run's JSON report to FILE, to use later as --baseline",
    )
    history.add_argument(
        "--fail-on-regression", action="store_true",
        help="exit 1 when an aggregate metric dropped by more than the threshold against a comparable run",
    )
    history.add_argument(
        "--regression-threshold", type=float, default=DEFAULT_REGRESSION_THRESHOLD, metavar="DROP",
        help=f"largest tolerated drop of any metric, 0..1 scale (default: {DEFAULT_REGRESSION_THRESHOLD})",
    )
    history.add_argument(
        "--alpha", type=float, default=None, metavar="A",
        help="count a drop only when a paired sign-flip test over the queries gives p < A",
    )
    add_retriever_arguments(parser)
    return parser


@dataclass(frozen=True)
class RunResult:
    """What one CLI run produced, for callers that do more than print it (Action mode).

    `stdout_text` and `stderr_text` are exactly what `main` prints; the other
    fields carry the same run as data, so nothing has to be parsed back out of text.
    """

    exit_code: int
    report: dict[str, object] | None
    """The validated report; None when the run stopped before one was built (exit 2 or 3)."""
    findings: tuple[LocatedFinding, ...]
    diagnostics: tuple[Diagnostic, ...]
    input_error: InputError | None
    """Why the run was exit 2 (usage errors from the parser included), else None."""
    golden_path: str | None
    """The golden file as shown in messages (as given, or found in the KB); None when not found."""
    args: argparse.Namespace | None
    """The parsed arguments; None when they did not parse."""
    stdout_text: str
    stderr_text: str


def execute(argv: Sequence[str] | None = None) -> RunResult:
    """Run the CLI on `argv` without printing anything: the text goes into the result."""
    out, err = io.StringIO(), io.StringIO()
    try:
        # argparse writes usage errors, --help and --version to the sys streams.
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            args = build_parser().parse_args(argv)
    except SystemExit as exit_:
        code = int(exit_.code or 0)
        usage_error = None
        if code == ExitCode.BAD_INPUT:
            last = err.getvalue().strip().splitlines()[-1:] or ["usage error"]
            usage_error = InputError(last[0].removeprefix("kb-eval: error: "))
        return RunResult(code, None, (), (), usage_error, None, None, out.getvalue(), err.getvalue())
    diagnostics = Diagnostics()

    def stopped(code: int, error: InputError | None = None) -> RunResult:
        return RunResult(code, None, (), tuple(diagnostics.items), error, None, args, out.getvalue(), err.getvalue())

    try:
        check_gate_settings(args.regression_threshold, args.alpha)
        check_history_size(args.history_size)
        history_path = None if args.no_history else (args.history or args.kb_path / ".kb-eval-history.json")
        # Read the history and the baseline BEFORE the eval: one that cannot be read stops
        # the run (exit 2) before anything is written over it.
        history = read_history(history_path) if history_path is not None else None
        if history is not None:
            diagnostics.items.extend(history.warnings)
        baseline = read_baseline(args.baseline, validation_errors) if args.baseline is not None else None
        outcome = run_eval(options_from_args(args), diagnostics)
        comparison = compare_with_previous(outcome.report, history, baseline)
        gate = evaluate_gate(comparison, args.regression_threshold, args.alpha)
        outcome.report.update(comparison.to_json())
        outcome.report["gate"] = gate.to_json()
        validate_report(outcome.report)
        if history_path is not None and history is not None:
            saved = save_history(history_path, [outcome.report, *history.runs], args.history_size)
            diagnostics.items.extend(saved.warnings)
            # The report's warnings are the run's diagnostics; the pruning warning comes after the save.
            outcome.report["warnings"] = [item.to_json() for item in diagnostics.items]
        if args.save_baseline is not None:
            save_baseline(args.save_baseline, outcome.report)
    except InputError as error:
        _print_diagnostics(diagnostics, err)
        err.write(f"kb-eval: error: {error}\n")
        return stopped(ExitCode.BAD_INPUT, error)
    except ReportInvalid as error:
        err.write(f"kb-eval: internal error: {error}\n")
        return stopped(ExitCode.INTERNAL)
    except Exception:  # noqa: BLE001 - anything else is a bug, and must not pass for bad input
        err.write("kb-eval: internal error (please report this):\n" + traceback.format_exc())
        return stopped(ExitCode.INTERNAL)
    _print_diagnostics(diagnostics, err)
    err.write(render_warning([f.finding for f in outcome.findings]))
    try:
        code = emit(outcome, args, out, err, comparison, gate)
    except InputError as error:
        err.write(f"kb-eval: error: {error}\n")
        return stopped(ExitCode.BAD_INPUT, error)
    if code == ExitCode.OK and gate.tripped and args.fail_on_regression:
        err.write(f"kb-eval: regression: {gate.reason}\n")
        code = ExitCode.REGRESSION
    return RunResult(
        code, outcome.report, tuple(outcome.findings), tuple(diagnostics.items), None,
        str(outcome.golden.path), args, out.getvalue(), err.getvalue(),
    )


def main(argv: Sequence[str] | None = None, stdout: TextIO | None = None, stderr: TextIO | None = None) -> int:
    result = execute(argv)
    (stderr or sys.stderr).write(result.stderr_text)
    (stdout or sys.stdout).write(result.stdout_text)
    return result.exit_code


def compare_with_previous(
    report: dict[str, object], history: HistoryRead | None, baseline: dict[str, object] | None
) -> Comparison:
    """A baseline, when given, wins over the history; with neither there is nothing to compare."""
    if baseline is not None:
        return compare_runs(report, baseline, "baseline")
    if history is not None:
        return compare_with_history(report, history.runs)
    return no_previous("history disabled (--no-history) and no --baseline given")


def options_from_args(args: argparse.Namespace) -> EvalOptions:
    return EvalOptions(
        kb_path=args.kb_path,
        golden_path=args.golden,
        exclude=tuple(args.exclude),
        limit=args.limit,
        ks=tuple(args.k),
        weights=args.weights,
        tokenization=Tokenization(args.tokenization),
        cache_dir=args.cache_dir,
        external_retriever=external_retriever_factory(options_from_namespace(args)),
    )


def emit(
    outcome: EvalOutcome,
    args: argparse.Namespace,
    stdout: TextIO,
    stderr: TextIO,
    comparison: Comparison,
    gate: GateResult,
) -> int:
    document = to_json(outcome.report)
    if args.output is not None:
        try:
            write_atomically(args.output, document)
        except OSError as error:
            raise InputError(f"cannot write the report ({error.strerror})", file=str(args.output)) from error
    if args.format == "json":
        stdout.write(document)
    else:
        lines = ["", *comparison.text_lines(), *(gate.text_lines() if gate.evaluated else [])]
        stdout.write(render_text(outcome.report) + "\n".join(lines) + "\n")
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
    stderr.writelines(item.render() + "\n" for item in diagnostics.items)


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
