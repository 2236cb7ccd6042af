"""The step summary and the pull-request comment: what changed, first.

Order, for a reviewer who reads ten seconds: the verdict with the KB path and
the counts, what the run was compared with and the gate's one sentence (from
the records: phrases.gate_state); the queries whose result changed (rank of the
first expected document before -> after, and what now ranks above it); the
documents that quote the golden set; then the metrics, with the statistics
behind them folded, and the long parts (unjudged documents and the lines to
judge them, the trend, misses, warnings) folded in `<details>`. The same
Markdown is the step summary and the comment body.

Pure: records in, Markdown out. Every piece of text a pull request controls
(paths, headings, query ids and text, warning messages) goes through
`escape_markdown_text`, and into link targets only percent-encoded, so it can
neither add markup, links or HTML, nor mention anyone. Row caps keep it
readable; the writer caps the bytes.
"""

from __future__ import annotations

import dataclasses
import hashlib
import html
import json
import math
import re
import urllib.parse
from collections.abc import Sequence
from dataclasses import dataclass

from scanner.compare.comparison import (
    ExpectedMove,
    MetricDelta,
    QueryDelta,
    QueryStatus,
)
from scanner.compare.findings import FindingAtBase
from scanner.compare.pooling import QueryPool
from scanner.compare.report import Report
from scanner.evaluation.records import LocatedFinding, RunRecord
from scanner.foundation.diagnostics import Diagnostic, DiagnosticCode
from scanner.github.workflow import escape_markdown_text
from scanner.metrics.catalogue import BY_NAME, BY_REPORT_KEY, CATALOGUE
from scanner.render import phrases

MAX_CHANGED_ROWS = 50
MAX_FINDING_ROWS = 50
MAX_MISSED_ROWS = 50
MAX_WARNING_ROWS = 30
"""Row caps: past these the tables stop helping a reader, and the JSON report lists everything."""
MAX_UNJUDGED_QUERIES = 20
MAX_UNJUDGED_PER_QUERY = 10
"""Caps of the unjudged section; the JSON report's `diff.pooling` lists every one."""
MAX_HITS_SHOWN = 3
MAX_TREND_POINTS = 20

_DIRECTION = {1: "▲", -1: "▼"}


@dataclass(frozen=True, slots=True)
class SourceLinks:
    """Where the files of this run can be viewed: `<server>/<repository>/blob/<sha>/<path>`."""

    server_url: str
    repository: str
    """`owner/name`, as GITHUB_REPOSITORY gives it."""
    sha: str
    """The pull request's head commit (GITHUB_SHA is the merge commit there), else GITHUB_SHA."""
    run_id: str | None = None
    """GITHUB_RUN_ID, for the link to the run's log."""

    def to(self, path: str, line: int | None = None) -> str:
        # Percent-encoding everything but `/` keeps `(`, `)` and spaces out of the link target.
        quoted = urllib.parse.quote(path, safe="/")
        anchor = f"#L{line}" if line is not None else ""
        return f"{self.server_url.rstrip('/')}/{self.repository}/blob/{self.sha}/{quoted}{anchor}"

    def run(self) -> str | None:
        if not self.run_id:
            return None
        return f"{self.server_url.rstrip('/')}/{self.repository}/actions/runs/{self.run_id}"


@dataclass(frozen=True, slots=True)
class SummaryContext:
    """What the Markdown needs besides the report: where the KB is and where things can be linked."""

    kb_path: str
    """The KB folder relative to the repository root (`.` for the root)."""
    report_path: str | None = None
    links: SourceLinks | None = None
    history: tuple[RunRecord, ...] = ()
    """Earlier comparable runs, newest first, for the trend chart."""


def text(value: object) -> str:
    """PR-controlled text, inert in Markdown."""
    return escape_markdown_text(str(value))


def summary_text(value: str) -> str:
    """Text inside `<summary>`: the line is an HTML block, where Markdown's backslash escapes are
    shown as typed (`\\(67%\\)`), so it is escaped as HTML instead."""
    return html.escape(value, quote=False)


def prose(value: str) -> str:
    """A sentence of kb-eval's that may carry PR-controlled parts (a reason naming a ref, a path),
    whose backtick spans are settings to show as code (`fetch-depth: 0`): outside the spans, as
    text(); inside, an inert code span on one line. Split at every backtick, a span never holds
    one, so one backtick fences it; an unpaired backtick leaves the whole sentence as text()."""
    parts = value.split("`")
    if len(parts) % 2 == 0:
        return text(value)
    shown = []
    for index, part in enumerate(parts):
        if index % 2 == 0:
            shown.append(text(part))
        elif part.strip():
            # A line break could end the paragraph and the span with it; a pipe would end a table cell.
            shown.append("`" + " ".join(part.splitlines()).replace("|", "\\|") + "`")
        else:
            shown.append(text("`" + part + "`"))
    return "".join(shown)


def render_summary(report: Report, context: SummaryContext) -> str:
    sections = [
        # The first screen: the verdict, what changed, where to look (the queries that fell, the
        # documents that quote the golden set); then the numbers, then the long parts, folded.
        headline(report, context),
        changed_queries_section(report),
        findings_section(report.run.findings, context, report.findings_at_base),
        metrics_section(report),
        unjudged_section(report),
        trend_section(report, context),
        golden_health_section(report),
        details_section(report),
        footer(context),
    ]
    return "\n\n".join("\n".join(section) for section in sections if section) + "\n"


def render_input_error(message: str) -> str:
    """The summary of a run that stopped on bad input (exit 2)."""
    return "## kb-eval: input error\n\n" + text(message) + "\n"


# --- sections --------------------------------------------------------------------------


def headline(report: Report, context: SummaryContext) -> list[str]:
    run = report.run
    verdict = phrases.verdict(report)
    kb = "" if context.kb_path in ("", ".") else f" · {text(context.kb_path)}"
    counts = [
        f"{run.aggregate.query_count} queries",
        _count(len(run.findings), "finding"),
        _count(len(run.warnings), "warning"),
    ]
    lines = [f"## kb-eval: {phrases.VERDICT_WORDS[verdict]}{kb}", "", " · ".join(counts)]
    comparison = report.comparison
    if comparison.compared:
        lines += ["", f"Compared with {text(phrases.compared_with(comparison))}."]
        note = phrases.corpus_note(comparison)
        if note is not None:
            lines.append(text(note))
    else:
        lines += ["", prose(phrases.not_compared_reason(comparison))]
    gate = phrases.gate_sentence(report.gate, comparison)
    if gate is not None:
        sentence, first = gate
        # An evaluated gate's sentence is kb-eval's own (metric labels, numbers); one that could not
        # run names a ref or a path from the pull request.
        sentence = sentence if report.gate.evaluated else prose(sentence)
        lines += ["", f"**{sentence}**" if first else sentence]
    if report.floors.failed:
        lines += ["", f"**{phrases.floors_failed(report.floors, text)}.**"]
    elif report.floors.checks:
        lines += ["", phrases.floors_held(report.floors, text)]
    if report.costs.failed:
        lines += ["", f"**{phrases.costs_failed(report.costs)}.**"]
    elif report.costs.checks:
        lines += ["", phrases.costs_held(report.costs)]
    fell_unjudged = falling_pools_with_unjudged(report)
    if fell_unjudged:
        lines += ["", text(phrases.verdict_rests_on_unjudged(fell_unjudged))]
    return lines


def metrics_section(report: Report) -> list[str]:
    """The catalogue's headline measures (kb-mcp's and MAP) in one table; the others (P@k,
    success@k, judged@k) folded below it."""
    run = report.run

    def rows(headline: bool) -> list[tuple[str, float]]:
        return [
            (measure.label(k), value)
            for measure in CATALOGUE if measure.headline is headline
            for k in (run.ks if measure.at_k else (None,))
            if (value := measure.aggregate_value(run.aggregate, k)) is not None
        ]

    lines = _metrics_table(report, rows(headline=True))
    notes = [phrases.intervals_note(run.aggregate.query_count)] if run.aggregate.intervals else []
    detectable = phrases.detectable_sentence(report.gate, run.largest_k)
    if detectable is not None:
        notes.append(detectable)
    if notes:
        # The statistics behind the intervals, in their words, for whoever wants them: folded.
        lines += ["", f"<details><summary>{phrases.HOW_SURE}</summary>", "", " ".join(notes), "", "</details>"]
    costs = run.answers
    if costs is not None:
        previous = report.comparison.previous if report.comparison.compared else None
        lines += ["", phrases.answers_sentence(costs, previous.answers if previous is not None else None)]
    folded = rows(headline=False)
    if folded:
        lines += ["", f"<details><summary>{phrases.STANDARD_MEASURES}</summary>", ""]
        lines += _metrics_table(report, folded)
        lines += ["", "</details>"]
    return lines


def _metrics_table(report: Report, rows: Sequence[tuple[str, float]]) -> list[str]:
    deltas = {d.metric.label: d for d in report.comparison.metric_deltas}
    compared = report.comparison.compared
    bounds = {BY_REPORT_KEY[i.measure].label(i.k): i for i in report.run.aggregate.intervals}
    lines = [
        "| metric | value | 95% interval |" + (" change |" if compared else ""),
        "| --- | ---: | ---: |" + (" ---: |" if compared else ""),
    ]
    for label, value in rows:
        interval = bounds.get(label)
        cells = [label, f"{value:.4f}", phrases.interval_phrase(interval.low, interval.high) if interval else ""]
        if compared:
            cells.append(_delta_cell(deltas.get(label)))
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def _delta_cell(delta: MetricDelta | None) -> str:
    """Blank when nothing moved: a reader's eye goes to the cells that say something."""
    if delta is None or delta.delta == 0:
        return ""
    return f"{_DIRECTION[1 if delta.delta > 0 else -1]} {delta.delta:+.4f}"


def changed_queries_section(report: Report) -> list[str]:
    changed = report.comparison.changed_queries()
    if not changed:
        return []
    lines = [
        f"### {_count(len(changed), 'query', 'queries')} changed",
        "",
        "| query | first expected document | now above it |",
        "| --- | --- | --- |",
    ]
    moved = moved_labelled_pages(report)
    for query in changed[:MAX_CHANGED_ROWS]:
        above = query.now_above or ""
        old = moved.get(query.query_id, {}).get(above)
        shown = text(phrases.moved_labelled_page(above, old)) if old is not None else text(above)
        lines.append(f"| {_query_cell(query)} | {_rank_move(query)} | {shown} |")
        lines += [_move_row(move) for move in _follow_moves(query)]
    if len(changed) > MAX_CHANGED_ROWS:
        lines.append(f"| … {len(changed) - MAX_CHANGED_ROWS} more in the JSON report | | |")
    return lines


def moved_labelled_pages(report: Report) -> dict[str, dict[str, str]]:
    """Per query, {path now returned: labelled path} for each labelled page that is no longer in
    the corpus (its expected-not-in-corpus warning, matched by the entry's line) while the one
    page of the same file name in the query's list holds it now: the page moved, and it did not
    push its own answer down."""
    missing = {
        warning.line for warning in report.run.warnings
        if warning.code is DiagnosticCode.EXPECTED_NOT_IN_CORPUS and warning.line is not None
    }
    moved: dict[str, dict[str, str]] = {}
    if not missing:
        return moved
    for query in report.run.queries or ():
        for entry in (member for expected in query.expected for member in expected.members):
            if entry.line not in missing:
                continue
            name = entry.path.rpartition("/")[2]
            returned = {hit.path for hit in query.hits if hit.path.rpartition("/")[2] == name}
            if len(returned) == 1:
                moved.setdefault(query.id, {})[returned.pop()] = entry.path
    return moved


def falling_pools_with_unjudged(report: Report) -> list[QueryPool]:
    """Pools of the queries that fell (worse or mixed) with a document nobody judged in their top k;
    a labelled page that moved is not one (its label is to fix, not to add: moved_labelled_pages)."""
    fell = {q.query_id for q in report.comparison.query_deltas if q.status in (QueryStatus.WORSE, QueryStatus.MIXED)}
    moved = moved_labelled_pages(report)
    pools = []
    for pool in report.comparison.pools:
        if pool.query_id not in fell:
            continue
        gone = moved.get(pool.query_id, {})
        kept = tuple(document for document in pool.unlabelled if document.path not in gone)
        if kept:
            pools.append(pool if len(kept) == len(pool.unlabelled) else dataclasses.replace(pool, unlabelled=kept))
    return pools


def unjudged_section(report: Report) -> list[str]:
    """One line on the documents that entered a top k with no label; per query, the documents and
    the lines that would judge them, folded (a note can enter a dozen queries' lists)."""
    pools = report.comparison.pools
    with_unjudged = [pool for pool in pools if pool.rests_on_unjudged]
    moved = phrases.rankings_moved(list(pools))
    if not with_unjudged:
        return ["<details><summary>How far the rankings moved</summary>", "", text(moved), "", "</details>"] if moved else []
    quoting = {located.finding.path for located in report.run.findings}
    lines = [f"<details><summary>{phrases.unjudged_summary(with_unjudged)}</summary>", ""]
    for pool in with_unjudged[:MAX_UNJUDGED_QUERIES]:
        lines.append(
            f"- **{text(pool.query_id)}**: {text(pool.query)} — {phrases.entered_unlabelled(pool)}; "
            f"{phrases.overlap_phrase(pool)}"
        )
        for document in pool.unlabelled[:MAX_UNJUDGED_PER_QUERY]:
            heading = f"{phrases.SECTION_MARK}{text(document.heading)}" if document.heading else ""
            leak = f" — {phrases.QUOTES_GOLDEN_QUERIES}" if document.path in quoting else ""
            lines.append(f"  - rank {document.rank}: {text(document.path)}{heading}{leak}")
        if len(pool.unlabelled) > MAX_UNJUDGED_PER_QUERY:
            lines.append(f"  - … {len(pool.unlabelled) - MAX_UNJUDGED_PER_QUERY} more in the JSON report")
    if len(with_unjudged) > MAX_UNJUDGED_QUERIES:
        lines.append(f"- … {len(with_unjudged) - MAX_UNJUDGED_QUERIES} more queries in the JSON report")
    snippet = [*phrases.SNIPPET_HOW] + [
        line for pool in with_unjudged[:MAX_UNJUDGED_QUERIES] for line in phrases.golden_snippet(pool, quoting)
    ]
    fence = "`" * max(3, _longest_backtick_run(snippet) + 1)
    lines += ["", "Golden-file lines to judge them (paste under each query's expected:):",
              "", f"{fence}yaml", *snippet, fence]
    if moved:
        lines += ["", text(moved)]
    return lines + ["", "</details>"]


def _longest_backtick_run(lines: Sequence[str]) -> int:
    """A fence longer than any run of backticks in the block: a path cannot close it early."""
    return max((len(run) for line in lines for run in re.findall("`+", line)), default=0)


def _query_cell(query: QueryDelta) -> str:
    marker = {"worse": "▼", "better": "▲", "mixed": "▲▼"}.get(query.status, "")
    return f"{marker} {text(query.query_id)}: {text(query.query or '')}".strip()


def _rank_move(query: QueryDelta | ExpectedMove) -> str:
    def rank(value: int | None) -> str:
        return str(value) if value is not None else "—"

    return f"rank {rank(query.rank_before)} → {rank(query.rank_after)}"


def _follow_moves(query: QueryDelta) -> tuple[ExpectedMove, ...]:
    """A row per expected entry whose rank moved, under its query's row; none when the one entry
    that moved is the first expected document the query's row already shows."""
    moves = query.moves
    if len(moves) == 1 and (moves[0].rank_before, moves[0].rank_after) == (query.rank_before, query.rank_after):
        return ()
    return moves


def _move_row(move: ExpectedMove) -> str:
    above = text(phrases.hit_label(move.now_above)) if move.now_above is not None else ""
    return f"| ↳ {text(phrases.expected_label(move.entry))} | {_rank_move(move)} | {above} |"


def findings_section(
    findings: Sequence[LocatedFinding], context: SummaryContext, at_base: Sequence[FindingAtBase] | None = None
) -> list[str]:
    if not findings:
        return [phrases.no_findings()]
    by_path = {item.path: item for item in at_base or ()}
    lines = [f"### {phrases.findings_headline(len(findings))}", ""]
    note = phrases.findings_at_base_note(at_base)
    if note is not None:
        lines += [note, ""]
    lines += ["| document | quoted queries |", "| --- | --- |"]
    for located in phrases.reading_order(findings, at_base)[:MAX_FINDING_ROWS]:
        finding = located.finding
        known = by_path.get(finding.path)
        repo_path = _join_repo(context.kb_path, finding.path)
        first = min(located.locations, key=lambda at: (at.line, at.column or 0))
        quoted = "<br>".join(
            f"{text(q.query_id)} ({text(phrases.quoted_phrase(q, known))}, "
            f"{_linked('line ' + str(at.line), repo_path, at.line, context.links)})"
            for q, at in zip(finding.quoted, located.locations)
        )
        origin = f"<br>({phrases.AT_BASE})" if known is not None and known.present_at_base else ""
        lines.append(f"| {_linked(finding.path, repo_path, first.line, context.links)}{origin} | {quoted} |")
    if len(findings) > MAX_FINDING_ROWS:
        lines.append(f"| … {len(findings) - MAX_FINDING_ROWS} more in the JSON report | |")
    lines += ["", phrases.TWO_CAUSES]  # kb-eval's own text: its `expected` is meant as code
    return lines


TREND_COLOURS = ("#0072B2", "#E69F00")
"""MRR blue, nDCG orange (Okabe-Ito): apart for every common colour-vision deficiency, and on light
and dark themes alike; Mermaid's default palette draws the second line in a pale tint of the first."""


def trend_section(report: Report, context: SummaryContext) -> list[str]:
    """The last runs' MRR and nDCG@k as a Mermaid chart (GitHub renders it in summaries and comments):
    every run its own point, each line named in a legend and drawn in its own colour."""
    runs = [report.run, *context.history][:MAX_TREND_POINTS][::-1]
    if len(runs) < 2:
        return []
    k = report.run.largest_k
    mrr = [r.aggregate.mrr for r in runs]
    ndcg = [r.aggregate.ndcg_at_k.get(k, math.nan) for r in runs]
    if any(math.isnan(value) for value in ndcg):  # an older run without nDCG@k: no line rather than a gap
        ndcg = []
    series = [(BY_NAME["mrr"].label(None), mrr), *([(BY_NAME["ndcg"].label(k), ndcg)] if ndcg else [])]
    labels = ", ".join(f'"{label}"' for label in trend_labels([r.timestamp for r in runs]))
    lines = [
        "<details><summary>Trend</summary>",
        "",
        "```mermaid",
        "---",
        "config:",
        "  xyChart:",
        "    showLegend: true",
        "  themeVariables:",
        "    xyChart:",
        f'      plotColorPalette: "{", ".join(TREND_COLOURS[: len(series)])}"',
        "---",
        "xychart-beta",
        f'    title "{" and ".join(name for name, _ in series)}, last {len(runs)} runs"',
        f"    x-axis [{labels}]",
        '    y-axis "score" 0 --> 1',
        *(f'    line "{name}" [{", ".join(f"{v:.4f}" for v in values)}]' for name, values in series),
        "```",
        "",
        phrases.trend_legend([(name, colour) for (name, _), colour in zip(series, TREND_COLOURS)]),
        "",
        "</details>",
    ]
    return lines


def trend_labels(timestamps: Sequence[str]) -> list[str]:
    """One label per run, none twice: `MM-DD HH:MM`, with the seconds where two runs share a minute,
    and `#2`, `#3` after a label two runs still share (a chart axis draws equal labels as one point)."""
    minutes = [stamp[5:16].replace("T", " ") for stamp in timestamps]
    labels = [
        stamp[5:19].replace("T", " ") if minutes.count(minute) > 1 else minute
        for stamp, minute in zip(timestamps, minutes)
    ]
    seen: dict[str, int] = {}
    unique: list[str] = []
    for label in labels:
        seen[label] = seen.get(label, 0) + 1
        unique.append(label if seen[label] == 1 else f"{label} #{seen[label]}")
    return unique


MAX_HEALTH_ROWS = 20
"""Title queries, duplicated wordings and unreached documents shown; the JSON report has every one."""


def golden_health_section(report: Report) -> list[str]:
    """What the golden set cannot test, folded: a reviewer opens it when the headline says so."""
    health = report.run.health
    if health is None:
        return []
    lines: list[str] = []
    for duplicate in health.duplicates[:MAX_HEALTH_ROWS]:
        lines.append(f"- same wording: {', '.join(text(i) for i in duplicate.ids)}: {text(duplicate.wording)}")
    for title in health.title_queries[:MAX_HEALTH_ROWS]:
        lines.append(
            f"- only a title: {text(title.query_id)} is {text(title.path)}'s {text(title.title)} "
            f"(similarity {title.similarity:.2f})"
        )
    cover = health.coverage
    if cover.unreached:
        shown_paths = ", ".join(text(path) for path in cover.unreached[:MAX_HEALTH_ROWS])
        more = cover.unreached_count - min(len(cover.unreached), MAX_HEALTH_ROWS)
        lines.append(f"- not in any query's top {cover.k}: {shown_paths}" + (f" and {more} more" if more else ""))
    headline = phrases.golden_health_headline(health)
    if not lines:  # nothing to list: the sentence alone, not an empty fold
        return [text(headline) + "."]
    return [f"<details><summary>{summary_text(headline)}</summary>", "", *lines, "", "</details>"]


def details_section(report: Report) -> list[str]:
    run = report.run
    largest = run.largest_k
    missed = run.missed_queries()
    lines: list[str] = []
    summary = phrases.missed_headline(len(missed), largest) if missed else phrases.all_found(largest)
    if missed:
        lines += [
            f"<details><summary>{summary_text(summary)}</summary>",
            "",
            f"| query | {BY_NAME['recall'].label(largest)} | RR | expected | got (top {MAX_HITS_SHOWN}) |",
            "| --- | ---: | ---: | --- | --- |",
        ]
        for query in missed[:MAX_MISSED_ROWS]:
            expected = "<br>".join(text(phrases.expected_label(e)) for e in query.expected)
            got = "<br>".join(f"{h.rank}. {text(phrases.hit_label(h))}" for h in query.hits[:MAX_HITS_SHOWN]) or "no hits"
            lines.append(
                f"| {text(query.id)}: {text(query.text)} | {query.metrics.recall_at_k[largest]:.4f} "
                f"| {query.metrics.reciprocal_rank:.4f} | {expected} | {got} |"
            )
        if len(missed) > MAX_MISSED_ROWS:
            lines.append(f"| … {len(missed) - MAX_MISSED_ROWS} more in the JSON report | | | | |")
        lines += ["", "</details>"]
    else:
        lines.append(summary)
    if run.warnings:
        lines += ["", f"<details><summary>{_count(len(run.warnings), 'warning')}</summary>", ""]
        lines += [_warning_item(w) for w in run.warnings[:MAX_WARNING_ROWS]]
        if len(run.warnings) > MAX_WARNING_ROWS:
            lines.append(f"- … {len(run.warnings) - MAX_WARNING_ROWS} more in the JSON report")
        lines += ["", "</details>"]
    return lines


def _warning_item(warning: Diagnostic) -> str:
    where = ""
    if warning.file is not None:
        where = text(warning.file) + (f":{warning.line}" if warning.line is not None else "") + ": "
    return f"- {where}{text(warning.message)} ({text(warning.code)})"


def footer(context: SummaryContext) -> list[str]:
    parts = []
    if context.report_path:
        parts.append(f"Everything is in the JSON report, {text(context.report_path)}.")
    run_url = context.links.run() if context.links is not None else None
    if run_url:
        parts.append(f"[Run log]({run_url})")
    return [" ".join(parts)] if parts else []


# --- helpers ---------------------------------------------------------------------------


def _count(n: int, singular: str, plural: str | None = None) -> str:
    return f"{n} {singular if n == 1 else (plural or singular + 's')}"


def _linked(label: str, path: str, line: int | None, links: SourceLinks | None) -> str:
    shown = text(label)
    return f"[{shown}]({links.to(path, line)})" if links is not None else shown


def _join_repo(kb_path: str, path: str) -> str:
    return path if kb_path in ("", ".") else f"{kb_path.rstrip('/')}/{path}"


def comment_state(report: Report) -> str:
    """A digest of what the comment reports (metrics, changed queries, findings, unjudged documents), so on-change mode
    can tell a re-run that found the same from one that did not. Times and links are left out."""
    run = report.run
    what = {
        "metrics": [round(run.aggregate.mrr, 4), *(round(v, 4) for v in run.aggregate.recall_at_k.values()),
                    *(round(v, 4) for v in run.aggregate.ndcg_at_k.values())],
        "changed": [[q.query_id, q.status, q.rank_before, q.rank_after, q.now_above]
                    for q in report.comparison.changed_queries()],
        "findings": [[f.finding.path, [[q.query_id, q.displaces_expected] for q in f.finding.quoted]]
                     for f in run.findings],
        "verdict": phrases.verdict(report).value,
        # What entered a top k with no label: a re-run that judged it (or met a new one) says so.
        "unjudged": [[pool.query_id, [d.path for d in pool.unlabelled]]
                     for pool in report.comparison.pools if pool.rests_on_unjudged],
    }
    if report.findings_at_base is not None:
        # A rebase can turn a finding the pull request brought into one its base already had: the
        # comment then says something else, so on-change mode must update it.
        what["at_base"] = [[item.path, item.present_at_base, list(item.newly_displacing)]
                           for item in report.findings_at_base]
    return hashlib.sha256(json.dumps(what, sort_keys=True).encode()).hexdigest()[:16]
