"""Speed and memory of a whole kb-eval run against bm25s + Snowball stemmer, same run, three scales.

    python bench/speed_table.py [--scales 1000:100:3,10000:225:3,100000:1000:2] [--json out.json]

Each scale is DOCS:QUERIES:ROUNDS on the seeded generated KB (bench/generate.py, speed and
scaling only: quality is measured on real collections, bench/quality_table.py). bench/run.py
does the work: every system in a fresh process per round, rounds interleaved (kb-eval, bm25s,
kb-eval, bm25s, ...), so a noisy minute on a shared machine hits both; the ratio is the median
of the per-round ratios (paired), times are medians.

Columns: whole run (kb-eval: read, parse, index, search, scan, report; bm25s: read, tokenize,
index, query), the paired ratio kb-eval / bm25s, the search phase per query, and the peak memory
of each run: the largest sum of PSS over the run's process and its worker processes, sampled every
20 ms (bench/run.py, TreeRssSampler; a page shared copy-on-write with a worker counts once).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))

import run

DEFAULT_SCALES = "1000:100:3,10000:225:3,100000:1000:2"
"""Rounds at 100,000 documents: two, the fewest that give a paired median of more than one
ratio; each round there takes minutes of the two shared cores."""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scales", default=DEFAULT_SCALES)
    parser.add_argument("--json", type=Path)
    parser.add_argument("--workdir", type=Path, default=Path(tempfile.gettempdir()) / "kb-eval-bench")
    args = parser.parse_args(argv)
    rows = []
    results = {}
    for scale in args.scales.split(","):
        docs, queries, rounds = (int(x) for x in scale.split(":"))
        with tempfile.TemporaryDirectory() as folder:
            out = Path(folder) / "run.json"
            run.main([
                "--docs", str(docs), "--queries", str(queries), "--repeat", str(rounds),
                "--systems", "kb-eval,bm25s", "--workdir", str(args.workdir), "--json", str(out),
            ])
            result = json.loads(out.read_text(encoding="utf-8"))
        results[scale] = result
        systems = result["systems"]
        kb, ref = systems["kb-eval"], systems["bm25s"]
        rows.append(
            (
                docs, queries, rounds, kb["extra"].get("chunks"),
                kb["total_seconds_median"], ref["total_seconds_median"], kb["ratio_to_bm25s_paired_median"],
                kb["phases_median"]["search"] / queries * 1000, ref["phases_median"]["query"] / queries * 1000,
                kb["peak_tree_rss_mib_median"], ref["peak_tree_rss_mib_median"],
                kb["ndcg_at_10"]["all"], ref["ndcg_at_10"]["all"],
            )
        )
    print("| documents | queries | rounds | sections | kb-eval s | bm25s s | paired ratio | kb-eval search ms/query"
          " | bm25s query ms/query | kb-eval peak MiB (all processes) | bm25s peak MiB | nDCG@10 kb-eval | nDCG@10 bm25s |")
    print("|" + "---:|" * 13)
    for r in rows:
        print(f"| {r[0]:,} | {r[1]:,} | {r[2]} | {r[3]:,} | {r[4]:.2f} | {r[5]:.2f} | {r[6]:.2f} | {r[7]:.2f} | {r[8]:.2f}"
              f" | {r[9]:.0f} | {r[10]:.0f} | {r[11]:.3f} | {r[12]:.3f} |")
    if args.json:
        args.json.write_text(json.dumps(results, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
