"""The Markdown summary of a run, for the job's step summary and the pull-request comment.

Pure: report in, Markdown out. Every piece of text a pull request controls
(document paths, headings, query ids and text, warning messages) goes through
`escape_markdown_text`, and into link targets only percent-encoded, so it can
neither add markup, links or HTML, nor mention anyone. The size is bounded
twice: row caps here keep it readable, and the writer caps the bytes.
"""

from __future__ import annotations

import urllib.parse
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .github import escape_markdown_text
from .quotes import CHECK_NAME, MIN_QUOTED_QUERIES

MAX_FINDING_ROWS = 50
MAX_MISSED_ROWS = 50
MAX_WARNING_ROWS = 30
"""Row caps: past these the tables stop helping a reader, and the report lists everything."""
MAX_HITS_SHOWN = 3


@dataclass(frozen=True, slots=True)
class SourceLinks:
    """Where the files of this run can be viewed: `<server>/<repository>/blob/<sha>/<path>`."""

    server_url: str
    repository: str
    """`owner/name`, as GITHUB_REPOSITORY gives it."""
    sha: str
    """The pull request's head commit (GITHUB_SHA is the merge commit there), else GITHUB_SHA."""

    def to(self, path: str, line: int | None = None) -> str:
        # Percent-encoding everything but `/` keeps `(`, `)` and spaces out of the link target.
        quoted = urllib.parse.quote(path, safe="/")
        anchor = f"#L{line}" if line is not None else ""
        return f"{self.server_url.rstrip('/')}/{self.repository}/blob/{self.sha}/{quoted}{anchor}"


def text(value: object) -> str:
    """PR-controlled text, inert in Markdown (see escape_markdown_text)."""
    return escape_markdown_text(str(value))


def linked(label: str, path: str, line: int | None, links: SourceLinks | None) -> str:
    shown = text(label)
    return f"[{shown}]({links.to(path, line)})" if links is not None else shown


def _number(value: float) -> str:
    return f"{value:.4f}"


def _delta_value(entry: object) -> float | None:
    """A delta from `diff.aggregate`: `{"previous", "current", "delta"}` or a bare number."""
    if isinstance(entry, Mapping):
        entry = entry.get("delta")
    return float(entry) if isinstance(entry, int | float) and not isinstance(entry, bool) else None


def _with_delta(value: float, delta: float | None) -> str:
    if delta is None:
        return _number(value)
    return f"{_number(value)} ({delta:+.4f})"


def _join_repo(kb_path: str, path: str) -> str:
    return path if kb_path in ("", ".") else f"{kb_path.rstrip('/')}/{path}"


def aggregate_section(report: Mapping[str, Any]) -> list[str]:
    fingerprint = report["fingerprint"]
    aggregate = report["aggregate"]
    corpus = report["corpus"]
    ks = [str(k) for k in fingerprint["k"]]
    diff = report.get("diff") or {}
    deltas = diff.get("aggregate", {}) if isinstance(diff, Mapping) else {}
    retriever = fingerprint["retriever"]
    lines = [
        (
            f"retriever **{text(retriever.get('name'))}**, limit {fingerprint['limit']}, "
            f"{aggregate['query_count']} queries, {corpus['documents']} documents / {corpus['chunks']} chunks"
        ),
        "",
        "| metric | " + " | ".join(f"@{k}" for k in ks) + " |",
        "| --- | " + " | ".join("---:" for _ in ks) + " |",
    ]
    for label, key in (("recall", "recall_at_k"), ("nDCG", "ndcg_at_k")):
        by_k = deltas.get(key, {}) if isinstance(deltas, Mapping) else {}
        cells = [
            _with_delta(aggregate[key][k], _delta_value(by_k.get(k)) if isinstance(by_k, Mapping) else None) for k in ks
        ]
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    mrr_delta = _delta_value(deltas.get("mrr")) if isinstance(deltas, Mapping) else None
    lines += ["", f"**MRR** {_with_delta(aggregate['mrr'], mrr_delta)}"]
    if deltas:
        lines += ["", "Deltas in brackets: this run minus the compared run (negative is worse)."]
        corpus_diff = diff.get("corpus")
        if isinstance(corpus_diff, Mapping) and corpus_diff.get("changed") is not False:
            lines.append(
                f"The corpus changed since the compared run ({text(corpus_diff.get('description', ''))}): "
                "a delta may reflect the corpus, not retrieval."
            )
    comparison = report.get("comparison")
    # "No previous run" is the normal first run and says nothing; a previous run with other
    # settings is worth a line, because the person expected a comparison.
    if isinstance(comparison, Mapping) and comparison.get("status") == "incomparable":
        lines += ["", "Not compared with the previous run: " + text("; ".join(map(str, comparison["reasons"])))]
    gate = report.get("gate")
    if isinstance(gate, Mapping) and gate.get("evaluated"):
        verdict = "**REGRESSION**" if gate.get("tripped") else "Regression gate passed"
        lines += ["", f"{verdict}: {text(gate.get('reason', ''))}"]
    return lines


def findings_section(report: Mapping[str, Any], kb_path: str, links: SourceLinks | None) -> list[str]:
    findings: Sequence[Mapping[str, Any]] = report["findings"]
    if not findings:
        return [f"No document quotes {MIN_QUOTED_QUERIES} or more golden queries verbatim ({CHECK_NAME})."]
    lines = [
        (
            f"### {len(findings)} document{' quotes' if len(findings) == 1 else 's quote'} "
            f"{MIN_QUOTED_QUERIES} or more golden queries verbatim ({CHECK_NAME})"
        ),
        "",
        "| document | quoted queries |",
        "| --- | --- |",
    ]
    for finding in findings[:MAX_FINDING_ROWS]:
        repo_path = _join_repo(kb_path, finding["path"])
        first = min(finding["quoted"], key=lambda q: (q["line"], q["column"] or 0))
        quoted = ", ".join(
            f"{text(q['query_id'])} ("
            + (f"rank {q['rank_in_top_k']}" if q["rank_in_top_k"] is not None else "not in top_k")
            + f", {linked('line ' + str(q['line']), repo_path, q['line'], links)})"
            for q in finding["quoted"]
        )
        lines.append(f"| {linked(finding['path'], repo_path, first['line'], links)} | {quoted} |")
    if len(findings) > MAX_FINDING_ROWS:
        lines.append(f"| … {len(findings) - MAX_FINDING_ROWS} more in the JSON report | |")
    lines += [
        "",
        (
            "Either these notes leaked into the corpus (notes about the test make the eval look better than search "
            "is), or the queries were written from them and the documents belong in `expected`. kb-eval changes "
            "neither, and a finding never fails the step."
        ),
    ]
    return lines


def missed_section(report: Mapping[str, Any]) -> list[str]:
    largest = str(report["fingerprint"]["k"][-1])
    missed = [q for q in report["per_query"] if q["metrics"]["recall_at_k"][largest] < 1.0]
    if not missed:
        return [f"Every query found all its expected documents in the top {largest}."]
    lines = [
        (
            f"### {len(missed)} quer{'ies' if len(missed) != 1 else 'y'} missed an expected document "
            f"in the top {largest}"
        ),
        "",
        f"| query | recall@{largest} | RR | expected | got (top {MAX_HITS_SHOWN}) |",
        "| --- | ---: | ---: | --- | --- |",
    ]
    for query in missed[:MAX_MISSED_ROWS]:
        expected = "<br>".join(
            text(e["path"] + (f" # {e['heading']}" if e["heading"] else "")) for e in query["expected"]
        )
        got = "<br>".join(f"{h['rank']}. {text(h['path'])}" for h in query["top_k"][:MAX_HITS_SHOWN]) or "no hits"
        lines.append(
            f"| {text(query['id'])}: {text(query['query'])} | {_number(query['metrics']['recall_at_k'][largest])} "
            f"| {_number(query['metrics']['rr'])} | {expected} | {got} |"
        )
    if len(missed) > MAX_MISSED_ROWS:
        lines.append(f"| … {len(missed) - MAX_MISSED_ROWS} more in the JSON report | | | | |")
    return lines


def warnings_section(report: Mapping[str, Any]) -> list[str]:
    warnings: Sequence[Mapping[str, Any]] = report["warnings"]
    if not warnings:
        return []
    lines = [f"### {len(warnings)} warning{'s' if len(warnings) != 1 else ''}", ""]
    for warning in warnings[:MAX_WARNING_ROWS]:
        where = ""
        if warning.get("file") is not None:
            where = text(warning["file"]) + (f":{warning['line']}" if warning.get("line") is not None else "") + ": "
        lines.append(f"- {where}{text(warning['message'])} ({text(warning['code'])})")
    if len(warnings) > MAX_WARNING_ROWS:
        lines.append(f"- … {len(warnings) - MAX_WARNING_ROWS} more in the JSON report")
    return lines


def render_summary(
    report: Mapping[str, Any],
    *,
    kb_path: str,
    report_path: str | None,
    links: SourceLinks | None,
) -> str:
    """The whole summary: aggregate table (with deltas), findings, missed queries, warnings."""
    sections = [
        ["## kb-eval", ""] + aggregate_section(report),
        findings_section(report, kb_path, links),
        missed_section(report),
        warnings_section(report),
    ]
    if report_path:
        sections.append([f"Everything is in the JSON report, {text(report_path)}."])
    return "\n\n".join("\n".join(section) for section in sections if section) + "\n"


def render_input_error(message: str) -> str:
    """The summary of a run that stopped on bad input (exit 2)."""
    return "## kb-eval: input error\n\n" + text(message) + "\n"
