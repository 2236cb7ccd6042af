"""Retrieval quality on real test collections: kb-eval's built-in search against lexical baselines.

    python bench/quality_table.py [--collections bench/.collections] [--previous main] [--json out.json]
    python bench/quality_table.py --sweep         # the settings grid the defaults were chosen on
    python bench/quality_table.py --sweep --rm3   # pseudo-relevance feedback, tried and not kept

`--collections` is the folder `bench/public_collections.py` wrote (every collection in the three
title layouts: frontmatter `title:` only, `# Title` only, both); `--layouts` picks some of them.
Every system ranks the same chunks (kb-eval's own reading of each KB: heading, breadcrumb and
body of every section) for the same queries, and is scored by kb-eval's own nDCG@10
(scanner.metrics.measures, binary gains at document level: a query's expected entries are documents).

Systems:
- kb-eval: the built-in retriever with its defaults, as `kb-eval` runs it.
- kb-eval@REF (with --previous REF): the built-in retriever of git revision REF, run from a
  `git archive` of it in a temporary folder, on the same chunks.
- bm25s: bm25s with the Snowball English stemmer (PyStemmer) and its English stopwords; CJK runs
  are pre-split into character bigrams so that its word regex sees them (no effect on English).
- rank_bm25: BM25Okapi over the same tokens as bm25s.
- tantivy: tantivy's `en_stem` tokenizer on the three fields, CJK runs pre-split into bigrams as
  for bm25s (as shipped, en_stem drops a CJK clause longer than its token limit).
- fts5-trigram: SQLite FTS5 with the trigram tokenizer, an OR of the query's trigrams.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from statistics import fmean

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
sys.path.insert(0, str(BENCH))
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from quality import kb_eval_ndcg_at_k
from systems import BenchQuery, load_queries

COLLECTIONS = ("cranfield", "cisi", "cacm", "lisa", "jsquad", "cmrc2018", "korquad", "grooveseek")
LAYOUTS = ("frontmatter", "heading", "both")
K = 10
DEPTH = 10


@dataclass(frozen=True, slots=True)
class Section:
    path: str
    heading: str
    breadcrumb: str
    body: str


Ranking = list[tuple[str, str]]
System = Callable[[Path, list[Section], list[BenchQuery]], dict[str, Ranking]]


def read_sections(kb: Path) -> list[Section]:
    from scanner.corpus.reader import read_corpus

    corpus = read_corpus(kb, workers=1)
    return [Section(c.path, c.heading, c.breadcrumb, c.body) for d in corpus.documents for c in d.chunks]


# -- kb-eval -----------------------------------------------------------------------------------
def kb_eval_system(**settings: object) -> System:
    """kb-eval's built-in retriever; `settings` are BuiltinRetriever keyword arguments
    (weights=FieldWeights(...), parameters=Bm25Parameters(...)) or prf=(documents, terms, weight, min_terms)."""

    def run(kb: Path, sections: list[Section], queries: list[BenchQuery]) -> dict[str, Ranking]:
        from scanner.corpus.reader import read_corpus
        from scanner.retrievers.builtin import BuiltinRetriever
        from scanner.search.index import Index

        index = _INDEX_CACHE.get(kb)
        if index is None:
            index = _INDEX_CACHE[kb] = Index.build(read_corpus(kb, workers=1).documents)
        prf = settings.get("prf")
        retriever = BuiltinRetriever(index, **{k: v for k, v in settings.items() if k != "prf"})  # type: ignore[arg-type]
        if prf is not None:
            return {q.id: prf_search(retriever, q.text, prf) for q in queries}  # type: ignore[arg-type]
        return {q.id: [(h.path, h.heading or "") for h in retriever.search(q.text, DEPTH)] for q in queries}

    return run


_INDEX_CACHE: dict[Path, object] = {}


def prf_search(retriever: object, text: str, prf: tuple[int, int, float, int]) -> Ranking:
    """RM3-style pseudo-relevance feedback, tried as an experiment (not kb-eval's default):
    the top `documents` chunks of a first search vote for their terms (term frequency share,
    weighted by the chunk's normalised score); the best `terms` new terms join the query with
    total weight `weight` relative to the original query's. Only for queries of at least
    `min_terms` distinct terms (0: every query); shorter ones are searched as they are."""
    import numpy as np

    from scanner.search.query_compiler import compile_query

    documents, n_terms, weight, min_terms = prf
    index = retriever.index  # type: ignore[attr-defined]
    scorer = index.scorer(retriever.weights.as_tuple(), retriever.parameters)  # type: ignore[attr-defined]
    vocabulary = index.analyzer.vocabulary
    compiled = compile_query(text)
    if compiled is None:
        return []
    query = [(vocabulary[t], float(c)) for t, c in compiled.terms if t in vocabulary]
    first = scorer.top(query, documents) if len(compiled.terms) >= min_terms else []
    if first:
        forward = _forward_index(index)
        total = sum(s for _, s in first)
        votes: dict[int, float] = {}
        for position, score in first:
            terms, counts = forward[position]
            share = counts / max(float(counts.sum()), 1.0) * (score / total)
            for term, value in zip(terms.tolist(), share.tolist()):
                votes[term] = votes.get(term, 0.0) + value
        original = {t for t, _ in query}
        expansion = sorted(((v, t) for t, v in votes.items() if t not in original), reverse=True)[:n_terms]
        mass = sum(v for v, _ in expansion)
        q_mass = sum(c for _, c in query)
        if mass > 0:
            query = query + [(t, weight * q_mass * v / mass) for v, t in expansion]
    ranked = scorer.top(query, DEPTH)
    located = index.locate_chunks([p + 1 for p, _ in ranked])
    del np
    return [(located[p + 1][0], located[p + 1][1] or "") for p, _ in ranked]


_FORWARD: dict[int, list[tuple[object, object]]] = {}


def _forward_index(index: object) -> list[tuple[object, object]]:
    import numpy as np

    key = id(index)
    if key not in _FORWARD:
        (postings,) = index._postings([(1.0, 1.0, 1.0)])  # type: ignore[attr-defined]  # unweighted counts
        terms = np.repeat(np.arange(len(postings.start) - 1), np.diff(postings.start))
        chunks, counts = postings.chunks, postings.tf
        order = np.lexsort((terms, chunks))
        terms, chunks, counts = terms[order], chunks[order], counts[order]
        bounds = np.searchsorted(chunks, np.arange(index.corpus.chunks + 1))  # type: ignore[attr-defined]
        _FORWARD[key] = [(terms[bounds[i] : bounds[i + 1]], counts[bounds[i] : bounds[i + 1]]) for i in range(len(bounds) - 1)]
    return _FORWARD[key]


def previous_system(ref: str) -> System:
    """kb-eval's built-in retriever at git revision `ref`, in a child process on an archive of it."""

    def run(kb: Path, sections: list[Section], queries: list[BenchQuery]) -> dict[str, Ranking]:
        with tempfile.TemporaryDirectory(prefix="kb-eval-previous-") as folder:
            archive = subprocess.run(["git", "-C", str(REPO), "archive", ref, "scanner", "schema"], check=True, capture_output=True).stdout
            subprocess.run(["tar", "-x", "-C", folder], input=archive, check=True)
            payload = json.dumps([[q.id, q.text] for q in queries])
            script = (
                "import json, sys\n"
                "from pathlib import Path\n"
                "from scanner.corpus.reader import read_corpus\n"
                "from scanner.search.index import Index\n"
                "from scanner.retrievers.base import SearchRequest\n"
                "from scanner.retrievers.builtin import BuiltinRetriever\n"
                "queries = json.loads(sys.stdin.read())\n"
                "index = Index.build(read_corpus(Path(sys.argv[1]), workers=1).documents)\n"
                "retriever = BuiltinRetriever(index)\n"
                f"requests = [SearchRequest(i, t, {DEPTH}) for i, t in queries]\n"
                "retriever.prepare(requests)\n"
                "with index.read_snapshot():\n"
                "    lists = retriever.search_all(requests)\n"
                "print(json.dumps({r.query_id: [[h.path, h.heading or ''] for h in hits] for r, hits in zip(requests, lists)}))\n"
            )
            # cwd too: `python -c` puts the working directory first on sys.path.
            env = {**os.environ, "PYTHONPATH": folder}
            out = subprocess.run(
                [sys.executable, "-c", script, str(kb.resolve())],
                input=payload, capture_output=True, text=True, env=env, check=True, cwd=folder,
            )
        return {k: [tuple(h) for h in v] for k, v in json.loads(out.stdout).items()}  # type: ignore[misc]

    return run


# -- baselines ---------------------------------------------------------------------------------
CJK_RUN = re.compile("[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af\uff66-\uff9f]+")


def spaced_bigrams(text: str) -> str:
    """CJK runs rewritten as space-separated bigrams, so word-based tokenizers see CJK terms."""

    def split(match: re.Match[str]) -> str:
        run = match.group(0)
        return " " + (run if len(run) == 1 else " ".join(run[i : i + 2] for i in range(len(run) - 1))) + " "

    return CJK_RUN.sub(split, text)


def section_text(section: Section) -> str:
    return f"{section.heading}\n{section.breadcrumb}\n{section.body}"


def bm25s_tokens(texts: list[str]) -> list[list[str]]:
    import bm25s
    import Stemmer

    stemmer = Stemmer.Stemmer("english")
    # The default token pattern keeps words of 2+ characters; single CJK characters are dropped as
    # they are for any word-based tokenizer.
    return bm25s.tokenize([spaced_bigrams(t) for t in texts], stopwords="en", stemmer=stemmer, return_ids=False, show_progress=False)  # type: ignore[no-any-return]


def run_bm25s(kb: Path, sections: list[Section], queries: list[BenchQuery]) -> dict[str, Ranking]:
    import bm25s

    retriever = bm25s.BM25()
    retriever.index(bm25s_tokens([section_text(s) for s in sections]), show_progress=False)
    rankings: dict[str, Ranking] = {}
    for query, tokens in zip(queries, bm25s_tokens([q.text for q in queries])):
        known = [t for t in tokens if t in retriever.vocab_dict]
        if not known:
            rankings[query.id] = []
            continue
        ids, scores = retriever.retrieve([known], k=min(DEPTH, len(sections)), show_progress=False)
        rankings[query.id] = [(sections[i].path, sections[i].heading) for i, s in zip(ids[0], scores[0]) if s > 0]
    return rankings


def run_rank_bm25(kb: Path, sections: list[Section], queries: list[BenchQuery]) -> dict[str, Ranking]:
    import numpy as np
    from rank_bm25 import BM25Okapi

    model = BM25Okapi([t or [""] for t in bm25s_tokens([section_text(s) for s in sections])])
    rankings: dict[str, Ranking] = {}
    for query, tokens in zip(queries, bm25s_tokens([q.text for q in queries])):
        scores = model.get_scores(tokens)
        order = np.lexsort((np.arange(len(scores)), -scores))[:DEPTH]
        rankings[query.id] = [(sections[i].path, sections[i].heading) for i in order if scores[i] > 0]
    return rankings


QUERY_WORD = re.compile(r"\w+")


def run_tantivy(kb: Path, sections: list[Section], queries: list[BenchQuery]) -> dict[str, Ranking]:
    import tantivy

    builder = tantivy.SchemaBuilder()
    builder.add_integer_field("position", stored=True)
    for name in ("heading", "breadcrumb", "body"):
        builder.add_text_field(name, tokenizer_name="en_stem")
    index = tantivy.Index(builder.build())
    writer = index.writer(heap_size=128_000_000, num_threads=1)
    for n, s in enumerate(sections):
        writer.add_document(tantivy.Document(
            position=n, heading=spaced_bigrams(s.heading), breadcrumb=spaced_bigrams(s.breadcrumb), body=spaced_bigrams(s.body)
        ))
    writer.commit()
    writer.wait_merging_threads()
    index.reload()
    searcher = index.searcher()
    rankings: dict[str, Ranking] = {}
    for query in queries:
        words = QUERY_WORD.findall(spaced_bigrams(query.text).lower())
        if not words:
            rankings[query.id] = []
            continue
        # Each word quoted: a bare `not` or `-` would be query syntax to tantivy's parser.
        parsed = index.parse_query(" ".join(f'"{w}"' for w in words), ["heading", "breadcrumb", "body"])
        hits = searcher.search(parsed, DEPTH).hits
        positions = [searcher.doc(address)["position"][0] for _, address in hits]
        rankings[query.id] = [(sections[p].path, sections[p].heading) for p in positions]
    return rankings


def run_fts5_trigram(kb: Path, sections: list[Section], queries: list[BenchQuery]) -> dict[str, Ranking]:
    db = sqlite3.connect(":memory:")
    db.execute("CREATE VIRTUAL TABLE chunk USING fts5(heading, breadcrumb, body, tokenize='trigram')")
    db.executemany("INSERT INTO chunk(rowid, heading, breadcrumb, body) VALUES (?, ?, ?, ?)",
                   ((n, s.heading, s.breadcrumb, s.body) for n, s in enumerate(sections)))
    rankings: dict[str, Ranking] = {}
    for query in queries:
        grams = dict.fromkeys(w[i : i + 3] for w in query.text.casefold().split() for i in range(len(w) - 2))
        if not grams:
            rankings[query.id] = []
            continue
        expression = " OR ".join('"' + g.replace('"', '""') + '"' for g in grams)
        rows = db.execute("SELECT rowid FROM chunk WHERE chunk MATCH ? ORDER BY bm25(chunk), rowid LIMIT ?", (expression, DEPTH))
        rankings[query.id] = [(sections[r].path, sections[r].heading) for (r,) in rows]
    return rankings


BASELINES: dict[str, System] = {
    "bm25s": run_bm25s,
    "rank_bm25": run_rank_bm25,
    "tantivy": run_tantivy,
    "fts5-trigram": run_fts5_trigram,
}


# -- scoring and the table ----------------------------------------------------------------------
def score(rankings: dict[str, Ranking], queries: list[BenchQuery]) -> tuple[float, list[float]]:
    per_query = [kb_eval_ndcg_at_k(rankings.get(q.id, []), q.expected, K) for q in queries]
    return fmean(per_query), per_query


def sweep_systems(rm3: bool, breadcrumb_only: str | None = None) -> dict[str, System]:
    """The grids the defaults were chosen on: BM25 parameters x field weights x field scoring,
    then the breadcrumb's own BM25 beside BM25F (`Bm25Parameters.alone`), and (with --rm3)
    pseudo-relevance feedback on top of the defaults."""
    from scanner.retrievers.builtin import FieldWeights
    from scanner.search.bm25 import Bm25Parameters

    systems: dict[str, System] = {}
    if rm3:
        for docs, terms, weight in ((5, 10, 0.5), (10, 10, 0.5), (10, 20, 0.3)):
            systems[f"rm3 {docs} docs {terms} terms w={weight}"] = kb_eval_system(prf=(docs, terms, weight, 0))
        for terms in (5, 10):
            for min_terms in (12, 20):
                name = f"rm3 10 docs {terms} terms w=0.3, queries of {min_terms}+ terms"
                systems[name] = kb_eval_system(prf=(10, terms, 0.3, min_terms))
        return systems
    for per_field in () if breadcrumb_only else (False, True):
        for k1 in (0.9, 1.2, 1.5):
            for b in (0.4, 0.75):
                for heading, breadcrumb in ((1.0, 1.0), (2.0, 1.0), (2.0, 2.0), (3.0, 2.0)):
                    name = f"{'per-field' if per_field else 'bm25f'} k1={k1} b={b} w={heading}/{breadcrumb}/1"
                    systems[name] = kb_eval_system(
                        parameters=Bm25Parameters(k1, b, per_field, (0.0, 0.0, 0.0)),
                        weights=FieldWeights(heading, breadcrumb, 1.0),
                    )
    if breadcrumb_only in ("beside", "beside-wide"):
        grid = ((2.0, 0.125), (2.0, 0.25), (2.5, 0.125), (2.5, 0.25), (3.0, 0.125), (3.0, 0.25))
        if breadcrumb_only == "beside-wide":
            grid = ((3.0, 0.1875), (3.5, 0.125), (3.5, 0.1875), (4.0, 0.125), (4.0, 0.1875))
        for breadcrumb, share in grid:
            for beside in (True,):
                name = f"w=2.0/{breadcrumb}/1, breadcrumb share {share} alone, beside text only {beside}"
                systems[name] = kb_eval_system(
                    parameters=Bm25Parameters(1.5, 0.75, False, (0.0, share, 0.0), beside), weights=FieldWeights(2.0, breadcrumb, 1.0)
                )
        return systems
    for breadcrumb in (1.5, 2.0, 2.5, 3.0):
        for share in (0.0, 0.125, 0.25, 0.375):
            name = f"bm25f k1=1.5 b=0.75 w=2.0/{breadcrumb}/1, breadcrumb share {share} alone"
            systems[name] = kb_eval_system(
                parameters=Bm25Parameters(1.5, 0.75, False, (0.0, share, 0.0)), weights=FieldWeights(2.0, breadcrumb, 1.0)
            )
    return systems


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--collections", type=Path, default=BENCH / ".collections")
    parser.add_argument("--only", nargs="*", default=list(COLLECTIONS))
    parser.add_argument("--layouts", nargs="*", choices=LAYOUTS, default=list(LAYOUTS))
    parser.add_argument("--previous", help="also run the built-in retriever of this git revision")
    parser.add_argument("--sweep", action="store_true", help="kb-eval settings grid instead of the baselines")
    parser.add_argument("--rm3", action="store_true", help="with --sweep: pseudo-relevance feedback variants")
    parser.add_argument("--breadcrumb-grid", nargs="?", const="grid", help="with --sweep: only the breadcrumb weight x share grid ('beside': the title's own BM25 beside text only)")
    parser.add_argument("--no-baselines", action="store_true", help="only kb-eval (and --previous): the baselines do not depend on it")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    if not (args.collections / "sources.json").is_file():
        print(
            f"{args.collections}: no converted collections; run bench/public_collections.py --sources DIR --out "
            f"{args.collections} first", file=sys.stderr,
        )
        return 2
    systems: dict[str, System] = {"kb-eval": kb_eval_system()}
    if args.previous:
        systems[f"kb-eval@{args.previous}"] = previous_system(args.previous)
    if args.sweep:
        systems.update(sweep_systems(args.rm3, args.breadcrumb_grid))
    elif not args.no_baselines:
        systems.update(BASELINES)
    table: dict[str, dict[str, float]] = {}
    per_query: dict[str, dict[str, list[float]]] = {}
    for name in args.only:
        queries = load_queries(args.collections / name / "golden.yml")
        for layout in args.layouts:
            column = f"{name}/{layout}"
            kb = args.collections / name / layout / "kb"
            sections = read_sections(kb)
            print(f"{column}: {len(sections)} sections, {len(queries)} queries", file=sys.stderr)
            for system, run in systems.items():
                started = time.perf_counter()
                mean, scores = score(run(kb, sections, queries), queries)
                table.setdefault(system, {})[column] = mean
                per_query.setdefault(system, {})[column] = scores
                print(f"  {system:<34} nDCG@10 {mean:.4f}  ({time.perf_counter() - started:.1f} s)", file=sys.stderr)
            _INDEX_CACHE.clear()
    for layout in args.layouts:
        columns = [f"{name}/{layout}" for name in args.only]
        print(f"\n{layout}\n")
        print("| system | " + " | ".join(args.only) + " |")
        print("|---|" + "---:|" * len(columns))
        best = {c: max(table[s][c] for s in table) for c in columns}
        for system, row in table.items():
            cells = [f"**{row[c]:.4f}**" if row[c] == best[c] else f"{row[c]:.4f}" for c in columns]
            print(f"| {system} | " + " | ".join(cells) + " |")
    if args.json:
        sources = json.loads((args.collections / "sources.json").read_text(encoding="utf-8"))
        args.json.write_text(json.dumps({"ndcg@10": table, "per_query": per_query, "sources": sources}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
