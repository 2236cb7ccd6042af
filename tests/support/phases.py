"""The head's phases run by hand: the whole evaluation of the checkout, or keeping what the pipeline
hands the base (its plan and index)."""

from __future__ import annotations

from scanner.corpus.parse_memo import ParseMemo
from scanner.foundation.diagnostics import Diagnostics
from scanner.pipeline.evaluate import (
    EvalOptions,
    EvalOutcome,
    Plan,
    answer,
    bind,
    evaluate_side,
    head_side,
    judge,
    plan_evaluation,
    prepare,
)
from scanner.search.index import Index


def head_keeping_analysis(options: EvalOptions, memo: ParseMemo | None) -> tuple[EvalOutcome, Plan, Index]:
    """The head evaluated as run_pipeline does when a base follows: its memo filled, its analysis kept."""
    diagnostics = Diagnostics()
    plan = plan_evaluation(options, diagnostics)
    prepared = prepare(options, plan, head_side(options, memo, keep_analysis=True), diagnostics)
    retriever = bind(options, prepared)
    try:
        answers = answer(options, prepared, retriever, diagnostics)
    finally:
        retriever.close()
    return judge(options, prepared, answers, diagnostics), plan, prepared.index


def evaluate_head(options: EvalOptions) -> EvalOutcome:
    """The checkout's KB evaluated as a run evaluates its head, without history or comparison."""
    diagnostics = Diagnostics()
    return evaluate_side(options, plan_evaluation(options, diagnostics), head_side(options), diagnostics)
