"""Command line: parse, wire, print, return an exit code; the rules are in the packages it wires.

Results go to stdout, diagnostics to stderr. Exit codes are `errors.ExitCode`.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import sys
import traceback
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TextIO

from scanner import __version__
from scanner.cli.parser import Parser
from scanner.compare.comparison import BaseRequest
from scanner.compare.cost_budgets import CostBudgets
from scanner.compare.gate import gate_cannot_run
from scanner.compare.report import Report
from scanner.corpus.kb_files import check_kb_folder
from scanner.corpus.reader import CorpusCaps
from scanner.foundation.diagnostics import Diagnostic, Diagnostics
from scanner.foundation.errors import ExitCode, InputError
from scanner.foundation.files import write_atomically
from scanner.foundation.untrusted_text import shown
from scanner.foundation.workers import keep_freed_memory
from scanner.github.workflow import append_summary
from scanner.pipeline.evaluate import EvalOptions
from scanner.pipeline.run import RunOutcome, RunPlan, run_pipeline
from scanner.render import console, phrases
from scanner.render.console import SafeStream
from scanner.render.markdown import SummaryContext, render_input_error, render_summary
from scanner.render.text import render_text
from scanner.report.document import ReportInvalid
from scanner.report.history import DEFAULT_HISTORY_NAME
from scanner.settings.arguments import add_arguments, read_cli
from scanner.settings.declaration import Interface, RunSettings, in_interface_words
from scanner.settings.retriever import answers_per_side, choose_kind, retriever_builder

EPILOG = """\
commands:
  kb-eval init --kb-path DIR   write a starter golden file (and the .gitignore lines for the
                               history) into the KB folder; kb-eval init --help for more
  kb-eval import --qrels FILE --queries FILE
  kb-eval import --quepid FILE  a golden file from TREC qrels or Quepid ratings;
                               kb-eval import --help for more
  kb-eval compare REPORT...    several runs' reports side by side, with paired significance
                               against the first; kb-eval compare --help for more

exit codes:
  0  the run completed (findings never change this)
  1  --fail-on-regression was given and an aggregate metric regressed, or a mean is below
     its --fail-under floor
  2  bad input or usage; the message names the file, line or flag
  3  internal error (a bug in kb-eval)

examples:
  kb-eval init --kb-path docs
  kb-eval --kb-path docs --report kb-eval-report.json
  kb-eval --kb-path docs --http-url http://localhost:8750/search --concurrency 4
"""


def build_parser() -> argparse.ArgumentParser:
    """The CLI's parser: every flag comes from scanner/settings/declaration.py's declarations."""
    parser = Parser(
        prog="kb-eval",
        description="Measure a Markdown knowledge base's search against a golden query set.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"kb-eval {__version__}")
    add_arguments(parser)
    return parser


def parse_cli(argv: Sequence[str] | None = None) -> RunSettings:
    """The command line as checked settings.

    argparse errors (an unknown flag, a missing value), --help and --version
    raise SystemExit as argparse does; a refused value or combination raises
    InputError naming the flag.
    """
    settings = read_cli(build_parser().parse_args(argv))
    choose_kind(settings)  # a setting of another retriever stops the run before anything is read
    return settings


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
    args: RunSettings | None
    """The parsed settings; None when they did not parse."""
    stdout_text: str
    stderr_text: str

    @property
    def report(self) -> Report | None:
        return self.outcome.report if self.outcome is not None else None


def execute(argv: Sequence[str] | RunSettings | None = None) -> RunResult:
    """Run the CLI on `argv` without printing anything: the text goes into the result.

    The Action passes the settings it read and checked itself (in its own words), so
    nothing is turned back into text and checked a second time.
    Every line passes through `log_safe` on its way into the result (render/console.py)."""
    out, err = io.StringIO(), io.StringIO()
    stdout, stderr = SafeStream(out), SafeStream(err)
    try:
        # argparse writes usage errors, --help and --version to the sys streams.
        with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):  # type: ignore[type-var]
            args = argv if isinstance(argv, RunSettings) else parse_cli(argv)
    except InputError as error:
        stderr.write(console.error_lines(error))
        stdout.flush()
        stderr.flush()
        return RunResult(ExitCode.BAD_INPUT, None, (), error, None, out.getvalue(), err.getvalue())
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
        check_kb_folder(
            args.kb_path,
            "kb-path is relative to the current folder (in the Action, the repository root); check its spelling",
        )
        outcome = run_pipeline(options_from_args(args), plan_from_args(args), diagnostics)
    except InputError as raised:
        # Refusals raised below the settings name CLI flags; in a workflow the person wrote inputs.
        worded = in_interface_words(raised, args.interface)
        _print_diagnostics(diagnostics, stderr)
        stderr.write(console.error_lines(worded))
        write_summaries(args, render_input_error(str(worded)), stderr)
        return finished(ExitCode.BAD_INPUT, error=worded)
    except ReportInvalid as error:
        stderr.write(f"{phrases.INTERNAL_ERROR}: {error}\n")
        return finished(ExitCode.INTERNAL)
    except Exception:  # noqa: BLE001 - anything else is a bug, and must not pass for bad input
        stderr.write(phrases.internal_error_log(traceback.format_exc()))
        return finished(ExitCode.INTERNAL)
    _print_diagnostics(diagnostics, stderr)
    stderr.write(console.findings_warning(outcome.report.run.findings, outcome.report.findings_at_base))
    write_summaries(args, summary_markdown(args, outcome, os.environ), stderr)
    if args.format == "json":
        stdout.write(outcome.json_text)
    else:
        stdout.write(render_text(outcome.report))
    code = ExitCode.OK
    gate = outcome.report.gate
    if args.fail_on_regression and not gate.evaluated:  # a gate that could not run says so
        blocked = gate_cannot_run(outcome.report.comparison)
        if blocked is not None:
            worded = in_interface_words(blocked, args.interface)
            stderr.write(console.error_lines(worded))
            return finished(ExitCode.BAD_INPUT, outcome, worded)
        stderr.write(f"kb-eval: warning: {phrases.gate_not_run(gate, outcome.report.comparison)}\n")
    if gate.tripped and args.fail_on_regression:
        stderr.write(console.regression_line(gate))
        code = ExitCode.REGRESSION
    if outcome.report.floors.failed:
        stderr.write(f"kb-eval: {phrases.floors_failed(outcome.report.floors)}\n")
        code = ExitCode.REGRESSION
    if outcome.report.costs.failed:
        stderr.write(f"kb-eval: {phrases.costs_failed(outcome.report.costs)}\n")
        code = ExitCode.REGRESSION
    return finished(code, outcome)


def main(argv: Sequence[str] | None = None, stdout: TextIO | None = None, stderr: TextIO | None = None) -> int:
    arguments = list(sys.argv[1:] if argv is None else argv)
    if arguments[:1] == ["init"]:
        from scanner.cli import init  # the `kb-eval init` subcommand

        return init.main(arguments[1:], stdout, stderr)
    if arguments[:1] == ["compare"]:
        from scanner.cli import compare  # the `kb-eval compare` subcommand

        return compare.main(arguments[1:], stdout, stderr)
    if arguments[:1] == ["import"]:
        from scanner.cli import importing  # the `kb-eval import` subcommand

        return importing.main(arguments[1:], stdout, stderr)
    result = execute(arguments)
    try:
        (stderr or sys.stderr).write(result.stderr_text)
        (stdout or sys.stdout).write(result.stdout_text)
        (stdout or sys.stdout).flush()
    except (OSError, ValueError):
        # A closed pipe or stream while printing is not a regression: never let it pass as exit 1.
        return ExitCode.INTERNAL if result.exit_code == ExitCode.OK else result.exit_code
    return result.exit_code


def summary_markdown(args: RunSettings, outcome: RunOutcome, environ: Mapping[str, str]) -> str:
    """The Markdown Action mode writes to the step summary, for this run of the command line: the
    same renderer and context (links to the files when the runner's GITHUB_* variables say where)."""
    from scanner.action.event import read_event, source_links  # the runner's variables, read once here

    context = SummaryContext(
        kb_path=str(args.kb_path),
        report_path=str(args.output) if args.output is not None else None,
        links=source_links(environ, read_event(environ)),
        history=outcome.history,
    )
    return render_summary(outcome.report, context)


def write_summaries(args: RunSettings, markdown: str, stderr: SafeStream) -> None:
    """`--summary FILE` (written whole, atomically) and, on the command line, the step summary when
    GITHUB_STEP_SUMMARY is set (a workflow's `run:` step): appended, as every step does. Action mode
    writes its own step summary, with its inputs (scanner/action/mode.py)."""
    if args.interface is not Interface.CLI:
        return
    if args.summary_file is not None:
        try:
            write_atomically(args.summary_file, markdown.encode("utf-8"), "summary")
        except (InputError, OSError) as error:
            stderr.write(f"kb-eval: warning: --summary {shown(str(args.summary_file))} not written: {error}\n")
    step_summary = os.environ.get("GITHUB_STEP_SUMMARY")
    if step_summary:
        try:
            append_summary(step_summary, markdown)
        except OSError as error:
            stderr.write(f"kb-eval: warning: GITHUB_STEP_SUMMARY not written: {error}\n")


def plan_from_args(args: RunSettings) -> RunPlan:
    return RunPlan(
        history=None if args.no_history else (args.history or args.kb_path / DEFAULT_HISTORY_NAME),
        history_size=args.history_size,
        baseline=args.baseline,
        save_baseline=args.save_baseline,
        output=args.output,
        regression_threshold=args.regression_threshold,
        alpha=args.alpha,
        history_disabled_reason=(
            "history disabled (--no-history) and no --baseline given" if args.interface is Interface.CLI
            else "the history input is empty and no baseline was given"
        ),
        baseline_ref=baseline_request(args),
        one_index=not answers_per_side(args),
        export_trec=args.export_trec,
        fail_on_regression=args.fail_on_regression,
        floors=args.fail_under,
        cost_budgets=CostBudgets(time=args.latency_budget.time, size=args.answer_budget.size),
    )


def baseline_request(args: RunSettings) -> BaseRequest | None:
    """--baseline-ref, refused with --baseline (one thing to compare with)."""
    if args.baseline_ref is not None and args.baseline is not None:
        raise InputError(
            "--baseline and --baseline-ref both name what to compare with",
            field="--baseline-ref", hint="give one of them",
        )
    return args.baseline_ref


def options_from_args(args: RunSettings) -> EvalOptions:
    return EvalOptions(
        kb_path=args.kb_path,
        golden_path=args.golden,
        exclude=tuple(args.exclude),
        limit=args.limit,
        ks=tuple(args.k),
        relevance_level=args.relevance_level,
        cache_dir=args.cache_dir,
        corpus_caps=CorpusCaps(args.max_files, args.max_mib, args.max_sections, args.max_postings, args.max_terms),
        retriever=retriever_builder(args),
        score_level=args.score_level,
        interface=args.interface,
    )


def _print_diagnostics(diagnostics: Diagnostics, stderr: SafeStream) -> None:
    for item in diagnostics.items:
        stderr.write(console.diagnostic_line(item) + "\n")


def run() -> None:
    """Console-script entry point. The allocator's setting is the program's, made here and in
    entrypoint.py: `main` is also called in process (tests, benches), whose heap it must leave as
    it found it."""
    keep_freed_memory()
    raise SystemExit(main())
