"""The report people read on stdout (`--format text`): header, metrics, comparison, gate,
findings, and the queries that missed.

Paths, ids, headings, tags and an external retriever's name are pull-request text: each is
printed through `shown()`, so none can break its line or start a workflow command.
"""

from __future__ import annotations

from scanner.compare.comparison import ComparisonStatus, QueryStatus
from scanner.compare.report import Report
from scanner.foundation.untrusted_text import shown
from scanner.metrics.catalogue import BRIEF, BY_NAME, CATALOGUE
from scanner.render import phrases

MAX_IDS_LISTED = 10


def _cell(value: float | None) -> str:
    return f"{value:.4f}" if value is not None else ""


def render_text(report: Report) -> str:
    run = report.run
    ks = run.ks
    tokenization = run.tokenization
    corpus = run.corpus
    out = [
        f"kb-eval {run.tool_version}: retriever {shown(run.retriever_name)}"
        + (f" ({shown(str(tokenization))})" if tokenization else "")
        + f", limit {run.limit}, {run.aggregate.query_count} queries"
        + (f", {corpus.documents} documents / {corpus.chunks} chunks" if corpus is not None else ""),
        "",
    ]
    header = ["metric", *[f"@{k}" for k in ks]]
    aggregate = run.aggregate
    rows = [
        [measure.display, *[_cell(measure.aggregate_value(aggregate, k)) for k in ks]]
        for measure in CATALOGUE if measure.at_k and measure.of_aggregate(aggregate) is not None
    ]
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    for row in [header, *rows]:
        out.append("  ".join(cell.ljust(widths[i]) for i, cell in enumerate(row)).rstrip())
    for measure in CATALOGUE:
        value = None if measure.at_k else measure.aggregate_value(aggregate, None)
        if value is not None:
            out.append(f"{measure.display:<8}{value:.4f}")
    bounds = {(i.measure, i.k): i for i in aggregate.intervals}
    shown_bounds = [
        (measure.label(k), (measure.report_key, k))
        for measure in BRIEF for k in ((run.largest_k,) if measure.at_k else (None,))
    ]
    listed = [f"{label} {phrases.interval_phrase(b.low, b.high)}" for label, key in shown_bounds if (b := bounds.get(key))]
    if listed:
        out.append("95% intervals: " + ", ".join(listed) + " (the JSON report has every metric's)")
    detectable = phrases.detectable_sentence(report.gate, run.largest_k)
    if detectable is not None:
        out.append(detectable)
    if run.answers is not None:
        previous = report.comparison.previous if report.comparison.compared else None
        out.append(phrases.answers_sentence(run.answers, previous.answers if previous is not None else None))
    if run.by_tag:
        out.append("")
        out.append("by tag: " + ", ".join(
            f"{shown(tag)} (n={m.query_count}) MRR {m.mrr:.4f}" for tag, m in run.by_tag
        ))
    if run.findings:
        out.append("")
        out.append(f"findings: {phrases.findings_headline(len(run.findings))}")
        note = phrases.findings_at_base_note(report.findings_at_base)
        if note is not None:
            out.append(f"  {note}")
        by_path = report.findings_at_base_by_path()
        for located in phrases.reading_order(run.findings, report.findings_at_base):
            known = by_path.get(located.finding.path)
            origin = f" ({phrases.AT_BASE})" if known is not None and known.present_at_base else ""
            out.append(f"  {shown(located.finding.path)}{origin}")
            for quoted, location in zip(located.finding.quoted, located.locations):
                phrase = phrases.quoted_phrase(quoted, known)
                out.append(f"    {shown(quoted.query_id)} ({phrase}), {location.field} line {location.line}")
    largest = run.largest_k
    missed = run.missed_queries()
    if missed:
        out.append("")
        out.append(phrases.missed_headline(len(missed), largest) + ":")
        for q in missed:
            got = ", ".join(f"{h.rank}. {shown(phrases.hit_label(h))}" for h in q.hits[:3]) or "no hits"
            want = ", ".join(shown(phrases.expected_label(e)) for e in q.expected)
            out.append(
                f"  {shown(q.id)}: {BY_NAME['recall'].label(largest)} {q.metrics.recall_at_k[largest]:.2f}, "
                f"RR {q.metrics.reciprocal_rank:.2f}"
            )
            out.append(f"    expected: {want}")
            out.append(f"    got:      {got}")
    if run.health is not None:
        out.append(phrases.golden_health_headline(run.health) + " (the JSON report's golden_health lists them)")
    out.append("")
    out.extend(comparison_lines(report))
    if report.gate.evaluated:
        out.extend(gate_lines(report))
    if report.floors.failed:
        out.append(phrases.floors_failed(report.floors))
    elif report.floors.checks:
        out.append(phrases.floors_held(report.floors))
    if report.costs.failed:
        out.append(phrases.costs_failed(report.costs))
    elif report.costs.checks:
        out.append(phrases.costs_held(report.costs))
    return "\n".join(out) + "\n"


def comparison_lines(report: Report) -> list[str]:
    comparison = report.comparison
    if comparison.status is ComparisonStatus.NO_PREVIOUS:
        return [phrases.not_compared_reason(comparison)]
    if comparison.status is ComparisonStatus.INCOMPARABLE:
        return ["Not compared with the previous run, because:"] + [f"  - {r}" for r in comparison.reasons]
    lines = [f"Compared with {phrases.compared_with(comparison)}:"]
    for delta in comparison.metric_deltas:
        lines.append(f"  {delta.metric.label:<10} {delta.previous:.4f} -> {delta.current:.4f} ({delta.delta:+.4f})")
    note = phrases.corpus_note(comparison)
    if note is not None:
        lines.append(f"  {note}")
    lines.extend(unjudged_lines(report))
    for status, label in ((QueryStatus.WORSE, "Worse"), (QueryStatus.BETTER, "Better")):
        ids = [shown(q.query_id) for q in comparison.query_deltas if q.status is status]
        if ids:
            more = " ..." if len(ids) > MAX_IDS_LISTED else ""
            lines.append(f"  {label}: {', '.join(ids[:MAX_IDS_LISTED])}{more}")
    return lines


def unjudged_lines(report: Report) -> list[str]:
    pools = [pool for pool in report.comparison.pools if pool.rests_on_unjudged]
    lines: list[str] = []
    quoting = {located.finding.path for located in report.run.findings}
    if pools:
        lines.append(f"  {phrases.unjudged_headline(pools[0].k)} (the JSON report's diff.pooling has them all):")
        for pool in pools[:MAX_IDS_LISTED]:
            lines.append(f"    {shown(pool.query_id)}: {phrases.entered_unlabelled(pool)}; {phrases.overlap_phrase(pool)}")
            for document in pool.unlabelled[:MAX_IDS_LISTED]:
                heading = f"{phrases.SECTION_MARK}{shown(document.heading)}" if document.heading else ""
                leak = f" ({phrases.QUOTES_GOLDEN_QUERIES})" if document.path in quoting else ""
                lines.append(f"      rank {document.rank}: {shown(document.path)}{heading}{leak}")
    moved = phrases.rankings_moved(list(report.comparison.pools))
    if moved:
        lines.append(f"  {shown(moved)}")
    return lines


def gate_lines(report: Report) -> list[str]:
    gate = report.gate
    lines = [phrases.gate_line(gate)]
    for verdict in gate.verdicts:
        p = f", p = {verdict.significance.p_value:.4g} {verdict.significance.method}" if verdict.significance else ""
        mark = "counts" if verdict.counts else "does not count"
        lines.append(
            f"  {shown(verdict.label)}: {verdict.previous:.4f} -> {verdict.current:.4f} ({verdict.delta:+.4f}{p}) {mark}"
        )
        if verdict.counts and verdict.worst_queries:
            worst = ", ".join(f"{shown(qid)} ({delta:+.3f})" for qid, delta in verdict.worst_queries)
            lines.append(f"    worst queries: {worst}")
    return lines
