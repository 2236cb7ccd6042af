"""One whole run, in order: read what earlier runs left, evaluate, compare, gate, write.

The order is the safety rule: the history and the baseline are read BEFORE the
evaluation, so one that cannot be read stops the run (exit 2) before anything
is written over it; the report is built once, from records, and validated
BEFORE any file is written, so an invalid report (a kb-eval bug, exit 3) never
reaches a file; every file goes through the one serialiser and the one atomic
writer.

No rendering here: the caller (cli) prints. No rule either: each stage's rule
lives in its module (quotes, metrics, compare, gate, history).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from scanner.compare.comparison import BaseRequest, Comparison, Source, compare_runs, compare_with_history, no_previous
from scanner.compare.gate import GateResult, evaluate_gate
from scanner.compare.report import Report
from scanner.corpus.parse_memo import ParseMemo
from scanner.evaluation.records import RunRecord
from scanner.foundation.diagnostics import Diagnostics
from scanner.foundation.files import write_atomically
from scanner.pipeline.evaluate import EvalOptions, EvalOutcome, run_eval
from scanner.report.baseline import read_baseline, save_baseline
from scanner.report.document import report_document, run_document, serialise, validate, validation_errors
from scanner.report.history import HistoryPlan, HistoryRead, plan_history, read_history, write_history

if TYPE_CHECKING:
    from scanner.git.base import BaseBesideHead, ResolvedBase


@dataclass(frozen=True, slots=True)
class RunPlan:
    """What to read and write around the evaluation (the evaluation's own options aside)."""

    history: Path | None
    """None: keep no history."""
    history_size: int
    baseline: Path | None
    save_baseline: Path | None
    output: Path | None
    regression_threshold: float
    alpha: float | None
    history_disabled_reason: str = "history disabled (--no-history) and no --baseline given"
    """What the comparison says when there is neither history nor baseline, in the interface's words."""
    baseline_ref: BaseRequest | None = None
    """Issue 17: compare with the KB at this git revision, evaluated in this run (wins over the history)."""
    builtin_retriever: bool = True
    """False: an external retriever answers, which cannot answer for the KB at another revision."""


@dataclass(frozen=True, slots=True)
class RunOutcome:
    report: Report
    document: dict[str, object]
    """The validated JSON report, as written to --output."""
    json_text: str
    """`document` through the one serialiser: what --output and --format json hold."""
    history: tuple[RunRecord, ...]
    """The earlier runs read from the history, newest first (for the trend)."""
    evaluation: EvalOutcome


def run_pipeline(options: EvalOptions, plan: RunPlan, diagnostics: Diagnostics) -> RunOutcome:
    """Raises InputError (exit 2) for bad input, ReportInvalid (exit 3) for a report that fails
    its schema; nothing is written in either case."""
    history = read_history(plan.history) if plan.history is not None else None
    if history is not None:
        diagnostics.items.extend(history.warnings)
    baseline = read_baseline(plan.baseline, validation_errors) if plan.baseline is not None else None

    # Issue 17: the revision is resolved BEFORE the evaluation (a bad --baseline-ref is exit 2 before
    # anything is written) and evaluated after it, taking the files both sides share from the memo.
    # Its run is only compared with: it never reaches the history, the report's runs or any file.
    base: ResolvedBase | Comparison | None = None
    beside: BaseBesideHead | None = None
    if plan.baseline_ref is not None:
        # Imported here: dulwich is about a fifth of the interpreter's memory at start, and only a
        # run that reads a git revision needs it.
        from scanner.git.base import BaseBesideHead, ResolvedBase, resolve_base

        base = resolve_base(options.kb_path, plan.baseline_ref, external_retriever=not plan.builtin_retriever)
        beside = BaseBesideHead(base, options, ParseMemo()) if isinstance(base, ResolvedBase) else None
    try:
        evaluation = run_eval(
            dataclasses.replace(
                options,
                parse_memo=beside.memo if beside else None,
                after_read=beside.start if beside else None,
            ),
            diagnostics,
        )
    except BaseException:
        if beside is not None:
            beside.cancel()
        raise
    run = evaluation.run
    if beside is not None:
        from scanner.git.base import compare_with_base

        comparison = compare_with_base(run, beside.base, beside.result())
    elif isinstance(base, Comparison):
        comparison = base  # the revision cannot be evaluated; the comparison says why
    else:  # no --baseline-ref, or the pull request's base does not apply (no git checkout)
        comparison = compare_with_previous(run, history, baseline, plan.history_disabled_reason)
    gate = evaluate_gate(comparison, plan.regression_threshold, plan.alpha)

    history_plan: HistoryPlan | None = None
    if plan.history is not None and history is not None:
        history_plan = plan_history(plan.history, [run_document(run), *history.documents], plan.history_size)
        if history_plan.warnings:
            run = dataclasses.replace(run, warnings=run.warnings + history_plan.warnings)
            diagnostics.items.extend(history_plan.warnings)

    report = Report(run, comparison, gate)
    document = report_document(report)
    validate(document)
    json_text = serialise(document)

    if plan.history is not None and history_plan is not None:
        write_history(plan.history, history_plan)
    if plan.save_baseline is not None:
        save_baseline(plan.save_baseline, document)
    if plan.output is not None:
        write_atomically(plan.output, json_text.encode("utf-8"), "report")
    return RunOutcome(report, document, json_text, history.runs if history is not None else (), evaluation)


def compare_with_previous(
    run: RunRecord, history: HistoryRead | None, baseline: RunRecord | None, nothing_reason: str
) -> Comparison:
    """A baseline, when given, wins over the history; with neither there is nothing to compare."""
    if baseline is not None:
        return compare_runs(run, baseline, Source.BASELINE)
    if history is not None:
        return compare_with_history(run, history.runs)
    return no_previous(nothing_reason)


__all__ = ["GateResult", "RunOutcome", "RunPlan", "run_pipeline"]
