"""Cranfield's judgments through `kb-eval import` and back: kb-eval's metrics on the imported
golden file against trec_eval's (pytrec_eval) on the same qrels and the same run.

    python bench/import_roundtrip.py --cranfield DIR [--queries N] [--out DIR] [--seed S]

DIR is a git copy of noramtboraas/information-retrieval (bench/public_collections.py pins it).
Writes, into --out, `cranfield.qrels` (TREC: `query 0 docno grade`, grade = 5 - Cleverdon's code,
so that a higher grade is a larger gain; code -1, "no interest", stays -1, which trec_eval reads
as judged not relevant), `cranfield-queries.tsv` (`id<TAB>text`, the queries numbered 1..225 in
file order, as the judgments number them), a seeded TREC run over judged and unjudged documents,
the imported golden file, and prints every measure's largest difference per query. Exit 1 when
any differs by more than 1e-12.

`--queries N` keeps the first N queries: tests/fixtures/cranfield/slice/ was written with
`--queries 30 --out tests/fixtures/cranfield/slice --no-compare`.
"""

from __future__ import annotations

import argparse
import io
import json
import random
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from public_collections import SOURCES, parse_dot_fields, squash

KS = (1, 5, 10, 20)
DEPTH = 30
LEVEL = 1
TOLERANCE = 1e-12


def read(git_dir: Path, name: str) -> str:
    commit = SOURCES["cranfield"].commit
    return subprocess.run(
        ["git", f"--git-dir={git_dir}", "show", f"{commit}:{name}"], capture_output=True, check=True
    ).stdout.decode("utf-8")


def git_dir(folder: Path) -> Path:
    return folder / ".git" if (folder / ".git").exists() else (folder / "repo" if (folder / "repo").exists() else folder)


def write_collection(source: Path, out: Path, keep: int) -> None:
    repo = git_dir(source)
    raw = parse_dot_fields(read(repo, "cran.qry"))
    queries = {str(n): squash(r.get("W", "")) for n, r in enumerate(raw.values(), 1)}
    kept = [q for q in queries if int(q) <= keep]
    qrels = []
    for line in read(repo, "cranqrel").splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[0] in kept:
            code = int(parts[2])
            qrels.append(f"{parts[0]} 0 {parts[1]} {-1 if code == -1 else 5 - code}\n")
    out.mkdir(parents=True, exist_ok=True)
    (out / "cranfield.qrels").write_text("".join(qrels), encoding="utf-8")
    (out / "cranfield-queries.tsv").write_text("".join(f"{q}\t{queries[q]}\n" for q in kept), encoding="utf-8")


def seeded_run(qrels: dict[str, dict[str, int]], seed: int) -> dict[str, list[str]]:
    rng = random.Random(seed)
    runs = {}
    for query, judged in qrels.items():
        pool = list(dict.fromkeys(list(judged) + [str(n) for n in rng.sample(range(1, 1401), 40)]))
        rng.shuffle(pool)
        runs[query] = pool[: rng.randint(1, DEPTH)]  # a TREC run cannot say "nothing came back"
    return runs


def read_qrels(path: Path) -> dict[str, dict[str, int]]:
    qrels: dict[str, dict[str, int]] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        query, _, doc, grade = line.split()
        qrels.setdefault(query, {})[doc] = int(grade)
    return qrels


def compare(folder: Path, seed: int) -> float:
    """The largest difference between kb-eval and trec_eval over every measure and query."""
    import pytrec_eval

    from scanner.cli.main import main

    qrels = read_qrels(folder / "cranfield.qrels")
    runs = seeded_run(qrels, seed)
    run_file = folder / "cranfield.run"
    run_file.write_text("".join(
        f"{q} Q0 {doc}.md {rank} {DEPTH - rank + 1} seeded\n" for q, ranking in runs.items() for rank, doc in enumerate(ranking, 1)
    ), encoding="utf-8")
    golden = folder / "imported.yml"
    golden.unlink(missing_ok=True)
    assert main(["import", "--qrels", str(folder / "cranfield.qrels"), "--queries", str(folder / "cranfield-queries.tsv"),
                 "--doc-path", "{docno}.md", "--output", str(golden)]) == 0
    with tempfile.TemporaryDirectory() as kb, tempfile.TemporaryDirectory() as scratch:
        for number in range(1, 1401):  # the documents' text is not needed: the run ranks them
            Path(kb, f"{number}.md").write_text(f"# Document {number}\n", encoding="utf-8")
        report = Path(scratch, "report.json")
        code = main(["--kb-path", kb, "--golden", str(golden), "--run-file", str(run_file), "--no-history",
                     "--limit", str(DEPTH), "--k", ",".join(map(str, KS)), "--relevance-level", str(LEVEL),
                     "--report", str(report)], stdout=io.StringIO())
        assert code == 0, code
        ours = {row["id"]: row for row in json.loads(report.read_text(encoding="utf-8"))["per_query"]}
    cut = ",".join(map(str, KS))
    evaluator = pytrec_eval.RelevanceEvaluator(
        qrels, {"recip_rank", "map", f"recall.{cut}", f"P.{cut}", f"success.{cut}", f"ndcg_cut.{cut}"},
        relevance_level=LEVEL,
    )
    theirs = evaluator.evaluate({q: {d: float(DEPTH - r) for r, d in enumerate(rk, 1)} for q, rk in runs.items() if rk})
    worst = 0.0
    pairs = {"recip_rank": ("reciprocal_rank", None), "map": ("average_precision", None)}
    for k in KS:
        pairs |= {f"recall_{k}": ("recall_at_k", k), f"P_{k}": ("precision_at_k", k),
                  f"success_{k}": ("success_at_k", k), f"ndcg_cut_{k}": ("ndcg_at_k", k)}
    compared = 0
    for query, row in theirs.items():
        metrics = ours[query]["metrics"]
        compared += 1
        for measure, (family, k) in pairs.items():
            value = metrics[family] if k is None else metrics[family][str(k)]
            worst = max(worst, abs(value - row[measure]))
    print(f"{compared} queries, {len(pairs)} measures each, compared with trec_eval (pytrec_eval); "
          f"largest difference {worst:.3g}")
    return worst


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cranfield", type=Path, required=True, help="a git copy of noramtboraas/information-retrieval")
    parser.add_argument("--queries", type=int, default=225)
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parent / ".collections" / "import")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--no-compare", action="store_true", help="only write the qrels and the queries")
    args = parser.parse_args()
    write_collection(args.cranfield, args.out, args.queries)
    if args.no_compare:
        return 0
    return 0 if compare(args.out, args.seed) <= TOLERANCE else 1


if __name__ == "__main__":
    raise SystemExit(main())
