"""Retrieval quality on the Cranfield collection: kb-eval's built-in search vs bm25s, same run.

    python bench/cranfield.py CRANFIELD_DIR [--json out.json]

CRANFIELD_DIR holds the classic files `cran.all.1400`, `cran.qry` and
`QRelsCorrectedforTRECeval` (qrels in trec_eval's `qid 0 docid grade` form,
grades 1-4 with 4 the most relevant). They are not part of this repository;
any copy of the public Cranfield collection works.

The collection becomes a KB (one Markdown file per document: title in the
frontmatter, abstract as the body) and each system ranks the 225 queries.
Both are scored by trec_eval (pytrec_eval) on the graded judgments (nDCG@10)
and on binary relevance (recall@10, MRR), document level: a document's rank is
its best chunk's rank.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

import bm25s
import pytrec_eval
import Stemmer

from scanner.corpus import read_corpus
from scanner.index import Index
from scanner.retrievers.base import SearchRequest
from scanner.retrievers.builtin import BuiltinRetriever, Tokenization

DEPTH = 100


def parse_trec_text(path: Path) -> dict[str, dict[str, str]]:
    """`.I id` records with `.T`/`.A`/`.B`/`.W` fields."""
    records: dict[str, dict[str, str]] = {}
    current: dict[str, str] | None = None
    field = None
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        marker = re.match(r"\.([ITABW])\s*(.*)$", line)
        if marker and marker.group(1) == "I":
            current = {}
            records[marker.group(2).strip()] = current
            field = None
        elif marker:
            field = marker.group(1)
            if current is not None:
                current.setdefault(field, "")
        elif current is not None and field is not None:
            current[field] += line + "\n"
    return records


def load(directory: Path) -> tuple[dict[str, dict[str, str]], list[str], dict[str, dict[str, int]]]:
    documents = parse_trec_text(directory / "cran.all.1400")
    # Query ids in cran.qry skip numbers; the judgments number the queries 1..225 in file order.
    queries = [" ".join(record.get("W", "").split()) for record in parse_trec_text(directory / "cran.qry").values()]
    qrels: dict[str, dict[str, int]] = {}
    for line in (directory / "QRelsCorrectedforTRECeval").read_text().splitlines():
        parts = line.split()
        if len(parts) == 4 and int(parts[3]) > 0:
            qrels.setdefault(parts[0], {})[f"{parts[2]}.md"] = int(parts[3])
    return documents, queries, qrels


def write_kb(documents: dict[str, dict[str, str]], root: Path) -> None:
    for doc_id, record in documents.items():
        title = " ".join(record.get("T", "").split()) or doc_id
        body = record.get("W", "").strip()
        (root / f"{doc_id}.md").write_text(f"---\ntitle: {json.dumps(title)}\n---\n{body}\n", encoding="utf-8")


def kb_eval_run(root: Path, queries: list[str], tokenization: Tokenization) -> tuple[dict[str, dict[str, float]], float]:
    started = time.perf_counter()
    corpus = read_corpus(root, workers=1)
    index = Index.build(corpus)
    retriever = BuiltinRetriever(index, tokenization=tokenization)
    requests = [SearchRequest(str(n), text, DEPTH) for n, text in enumerate(queries, 1)]
    retriever.prepare(requests)
    run: dict[str, dict[str, float]] = {}
    for request, hits in zip(requests, retriever.search_all(requests)):
        ranking: dict[str, float] = {}
        for hit in hits:
            ranking.setdefault(hit.path, float(DEPTH - len(ranking)))
        run[request.query_id] = ranking
    return run, time.perf_counter() - started


def bm25s_run(documents: dict[str, dict[str, str]], queries: list[str]) -> tuple[dict[str, dict[str, float]], float]:
    started = time.perf_counter()
    ids = list(documents)
    texts = [" ".join(documents[i].get("T", "").split()) + "\n" + documents[i].get("W", "") for i in ids]
    stemmer = Stemmer.Stemmer("english")
    retriever = bm25s.BM25()
    retriever.index(bm25s.tokenize(texts, stopwords="en", stemmer=stemmer, show_progress=False), show_progress=False)
    tokens = bm25s.tokenize(queries, stopwords="en", stemmer=stemmer, show_progress=False)
    results, _scores = retriever.retrieve(tokens, k=DEPTH, show_progress=False)
    run = {
        str(n): {f"{ids[d]}.md": float(DEPTH - r) for r, d in enumerate(results[n - 1])}
        for n in range(1, len(queries) + 1)
    }
    return run, time.perf_counter() - started


def score(run: dict[str, dict[str, float]], qrels: dict[str, dict[str, int]]) -> dict[str, float]:
    binary = {q: {d: 1 for d in docs} for q, docs in qrels.items()}
    graded = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut.10"}).evaluate(run)
    flat = pytrec_eval.RelevanceEvaluator(binary, {"recall.10", "recip_rank"}).evaluate(run)
    n = len(qrels)
    return {
        "ndcg@10 (graded)": sum(v["ndcg_cut_10"] for v in graded.values()) / n,
        "recall@10": sum(v["recall_10"] for v in flat.values()) / n,
        "MRR": sum(v["recip_rank"] for v in flat.values()) / n,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("cranfield", type=Path)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    documents, queries, qrels = load(args.cranfield)
    results = {}
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        write_kb(documents, root)
        for name, make in (
            ("kb-eval builtin (auto)", lambda: kb_eval_run(root, queries, Tokenization.AUTO)),
            ("bm25s + Snowball English, en stopwords", lambda: bm25s_run(documents, queries)),
        ):
            run, seconds = make()
            results[name] = {**score(run, qrels), "seconds": seconds}
    print(f"Cranfield: {len(documents)} documents, {len(queries)} queries, {len(qrels)} with judgments")
    print(f"{'system':<42} {'nDCG@10':>8} {'R@10':>6} {'MRR':>6} {'time s':>7}")
    for name, row in results.items():
        print(f"{name:<42} {row['ndcg@10 (graded)']:8.4f} {row['recall@10']:6.4f} {row['MRR']:6.4f} {row['seconds']:7.2f}")
    if args.json:
        args.json.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
