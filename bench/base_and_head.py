"""What evaluating a pull request's base in the same run costs: one run vs a run with --baseline-ref.

    python bench/base_and_head.py --docs 1000 --queries 100 --repeat 5
    python bench/base_and_head.py --docs 10000 --queries 200 --repeat 3
    python bench/base_and_head.py --docs 10000 --queries 200 --repeat 2 --memory --tree /path/to/other/checkout

A seeded KB (bench/generate.py) is committed as the base of a git repository in
--workdir; a second commit is the pull request: it edits a few documents (a
paragraph appended), adds one and deletes one (--changed, default 5 files in all).
Then, in a fresh process each, interleaved (A, B, A, B, ...) so a noisy minute
hits both:

  A  kb-eval on the head's working tree, no comparison;
  B  the same with --baseline-ref HEAD~1 (the base evaluated in the same run).

Reported, for wall time and for CPU time (user + system of the process and of
the child it forks for the base, from wait4): the medians of A and of B, and
the median of the paired ratios B/A (each B divided by the A run just before
it), which is the figure to read on a shared machine. The budget is B/A <= 1.4
in wall time; the CPU ratio is the work done, whatever the cores.

--memory also samples each run's peak memory: the largest PSS summed over the
process and its children (the base's child, worker processes), as bench/run.py's
TreeRssSampler reads it. --tree runs the kb-eval of another checkout (its
`scanner` package) on the same repository, to compare two versions.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from statistics import median

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
sys.path.insert(0, str(BENCH))

from run import TreeRssSampler

GIT_ENV = {
    "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
    "HOME": tempfile.gettempdir(),
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_AUTHOR_NAME": "bench", "GIT_AUTHOR_EMAIL": "bench@example.com",
    "GIT_COMMITTER_NAME": "bench", "GIT_COMMITTER_EMAIL": "bench@example.com",
}


def git(repo: Path, *args: str) -> None:
    subprocess.run(["git", "-c", "init.defaultBranch=main", "-C", str(repo), *args],
                   env=GIT_ENV, check=True, capture_output=True)


def make_repository(workdir: Path, docs: int, queries: int, seed: int, changed: int) -> tuple[Path, Path]:
    """(KB folder, golden file) of a repository whose HEAD~1 is the base and HEAD the pull request."""
    root = workdir / f"base-head-{docs}-{queries}-{seed}-{changed}"
    kb, golden = root / "repo" / "kb", root / "repo" / "golden.yml"
    if golden.exists():
        return kb, golden
    shutil.rmtree(root, ignore_errors=True)
    generated = root / "generated"
    subprocess.run(
        [sys.executable, str(BENCH / "generate.py"), "--docs", str(docs), "--queries", str(queries),
         "--seed", str(seed), str(generated)],
        check=True, stdout=subprocess.DEVNULL,
    )
    shutil.copytree(generated / "kb", kb)
    shutil.copy(generated / ".kb-eval.yml", golden)
    repo = root / "repo"
    git(repo, "init", "-q")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "base")
    files = sorted(p for p in kb.rglob("*.md") if p.is_file())
    rng = random.Random(seed)
    picked = rng.sample(files, changed)
    edited, deleted = picked[:-1], picked[-1]
    for path in edited:
        with path.open("a", encoding="utf-8") as handle:
            handle.write("\n\nAn added paragraph about rollout windows and review checklists.\n")
    (kb / "added-by-the-pull-request.md").write_text(
        "# Added\n\nA new note on release review checklists.\n", encoding="utf-8"
    )
    deleted.unlink()
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "pull request")
    return kb, golden


def timed_run(
    kb: Path, golden: Path, extra: list[str], tree: Path = REPO, memory: list[int] | None = None
) -> tuple[float, float, dict[str, object]]:
    with tempfile.TemporaryDirectory(prefix="kb-eval-bench-") as tmp:
        output = Path(tmp) / "report.json"
        command = [
            sys.executable, "-c", "from scanner.cli.main import run; run()",
            f"--kb-path={kb}", f"--golden={golden}", "--no-history", "--format=json", f"--output={output}", *extra,
        ]
        errors = Path(tmp) / "stderr.txt"
        started = time.perf_counter()
        with errors.open("wb") as stderr:
            child = subprocess.Popen(
                command, cwd=tree, stdout=subprocess.DEVNULL, stderr=stderr, env={**os.environ, "PYTHONPATH": str(tree)}
            )
            sampler = TreeRssSampler(child.pid) if memory is not None else None
            if sampler is not None:
                sampler.start()
            # wait4: this child's CPU time, which includes the children it waited for (the base's).
            _, status, usage = os.wait4(child.pid, 0)
            if sampler is not None and memory is not None:
                sampler.done.set()
                sampler.join()
                memory.append(sampler.peak_kib)
        seconds = time.perf_counter() - started
        code = os.waitstatus_to_exitcode(status)
        if code not in (0, 1):
            raise RuntimeError(f"kb-eval exited {code}:\n{errors.read_text(errors='replace')[-3000:]}")
        report: dict[str, object] = json.loads(output.read_text(encoding="utf-8"))
    return seconds, usage.ru_utime + usage.ru_stime, report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--docs", type=int, default=1000)
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--changed", type=int, default=5, help="files the pull request touches (edits, 1 add, 1 delete)")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--workdir", type=Path, default=Path(tempfile.gettempdir()) / "kb-eval-bench")
    parser.add_argument("--memory", action="store_true", help="also the peak PSS of each run's process tree")
    parser.add_argument("--tree", type=Path, default=REPO, help="the kb-eval checkout to run (default: this one)")
    args = parser.parse_args(argv)
    if shutil.which("git") is None:
        parser.error("needs git")
    kb, golden = make_repository(args.workdir, args.docs, args.queries, args.seed, args.changed)
    timings: dict[str, tuple[list[float], list[float]]] = {"wall": ([], []), "cpu": ([], [])}
    compared = None
    peaks: tuple[list[int], list[int]] | None = ([], []) if args.memory else None
    for _ in range(args.repeat):
        a_wall, a_cpu, _report = timed_run(kb, golden, [], args.tree, peaks[0] if peaks else None)
        b_wall, b_cpu, report = timed_run(kb, golden, ["--baseline-ref=HEAD~1"], args.tree, peaks[1] if peaks else None)
        for kind, a, b in (("wall", a_wall, b_wall), ("cpu", a_cpu, b_cpu)):
            timings[kind][0].append(a)
            timings[kind][1].append(b)
        compared = report["comparison"]
    print(f"{args.docs} documents, {args.queries} queries, pull request touching {args.changed} files, "
          f"{args.repeat} paired runs, kb-eval from {args.tree}")
    for kind, (one, both) in timings.items():
        ratios = [b / a for a, b in zip(one, both)]
        print(f"  {kind}: one evaluation             median {median(one):6.2f} s  ({', '.join(f'{t:.2f}' for t in one)})")
        print(f"  {kind}: with --baseline-ref HEAD~1 median {median(both):6.2f} s  ({', '.join(f'{t:.2f}' for t in both)})")
        print(f"  {kind}: paired ratio B/A           median {median(ratios):6.2f}   ({', '.join(f'{r:.2f}' for r in ratios)})")
    if peaks is not None:
        for label, kib in (("one evaluation", peaks[0]), ("with --baseline-ref HEAD~1", peaks[1])):
            print(f"  peak PSS, {label}: median {median(kib) / 1024:.0f} MiB ({', '.join(f'{k / 1024:.0f}' for k in kib)})")
    print(f"  comparison: {json.dumps(compared)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
