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
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from scanner.compare.comparison import BaseRequest, Comparison, Source, compare_runs, compare_with_history, no_previous
from scanner.compare.cost_budgets import CostBudgets, evaluate_cost_budgets
from scanner.compare.findings import FindingAtBase, findings_at_base
from scanner.compare.floors import Floors, evaluate_floors
from scanner.compare.gate import (
    GateResult,
    RegressionBudget,
    as_budget,
    check_budget_tags,
    check_named_tags,
    evaluate_gate,
)
from scanner.compare.report import Report
from scanner.corpus.parse_memo import ParseMemo
from scanner.evaluation.records import RunRecord
from scanner.foundation.diagnostics import Diagnostics
from scanner.foundation.files import write_atomically
from scanner.pipeline.evaluate import (
    EvalOptions,
    EvalOutcome,
    PhaseClock,
    answer,
    bind,
    head_side,
    judge,
    plan_evaluation,
    prepare,
    with_intervals,
)
from scanner.report.baseline import read_baseline, save_baseline
from scanner.report.document import report_document, run_document, serialise, validate, validation_errors
from scanner.report.history import HistoryPlan, HistoryRead, plan_history, read_history, write_history
from scanner.report.trec import export_trec
from scanner.retrievers.base import RetrieverKind

if TYPE_CHECKING:
    from scanner.pipeline.base import BaseEvaluation, ResolvedBase
    from scanner.pipeline.beside import BaseBesideHead


@dataclass(frozen=True, slots=True)
class RunPlan:
    """What to read and write around the evaluation (the evaluation's own options aside)."""

    history: Path | None
    """None: keep no history."""
    history_size: int
    baseline: Path | None
    save_baseline: Path | None
    output: Path | None
    regression_threshold: float | RegressionBudget
    alpha: float | None
    history_disabled_reason: str = "history disabled (--no-history) and no --baseline given"
    """What the comparison says when there is neither history nor baseline, in the interface's words."""
    baseline_ref: BaseRequest | None = None
    """Compare with the KB at this git revision, evaluated in this run (wins over the history)."""
    one_index: bool = False
    """The configured search answers from one index whatever tree it is given (an external one with
    no per-side index, server or `{kb}`), so it cannot answer for the KB at another revision."""
    export_trec: Path | None = None
    """Write the run and qrels the report came from into this folder (scanner/report/trec.py)."""
    fail_on_regression: bool = False
    """A tripped gate fails the step; recorded in the gate's result."""
    floors: Floors = field(default_factory=Floors)
    """`--fail-under`: a mean below its floor fails the step (scanner/compare/floors.py)."""
    cost_budgets: CostBudgets = field(default_factory=CostBudgets)
    """`--latency-budget`, `--answer-budget`: an answer spread over its budget fails the step."""


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


@dataclass(frozen=True, slots=True)
class Inputs:
    """What the run reads before it evaluates: anything wrong here stops it before a file is written."""

    history: HistoryRead | None
    baseline: RunRecord | None
    base: ResolvedBase | Comparison | None
    """The git revision to compare with, why it cannot be, or None (no --baseline-ref, or the pull
    request's base does not apply)."""


def run_pipeline(options: EvalOptions, plan: RunPlan, diagnostics: Diagnostics) -> RunOutcome:
    """The phases in order. Raises InputError (exit 2) for bad input, ReportInvalid (exit 3) for a
    report that fails its schema; nothing is written in either case."""
    inputs = read_inputs(options, plan, diagnostics)
    evaluation, base = evaluate_both(options, inputs.base, diagnostics)
    # Only the run the report is about is bootstrapped: the base's evaluation stays as cheap.
    run = with_intervals(evaluation.run)
    check_budget_tags(as_budget(plan.regression_threshold), run)
    check_named_tags(plan.floors.named_tags(), run, "--fail-under")
    comparison = compare(run, inputs, base, plan)
    gate = evaluate_gate(comparison, plan.regression_threshold, plan.alpha, run, enforced=plan.fail_on_regression)
    history_plan = plan_history_write(run, inputs.history, plan, diagnostics)
    if history_plan is not None and history_plan.warnings:
        run = dataclasses.replace(run, warnings=run.warnings + history_plan.warnings)
    findings_at_base = findings_against(evaluation.run, base, comparison, options.kb_path)
    report = Report(
        run, comparison, gate, findings_at_base, evaluate_floors(plan.floors, run),
        evaluate_cost_budgets(plan.cost_budgets, run.answers),
    )
    document = report_document(report)
    validate(document)
    json_text = serialise(document)
    write(plan, history_plan, document, json_text, run)
    history_runs = inputs.history.runs if inputs.history is not None else ()
    return RunOutcome(report, document, json_text, history_runs, evaluation)


def evaluate_both(
    options: EvalOptions, resolved: ResolvedBase | Comparison | None, diagnostics: Diagnostics
) -> tuple[EvalOutcome, BaseEvaluation | Comparison | None]:
    """The head's phases, and the base's beside them when there is a base revision to evaluate:
    plan (the golden set, once for both) -> the head prepared -> its retriever bound (the built-in
    one analyses the head's index) -> the base started, taking that analysis over -> the head
    answered and judged -> the base's answer."""
    clock = PhaseClock()
    evaluation_plan = plan_evaluation(options, diagnostics)
    beside = base_beside_head(resolved, options)
    builtin = options.retriever.kind is RetrieverKind.BUILTIN
    # Only the built-in search's analysis is taken over by the base.
    head = head_side(options, beside.memo if beside else None, keep_analysis=beside is not None and builtin)
    try:
        prepared = prepare(options, evaluation_plan, head, diagnostics, clock)
        if beside is not None and builtin:
            # Told before the analysis, the head keeps only these terms' postings for the base, and
            # its scorer's impacts take the place of every term count (no second array of them).
            prepared.index.keep_only_terms(beside.asked_terms(evaluation_plan))
        retriever = bind(options, prepared, clock)
        try:
            if beside is not None:
                beside.start(evaluation_plan, prepared.index)
                # The report's validator is built on its first use (the schema loaded and checked,
                # about a tenth of a second): here, on the core the base's child leaves free.
                validation_errors({}, 1)
            answers = answer(options, prepared, retriever, diagnostics, clock)
        finally:
            retriever.close()
        evaluation = judge(options, prepared, answers, diagnostics, clock)
    except BaseException:
        if beside is not None:
            beside.cancel()
        raise
    return evaluation, evaluate_base_side(beside)


def read_inputs(options: EvalOptions, plan: RunPlan, diagnostics: Diagnostics) -> Inputs:
    """The history, the baseline and the base revision, read BEFORE the evaluation: one that cannot
    be read, or a bad --baseline-ref, is exit 2 before anything is written."""
    history = read_history(plan.history) if plan.history is not None else None
    if history is not None:
        diagnostics.items.extend(history.warnings)
    baseline = read_baseline(plan.baseline, validation_errors) if plan.baseline is not None else None
    base: ResolvedBase | Comparison | None = None
    if plan.baseline_ref is not None:
        # Imported here: dulwich is about a fifth of the interpreter's memory at start, and only a
        # run that reads a git revision needs it.
        from scanner.pipeline.base import resolve_base

        base = resolve_base(options.kb_path, plan.baseline_ref, one_index=plan.one_index)
    return Inputs(history, baseline, base)


def base_beside_head(base: ResolvedBase | Comparison | None, options: EvalOptions) -> BaseBesideHead | None:
    """The base's evaluation, to start once the head's corpus is read (files both sides share are
    then taken from the memo)."""
    if base is None or isinstance(base, Comparison):
        return None
    from scanner.pipeline.beside import BaseBesideHead

    return BaseBesideHead(base, options, ParseMemo(), fork=options.retriever.kind is RetrieverKind.BUILTIN)


def evaluate_base_side(beside: BaseBesideHead | None) -> BaseEvaluation | Comparison | None:
    """The base's run, or why it could not be evaluated. Its run is only compared with: it never
    reaches the history, the report's runs or any file."""
    return beside.result() if beside is not None else None


def compare(run: RunRecord, inputs: Inputs, base: BaseEvaluation | Comparison | None, plan: RunPlan) -> Comparison:
    """With the base revision when there is one, else as without it (baseline, history)."""
    if base is not None:
        from scanner.pipeline.base import ResolvedBase, compare_with_base

        assert isinstance(inputs.base, ResolvedBase)  # a base was evaluated only when it resolved
        return compare_with_base(run, inputs.base, base)
    if isinstance(inputs.base, Comparison):
        return inputs.base  # the revision cannot be evaluated; the comparison says why
    return compare_with_previous(run, inputs.history, inputs.baseline, plan.history_disabled_reason)


def findings_against(
    run: RunRecord, base: BaseEvaluation | Comparison | None, comparison: Comparison, kb_path: Path
) -> tuple[FindingAtBase, ...] | None:
    """The head's findings told from the base's, when the base was evaluated and compared (a page
    the pull request moved without editing keeps its standing: moved_findings)."""
    from scanner.pipeline.base import moved_findings

    if base is None or isinstance(base, Comparison) or not comparison.compared:
        return None
    return findings_at_base(run, base.run, base.quoted, base.unchanged, moved_findings(run, base, kb_path))


def plan_history_write(
    run: RunRecord, history: HistoryRead | None, plan: RunPlan, diagnostics: Diagnostics
) -> HistoryPlan | None:
    if plan.history is None or history is None:
        return None
    history_plan = plan_history(plan.history, [run_document(run), *history.documents], plan.history_size)
    diagnostics.items.extend(history_plan.warnings)
    return history_plan


def write(
    plan: RunPlan, history_plan: HistoryPlan | None, document: dict[str, object], json_text: str, run: RunRecord
) -> None:
    """Every file, after the report validated: the history, the saved baseline, the report, the TREC export."""
    if plan.history is not None and history_plan is not None:
        write_history(plan.history, history_plan)
    if plan.save_baseline is not None:
        save_baseline(plan.save_baseline, document)
    if plan.output is not None:
        write_atomically(plan.output, json_text.encode("utf-8"), "report")
    if plan.export_trec is not None:
        export_trec(plan.export_trec, run)


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
