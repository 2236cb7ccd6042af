"""Every sentence more than one output says, written once.

The renderers (text, Markdown, annotations, stderr) compose these; none
re-words them. Functions here return plain text with untrusted parts left
as they are: each renderer escapes for its own medium (`shown()` for the
log, Markdown escaping for the summary).
"""

from __future__ import annotations

import enum
import json
from collections.abc import Callable, Collection, Sequence

from scanner.compare.comparison import Comparison, ComparisonStatus, Source
from scanner.compare.cost_budgets import CostCheck, CostKind, CostResult
from scanner.compare.findings import FindingAtBase
from scanner.compare.floors import FloorCheck, FloorResult
from scanner.compare.gate import GateResult, MetricVerdict, gate_cannot_run
from scanner.compare.pooling import QueryPool
from scanner.compare.report import Report
from scanner.evaluation.costs import AnswerCosts, Spread
from scanner.evaluation.health import GoldenHealth
from scanner.evaluation.records import LocatedFinding, displacing_first
from scanner.foundation.untrusted_text import shown
from scanner.golden.file import ExpectedEntry
from scanner.metrics.catalogue import BRIEF
from scanner.retrievers.base import Hit
from scanner.scan.quotes import CHECK_NAME, MIN_QUOTED_QUERIES, QuotedQuery

TWO_CAUSES = (
    "Either these are notes about the test, which take the labelled answers' places in the ranking "
    "(the eval then looks worse than search is), "
    "or the queries were written from them and the documents belong in `expected`. "
    "kb-eval changes neither, and a finding never fails the step."
)
"""Why a document quotes golden queries: the two causes the decision record names, undecided."""

CORPUS_CHANGED_CONSEQUENCE = "a delta may reflect the corpus, not retrieval"

INTERNAL_ERROR = "kb-eval: internal error"
"""How exit 3 is named: in the log, whichever process caught the bug, and as its annotation's title."""


def internal_error_log(traceback_text: str) -> str:
    """What the log shows of a bug caught as an exception: its name, the request, the traceback."""
    return f"{INTERNAL_ERROR} (please report this):\n{traceback_text}"


SECTION_MARK = " › "
"""Between a path and a heading wherever a section is named: `cli.md › Enable tab completion`."""


def hit_label(hit: Hit) -> str:
    """`path › heading` of a returned section (the path alone for text before the first heading),
    so three sections of one document never read as the same answer three times."""
    return hit.path + (SECTION_MARK + hit.heading if hit.heading else "")


def expected_label(entry: ExpectedEntry) -> str:
    """An expected entry as written: `path › parent › heading (and its subsections)`, a group as
    `any of: a | b`."""
    if entry.any_of:
        return "any of: " + " | ".join(expected_label(member) for member in entry.any_of)
    label = entry.path
    if entry.parent is not None:
        label += SECTION_MARK + entry.parent
    if entry.heading is not None:
        label += SECTION_MARK + entry.heading
    return label + (" (and its subsections)" if entry.subsections else "")


def moved_labelled_page(now: str, labelled: str) -> str:
    """What sits above a query's labelled answer when it is that answer, moved: the label names the
    old path, so the page is not blamed for pushing itself down."""
    return f"{now}: the labelled {labelled}, moved (the label names the old path)"


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
    """A metric fell, and the gate did not trip (within the threshold, or chance explains it)."""
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
    # judged@k moving says the labels cover more or less of the top k, not that search changed.
    searched = [d for d in comparison.metric_deltas if not d.metric.judges_the_golden_set]
    fell = any(d.delta < 0 for d in searched)
    rose = any(d.delta > 0 for d in searched)
    if fell and rose:
        return Verdict.MIXED
    if fell:
        return Verdict.WORSE
    if rose:
        return Verdict.IMPROVED
    return Verdict.UNCHANGED


VERDICT_WORDS = {
    Verdict.REGRESSED: "Regressed",
    Verdict.WORSE: "Worse, not a regression",
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


class GateState(enum.Enum):
    """What the gate did, as one state: every output says the gate's part from this alone."""

    OFF = "off"
    """fail-on-regression is off and nothing was compared: nothing to say about a gate."""
    ADVICE_PASSED = "advice-passed"
    """fail-on-regression is off; had it been on, the step would have passed."""
    ADVICE_TRIPPED = "advice-tripped"
    """fail-on-regression is off; the drop is past the gate's rule, and the step still passes."""
    PASSED = "passed"
    FAILED = "failed"
    """The step fails with exit 1."""
    CANNOT_RUN_FAILS = "cannot-run-fails"
    """Nothing compared for a reason the workflow can fix (the base commit missing): exit 2."""
    COULD_NOT_RUN = "could-not-run"
    """Nothing compared for a reason no setting fixes (a first run): the step passes, said out loud."""


def gate_state(gate: GateResult, comparison: Comparison) -> GateState:
    """The one state of the gate, from its record (enforced, evaluated, tripped) and the comparison."""
    if not gate.evaluated:
        if not gate.enforced:
            return GateState.OFF
        return GateState.CANNOT_RUN_FAILS if gate_cannot_run(comparison) is not None else GateState.COULD_NOT_RUN
    if gate.tripped:
        return GateState.FAILED if gate.enforced else GateState.ADVICE_TRIPPED
    return GateState.PASSED if gate.enforced else GateState.ADVICE_PASSED


def gate_sentence(gate: GateResult, comparison: Comparison) -> tuple[str, bool] | None:
    """The summary's one sentence on the gate and whether it is to be read first (bold): a step
    that fails, or a regression nobody enforces. None: there is no gate to speak of."""
    state = gate_state(gate, comparison)
    if state is GateState.OFF:
        return None
    if state in (GateState.CANNOT_RUN_FAILS, GateState.COULD_NOT_RUN):
        return gate_not_run(gate, comparison), True
    why = gate_headline(gate)
    if state is GateState.FAILED:
        return f"Regression gate failed, so the step fails (fail-on-regression is true): {why}.", True
    if state is GateState.ADVICE_TRIPPED:
        # Said of the gate alone: a fail-under floor may still fail the step.
        return f"Regression: {why}. The gate does not fail the step: fail-on-regression is off.", True
    if state is GateState.PASSED:
        return f"Regression gate passed: {why}.", False
    return f"No regression: {why} (fail-on-regression is off).", False


def gate_line(gate: GateResult) -> str:
    """The gate's verdict for the log (its reason quotes query ids through shown())."""
    line = ("REGRESSION: " if gate.tripped else "Regression gate: ") + gate.reason
    if gate.tripped and not gate.enforced:
        line += " (fail-on-regression is off: the exit status stays 0)"
    return line


def _p_value(verdict: MetricVerdict) -> float:
    return verdict.significance.p_value if verdict.significance is not None else 1.0


def gate_headline(gate: GateResult) -> str:
    """Why the gate decided what it did, in plain words and without query ids (the summary lists
    the queries): the measure that fell the most past its budget, how many queries changed, and
    whether chance explains it. The JSON's `gate.reason` and `gate.metrics` have every measure."""
    budgeted = [v for v in gate.verdicts if v.over_threshold]
    counted = [v for v in budgeted if v.counts]
    if not budgeted:
        return gate.reason
    # The drop that failed the gate, worst first; else its closest call (the smallest p).
    worst = counted[0] if counted else min(budgeted, key=lambda v: (_p_value(v), v.delta))
    fell = f"{worst.label} fell by {-worst.delta:.3f}, more than {worst.threshold:g}"
    others = len(counted or budgeted) - 1
    also = f" ({others} other {'measure' if others == 1 else 'measures'} too)" if others else ""
    test = worst.significance
    if test is None or gate.alpha is None:
        return fell + also
    # Counted in the measure that fell: a query can change elsewhere (the summary's changed queries)
    # and not in it.
    changed = f"{test.nonzero} of {test.pairs} {'query' if test.pairs == 1 else 'queries'} changed in {worst.label}"
    if counted:
        return f"{fell}{also}, and {changed}: more than chance explains (p = {test.p_value:.2g})"
    hopeless = 2.0 / 2.0 ** min(test.pairs, 1023) >= gate.alpha
    if hopeless:
        return (
            f"{fell}{also}, but with {test.pairs} queries no change can be told from chance "
            f"(the gate fails at p < {gate.alpha:g}): add queries"
        )
    return (
        f"{fell}{also}, but only {changed}, which chance explains "
        f"(p = {test.p_value:.2g}; the gate fails at p < {gate.alpha:g})"
    )


STANDARD_MEASURES = "Precision, success and judged (the share of the top k some label judges) at each k"

def interval_phrase(low: float, high: float) -> str:
    """`0.612–0.781`: a 95% interval, in the precision a reader compares it at."""
    return f"{low:.3f}–{high:.3f}"


def intervals_note(query_count: int) -> str:
    return (
        f"Intervals: 95% bootstrap over the {query_count} counted "
        f"{'query' if query_count == 1 else 'queries'} (2000 resamples, seeded: the same run gives the same interval)."
    )


def duration(seconds: float) -> str:
    return f"{seconds * 1000:.0f} ms" if seconds < 1 else f"{seconds:.1f} s"


def size(count: float) -> str:
    for unit, scale in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if count >= scale:
            return f"{count / scale:.1f} {unit}"
    return f"{count:.0f} B"


def answers_sentence(current: AnswerCosts, previous: AnswerCosts | None) -> str:
    """What the search's answers cost in this run (and at the compared run: the p95 and its change)."""

    def part(name: str, now: Spread, before: Spread | None, shown: Callable[[float], str]) -> str:
        text = f"{name} p50 {shown(now.p50)} · p95 {shown(now.p95)} · max {shown(now.max)}"
        if before is not None:
            change = now.p95 - before.p95
            sign = "+" if change >= 0 else "-"
            text += f" (p95 before: {shown(before.p95)}, {sign}{shown(abs(change))})"
        return text

    parts = [part("Answer time", current.seconds, previous.seconds if previous else None, duration)]
    if current.bytes is not None:
        parts.append(part("answer size", current.bytes, previous.bytes if previous else None, size))
    return "; ".join(parts) + f", over {current.queries} queries."


def _cost_label(check: CostCheck) -> str:
    return f"answer {check.kind.value} {check.statistic}"


def _cost_value(check: CostCheck, value: float) -> str:
    return duration(value) if check.kind is CostKind.TIME else size(value)


def costs_failed(costs: CostResult) -> str:
    """`answer time p95 1.2 s is over its budget 800 ms by 400 ms`."""
    return "; ".join(
        f"{_cost_label(c)} {_cost_value(c, c.value)} is over its budget {_cost_value(c, c.budget)} "
        f"by {_cost_value(c, c.value - c.budget)}"
        for c in costs.failed
    )


def costs_held(costs: CostResult) -> str:
    held = ", ".join(f"{_cost_label(c)} {_cost_value(c, c.value)} <= {_cost_value(c, c.budget)}" for c in costs.checks)
    return f"Answer budgets held: {held}."


def detectable_sentence(gate: GateResult, largest_k: int) -> str | None:
    """What the gate could detect with this golden set, or that it could detect nothing."""
    detectable = gate.detectable
    if detectable is None or not detectable.drops:
        return None
    # The catalogue's brief list at the largest k: read in seconds; the JSON lists every metric.
    wanted = tuple(measure.label(largest_k if measure.at_k else None) for measure in BRIEF)
    shown = sorted((d for d in detectable.drops if d.metric.label in wanted), key=lambda d: wanted.index(d.metric.label))
    if all(drop.drop is None for drop in shown):
        if detectable.queries > 1 and 2.0 / 2.0 ** min(detectable.queries, 1023) < detectable.alpha:
            return None  # enough queries, but no spread to estimate from
        return (
            f"With {detectable.queries} counted queries no drop can be significant at alpha {detectable.alpha:g} "
            "(the sign-flip test needs 2 / 2^n < alpha): add queries before trusting a verdict."
        )
    groups = []
    for paired, basis in (
        (True, "from the per-query differences with the compared run"),
        (False, "from this run's spread, as if the two runs were unrelated: an upper estimate"),
    ):
        parts = ", ".join(f"{d.drop:.3f} in {d.metric.label}" for d in shown if d.paired is paired and d.drop is not None)
        if parts:
            groups.append(f"{parts} ({basis})")
    return (
        f"With {detectable.queries} counted queries the gate could detect a drop of about {'; '.join(groups)}, "
        f"at alpha {detectable.alpha:g} with power 0.8."
    )


HOW_SURE = "How sure these numbers are"


def unjudged_summary(pools: Sequence[QueryPool]) -> str:
    """`3 documents with no label entered the top 10 of 4 queries, one of them in 3: judge them
    with the lines inside`: the folded list's one line. kb-eval's words only (it sits in an HTML
    `<summary>`, where nothing a pull request wrote may go)."""
    documents: dict[str, int] = {}
    for pool in pools:
        for document in pool.unlabelled:
            documents[document.path] = documents.get(document.path, 0) + 1
    count = len(documents)
    subject = "document with no label" if count == 1 else "documents with no label"
    line = f"{count} {subject} entered the top {pools[0].k} of {len(pools)} {'query' if len(pools) == 1 else 'queries'}"
    most = max(documents.values())
    if count > 1 and most > 1:
        line += f", one of them in {most} queries' lists"
    return line + ": judge them with the lines inside"


def unjudged_headline(k: int) -> str:
    return f"Documents that entered the top {k} with no label"


def entered_unlabelled(pool: QueryPool) -> str:
    """`3 of the 5 documents that entered the top 5 have no label`."""
    entered = len(pool.entered)
    unlabelled = len(pool.unlabelled)
    if entered == 1:
        return f"the one document that entered the top {pool.k} has no label"
    verb = "has" if unlabelled == 1 else "have"
    return f"{unlabelled} of the {entered} documents that entered the top {pool.k} {verb} no label"


def verdict_rests_on_unjudged(pools: list[QueryPool]) -> str:
    """Said when queries that fell have unlabelled documents in their top k: the fall may be a
    good new page that nobody has judged yet."""
    entered = sum(len(pool.entered) for pool in pools)
    unlabelled = sum(len(pool.unlabelled) for pool in pools)
    queries = "query that fell" if len(pools) == 1 else "queries that fell"
    return (
        f"The verdict rests partly on unjudged documents: in the {len(pools)} {queries}, {unlabelled} of the "
        f"{entered} documents that entered the top {pools[0].k} have no label. Judge them (below) before "
        "reading the drop as a regression."
    )


def overlap_phrase(pool: QueryPool) -> str:
    """RBO, named as what it is: a judgment-free measure, apart from the metrics."""
    return f"ranking overlap with the compared run {pool.rbo:.2f} (RBO, no labels involved)"


def rankings_moved(pools: list[QueryPool]) -> str | None:
    """One line on how far the rankings moved, judged or not."""
    moved = [pool for pool in pools if pool.rbo < 1.0]
    if not moved:
        return None
    lowest = min(moved, key=lambda pool: (pool.rbo, pool.query_id))
    return (
        f"Rankings that moved, judged or not: {len(moved)} of {len(pools)} queries have a ranking overlap with "
        f"the compared run below 1 (RBO, p 0.9); the lowest is {lowest.query_id} at {lowest.rbo:.2f}."
    )


QUOTES_GOLDEN_QUERIES = f"quotes golden queries ({CHECK_NAME}): a note about the test, not an answer?"
"""Beside an unjudged document that is also a finding: judging it relevant would make the leak the
answer."""


SNIPPET_HOW = (
    "# Pasted as it is, this judges nothing. For each document you judge, remove the # before its",
    "# lines and set its grade: 1 or more if it answers the query, 0 if it does not.",
)
"""Once, above the lines golden_snippet offers."""


def golden_snippet(pool: QueryPool, quoting: Collection[str] = ()) -> list[str]:
    """Lines to paste under the query's `expected:` that judge nothing until a person does: each
    document's entry is commented out, with `grade: 0`, so pasted as offered it changes no score,
    and uncommented without a thought it makes nothing relevant. A document in `quoting` (a
    golden-queries-quoted finding) says so above its entry. Values JSON-quoted: a path from a pull
    request cannot become YAML structure, nor end the comment's line."""
    where = f"line {pool.line}" if pool.line is not None else "the golden file"
    lines = [f"# query {json.dumps(pool.query_id, ensure_ascii=False)} ({where}), under its expected:"]
    for document in pool.unlabelled:
        if document.path in quoting:
            lines.append(f"# {json.dumps(document.path, ensure_ascii=False)} {QUOTES_GOLDEN_QUERIES}")
        lines.append(f"#      - path: {json.dumps(document.path, ensure_ascii=False)}")
        if document.heading:
            lines.append(f"#        heading: {json.dumps(document.heading, ensure_ascii=False)}")
        lines.append("#        grade: 0")
    return lines


def trend_legend(series: Sequence[tuple[str, str]]) -> str:
    """Under the trend chart: which line is which, for a renderer that draws no legend."""
    return "Lines: " + "; ".join(f"{name} ({_COLOUR_NAMES.get(colour, colour)})" for name, colour in series) + "."


_COLOUR_NAMES = {"#0072B2": "blue", "#E69F00": "orange"}


# --- kb-eval compare (several runs side by side) ---------------------------------------------

def runs_compared(count: int, alpha: float, tag: str | None, mark: str) -> str:
    """`mark`: how a significant change is shown (`*` in text, bold in Markdown)."""
    over = f"the queries tagged {tag}" if tag is not None else "every query"
    return (
        f"{count} runs over {over}; each later run's change against the first, with the p-value of a paired "
        f"sign-flip test over the queries both scored (p below {alpha:g}: {mark})"
    )


def run_paired(queries: int) -> str:
    return f"paired with the first run on {queries} queries"


def run_not_paired(reasons: tuple[str, ...]) -> str:
    return "not paired with the first run, values only: " + "; ".join(reasons)


FIRST_RUN = "the first run: what the others are compared with"


# --- floors (--fail-under) ------------------------------------------------------------------

def floors_failed(floors: FloorResult, tag_shown: Callable[[str], str] = shown) -> str:
    """Which floors were not met, and by how much: `recall@10 0.4106 is below its floor 0.5 by 0.0894`.
    `tag_shown`: how a renderer makes a tag (golden-file text) inert; the metric labels are kb-eval's."""
    below = "; ".join(
        f"{_floor_label(check, tag_shown)} {check.value:.4f} is below its floor {check.floor:g} by {check.shortfall:.4f}"
        for check in floors.failed
    )
    return f"Below the fail-under floor, so the step fails: {below}"


def floors_held(floors: FloorResult, tag_shown: Callable[[str], str] = shown) -> str:
    held = ", ".join(f"{_floor_label(c, tag_shown)} {c.value:.4f} >= {c.floor:g}" for c in floors.checks)
    return f"Every fail-under floor holds ({held})."


def _floor_label(check: FloorCheck, tag_shown: Callable[[str], str]) -> str:
    return check.metric_label if check.tag is None else f"{tag_shown(check.tag)}:{check.metric_label}"


# --- the golden set's health ----------------------------------------------------------------

def golden_health_headline(health: GoldenHealth) -> str:
    """One line: how much of the KB the labels reach, and what the golden set cannot test."""
    cover = health.coverage
    parts = [
        f"{cover.answers} of {cover.documents} documents ({cover.answer_share:.0%}) are some query's answer",
        (f"{cover.unreached_count} {'is' if cover.unreached_count == 1 else 'are'} in no query's top {cover.k}"
         if cover.unreached_count else f"every one is in some query's top {cover.k}"),
    ]
    if health.duplicates:
        parts.append(f"{len(health.duplicates)} wording{'s' if len(health.duplicates) != 1 else ''} used by more than one query")
    if health.title_queries:
        count = len(health.title_queries)
        parts.append(f"{count} {'query tests' if count == 1 else 'queries test'} only a title")
    return "Golden set: " + "; ".join(parts)
