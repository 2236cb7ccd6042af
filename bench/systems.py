"""The systems the benchmark runs, one function each, executed in a worker process.

Each function does the whole job the way a user of that system would (read
the files, tokenize, index, answer every golden query) and returns a
`SystemRun`: seconds per phase, the peak RSS reached by the end of each phase,
and the ranked (path, heading) list per query, which the parent scores with
the same metric for every system.

Run one with `python bench/worker.py SYSTEM KB GOLDEN OUT.json`; bench/run.py
does that in a fresh process per system and repeat, so one system's memory
never counts against another.
"""

from __future__ import annotations

import dataclasses
import os
import re
import resource
import sqlite3
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import yaml
from sections import Chunk, read_chunks

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

TOP_K = 10
CACHE_ENV = "KB_EVAL_BENCH_CACHE"
MIN_QUOTABLE_QUERY = 12
"""Seed decision 0006: the quote scan ignores shorter (normalised) queries."""

Ranking = list[tuple[str, str]]


@dataclass(slots=True)
class SystemRun:
    system: str
    phases: dict[str, float] = field(default_factory=dict)
    rss_kib_after: dict[str, int] = field(default_factory=dict)
    rankings: dict[str, Ranking] = field(default_factory=dict)
    extra: dict[str, object] = field(default_factory=dict)

    def phase(self, name: str, started: float) -> float:
        """Record the phase that began at `started`; returns now, the start of the next one."""
        now = time.perf_counter()
        self.phases[name] = now - started
        self.rss_kib_after[name] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        return now


@dataclass(frozen=True, slots=True)
class BenchQuery:
    id: str
    text: str
    expected: tuple[tuple[str, str | None], ...]
    tags: tuple[str, ...]


def load_queries(golden: Path) -> list[BenchQuery]:
    """The golden file as the baselines read it (plain YAML; kb-eval uses its own loader)."""
    data = yaml.safe_load(golden.read_text(encoding="utf-8"))
    queries = []
    for entry in data["queries"]:
        expected = tuple((str(e["path"]), e.get("heading")) for e in entry.get("expected", []))
        queries.append(BenchQuery(str(entry["id"]), str(entry["query"]), expected, tuple(entry.get("tags") or ())))
    return queries


def chunk_text(chunk: Chunk) -> str:
    return f"{chunk.breadcrumb}\n{chunk.heading}\n{chunk.body}"


# -- bm25s ---------------------------------------------------------------------
def run_bm25s(kb: Path, golden: Path) -> SystemRun:
    import bm25s
    import Stemmer

    run = SystemRun("bm25s")
    t = time.perf_counter()
    chunks = read_chunks(kb)
    queries = load_queries(golden)
    t = run.phase("read", t)
    stemmer = Stemmer.Stemmer("english")
    corpus_tokens = bm25s.tokenize([chunk_text(c) for c in chunks], stopwords="en", stemmer=stemmer, show_progress=False)
    t = run.phase("tokenize", t)
    retriever = bm25s.BM25()
    retriever.index(corpus_tokens, show_progress=False)
    t = run.phase("index", t)
    query_tokens = bm25s.tokenize([q.text for q in queries], stopwords="en", stemmer=stemmer, return_ids=False, show_progress=False)
    k = min(TOP_K, len(chunks))
    for query, tokens in zip(queries, query_tokens):
        known = [tok for tok in tokens if tok in retriever.vocab_dict]
        if not known:
            run.rankings[query.id] = []
            continue
        ids, scores = retriever.retrieve([known], k=k, show_progress=False)
        run.rankings[query.id] = [(chunks[i].path, chunks[i].heading) for i, s in zip(ids[0], scores[0]) if s > 0]
    run.phase("query", t)
    run.extra["chunks"] = len(chunks)
    run.extra["version"] = bm25s.__version__
    return run


# -- tantivy -------------------------------------------------------------------
QUERY_WORD = re.compile(r"\w+")


def run_tantivy(kb: Path, golden: Path) -> SystemRun:
    import tantivy

    run = SystemRun("tantivy")
    t = time.perf_counter()
    chunks = read_chunks(kb)
    queries = load_queries(golden)
    t = run.phase("read", t)
    builder = tantivy.SchemaBuilder()
    builder.add_text_field("path", stored=True, tokenizer_name="raw")
    builder.add_text_field("heading", stored=True, tokenizer_name="en_stem")
    builder.add_text_field("breadcrumb", tokenizer_name="en_stem")
    builder.add_text_field("body", tokenizer_name="en_stem")
    index = tantivy.Index(builder.build())
    # Tantivy tokenizes inside add_document, so its "index" phase includes tokenizing.
    writer = index.writer(heap_size=256_000_000)
    for chunk in chunks:
        writer.add_document(
            tantivy.Document(path=chunk.path, heading=chunk.heading, breadcrumb=chunk.breadcrumb, body=chunk.body)
        )
    writer.commit()
    writer.wait_merging_threads()
    index.reload()
    t = run.phase("index", t)
    searcher = index.searcher()
    for query in queries:
        words = QUERY_WORD.findall(query.text)
        if not words:
            run.rankings[query.id] = []
            continue
        parsed = index.parse_query(" ".join(words), ["heading", "breadcrumb", "body"])
        ranking: Ranking = []
        for _score, address in searcher.search(parsed, TOP_K).hits:
            doc = searcher.doc(address)
            ranking.append((doc["path"][0], doc["heading"][0]))
        run.rankings[query.id] = ranking
    run.phase("query", t)
    run.extra["chunks"] = len(chunks)
    return run


# -- SQLite FTS5 with the trigram tokenizer -------------------------------------
def trigram_match_expression(text: str) -> str:
    """OR of every distinct trigram of the query's words, each as a quoted FTS5 string."""
    grams: dict[str, None] = {}
    for word in text.casefold().split():
        for i in range(len(word) - 2):
            grams[word[i : i + 3]] = None
    return " OR ".join('"' + g.replace('"', '""') + '"' for g in grams)


def run_fts5_trigram(kb: Path, golden: Path) -> SystemRun:
    run = SystemRun("fts5-trigram")
    t = time.perf_counter()
    chunks = read_chunks(kb)
    queries = load_queries(golden)
    t = run.phase("read", t)
    db = sqlite3.connect(":memory:")
    db.execute("CREATE VIRTUAL TABLE chunk USING fts5(heading, breadcrumb, body, tokenize='trigram')")
    db.executemany(
        "INSERT INTO chunk(rowid, heading, breadcrumb, body) VALUES (?, ?, ?, ?)",
        ((i, c.heading, c.breadcrumb, c.body) for i, c in enumerate(chunks)),
    )
    db.commit()
    t = run.phase("index", t)
    for query in queries:
        expression = trigram_match_expression(query.text)
        if not expression:
            run.rankings[query.id] = []
            continue
        rows = db.execute(
            "SELECT rowid FROM chunk WHERE chunk MATCH ? ORDER BY bm25(chunk) LIMIT ?", (expression, TOP_K)
        ).fetchall()
        run.rankings[query.id] = [(chunks[r].path, chunks[r].heading) for (r,) in rows]
    run.phase("query", t)
    run.extra["sqlite_version"] = sqlite3.sqlite_version
    return run


# -- the naive quote scan --------------------------------------------------------
def fallback_normalise(text: str) -> str:
    return " ".join(text.split()).lower()


def quote_normaliser() -> tuple[Callable[[str], str], str]:
    """kb-eval's own normalisation when it exists, so both scans look for the same needles."""
    try:
        from scanner.scan.quotes import normalise
    except ImportError:
        return fallback_normalise, "bench fallback (whitespace collapsed, lower-cased)"
    return normalise, "scanner.scan.quotes.normalise"


def scan_fields(kb: Path) -> tuple[list[tuple[str, str, str]], str]:
    """(heading, breadcrumb, body) of every chunk: kb-eval's chunks when importable, so the
    naive scan and kb-eval's scan search exactly the same texts."""
    try:
        from scanner.corpus.reader import read_corpus
    except ImportError:
        return [(c.heading, c.breadcrumb, c.body) for c in read_chunks(kb)], "bench/sections.py"
    corpus = read_corpus(kb)
    return [(c.heading, c.breadcrumb, c.body) for d in corpus.documents for c in d.chunks], "scanner.corpus.reader.read_corpus"


def run_naive_scan(kb: Path, golden: Path, budget_seconds: float = 120.0) -> SystemRun:
    """`needle in text` for every normalised needle and every field of every chunk.

    When the scan would run past `budget_seconds` it stops and extrapolates
    linearly from the chunks it did (the cost per chunk is uniform: same
    needles, similar field lengths); `extra.extrapolated` says so.
    """
    run = SystemRun("naive-scan")
    normalise, normaliser = quote_normaliser()
    t = time.perf_counter()
    fields, chunker = scan_fields(kb)
    queries = load_queries(golden)
    t = run.phase("read", t)
    needles = list(dict.fromkeys(n for n in (normalise(q.text) for q in queries) if len(n) >= MIN_QUOTABLE_QUERY))
    matches = 0
    done = 0
    deadline = t + budget_seconds
    for chunk_fields in fields:
        for text in chunk_fields:
            field_text = normalise(text)
            for needle in needles:
                if needle in field_text:
                    matches += 1
        done += 1
        if done % 256 == 0 and time.perf_counter() > deadline:
            break
    elapsed = time.perf_counter() - t
    run.phase("scan", t)
    if done < len(fields):
        run.phases["scan"] = elapsed * len(fields) / done
    run.extra.update(
        needles=len(needles),
        chunks=len(fields),
        chunks_scanned=done,
        extrapolated=done < len(fields),
        field_matches=matches,
        normaliser=normaliser,
        chunker=chunker,
    )
    return run


# -- kb-eval -----------------------------------------------------------------
def run_kb_eval(kb: Path, golden: Path, tokenization: str | None = None, cache_dir: Path | None = None) -> SystemRun:
    """kb-eval's whole run; `tokenization` None keeps kb-eval's default, else a Tokenization value;
    `cache_dir` is kb-eval's parse cache (--cache-dir)."""
    from scanner.cli.main import parse_cli
    from scanner.pipeline import evaluate
    from scanner.settings.retriever import retriever_builder
    from tests.support.phases import evaluate_head

    run = SystemRun("kb-eval" if tokenization is None else f"kb-eval-{tokenization}")
    if cache_dir is not None:
        run.system = "kb-eval-cached"
    # evaluate_side times its phases with PhaseClock.lap; wrapping lap records the peak RSS reached
    # by the end of each phase as well, without touching scanner/.
    original_lap = evaluate.PhaseClock.lap

    def lap(clock: evaluate.PhaseClock, phase: str) -> None:
        original_lap(clock, phase)
        run.rss_kib_after[phase] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss

    evaluate.PhaseClock.lap = lap  # type: ignore[method-assign]
    t = time.perf_counter()
    options = evaluate.EvalOptions(kb_path=kb, golden_path=golden)
    if tokenization is not None:
        options = dataclasses.replace(options, retriever=retriever_builder(parse_cli(["--tokenization", tokenization])))
    if cache_dir is not None:
        options = dataclasses.replace(options, cache_dir=cache_dir)
    outcome = evaluate_head(options)
    wall = time.perf_counter() - t
    run.phases.update(outcome.phase_seconds)
    from scanner.report.document import run_document

    report = run_document(outcome.run)
    for row in report["per_query"]:  # type: ignore[union-attr]
        run.rankings[row["id"]] = [(hit["path"], hit["heading"] or "") for hit in row["top_k"]]
    run.extra.update(
        wall_seconds=wall,
        untimed_seconds=wall - sum(outcome.phase_seconds.values()),
        aggregate=report["aggregate"],
        findings=len(report["findings"]),  # type: ignore[arg-type]
        documents=report["corpus"]["documents"],  # type: ignore[index]
        chunks=report["corpus"]["chunks"],  # type: ignore[index]
        retriever=report["fingerprint"]["retriever"],  # type: ignore[index]
    )
    return run


SYSTEMS: dict[str, Callable[[Path, Path], SystemRun]] = {
    "kb-eval": run_kb_eval,
    "kb-eval-word": lambda kb, golden: run_kb_eval(kb, golden, "word"),
    # The parent empties this cache before round 1, so round 1 is cold and later rounds are warm.
    "kb-eval-cached": lambda kb, golden: run_kb_eval(kb, golden, cache_dir=Path(os.environ[CACHE_ENV])),
    "bm25s": run_bm25s,
    "tantivy": run_tantivy,
    "fts5-trigram": run_fts5_trigram,
    "naive-scan": run_naive_scan,
}
