"""One eval run: read the golden set and the corpus, index, search, score, scan, report.

This module wires the stages in order and times them; it holds no rule of its
own. The CLI (and the Action through it) calls `run_eval` and decides what to
print and which exit code to return.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path, PurePosixPath

from scanner import __version__
from scanner.corpus.parse_cache import ParseCache
from scanner.corpus.parse_memo import ParseMemo
from scanner.corpus.reader import read_documents
from scanner.evaluation.answers import (
    AnswerSource,
    ScoreLevel,
    check_answers,
    expected_for_scoring,
    warn_answer_notes,
)
from scanner.evaluation.records import LocatedFinding, QueryRecord, RunRecord
from scanner.foundation.diagnostics import DiagnosticCode, Diagnostics
from scanner.foundation.errors import InputError
from scanner.foundation.progress import counted
from scanner.golden.file import GoldenSet, find_golden, load_golden
from scanner.metrics.measures import (
    DEFAULT_RELEVANCE_LEVEL,
    METRIC_VERSION,
    AggregateMetrics,
    aggregate,
    relevant_entries,
    score_query,
)
from scanner.metrics.uncertainty import aggregate_columns, intervals
from scanner.retrievers.base import SearchRequest
from scanner.scan.quotes import Finding, QuoteLocation, locate, normalise, scan
from scanner.search.index import Index
from scanner.search.query_compiler import compile_query
from scanner.settings.declaration import DEFAULT_KS, DEFAULT_LIMIT, Interface, default_settings, interface_words
from scanner.settings.retriever import RetrieverBuilder, retriever_builder


@dataclass(frozen=True)
class EvalOptions:
    kb_path: Path
    golden_path: Path | None = None
    exclude: tuple[str, ...] = ()
    limit: int | None = None
    """None: the golden file's `defaults.limit`, else DEFAULT_LIMIT."""
    ks: tuple[int, ...] = DEFAULT_KS
    relevance_level: int = DEFAULT_RELEVANCE_LEVEL
    """The lowest grade counted as relevant (`--relevance-level`, trec_eval's -l)."""
    retriever: RetrieverBuilder = field(default_factory=lambda: retriever_builder(default_settings()))
    """Builds the retriever over the index (scanner/settings/retriever.py); the default is the built-in one."""
    cache_dir: Path | None = None
    """Keep parsed documents here between runs (`parse_cache`); None: parse every file."""
    timestamp: datetime | None = None
    """Fixed in tests; the current UTC time otherwise."""
    # --- evaluating another revision of the KB (scanner.pipeline.base) ---
    golden: GoldenSet | None = None
    """Already loaded (the base side uses this run's golden set); None: load `golden_path`."""
    parse_memo: ParseMemo | None = None
    """Shared by both sides, so a file unchanged between them is parsed once."""
    corpus_source: Callable[[Diagnostics], Iterable[tuple[str, bytes]]] | None = None
    """(path, bytes) of the KB's files from elsewhere than `kb_path` (a git tree); None: walk `kb_path`."""
    scan_only: Callable[[str], bool] | None = None
    """Which documents the quote scan reads, by path; None: every one. The base side scans only
    the documents the pull request changed: an unchanged one's findings are the head's."""
    after_read: Callable[[GoldenSet], None] | None = None
    """Called once the corpus is read and the memo filled: the base side starts then, beside this one."""
    score_level: ScoreLevel = ScoreLevel.SECTION
    """`document`: headings are ignored when hits are matched with golden entries."""
    interface: Interface = Interface.CLI
    """Where the settings came from: the warnings about answers name them in its words."""


@dataclass(frozen=True, slots=True)
class EvalOutcome:
    """One evaluation: the run record, the golden set it read, and how long each phase took."""

    run: RunRecord
    golden: GoldenSet
    phase_seconds: Mapping[str, float] = field(default_factory=dict)


def run_eval(options: EvalOptions, diagnostics: Diagnostics | None = None) -> EvalOutcome:
    diagnostics = diagnostics if diagnostics is not None else Diagnostics()
    clock = _PhaseClock()
    if options.golden is not None:
        golden = options.golden
    else:
        golden_file = find_golden(options.kb_path, options.golden_path)
        golden = load_golden(golden_file, shown=str(golden_file))
    diagnostics.items.extend(golden.warnings)
    refuse_unsearchable_queries(golden)
    check_relevance_level(golden, options.relevance_level, diagnostics)
    limit = options.limit or golden.default_limit or DEFAULT_LIMIT
    ks = tuple(sorted(set(options.ks)))
    if ks[-1] > limit:
        diagnostics.warn(DiagnosticCode.K_OVER_LIMIT, f"k={ks[-1]} is larger than the limit {limit}: @{ks[-1]} sees only {limit} hits")

    cache = ParseCache(options.cache_dir) if options.cache_dir is not None else None
    source = options.corpus_source(diagnostics) if options.corpus_source is not None else None
    documents = read_documents(
        options.kb_path, options.exclude, diagnostics, cache=cache, memo=options.parse_memo, source=source
    )
    # Read, parsed and written to the chunk table document by document (never held whole).
    index = Index.build(documents)
    if options.after_read is not None:
        options.after_read(golden)
    clock.lap("walk_parse")
    requests = [SearchRequest(q.id, q.text, limit) for q in golden.queries]
    retriever = options.retriever(index, requests)
    clock.lap("index")
    warn_expected_not_in_corpus(golden, index.paths, diagnostics)

    with index.read_snapshot():
        lists = retriever.search_all(requests)
        words = interface_words(options.interface)
        warn_answer_notes(retriever.notes(), diagnostics, words)
        check_answers(
            golden, lists, index.paths, _answer_source(retriever.describe()), options.score_level, diagnostics,
            golden_name=PurePosixPath(golden.path.replace("\\", "/")).name, words=words,
        )
        clock.lap("search")
        returned = {q.id: hits[:limit] for q, hits in zip(golden.queries, lists)}
        chunks = counted(index.chunks_by_document(), "scanned", index.corpus.documents, "documents")
        wanted = options.scan_only
        if wanted is not None:
            chunks = ((path, rows) for path, rows in chunks if wanted(path))
        findings = scan(chunks, golden.queries, returned)
    located = locate_findings(findings, index, golden)
    clock.lap("scan")

    queries = tuple(
        QueryRecord(
            id=q.id, text=q.text, tags=q.tags, line=q.line, expected=q.expected,
            hits=tuple(returned[q.id]),
            metrics=score_query(
                returned[q.id], expected_for_scoring(q.expected, options.score_level), ks, options.relevance_level
            ),
        )
        for q in golden.queries
    )
    # The relevance level is recorded only when it is not trec_eval's default: every run recorded
    # before the setting existed counted grade 1 and above, and stays comparable with one that still does.
    level = (
        {"relevance_level": options.relevance_level} if options.relevance_level != DEFAULT_RELEVANCE_LEVEL else {}
    )
    fingerprint = {
        "retriever": retriever.describe(),
        "limit": limit,
        "k": list(ks),
        "golden_sha256": golden.sha256,
        "metric_version": METRIC_VERSION,
        **level,
        # Only when not the default: every run recorded before the setting stays comparable.
        **({"score_level": options.score_level.value} if options.score_level is not ScoreLevel.SECTION else {}),
    }
    timestamp = options.timestamp or datetime.now(UTC)
    run = RunRecord(
        tool_version=__version__,
        timestamp=timestamp.strftime("%Y-%m-%dT%H:%M:%SZ"),
        fingerprint=fingerprint,
        corpus=index.corpus,
        aggregate=aggregate((q.metrics for q in queries), ks),
        by_tag=aggregate_by_tag(queries, ks),
        queries=queries,
        findings=tuple(located),
        warnings=tuple(diagnostics.items),
    )
    clock.lap("report")
    return EvalOutcome(run, golden, clock.seconds)


def with_intervals(run: RunRecord) -> RunRecord:
    """`run` with the bootstrap interval of every mean of its aggregate and of each tag's
    (metrics/uncertainty.py). Only the run a report is about needs them: a compared run is not
    bootstrapped, which keeps the pull-request loop's second evaluation as cheap as the first."""
    rows = run.queries or ()
    ks = run.ks

    def bootstrapped(metrics: AggregateMetrics, selected: Sequence[QueryRecord]) -> AggregateMetrics:
        return dataclasses.replace(metrics, intervals=intervals(aggregate_columns([q.metrics for q in selected], ks)))

    return dataclasses.replace(
        run,
        aggregate=bootstrapped(run.aggregate, rows),
        by_tag=tuple((tag, bootstrapped(metrics, [q for q in rows if tag in q.tags])) for tag, metrics in run.by_tag),
    )


def _answer_source(described: Mapping[str, object]) -> AnswerSource:
    mapping = described.get("mapping")
    prefixes = mapping.get("path_prefix_strip") if isinstance(mapping, dict) else None
    return AnswerSource(
        kind=str(described.get("name", "")),
        prefixes=tuple(str(p) for p in prefixes) if isinstance(prefixes, list) else (),
    )


def refuse_unsearchable_queries(golden: GoldenSet) -> None:
    """A query from which no searchable fragment survives would score a silent zero."""
    for query in golden.queries:
        if compile_query(query.text) is None:
            raise InputError(
                f"query {query.id!r} has no letters or digits to search for",
                file=golden.path, line=query.line, field=f"queries[{query.id}].query",
                hint="write the query as words; punctuation and search operators alone match nothing",
            )


def check_relevance_level(golden: GoldenSet, level: int, diagnostics: Diagnostics) -> None:
    """A level above every grade leaves nothing relevant: every query would drop out and every
    aggregate be a zero that measures nothing, so it is refused. A query that alone loses all its
    relevant entries to the level is scored, left out of the aggregates, and named."""
    graded = [entry.grade for query in golden.queries for entry in query.expected]
    if graded and max(graded) < level:
        raise InputError(
            f"--relevance-level {level} is above every grade in the golden file (the highest is {max(graded)}): "
            "no expected entry would count as relevant",
            file=golden.path, field="--relevance-level",
            hint=f"lower --relevance-level to {max(graded)} or less, or give the answers a higher `grade:`",
        )
    for query in golden.queries:
        if query.expected and not relevant_entries(query.expected, level):
            diagnostics.warn(
                DiagnosticCode.NO_RELEVANT_ENTRY,
                f"query {query.id!r} has no expected entry with grade {level} or more (--relevance-level): "
                "it is scored but left out of every aggregate",
                golden.path, query.line,
            )


def warn_expected_not_in_corpus(golden: GoldenSet, indexed: AbstractSet[str], diagnostics: Diagnostics) -> None:
    """A labelling mistake the person wants to see; the query is still scored (and misses)."""
    for query in golden.queries:
        for entry in query.expected:
            if entry.path not in indexed:
                diagnostics.warn(
                    DiagnosticCode.EXPECTED_NOT_IN_CORPUS,
                    f"query {query.id!r} expects {entry.path!r}, which is not in the indexed corpus",
                    golden.path, entry.line,
                )


def aggregate_by_tag(queries: Sequence[QueryRecord], ks: Sequence[int]) -> tuple[tuple[str, AggregateMetrics], ...]:
    tags = sorted({tag for q in queries for tag in q.tags})
    return tuple((tag, aggregate((q.metrics for q in queries if tag in q.tags), ks)) for tag in tags)


def locate_findings(findings: Sequence[Finding], index: Index, golden: GoldenSet) -> list[LocatedFinding]:
    """Each quotation's line and column. The quotations in one field of one chunk are located
    together, so a section is read and normalised once however many queries it quotes."""
    if not findings:
        return []
    text_of = {q.id: normalise(q.text) for q in golden.queries}
    wanted: dict[tuple[int, str], list[str]] = {}
    for finding in findings:
        for quoted in finding.quoted:
            wanted.setdefault((quoted.first_quote_chunk, quoted.first_quote_field), []).append(text_of[quoted.query_id])
    where: dict[tuple[int, str, str], QuoteLocation] = {}
    for (chunk_id, field_name), needles in wanted.items():
        unique = list(dict.fromkeys(needles))
        for needle, location in zip(unique, locate(index.chunk(chunk_id), field_name, unique), strict=True):
            where[chunk_id, field_name, needle] = location
    return [
        LocatedFinding(
            finding,
            tuple(
                where[quoted.first_quote_chunk, quoted.first_quote_field, text_of[quoted.query_id]]
                for quoted in finding.quoted
            ),
        )
        for finding in findings
    ]


class _PhaseClock:
    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}
        self._last = time.perf_counter()

    def lap(self, phase: str) -> None:
        now = time.perf_counter()
        self.seconds[phase] = now - self._last
        self._last = now
