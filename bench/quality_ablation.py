"""Variants of the built-in search that were tried and not kept, scored in the quality harness.

    python bench/quality_ablation.py [--collections bench/.collections] [--only cranfield ...] [--layout frontmatter]

Each variant is the default (query compiler 6: weights 2,2,1 with a quarter of the breadcrumb's
scored alone, i.e. BM25F 2/1.5/1 plus 0.5 x the breadcrumb's own BM25) with one thing changed. Scoring is recomputed here
from kb-eval's own per-field term counts (`Index._postings`) with scipy sparse matrices, so that
variants the scanner has no setting for (Robertson's BM25F with per-field length normalisation)
can be scored too; the first row, the default recomputed this way, must equal kb-eval's row of
`bench/quality_table.py`, which checks the recomputation. Analysis variants (stopword list, CJK
unigrams) patch `scanner.search.analysis` for their run only. Figures: docs/search-quality.md.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import scipy.sparse as sp

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))
if str(BENCH.parent) not in sys.path:
    sys.path.insert(0, str(BENCH.parent))

from quality_table import COLLECTIONS, DEPTH, LAYOUTS, Ranking, score
from systems import BenchQuery, load_queries

LUCENE_STOPWORDS = frozenset(
    ["a", "an", "and", "are", "as", "at", "be", "but", "by", "for", "if", "in", "into", "is", "it", "no", "not", "of", "on", "or", "such", "that", "the", "their", "then", "there", "these", "they", "this", "to", "was", "will", "with"]
)
"""Lucene's English stop set (bm25s's `en`), against the scanner's longer NLTK-style list."""

Fields = list[sp.csc_matrix]
"""Per field (heading, breadcrumb, body): term counts, chunks x terms."""
Lengths = list[np.ndarray]


def bm25(tf: sp.csc_matrix, lengths: np.ndarray, k1: float, b: float) -> sp.csc_matrix:
    """BM25 of every posting of `tf`, idf from its own document frequencies (scanner.search.bm25._impacts)."""
    n = tf.shape[0]
    df = np.diff((tf > 0).tocsc().indptr)
    idf = np.log1p((n - df + 0.5) / (df + 0.5))
    m = tf.tocoo()
    norm = k1 * (1 - b + b * lengths / (lengths.mean() or 1.0))
    values = idf[m.col] * m.data * (k1 + 1) / (m.data + norm[m.row])
    return sp.csc_matrix((values, (m.row, m.col)), shape=tf.shape)


def bm25f(fields: Fields, lengths: Lengths, weights: tuple[float, ...], k1: float = 1.5, b: float = 0.75) -> sp.csc_matrix:
    """BM25F in the scanner's form: weighted counts and weighted lengths, one saturation."""
    tf = sum((m * w for m, w in zip(fields, weights)), sp.csc_matrix(fields[0].shape))
    return bm25(sp.csc_matrix(tf), sum(l * w for l, w in zip(lengths, weights)), k1, b)


def robertson_bm25f(fields: Fields, lengths: Lengths, weights: tuple[float, ...], bs: tuple[float, ...], k1: float = 1.5) -> sp.csc_matrix:
    """BM25F with each field's count normalised by its own length (its own b) before weighting."""
    n, v = fields[0].shape
    total = sp.csc_matrix((n, v))
    for m, l, w, b in zip(fields, lengths, weights, bs):
        norm = 1 - b + b * l / (l.mean() or 1.0)
        total = total + sp.diags(w / np.where(norm > 0, norm, 1.0)) @ m
    any_field = sum(((m > 0).astype(np.int8) for m in fields), sp.csc_matrix((n, v), dtype=np.int8))
    df = np.diff((any_field > 0).tocsc().indptr)
    idf = np.log1p((n - df + 0.5) / (df + 0.5))
    c = total.tocoo()
    return sp.csc_matrix((idf[c.col] * c.data * (k1 + 1) / (c.data + k1), (c.row, c.col)), shape=(n, v))


def default(fields: Fields, lengths: Lengths) -> sp.csc_matrix:
    return bm25f(fields, lengths, (2, 1.5, 1)) + 0.5 * bm25(fields[1], lengths[1], 1.5, 0.75)


Scoring = Callable[[Fields, Lengths], sp.csc_matrix]
VARIANTS: dict[str, tuple[str, Scoring]] = {
    # name: (analysis variant, scoring)
    "default (recomputed)": ("default", default),
    "no Han unigrams": ("bigrams only", default),
    "unigrams of every CJK character (kana too)": ("all unigrams", default),
    "Lucene's 33 stopwords": ("lucene stopwords", default),
    "heading alone x0.5 too": ("default", lambda f, l: default(f, l) + 0.5 * bm25(f[0], l[0], 1.5, 0.75)),
    "every field alone x0.5 too": (
        "default", lambda f, l: default(f, l) + 0.5 * (bm25(f[0], l[0], 1.5, 0.75) + bm25(f[2], l[2], 1.5, 0.75))
    ),
    "breadcrumb alone with b 0.3": (
        "default", lambda f, l: bm25f(f, l, (2, 1.5, 1)) + 0.5 * bm25(f[1], l[1], 1.5, 0.3)
    ),
    "Robertson BM25F, b 0.75 each field, no alone": ("default", lambda f, l: robertson_bm25f(f, l, (2, 2, 1), (0.75, 0.75, 0.75))),
    "Robertson BM25F, b 0.3 heading and breadcrumb, no alone": (
        "default", lambda f, l: robertson_bm25f(f, l, (2, 2, 1), (0.3, 0.3, 0.75))
    ),
}


@contextmanager
def analysis(variant: str) -> Iterator[None]:
    """The scanner's analysis with one rule changed, for the block only."""
    import scanner.search.analysis as analysis_module

    saved = (analysis_module.ENGLISH_STOPWORDS, analysis_module._HAN, analysis_module._CLASSES)
    # The query side cuts with _HAN, the index side's batches with _CLASSES: both changed alike.
    classes = analysis_module._CLASSES.copy()
    if variant == "lucene stopwords":
        analysis_module.ENGLISH_STOPWORDS = LUCENE_STOPWORDS
    elif variant == "bigrams only":
        analysis_module._HAN = re.compile("(?!)")  # matches nothing
        classes[classes == analysis_module._UNIGRAM] = analysis_module._CJK
        analysis_module._CLASSES = classes
    elif variant == "all unigrams":
        analysis_module._HAN = re.compile(f"[{analysis_module.CJK_CHARACTERS}]")
        classes[classes == analysis_module._CJK] = analysis_module._UNIGRAM
        analysis_module._CLASSES = classes
    try:
        yield
    finally:
        analysis_module.ENGLISH_STOPWORDS, analysis_module._HAN, analysis_module._CLASSES = saved


def field_counts(kb: Path) -> tuple[object, Fields, Lengths]:
    from scanner.corpus.reader import read_corpus
    from scanner.search.index import Index

    index = Index.build(read_corpus(kb, workers=1).documents, analysis_workers=1)
    per_field = index._postings([tuple(1.0 if g == f else 0.0 for g in range(3)) for f in range(3)])
    size = max(len(p.start) - 1 for p in per_field)
    fields = []
    for p in per_field:
        terms = np.repeat(np.arange(len(p.start) - 1), np.diff(p.start))
        fields.append(sp.csc_matrix((p.tf.astype(np.float64), (p.chunks, terms)), shape=(index.corpus.chunks, size)))
    return index, fields, [p.lengths.astype(np.float64) for p in per_field]


def rank(index: object, impacts: sp.csc_matrix, queries: list[BenchQuery]) -> dict[str, Ranking]:
    from scanner.search.query_compiler import compile_query

    vocabulary = index.analyzer.vocabulary  # type: ignore[attr-defined]
    located = index.connection.execute("SELECT path, heading FROM chunks ORDER BY id").fetchall()  # type: ignore[attr-defined]
    rankings: dict[str, Ranking] = {}
    for query in queries:
        compiled = compile_query(query.text)
        terms = {} if compiled is None else {vocabulary[t]: float(c) for t, c in compiled.terms if t in vocabulary}
        if not terms:
            rankings[query.id] = []
            continue
        columns = list(terms)
        scores = np.asarray(impacts[:, columns] @ np.array([terms[t] for t in columns])).ravel()
        candidates = np.flatnonzero(scores > 0)
        order = candidates[np.lexsort((candidates, -scores[candidates]))][:DEPTH]
        rankings[query.id] = [(located[i][0], located[i][1] or "") for i in order]
    return rankings


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--collections", type=Path, default=BENCH / ".collections")
    parser.add_argument("--only", nargs="*", default=list(COLLECTIONS))
    parser.add_argument("--layout", choices=LAYOUTS, default=LAYOUTS[0], help="which of the title layouts to score")
    args = parser.parse_args()
    table: dict[str, dict[str, float]] = {}
    for name in args.only:
        queries = load_queries(args.collections / name / "golden.yml")
        prepared: dict[str, tuple[object, Fields, Lengths]] = {}
        for variant, (analysis_variant, scoring) in VARIANTS.items():
            with analysis(analysis_variant):
                if analysis_variant not in prepared:
                    prepared[analysis_variant] = field_counts(args.collections / name / args.layout / "kb")
                index, fields, lengths = prepared[analysis_variant]
                mean, _ = score(rank(index, scoring(fields, lengths), queries), queries)
            table.setdefault(variant, {})[name] = mean
            print(f"{name}: {variant:<55} nDCG@10 {mean:.4f}", file=sys.stderr)
    print("| variant | " + " | ".join(args.only) + " |")
    print("|---|" + "---:|" * len(args.only))
    for variant, row in table.items():
        print(f"| {variant} | " + " | ".join(f"{row[n]:.4f}" for n in args.only) + " |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
