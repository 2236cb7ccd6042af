"""One eval run: read the golden set and the corpus, index, search, score, scan, report.

This module wires the stages in order and times them; it holds no rule of its
own. The run (scanner/pipeline/run.py) plans once and evaluates each side with
`evaluate_side`; the CLI and the Action decide what to print and which exit code
to return.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path, PurePosixPath

from scanner import __version__
from scanner.corpus.kb_files import INDEXED_SUFFIXES
from scanner.corpus.parse_cache import ParseCache
from scanner.corpus.parse_memo import ParseMemo, Remembered
from scanner.corpus.reader import CorpusCaps, over_cap, read_folder, read_given
from scanner.evaluation.answers import (
    AnswerSource,
    ScoreLevel,
    check_answers,
    expected_for_scoring,
    returned_heading_paths,
    warn_answer_notes,
)
from scanner.evaluation.health import answer_paths, golden_health, health_diagnostics
from scanner.evaluation.records import LocatedFinding, QueryRecord, RunRecord
from scanner.evaluation.tags import aggregate_by_tag, with_tag_intervals
from scanner.foundation.diagnostics import DiagnosticCode, Diagnostics
from scanner.foundation.errors import InputError
from scanner.foundation.progress import counted
from scanner.golden.file import GoldenSet, find_golden, load_golden, refuse_too_many_hits
from scanner.golden.labels import SectionInfo, check_headings, check_paths, labelled_members, paths_with_headings
from scanner.metrics.catalogue import aggregate
from scanner.metrics.measures import (
    DEFAULT_RELEVANCE_LEVEL,
    METRIC_VERSION,
    AggregateMetrics,
    relevant_entries,
    score_query,
)
from scanner.metrics.uncertainty import aggregate_columns, intervals
from scanner.retrievers.base import AnswerCost, Hit, Retriever, RetrieverKind, SearchRequest
from scanner.retrievers.builtin import BuiltinRetriever
from scanner.retrievers.runfile import RunFileRetriever
from scanner.scan.quotes import Finding, QuoteLocation, locate, normalise, scan
from scanner.search.analysis import IndexCapExceeded
from scanner.search.index import Index, Reuse
from scanner.search.query_compiler import is_searchable
from scanner.settings.declaration import DEFAULT_KS, DEFAULT_LIMIT, Interface, default_settings, interface_words
from scanner.settings.retriever import RetrieverBuilder, retriever_builder


@dataclass(frozen=True)
class EvalOptions:
    """The settings one run evaluates with: the same for the head and for the pull request's base."""

    kb_path: Path
    golden_path: Path | None = None
    exclude: tuple[str, ...] = ()
    limit: int | None = None
    """None: the golden file's `defaults.limit`, else DEFAULT_LIMIT."""
    ks: tuple[int, ...] = DEFAULT_KS
    relevance_level: int = DEFAULT_RELEVANCE_LEVEL
    """The lowest grade counted as relevant (`--relevance-level`, trec_eval's -l)."""
    retriever: RetrieverBuilder = field(default_factory=lambda: retriever_builder(default_settings()))
    """Builds the retriever for one side (scanner/settings/retriever.py); the default is the built-in one."""
    cache_dir: Path | None = None
    """Keep parsed documents here between runs (`parse_cache`); None: parse every file."""
    corpus_caps: CorpusCaps = field(default_factory=CorpusCaps)
    """How large a KB each side may be (`max-files`, `max-mib`, `max-sections`, `max-postings`, `max-terms`)."""
    timestamp: datetime | None = None
    """Fixed in tests; the current UTC time otherwise."""
    score_level: ScoreLevel = ScoreLevel.SECTION
    """`document`: headings are ignored when hits are matched with golden entries."""
    interface: Interface = Interface.CLI
    """Where the settings came from: the warnings about answers name them in its words."""


@dataclass(frozen=True)
class Side:
    """The tree one evaluation reads: the checkout (the head), or the KB at the pull request's
    base commit (scanner.pipeline.base). Everything that differs between the two sides is here;
    the settings and the golden set are shared."""

    kb_path: Path
    """Where the documents are read from when there is no `source`, what messages name, and the
    folder a search with its own index is given for `{kb}` (the base's is its KB written out)."""
    source: Callable[[Diagnostics], Iterable[tuple[str, bytes | Remembered]]] | None = None
    """(path, bytes) of the KB's files from elsewhere than `kb_path` (a git tree), or (path, what
    the head's read remembered of it) for a file `reuse` holds; None: walk `kb_path`."""
    memo: ParseMemo | None = None
    """Filled by the head's read: what the base needs of each file it holds (scanner.corpus.parse_memo)."""
    cache_dir: Path | None = None
    """The parse cache (the head only: the base's files come from git and the memo)."""
    unchanged: frozenset[str] = frozenset()
    """Documents whose path and bytes the other side (the head) already holds, decided before
    this side is read: the quote scan skips them (a finding is a function of the document's text
    and the golden set, so theirs are the head's)."""
    reuse: Index | None = None
    """The head's index, built with `keep_analysis`, whose rows and analysis this side's index
    takes for the files `source` gives as remembered (search.index.Reuse)."""
    take_analyzer: bool = False
    """Take `reuse`'s analyzer rather than a copy (search.index.Reuse.take_analyzer): the head's
    index is this process's own copy, which searches no more (the base's forked child)."""
    keep_analysis: bool = False
    """Keep this side's analysis for another side's `reuse` (the head's, when the base is evaluated)."""
    refuse_impossible: bool = True
    """Stop the run (exit 2) when nothing can be measured: no indexable document, or none of the
    expected paths indexed. False for the base side: a pull request that adds the KB has none there."""
    timestamp: datetime | None = None
    """The run record's time; None: the settings' (the base's is its commit's)."""


def head_side(options: EvalOptions, memo: ParseMemo | None = None, *, keep_analysis: bool = False) -> Side:
    """The checkout's KB, as `options` names it."""
    return Side(kb_path=options.kb_path, memo=memo, cache_dir=options.cache_dir, keep_analysis=keep_analysis)


@dataclass(frozen=True, slots=True)
class Plan:
    """What the golden set and the settings decide before any document is read: the same for
    every side of a run."""

    golden: GoldenSet
    limit: int
    ks: tuple[int, ...]
    requests: tuple[SearchRequest, ...]


@dataclass(frozen=True, slots=True)
class Prepared:
    """One side read, indexed and its labels checked: ready for a retriever to answer."""

    plan: Plan
    side: Side
    index: Index


@dataclass(frozen=True, slots=True)
class Answers:
    """What the retriever answered for one side, each list cut at the limit."""

    returned: Mapping[str, list[Hit]]
    retriever: Mapping[str, object]
    """The retriever's description (`Retriever.describe`), for the fingerprint."""
    costs: tuple[AnswerCost | None, ...]
    """Per request, in the plan's order: how long the answer took and how large it was (None:
    the retriever does not measure it)."""


@dataclass(frozen=True, slots=True)
class EvalOutcome:
    """One evaluation: the run record, the golden set it read, and how long each phase took."""

    run: RunRecord
    golden: GoldenSet
    phase_seconds: Mapping[str, float] = field(default_factory=dict)


def evaluate_side(options: EvalOptions, plan: Plan, side: Side, diagnostics: Diagnostics) -> EvalOutcome:
    """prepare -> bind -> answer -> judge for one side, the retriever closed whatever happens."""
    clock = PhaseClock()
    prepared = prepare(options, plan, side, diagnostics, clock)
    retriever = bind(options, prepared, clock)
    try:
        answers = answer(options, prepared, retriever, diagnostics, clock)
    finally:
        retriever.close()
    return judge(options, prepared, answers, diagnostics, clock)


def plan_evaluation(options: EvalOptions, diagnostics: Diagnostics, golden: GoldenSet | None = None) -> Plan:
    """The golden set (read from its file unless given) checked against the settings."""
    if golden is None:
        golden_file = find_golden(options.kb_path, options.golden_path)
        golden = load_golden(golden_file, shown=str(golden_file))
    diagnostics.items.extend(golden.warnings)
    refuse_unsearchable_queries(golden)
    check_relevance_level(golden, options.relevance_level, diagnostics, interface_words(options.interface))
    limit = options.limit or golden.default_limit or DEFAULT_LIMIT
    refuse_too_many_hits(golden, limit, options.limit is not None, interface_words(options.interface)("--limit"))
    ks = tuple(sorted(set(options.ks)))
    if ks[-1] > limit:
        diagnostics.warn(DiagnosticCode.K_OVER_LIMIT, f"k={ks[-1]} is larger than the limit {limit}: @{ks[-1]} sees only {limit} hits")
    return Plan(golden, limit, ks, tuple(SearchRequest(q.id, q.text, limit) for q in golden.queries))


def prepare(
    options: EvalOptions, plan: Plan, side: Side, diagnostics: Diagnostics, clock: PhaseClock | None = None
) -> Prepared:
    """Read the side's documents, index them, and check every label against them."""
    clock = clock if clock is not None else PhaseClock()
    cache = ParseCache(side.cache_dir) if side.cache_dir is not None else None
    documents = (
        read_given(
            side.kb_path, side.source(diagnostics), diagnostics, caps=options.corpus_caps, in_path_order=True, table=True
        )
        if side.source is not None
        else read_folder(
            side.kb_path, options.exclude, diagnostics, cache=cache, memo=side.memo, caps=options.corpus_caps, table=True
        )
    )
    reuse = Reuse(side.reuse, side.take_analyzer) if side.reuse is not None else None
    # Read, parsed and written to the chunk table document by document (never held whole).
    index = Index.build(
        documents, reuse=reuse, keep_analysis=side.keep_analysis, donor=side.memo is not None, caps=options.corpus_caps
    )
    if side.refuse_impossible and index.corpus.documents == 0:
        raise InputError(
            "0 documents indexed: the knowledge base holds no file kb-eval reads, so nothing can be measured",
            file=str(side.kb_path),
            hint="check --kb-path (the folder holding the notes), the file types kb-eval indexes "
            f"({', '.join(INDEXED_SUFFIXES)}; dot-folders are skipped) and --exclude",
        )
    clock.lap("walk_parse")
    check_labels(
        plan.golden, index, diagnostics, refuse_impossible=side.refuse_impossible, kb_path=side.kb_path,
        builtin=options.retriever.kind is RetrieverKind.BUILTIN, score_level=options.score_level,
    )
    return Prepared(plan, side, index)


def bind(options: EvalOptions, prepared: Prepared, clock: PhaseClock | None = None) -> Retriever:
    """The retriever the settings choose, bound to this side: the built-in one analyses the
    side's index here (before the base, which takes that analysis over, starts); one with its
    own index gets this side's folder for `{kb}`. The caller closes it once it has answered."""
    try:
        retriever = options.retriever(prepared.index, prepared.plan.requests, prepared.side.kb_path)
        if isinstance(retriever, BuiltinRetriever):
            # Where each hit sits is read only for the labels that need it (answer() drops it otherwise).
            retriever.parents = needs_parents(prepared.plan.golden)
    except IndexCapExceeded as over:
        what = "postings (a word in a section)" if over.setting == "max-postings" else "distinct words"
        raise over_cap(
            prepared.side.kb_path, prepared.index.path_of(over.chunk_id), f"the KB has more than {over.cap} {what}",
            over.setting,
        ) from None
    if clock is not None:
        clock.lap("index")
    return retriever


def answer(
    options: EvalOptions, prepared: Prepared, retriever: Retriever, diagnostics: Diagnostics,
    clock: PhaseClock | None = None,
) -> Answers:
    """Every golden query answered by `retriever` (bound to this side), checked against the corpus."""
    clock = clock if clock is not None else PhaseClock()
    plan, index = prepared.plan, prepared.index
    words = interface_words(options.interface)
    with index.read_snapshot():
        lists = retriever.search_all(plan.requests)
    warn_answer_notes(retriever.notes(), diagnostics, words)
    costs = retriever.costs()
    # The built-in search returns the index's own sections: only another's headings are looked up.
    builtin = options.retriever.kind is RetrieverKind.BUILTIN
    named = set() if builtin or options.score_level is not ScoreLevel.SECTION else returned_heading_paths(
        plan.golden, lists, index.paths)
    check_answers(
        plan.golden, lists, index.paths,
        AnswerSource(retriever.kind, retriever.path_prefixes, retriever.source_file if isinstance(retriever, RunFileRetriever) else None),
        options.score_level, diagnostics,
        golden_name=PurePosixPath(plan.golden.path.replace("\\", "/")).name, words=words, notes=retriever.notes(),
        headings={path: [row[0] for row in rows] for path, rows in index.sections(named).items()} if named else None,
    )
    clock.lap("search")
    returned = {q.id: hits[: plan.limit] for q, hits in zip(plan.golden.queries, lists)}
    # Where each hit sits is needed only by `parent:` and `subsections:` labels; otherwise it is
    # dropped, so it does not grow every report and history by the headings of every hit.
    returned = with_parents(returned, index) if needs_parents(plan.golden) else without_parents(returned)
    return Answers(returned, retriever.describe(), costs if len(costs) == len(plan.requests) else (None,) * len(plan.requests))


def judge(
    options: EvalOptions, prepared: Prepared, answers: Answers, diagnostics: Diagnostics,
    clock: PhaseClock | None = None,
) -> EvalOutcome:
    """Score every query, scan the corpus for quoted golden queries, locate each quotation, and
    make the side's run record."""
    clock = clock if clock is not None else PhaseClock()
    plan, side, index = prepared.plan, prepared.side, prepared.index
    golden, ks, returned = plan.golden, plan.ks, answers.returned
    with index.read_snapshot():
        scanned = index.corpus.documents - len(side.unchanged & index.paths)
        chunks = counted(index.chunks_by_document(side.unchanged), "scanned", scanned, "documents")
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
            answer=cost,
        )
        for q, cost in zip(golden.queries, answers.costs, strict=True)
    )
    timestamp = side.timestamp or options.timestamp or datetime.now(UTC)
    by_tag = aggregate_by_tag(queries, ks, diagnostics)  # before the warnings are taken: it may warn
    with index.read_snapshot():
        titles = index.titles_and_headings(answer_paths(golden.queries))
    top_k = ([hit.path for hit in q.hits] for q in queries)
    health = golden_health(golden.queries, top_k, index.paths, titles, ks[-1])
    diagnostics.items.extend(health_diagnostics(health, golden.path))
    run = RunRecord(
        tool_version=__version__,
        timestamp=timestamp.strftime("%Y-%m-%dT%H:%M:%SZ"),
        fingerprint=fingerprint(options, plan, answers.retriever),
        corpus=index.corpus,
        aggregate=aggregate((q.metrics for q in queries), ks),
        by_tag=by_tag,
        queries=queries,
        findings=tuple(located),
        warnings=tuple(diagnostics.items),
        health=health,
    )
    clock.lap("report")
    return EvalOutcome(run, golden, clock.seconds)


def fingerprint(options: EvalOptions, plan: Plan, retriever: Mapping[str, object]) -> dict[str, object]:
    """What must be equal for two runs to be compared: the same search, cut-offs and golden set."""
    # The relevance level is recorded only when it is not trec_eval's default: every run recorded
    # before the setting existed counted grade 1 and above, and stays comparable with one that still does.
    level = (
        {"relevance_level": options.relevance_level} if options.relevance_level != DEFAULT_RELEVANCE_LEVEL else {}
    )
    return {
        "retriever": dict(retriever),
        "limit": plan.limit,
        "k": list(plan.ks),
        "golden_sha256": plan.golden.sha256,
        "metric_version": METRIC_VERSION,
        **level,
        # Only when not the default: every run recorded before the setting stays comparable.
        **({"score_level": options.score_level.value} if options.score_level is not ScoreLevel.SECTION else {}),
    }


def with_intervals(run: RunRecord) -> RunRecord:
    """`run` with the bootstrap interval of every mean of its aggregate and of each tag's
    (metrics/uncertainty.py). Only the run a report is about needs them: a compared run is not
    bootstrapped, which keeps the pull-request loop's second evaluation as cheap as the first."""
    rows = run.queries or ()
    ks = run.ks

    def bootstrapped(metrics: AggregateMetrics, selected: Sequence[QueryRecord]) -> AggregateMetrics:
        return replace(metrics, intervals=intervals(aggregate_columns([q.metrics for q in selected], ks)))

    return replace(
        run,
        aggregate=bootstrapped(run.aggregate, rows),
        by_tag=with_tag_intervals(run.by_tag, rows, bootstrapped),
    )


def refuse_unsearchable_queries(golden: GoldenSet) -> None:
    """A query from which no searchable fragment survives would score a silent zero."""
    for query in golden.queries:
        if not is_searchable(query.text):
            raise InputError(
                f"query {query.id!r} has no letters or digits to search for",
                file=golden.path, line=query.line, field=f"queries[{query.id}].query",
                hint="write the query as words; punctuation and search operators alone match nothing",
            )


def check_relevance_level(
    golden: GoldenSet, level: int, diagnostics: Diagnostics, words: Callable[[str], str] = str
) -> None:
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
                # Only the setting's name is reworded: the query id is the golden file's text.
                f"query {query.id!r} has no expected entry with grade {level} or more "
                f"({words('--relevance-level')}): it is scored but left out of every aggregate",
                golden.path, query.line,
            )


def check_labels(
    golden: GoldenSet,
    index: Index,
    diagnostics: Diagnostics,
    *,
    refuse_impossible: bool,
    kb_path: Path,
    builtin: bool = True,
    score_level: ScoreLevel = ScoreLevel.SECTION,
) -> None:
    """Every expected path and heading checked against the corpus (golden/labels.py): a wrong one is
    a warning naming what is there; a golden file none of whose paths is indexed stops the run.
    Headings are not checked when they are not scored (`--score-level document`)."""
    warnings, present = check_paths(golden, index.paths)
    labelled = sum(1 for _ in labelled_members(golden))
    if refuse_impossible and labelled and not present:
        raise InputError(
            f"none of the golden file's {labelled} expected paths is in the indexed corpus "
            f"({index.corpus.documents} documents indexed from {kb_path}), so every query would score 0",
            file=golden.path,
            hint="expected paths are relative to --kb-path: check --kb-path, --exclude and the file types "
            f"kb-eval indexes ({', '.join(INDEXED_SUFFIXES)})"
            + (f"; {warnings[0].message}" if warnings else ""),
        )
    diagnostics.items.extend(warnings)
    needed = paths_with_headings(golden) & index.paths if score_level is ScoreLevel.SECTION else set()
    if needed:
        by_path = {
            path: [SectionInfo(heading, parents, searchable) for heading, parents, _, searchable in rows]
            for path, rows in index.sections(needed).items()
        }
        diagnostics.items.extend(check_headings(golden, by_path, builtin=builtin))


def needs_parents(golden: GoldenSet) -> bool:
    return any(m.parent is not None or m.subsections for _, m in labelled_members(golden))


def without_parents(returned: Mapping[str, list[Hit]]) -> dict[str, list[Hit]]:
    # Made by Hit's own constructor: dataclasses.replace reads every field by name first, and
    # 10,000 queries' hits made it a second of the search phase.
    return {
        query_id: [Hit(hit.rank, hit.path, hit.heading, hit.score) if hit.parents is not None else hit for hit in hits]
        for query_id, hits in returned.items()
    }


def with_parents(returned: Mapping[str, list[Hit]], index: Index) -> dict[str, list[Hit]]:
    """Hits of a retriever that gives no enclosing headings get them from the indexed corpus when
    their heading is unique in their document (a repeated one stays unknown: docs/metrics.md)."""
    wanted = {hit.path for hits in returned.values() for hit in hits if hit.parents is None}
    if not wanted:
        return dict(returned)
    unique: dict[tuple[str, str], tuple[str, ...] | None] = {}
    for path, rows in index.sections(wanted & index.paths).items():
        for heading, parents, _, _ in rows:
            key = (path, heading)
            unique[key] = None if key in unique else parents
    return {
        query_id: [
            replace(hit, parents=unique.get((hit.path, hit.heading))) if hit.parents is None else hit for hit in hits
        ]
        for query_id, hits in returned.items()
    }


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


class PhaseClock:
    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}
        self._last = time.perf_counter()

    def lap(self, phase: str) -> None:
        now = time.perf_counter()
        self.seconds[phase] = now - self._last
        self._last = now
