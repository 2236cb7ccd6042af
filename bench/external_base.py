"""What the base side costs with a search that has its own index: head only vs head and base.

    python bench/external_base.py --docs 1000 --queries 100 --repeat 5 --workdir /tmp/kb-eval-bench

The repository is bench/base_and_head.py's (a seeded KB committed as the base, a second commit
editing, adding and deleting a few documents), made in --workdir (the data location) or reused
from there. The search is the SQLite FTS5 recipe of docs/recipes/sqlite-fts5 with its index built
by --index-command from each side's tree ({kb}, {work}) and one sqlite3 process per query, as
tests/sides/test_both_sides.py runs it. In a fresh process each, interleaved (A, B, A, B, ...) so a
noisy minute hits both:

  A  the head only: index the checkout's KB, answer every query;
  B  the same with --baseline-ref HEAD~1: the base's KB written out, indexed and answered too.

Printed, for wall time and for CPU time (user + system of kb-eval and of every program it waited
for: the index command, each query's sqlite3, the base's child; from wait4): the medians of A and
of B and the median of the paired ratios B/A, the figure to read on a shared machine. Unlike the
built-in search, nothing of the head's index is reused for the base: the engine's index is the
engine's, so B/A near 2 is what to expect, less the parts of a run that are done once (reading the
golden file, the report).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path
from statistics import median

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
sys.path.insert(0, str(BENCH))

from base_and_head import make_repository, timed_run

SQLITE = REPO / "docs" / "recipes" / "sqlite-fts5"


def sqlite_flags(recipes: Path) -> list[str]:
    """The recipe with its index built per side (docs/pull-request-loop.md's block)."""
    return [
        "--score-level=document",
        "--index-command",
        (
            f"sqlite3 {{work}}/kb.db \".read {recipes}/schema.sql\" \"INSERT INTO docs (path, body) SELECT "
            "substr(name, length('{kb}') + 2), CAST(readfile(name) AS TEXT) FROM fsdir('{kb}') WHERE name LIKE '%.md'\""
        ),
        "--command",
        (
            "sqlite3 -json {work}/kb.db \"CREATE TEMP TABLE q AS SELECT {query_sql} AS text, {limit} AS lim\" "
            f"\".read {recipes}/search.sql\""
        ),
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--docs", type=int, default=1000)
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--changed", type=int, default=5, help="files the pull request touches (edits, 1 add, 1 delete)")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--concurrency", type=int, default=1, help="queries asked at once (--concurrency)")
    parser.add_argument("--workdir", type=Path, default=Path(tempfile.gettempdir()) / "kb-eval-bench",
                        help="where the generated repository is made or reused")
    parser.add_argument("--tree", type=Path, default=REPO, help="the kb-eval checkout to run (default: this one)")
    args = parser.parse_args(argv)
    for program in ("git", "sqlite3"):
        if shutil.which(program) is None:
            parser.error(f"needs {program}")
    kb, golden = make_repository(args.workdir, args.docs, args.queries, args.seed, args.changed)
    flags = [*sqlite_flags(SQLITE), f"--concurrency={args.concurrency}"]
    timings: dict[str, tuple[list[float], list[float]]] = {"wall": ([], []), "cpu": ([], [])}
    compared: object = None
    for _ in range(args.repeat):
        a_wall, a_cpu, _report = timed_run(kb, golden, flags, args.tree)
        b_wall, b_cpu, report = timed_run(kb, golden, [*flags, "--baseline-ref=HEAD~1"], args.tree)
        for kind, a, b in (("wall", a_wall, b_wall), ("cpu", a_cpu, b_cpu)):
            timings[kind][0].append(a)
            timings[kind][1].append(b)
        comparison = report["comparison"]
        if not isinstance(comparison, dict) or comparison.get("status") != "compared":
            raise RuntimeError(f"the base was not compared: {json.dumps(comparison)}")
        compared = {key: comparison.get(key) for key in ("status", "source", "cause")}
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"{args.docs} documents, {args.queries} queries, SQLite FTS5 with --index-command, pull request touching "
          f"{args.changed} files, {args.repeat} paired runs, load average {load:.1f} at the end")
    for kind, (one, both) in timings.items():
        ratios = [b / a for a, b in zip(one, both)]
        print(f"  {kind}: head only                  median {median(one):6.2f} s  ({', '.join(f'{t:.2f}' for t in one)})")
        print(f"  {kind}: head and base (HEAD~1)     median {median(both):6.2f} s  ({', '.join(f'{t:.2f}' for t in both)})")
        print(f"  {kind}: paired ratio B/A           median {median(ratios):6.2f}   ({', '.join(f'{r:.2f}' for r in ratios)})")
    print(f"  comparison: {json.dumps(compared)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
