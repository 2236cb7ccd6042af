"""What per-tag aggregates cost: a golden file whose every query has a tag of its own, against the
same file with one tag for all, through the CLI.

    python bench/tags_cost.py [--queries 5000]

Writes a small KB and two golden files of QUERIES queries (the red team's: 5,000 distinct tags in
52 KB took 74 s and wrote a 9 MB report, one tag 4.5 s), runs `kb-eval --format json` on each in
a child process, and prints each run's wall-clock, its report's bytes and the tags aggregated.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def golden(queries: int, distinct: bool) -> str:
    lines = ["queries:"]
    for n in range(queries):
        tag = f"t{n}" if distinct else "all"
        lines += [f"  - id: q{n}", f'    query: "alpha beta {n}"', "    expected: [a.md]", f"    tags: [{tag}]"]
    return "\n".join(lines) + "\n"


def timed_run(kb: Path, golden_file: Path) -> tuple[float, int, int]:
    command = [sys.executable, "-c", "from scanner.cli import run; run()", "--kb-path", str(kb),
               "--golden", str(golden_file), "--no-history", "--format", "json"]
    start = time.perf_counter()
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, check=False)
    seconds = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(done.stderr[-2000:])
    report = json.loads(done.stdout)
    return seconds, len(done.stdout.encode()), len(report["by_tag"])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", type=int, default=5000)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as folder:
        kb = Path(folder) / "kb"
        kb.mkdir()
        (kb / "a.md").write_text("# Alpha\nalpha beta\n", encoding="utf-8")
        (kb / "b.md").write_text("# Beta\nbeta gamma\n", encoding="utf-8")
        for name, distinct in (("one tag each", True), ("one tag for all", False)):
            path = Path(folder) / f"{'distinct' if distinct else 'one'}.yml"
            path.write_text(golden(args.queries, distinct), encoding="utf-8")
            seconds, size, tags = timed_run(kb, path)
            print(f"{args.queries} queries, {name}: {seconds:.1f} s, report {size / 1e6:.1f} MB, {tags} tags aggregated")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
