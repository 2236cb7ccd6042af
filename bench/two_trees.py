"""One plain kb-eval run (no comparison) from two checkouts, interleaved, paired: is a change slower?

    python bench/two_trees.py /tmp/kb-eval-bench/base-head-1000-100-1-5/repo /path/to/main --repeat 7

REPO is a repository bench/base_and_head.py made (`kb/` and `golden.yml` in it). Each round runs
the OTHER checkout's kb-eval, then this checkout's, each in a fresh process with PYTHONPATH set to
its tree; printed per round: wall and CPU time (user + system, children included, from wait4) of
both, and whether the two reports agree (every query's hits and metrics, the aggregate, the
corpus); then the medians of the per-round ratios this / other. Compile both trees' bytecode
first (`python -m compileall -q scanner`) where PYTHONDONTWRITEBYTECODE is set, or one side pays
for compiling at every start.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from statistics import median

THIS = Path(__file__).resolve().parent.parent


def run(tree: Path, kb: Path, golden: Path) -> tuple[float, float, dict[str, object]]:
    with tempfile.TemporaryDirectory(prefix="kb-eval-bench-") as tmp:
        output = Path(tmp) / "report.json"
        command = [
            sys.executable, "-c", "from scanner.cli.main import run; run()",
            f"--kb-path={kb}", f"--golden={golden}", "--no-history", "--format=json", f"--output={output}",
        ]
        started = time.perf_counter()
        child = subprocess.Popen(
            command, cwd=tree, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            env={**os.environ, "PYTHONPATH": str(tree)},
        )
        _, status, usage = os.wait4(child.pid, 0)
        seconds = time.perf_counter() - started
        if os.waitstatus_to_exitcode(status) not in (0, 1):
            raise RuntimeError(f"kb-eval from {tree} exited {os.waitstatus_to_exitcode(status)}")
        report: dict[str, object] = json.loads(output.read_text(encoding="utf-8"))
    return seconds, usage.ru_utime + usage.ru_stime, report


def same(a: dict[str, object], b: dict[str, object]) -> bool:
    return all(a[key] == b[key] for key in ("per_query", "aggregate", "corpus"))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("repo", type=Path, help="a repository bench/base_and_head.py made")
    parser.add_argument("other", type=Path, help="the other kb-eval checkout (e.g. main's worktree)")
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args(argv)
    kb, golden = args.repo / "kb", args.repo / "golden.yml"
    walls, cpus = [], []
    for _ in range(args.repeat):
        other_wall, other_cpu, other_report = run(args.other, kb, golden)
        this_wall, this_cpu, this_report = run(THIS, kb, golden)
        walls.append(this_wall / other_wall)
        cpus.append(this_cpu / other_cpu)
        print(f"other {other_wall:.2f} s wall, {other_cpu:.2f} s CPU | this {this_wall:.2f} s wall, "
              f"{this_cpu:.2f} s CPU | same results: {same(this_report, other_report)}", flush=True)
    print(f"this / other, paired medians: wall {median(walls):.3f}, CPU {median(cpus):.3f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
