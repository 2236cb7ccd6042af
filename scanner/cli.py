"""Command line: parse, wire, print, return an exit code. No rule lives here.

Results go to stdout, diagnostics to stderr. Exit codes are `errors.ExitCode`.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import sys
import traceback
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from . import __version__
from .diagnostics import Diagnostic, Diagnostics
from .errors import ExitCode, InputError
from .evaluate import DEFAULT_KS, EvalOptions
from .gate import DEFAULT_REGRESSION_THRESHOLD
from .history import DEFAULT_HISTORY_SIZE
from .pipeline import RunOutcome, RunPlan, run_pipeline
from .render import console
from .render.console import SafeStream
from .render.json_report import ReportInvalid
from .render.text import render_text
from .retrievers.builtin import FieldWeights, Tokenization
from .retrievers.factory import add_retriever_arguments, external_retriever_factory, options_from_namespace
from .run import Report


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
    fields carry the same run as records, so nothing has to be parsed back out of text.
    """

    exit_code: int
    outcome: RunOutcome | None
    """The run; None when it stopped before a report was built (exit 2 or 3)."""
    diagnostics: tuple[Diagnostic, ...]
    input_error: InputError | None
    """Why the run was exit 2 (usage errors from the parser included), else None."""
    args: argparse.Namespace | None
    """The parsed arguments; None when they did not parse."""
    stdout_text: str
    stderr_text: str

    @property
    def report(self) -> Report | None:
        return self.outcome.report if self.outcome is not None else None


def execute(argv: Sequence[str] | None = None) -> RunResult:
    """Run the CLI on `argv` without printing anything: the text goes into the result.

    Every line passes through `log_safe` on its way into the result (render/console.py)."""
    out, err = io.StringIO(), io.StringIO()
    stdout, stderr = SafeStream(out), SafeStream(err)
    try:
        # argparse writes usage errors, --help and --version to the sys streams.
        with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):  # type: ignore[type-var]
            args = build_parser().parse_args(argv)
    except SystemExit as exit_:
        stdout.flush()
        stderr.flush()
        code = int(exit_.code or 0)
        usage_error = None
        if code == ExitCode.BAD_INPUT:
            last = err.getvalue().strip().splitlines()[-1:] or ["usage error"]
            usage_error = InputError(last[0].removeprefix("kb-eval: error: "))
        return RunResult(code, None, (), usage_error, None, out.getvalue(), err.getvalue())
    diagnostics = Diagnostics()

    def finished(code: int, outcome: RunOutcome | None = None, error: InputError | None = None) -> RunResult:
        stdout.flush()
        stderr.flush()
        return RunResult(code, outcome, tuple(diagnostics.items), error, args, out.getvalue(), err.getvalue())

    try:
        check_kb_folder(args.kb_path)
        outcome = run_pipeline(options_from_args(args), plan_from_args(args), diagnostics)
    except InputError as error:
        _print_diagnostics(diagnostics, stderr)
        stderr.write(console.error_lines(error))
        return finished(ExitCode.BAD_INPUT, error=error)
    except ReportInvalid as error:
        stderr.write(f"kb-eval: internal error: {error}\n")
        return finished(ExitCode.INTERNAL)
    except Exception:  # noqa: BLE001 - anything else is a bug, and must not pass for bad input
        stderr.write("kb-eval: internal error (please report this):\n" + traceback.format_exc())
        return finished(ExitCode.INTERNAL)
    _print_diagnostics(diagnostics, stderr)
    stderr.write(console.findings_warning(outcome.report.run.findings))
    if args.format == "json":
        stdout.write(outcome.json_text)
    else:
        stdout.write(render_text(outcome.report))
    code = ExitCode.OK
    gate = outcome.report.gate
    if gate.tripped and args.fail_on_regression:
        stderr.write(console.regression_line(gate))
        code = ExitCode.REGRESSION
    return finished(code, outcome)


def main(argv: Sequence[str] | None = None, stdout: TextIO | None = None, stderr: TextIO | None = None) -> int:
    arguments = list(sys.argv[1:] if argv is None else argv)
    if arguments[:1] == ["init"]:
        from . import init  # the `kb-eval init` subcommand (scanner/init.py)

        return init.main(arguments[1:], stdout, stderr)
    result = execute(arguments)
    try:
        (stderr or sys.stderr).write(result.stderr_text)
        (stdout or sys.stdout).write(result.stdout_text)
        (stdout or sys.stdout).flush()
    except (OSError, ValueError):
        # A closed pipe or stream while printing is not a regression: never let it pass as exit 1.
        return ExitCode.INTERNAL if result.exit_code == ExitCode.OK else result.exit_code
    return result.exit_code


def check_kb_folder(kb_path: Path) -> None:
    """A mistyped kb-path is said in those words, before the golden-file lookup in it
    would report "no golden file found" and send the user looking for the wrong thing."""
    if kb_path.is_dir():
        return
    raise InputError(
        "knowledge base folder not found" if not os.path.lexists(kb_path) else "knowledge base path is not a folder",
        file=str(kb_path),
        hint="kb-path is relative to the current folder (in the Action, the repository root); check its spelling",
    )


def plan_from_args(args: argparse.Namespace) -> RunPlan:
    return RunPlan(
        history=None if args.no_history else (args.history or args.kb_path / ".kb-eval-history.json"),
        history_size=args.history_size,
        baseline=args.baseline,
        save_baseline=args.save_baseline,
        output=args.output,
        regression_threshold=args.regression_threshold,
        alpha=args.alpha,
    )


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


def _print_diagnostics(diagnostics: Diagnostics, stderr: SafeStream) -> None:
    for item in diagnostics.items:
        stderr.write(console.diagnostic_line(item) + "\n")


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
