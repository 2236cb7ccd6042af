"""Every sentence more than one output says, written once.

The renderers (text, Markdown, annotations, stderr) compose these; none
re-words them. Functions here return plain text with untrusted parts left
as they are: each renderer escapes for its own medium (`shown()` for the
log, Markdown escaping for the summary).
"""

from __future__ import annotations

import enum
from collections.abc import Sequence

from scanner.compare.comparison import Comparison, ComparisonStatus, Source
from scanner.compare.findings import FindingAtBase
from scanner.compare.gate import GateResult, gate_cannot_run
from scanner.compare.report import Report
from scanner.evaluation.records import LocatedFinding, displacing_first
from scanner.scan.quotes import CHECK_NAME, MIN_QUOTED_QUERIES, QuotedQuery

TWO_CAUSES = (
    "Either these notes leaked into the corpus (a note about the test makes the eval look better than search is), "
    "or the queries were written from them and the documents belong in `expected`. "
    "kb-eval changes neither, and a finding never fails the step."
)
"""Why a document quotes golden queries: the two causes the decision record names, undecided."""

CORPUS_CHANGED_CONSEQUENCE = "a delta may reflect the corpus, not retrieval"


def rank_phrase(rank: int | None) -> str:
    """Where a document stood in a query's list: `rank 3`, or that it was not returned."""
    return f"rank {rank}" if rank is not None else "not in top_k"


def findings_headline(count: int) -> str:
    """`2 documents quote 2 or more golden queries verbatim (golden-queries-quoted)`."""
    subject = "document quotes" if count == 1 else "documents quote"
    return f"{count} {subject} {MIN_QUOTED_QUERIES} or more golden queries verbatim ({CHECK_NAME})"


def no_findings() -> str:
    return f"No document quotes {MIN_QUOTED_QUERIES} or more golden queries verbatim ({CHECK_NAME})."


def displaced_phrase(rank: int | None, displaces_expected: bool | None, since_base: bool | None = None) -> str:
    """What a quoting document did to the labelled answer of one query it quotes. `since_base`:
    whether the answer ranks worse than at the pull request's base (None: not compared with one);
    a displacement the base already had is stated, not blamed on the page."""
    if displaces_expected and since_base is False:
        return f"{rank_phrase(rank)}, above the expected document already at the base commit"
    if displaces_expected:
        return f"took {rank_phrase(rank)} above the expected document"
    if displaces_expected is False:
        return f"{rank_phrase(rank)}, below the expected document"
    return rank_phrase(rank)


AT_BASE = "already at the base commit"
"""A finding the pull request did not bring: the base commit's corpus had it too."""


def quoted_phrase(quoted: QuotedQuery, at_base: FindingAtBase | None) -> str:
    """`displaced_phrase` for one quoted query of a finding, told from the base when known."""
    since_base = None if at_base is None else quoted.query_id in at_base.newly_displacing
    return displaced_phrase(quoted.rank_in_top_k, quoted.displaces_expected, since_base)


def reading_order(
    findings: Sequence[LocatedFinding], at_base: Sequence[FindingAtBase] | None
) -> list[LocatedFinding]:
    """The order a reader meets findings in: what this pull request brought first, then what the
    base already had; in each, those that displaced a labelled answer first (displacing_first)."""
    old = {item.path for item in at_base or () if item.present_at_base}
    return sorted(displacing_first(findings), key=lambda located: located.finding.path in old)


def findings_at_base_note(findings_at_base: Sequence[FindingAtBase] | None) -> str | None:
    """`1 of them was already at the base commit (not annotated again).`, or None."""
    if not findings_at_base:
        return None
    old = sum(1 for item in findings_at_base if item.present_at_base)
    if not old:
        return "None of them was at the base commit: this pull request brought them."
    if old == len(findings_at_base):
        return f"All of them were {AT_BASE}: this pull request did not bring them (not annotated again)."
    return f"{old} of them {'was' if old == 1 else 'were'} {AT_BASE} (not annotated again)."


def missed_headline(count: int, largest_k: int) -> str:
    noun = "query" if count == 1 else "queries"
    return f"{count} {noun} missed an expected document in the top {largest_k}"


def all_found(largest_k: int) -> str:
    return f"Every query found all its expected documents in the top {largest_k}."


def corpus_note(comparison: Comparison) -> str | None:
    """The sentence every output carries when the corpus changed (or it is unknown whether it did)."""
    corpus = comparison.corpus
    if not comparison.compared or corpus is None or corpus.changed is False:
        return None
    if comparison.source is Source.GIT:
        # Against the pull request's base the corpus change is what is measured, not a caveat.
        return None
    if corpus.changed is None:
        return f"Whether the corpus changed since the compared run is unknown ({corpus.description})."
    return f"The corpus changed since the compared run ({corpus.description}): {CORPUS_CHANGED_CONSEQUENCE}."


class Verdict(enum.Enum):
    """What a reviewer needs first: did this change make search better or worse?"""

    REGRESSED = "regressed"
    """The gate tripped."""
    WORSE = "worse"
    """A metric fell, within the gate's threshold."""
    MIXED = "mixed"
    IMPROVED = "improved"
    UNCHANGED = "unchanged"
    NOT_COMPARED = "not compared"


def verdict(report: Report) -> Verdict:
    comparison = report.comparison
    if not comparison.compared:
        return Verdict.NOT_COMPARED
    if report.gate.tripped:
        return Verdict.REGRESSED
    fell = any(d.delta < 0 for d in comparison.metric_deltas)
    rose = any(d.delta > 0 for d in comparison.metric_deltas)
    if fell and rose:
        return Verdict.MIXED
    if fell:
        return Verdict.WORSE
    if rose:
        return Verdict.IMPROVED
    return Verdict.UNCHANGED


VERDICT_WORDS = {
    Verdict.REGRESSED: "Regressed",
    Verdict.WORSE: "Worse, within the threshold",
    Verdict.MIXED: "Mixed",
    Verdict.IMPROVED: "Improved",
    Verdict.UNCHANGED: "Unchanged",
    Verdict.NOT_COMPARED: "Not compared",
}


def compared_with(comparison: Comparison) -> str:
    """`the base revision 1a2b3c4 (main) of 2026-12-02T15:44:16Z`, `the baseline of ...`."""
    previous = comparison.previous
    if previous is None:
        return ""
    what = {Source.HISTORY: "the previous run in the history", Source.BASELINE: "the baseline", Source.GIT: "the base revision"}
    name = what[comparison.source] if comparison.source is not None else "the previous run"
    if comparison.revision is not None:  # which commit, and the ref it was named by
        name += f" {comparison.revision.commit[:7]} ({comparison.revision.ref})"
    return f"{name} of {previous.timestamp}"


def not_compared_reason(comparison: Comparison) -> str:
    """Why there is no comparison, in one sentence."""
    # The reasons end without a full stop; the hint is its own sentence after one.
    hint = f". To compare: {comparison.hint}." if comparison.hint else ""
    if comparison.status is ComparisonStatus.INCOMPARABLE:
        return "Not compared with the previous run: " + "; ".join(comparison.reasons) + hint
    return "No comparison: " + "; ".join(comparison.reasons) + hint


def gate_not_run(gate: GateResult, comparison: Comparison) -> str:
    """`fail-on-regression` was asked for but there was nothing comparable: say so, never silence.
    When the cause is one the workflow can fix (a pull request's base missing from the clone), the
    step fails, and the sentence says so: a red step whose summary reads like a warning is a puzzle."""
    why = "; ".join(comparison.reasons) or "nothing to compare with"
    hint = f" To compare: {comparison.hint}." if comparison.hint else ""
    if gate_cannot_run(comparison) is not None:
        return f"The regression gate cannot run, so the step fails (fail-on-regression is true): {why}.{hint}"
    return f"The regression gate could not run: {why}.{hint}"


def gate_line(gate: GateResult) -> str:
    """The gate's verdict for the log (its reason quotes query ids through shown())."""
    return ("REGRESSION: " if gate.tripped else "Regression gate: ") + gate.reason


def gate_headline(gate: GateResult) -> str:
    """The gate's verdict without query ids, for outputs that list the queries themselves."""
    if gate.tripped:
        fell = ", ".join(f"{v.metric.label} {v.delta:+.4f}" for v in gate.verdicts if v.counts)
        return f"Regression: dropped by more than {gate.threshold:g}: {fell}"
    return f"Regression gate passed: {gate.reason}"


def trend_legend(series: Sequence[tuple[str, str]]) -> str:
    """Under the trend chart: which line is which, for a renderer that draws no legend."""
    return "Lines: " + "; ".join(f"{name} ({_COLOUR_NAMES.get(colour, colour)})" for name, colour in series) + "."


_COLOUR_NAMES = {"#0072B2": "blue", "#E69F00": "orange"}
