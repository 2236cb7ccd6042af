"""The report at the cap of hits one run may ask for (queries x limit = MAX_RANKED_HITS).

    python bench/report_size.py [--docs 3000]

Generates the bench KB (bench/generate.py) with MAX_RANKED_HITS / 1000 queries, runs the CLI
with `--limit 1000` (so queries x limit is exactly the cap), and prints the report's bytes, the
wall-clock and the child's peak RSS. The KB needs at least 1,000 sections matching each query for
every ranking to be full; the built-in search returns fewer for rarer words, so the bytes printed
are the real report's, and the hits recorded are counted from it.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.generate import generate
from scanner.golden.file import MAX_RANKED_HITS

LIMIT = 1000


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", type=int, default=3000)
    args = parser.parse_args(argv)
    queries = MAX_RANKED_HITS // LIMIT
    with tempfile.TemporaryDirectory() as folder:
        out = Path(folder)
        generate(out, args.docs, queries, seed=1, leaks=0)
        report = out / "report.json"
        command = [
            sys.executable, "-c", "from scanner.cli import run; run()", "--kb-path", str(out / "kb"), "--golden", str(out / ".kb-eval.yml"),
            "--limit", str(LIMIT), "--no-history", "--format", "json", "--report", str(report),
        ]
        start = time.perf_counter()
        done = subprocess.run(command, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, check=False)
        seconds = time.perf_counter() - start
        if done.returncode != 0:
            print(done.stderr[-2000:], file=sys.stderr)
            return done.returncode
        size = report.stat().st_size
        hits = sum(len(row["top_k"]) for row in json.loads(report.read_text(encoding="utf-8"))["per_query"])
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    print(
        f"{queries} queries x limit {LIMIT} ({args.docs} documents): {hits} hits recorded, report {size / 1e6:.1f} MB "
        f"({size / max(hits, 1):.0f} bytes a hit), {seconds:.1f} s, peak RSS {peak:.0f} MiB"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
