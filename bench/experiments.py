"""Measured alternatives for kb-eval's two slowest phases (index and search), on one KB.

    python bench/experiments.py KB GOLDEN

Builds kb-eval's own index (scanner.index.Index.build), then times, on the
same data and queries: each FTS5 table's build; kb-eval's search SQL per
table and per query language; the word query without English stopwords; and
how many rows each OR-query matches (the cost driver: bm25() is computed for
every matching row before ORDER BY ... LIMIT). Findings only: nothing here
changes scanner/. (The figures in notes/bench.md were taken with an earlier
version of this script against kb-eval a047346/9386ba3, which also timed a
JOIN-free variant; kb-eval's search has had no JOIN since 96acea1.)
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from scanner.analysis import has_cjk, with_cjk_bigrams
from scanner.corpus import read_corpus
from scanner.golden import load_golden
from scanner.index import Index
from scanner.query_compiler import compile_query

STOPWORDS = frozenset(
    ["a", "an", "and", "are", "as", "at", "be", "by", "for", "from", "how", "in", "is", "it", "not", "of", "on", "or", "that", "the", "this", "to", "was", "what", "when", "where", "which", "why", "with"]
)


def timed(label: str, fn):  # type: ignore[no-untyped-def]
    t = time.perf_counter()
    value = fn()
    print(f"{label:<58} {time.perf_counter() - t:8.3f} s", flush=True)
    return value


def main() -> int:
    kb, golden_path = Path(sys.argv[1]), Path(sys.argv[2])
    golden = load_golden(golden_path)
    corpus = timed("read_corpus", lambda: read_corpus(kb))
    index = timed("Index.build (chunks table)", lambda: Index.build(corpus))
    db = index.connection
    rows = db.execute("SELECT id, path, heading, breadcrumb, body FROM chunks").fetchall()
    print(f"chunks: {len(rows)}")
    # kb-eval builds each FTS5 table on first use (ensure_full_text); time each on its own.
    timed("ensure_full_text fts_word", lambda: index.ensure_full_text("fts_word"))
    timed("ensure_full_text fts_trigram (CJK chunks only)", lambda: index.ensure_full_text("fts_trigram"))
    timed("with_cjk_bigrams over every CJK chunk (Python)", lambda: [
        (with_cjk_bigrams(r[2]), with_cjk_bigrams(r[3]), with_cjk_bigrams(r[4])) for r in rows if has_cjk(r[4])])

    compiled = [compile_query(q.text) for q in golden.queries]
    weights = (2.0, 1.0, 1.0)
    for table, pick in (("fts_word", lambda c: c.word), ("fts_trigram", lambda c: c.trigram)):
        expressions = [pick(c) for c in compiled if c is not None and pick(c) is not None]
        timed(f"{table}: kb-eval search SQL x{len(expressions)} (depth 100)",
              lambda table=table, expressions=expressions: [index.search(table, e, weights, 100) for e in expressions])
        for tag in ("en", "ja"):
            subset = [pick(c) for q, c in zip(golden.queries, compiled)
                      if tag in q.tags and c is not None and pick(c) is not None]
            terms = statistics.median(e.count(" OR ") + 1 for e in subset) if subset else 0
            timed(f"{table}: kb-eval search SQL, {len(subset)} {tag} queries ({terms:.0f} OR terms median)",
                  lambda table=table, subset=subset: [index.search(table, e, weights, 100) for e in subset])
        counts = [db.execute(f"SELECT count(*) FROM {table} WHERE {table} MATCH ?", (e,)).fetchone()[0]
                  for e in expressions]
        print(f"{table}: rows matched per query: median {statistics.median(counts):.0f},"
              f" max {max(counts)}, of {len(rows)}")
        if table == "fts_word":
            def without_stopwords(expression: str) -> str | None:
                terms = [t for t in expression.split(" OR ") if t.strip('"') not in STOPWORDS]
                return " OR ".join(terms) or None
            lean = [x for x in (without_stopwords(e) for e in expressions) if x]
            timed(f"{table}: kb-eval SQL, English stopwords dropped", lambda table=table, lean=lean: [index.search(table, e, weights, 100) for e in lean])
            lean_counts = [db.execute(f"SELECT count(*) FROM {table} WHERE {table} MATCH ?", (e,)).fetchone()[0] for e in lean]
            print(f"{table}: rows matched without stopwords: median {statistics.median(lean_counts):.0f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
