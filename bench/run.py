"""Benchmark kb-eval against bm25s, tantivy, an FTS5 trigram index and a naive quote scan.

    python bench/run.py --docs 1000 --queries 100 [--repeat 3] [--json out.json]
    python bench/run.py --kb DIR --golden FILE [--repeat 3] [--json out.json]

Without --kb a seeded synthetic KB is generated (bench/generate.py) into
--workdir and reused by later runs with the same --docs/--queries/--seed.
Every system runs in a fresh process per repeat (bench/worker.py); its peak
memory is that child's ru_maxrss, read with os.wait4 so that one child's
peak is never reported for another. Repeats are interleaved (system A, B, C,
A, B, C, ...) so a noisy minute on the machine spreads over all systems;
times are medians, with ratios to bm25s beside them because absolute times on
shared machines drift.

Diagnostics go to stderr; the table goes to stdout; --json writes everything.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import importlib.util
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from statistics import median

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
sys.path.insert(0, str(BENCH))
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from quality import best_ndcg_function, mean_ndcg
from systems import CACHE_ENV, load_queries

ALL_SYSTEMS = ("kb-eval", "kb-eval-word", "kb-eval-cached", "bm25s", "tantivy", "fts5-trigram", "naive-scan")
DEFAULT_SYSTEMS = ("kb-eval", "bm25s", "tantivy", "fts5-trigram", "naive-scan")
REFERENCE = "bm25s"
LIBRARIES = ("bm25s", "PyStemmer", "tantivy", "numpy", "scipy", "PyYAML", "pyahocorasick", "ahocorasick-rs")


@dataclass(frozen=True, slots=True)
class WorkerResult:
    system: str
    phases: dict[str, float]
    rss_kib_after: dict[str, int]
    rankings: dict[str, list[tuple[str, str]]]
    extra: dict[str, object]
    process_seconds: float
    """Wall time of the whole child, interpreter start and imports included."""
    peak_rss_kib: int
    """ru_maxrss from wait4: the largest single process of the run (the child or one of its workers)."""
    peak_tree_rss_kib: int
    """The largest sum of PSS (proportional set size) over the child and all its descendants,
    sampled every 20 ms (less often for large processes, see TreeRssSampler): what a run with
    worker processes holds at once. PSS charges a page shared by n processes 1/n to each, so
    copy-on-write pages a forked worker shares with its parent count once, not once per process
    (summed RSS would count them in every worker)."""


def _descendants(pid: int) -> list[int]:
    found, pending = [], [pid]
    while pending:
        current = pending.pop()
        found.append(current)
        try:
            with open(f"/proc/{current}/task/{current}/children", encoding="ascii") as children:
                pending.extend(int(child) for child in children.read().split())
        except OSError:
            continue
    return found


def _pss_kib(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/smaps_rollup", encoding="ascii") as rollup:
            for line in rollup:
                if line.startswith("Pss:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


class TreeRssSampler(threading.Thread):
    """Samples the summed PSS of a process tree until stopped (Linux /proc; 0 elsewhere)."""

    def __init__(self, pid: int) -> None:
        super().__init__(daemon=True)
        self.pid = pid
        self.peak_kib = 0
        self.done = threading.Event()

    def run(self) -> None:
        interval = 0.02
        while not self.done.wait(interval):
            started = time.perf_counter()
            self.peak_kib = max(self.peak_kib, sum(_pss_kib(p) for p in _descendants(self.pid)))
            # Reading smaps_rollup walks the process's page tables (about 0.7 ms for 300 MiB): the
            # sampler keeps itself under ~5% of one core, so it does not slow what it measures.
            interval = max(0.02, 20 * (time.perf_counter() - started))


def run_worker(system: str, kb: Path, golden: Path, naive_budget: float) -> WorkerResult:
    with tempfile.TemporaryDirectory(prefix="kb-eval-bench-") as tmp:
        out = Path(tmp) / "run.json"
        errors = Path(tmp) / "stderr.txt"
        command = [sys.executable, str(BENCH / "worker.py"), system, str(kb), str(golden), str(out)]
        command += ["--naive-budget", str(naive_budget)]
        started = time.perf_counter()
        with errors.open("wb") as stderr:
            child = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=stderr)
            sampler = TreeRssSampler(child.pid)
            sampler.start()
            # wait4 gives this child's own rusage; RUSAGE_CHILDREN would be the max over all children so far.
            _, status, usage = os.wait4(child.pid, 0)
            sampler.done.set()
            sampler.join()
            child.returncode = os.waitstatus_to_exitcode(status)
        seconds = time.perf_counter() - started
        if child.returncode != 0:
            raise RuntimeError(f"{system} failed (exit {child.returncode}):\n{errors.read_text(errors='replace')[-3000:]}")
        data = json.loads(out.read_text(encoding="utf-8"))
    return WorkerResult(
        system=system,
        phases=data["phases"],
        rss_kib_after=data["rss_kib_after"],
        rankings={qid: [tuple(hit) for hit in hits] for qid, hits in data["rankings"].items()},  # type: ignore[misc]
        extra=data["extra"],
        process_seconds=seconds,
        peak_rss_kib=usage.ru_maxrss,
        peak_tree_rss_kib=sampler.peak_kib,
    )


def library_versions() -> dict[str, str]:
    versions = {}
    for name in LIBRARIES:
        try:
            versions[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            versions[name] = "not installed"
    return versions


def machine() -> dict[str, object]:
    try:
        commit = subprocess.run(
            ["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=True
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        commit = "unknown"
    return {
        "nproc": len(os.sched_getaffinity(0)),
        "cpu_count": os.cpu_count(),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "processor": platform.processor() or platform.machine(),
        "kb_eval_commit": commit,
        "libraries": library_versions(),
    }


def prepare_kb(args: argparse.Namespace) -> tuple[Path, Path]:
    if args.kb is not None:
        golden = args.golden or args.kb / ".kb-eval.yml"
        return args.kb, golden
    target = args.workdir / f"docs{args.docs}-q{args.queries}-s{args.seed}"
    if not (target / ".kb-eval.yml").exists():
        started = time.perf_counter()
        subprocess.run(
            [sys.executable, str(BENCH / "generate.py"), "--docs", str(args.docs), "--queries", str(args.queries),
             "--seed", str(args.seed), str(target)],
            check=True, stdout=subprocess.DEVNULL,
        )
        print(f"generated {target} in {time.perf_counter() - started:.1f} s", file=sys.stderr)
    return target / "kb", target / ".kb-eval.yml"


def summarise(runs: list[WorkerResult]) -> dict[str, object]:
    phase_names = list(runs[0].phases)
    totals = [sum(r.phases.values()) for r in runs]
    return {
        "phases_median": {p: median(r.phases[p] for r in runs) for p in phase_names},
        "phases_min": {p: min(r.phases[p] for r in runs) for p in phase_names},
        "phases_max": {p: max(r.phases[p] for r in runs) for p in phase_names},
        "phases_runs": [r.phases for r in runs],
        "rss_mib_after_phase_median": {
            p: median(r.rss_kib_after[p] for r in runs) / 1024 for p in runs[0].rss_kib_after
        },
        "total_seconds_median": median(totals),
        "total_seconds_runs": totals,
        "process_seconds_median": median(r.process_seconds for r in runs),
        "peak_rss_mib_median": median(r.peak_rss_kib for r in runs) / 1024,
        "peak_rss_mib_max": max(r.peak_rss_kib for r in runs) / 1024,
        "peak_tree_rss_mib_median": median(r.peak_tree_rss_kib for r in runs) / 1024,
        "extra": runs[0].extra,
    }


def quality(result: WorkerResult, golden: Path) -> dict[str, float | None]:
    queries = load_queries(golden)
    expected = {q.id: q.expected for q in queries}
    subsets = {
        "all": [q.id for q in queries],
        "en": [q.id for q in queries if "en" in q.tags],
        "ja": [q.id for q in queries if "ja" in q.tags],
    }
    metric, _ = best_ndcg_function()
    return {name: mean_ndcg(result.rankings, expected, ids, metric=metric) for name, ids in subsets.items()}


def fmt(value: float | None, digits: int = 3) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def render_table(summary: dict[str, dict[str, object]], scan: dict[str, object], repeat: int) -> str:
    lines = [f"Per phase (median of {repeat} runs, seconds; min-max; peak RSS reached by the end of the phase)"]
    lines.append(f"{'system':<15} {'phase':<11} {'median':>9} {'min-max':>17} {'RSS MiB':>9}")
    for system, s in summary.items():
        for phase, value in s["phases_median"].items():  # type: ignore[union-attr]
            rss = s["rss_mib_after_phase_median"].get(phase)  # type: ignore[union-attr]
            spread = f"{s['phases_min'][phase]:.3f}-{s['phases_max'][phase]:.3f}"  # type: ignore[index]
            lines.append(f"{system:<15} {phase:<11} {value:>9.3f} {spread:>17} {fmt(rss, 1):>9}")
    lines.append("")
    lines.append(
        "Totals (median of per-run sums of phases; 'paired' = median of per-round ratios) and retrieval quality"
    )
    lines.append(
        f"{'system':<15} {'total s':>9} {'x ' + REFERENCE:>9} {'paired':>7} {'process s':>10} {'peak MiB':>9}"
        f" {'PSS MiB':>9} {'nDCG@10':>8} {'en':>7} {'ja':>7}"
    )
    reference = summary.get(REFERENCE, {}).get("total_seconds_median")
    for system, s in summary.items():
        total = s["total_seconds_median"]
        ratio = total / reference if reference else None  # type: ignore[operator]
        q = s.get("ndcg_at_10") or {}
        paired = s.get("ratio_to_" + REFERENCE + "_paired_median")
        lines.append(
            f"{system:<15} {total:>9.3f} {fmt(ratio, 2):>9} {fmt(paired, 2):>7} {s['process_seconds_median']:>10.3f}"
            f" {s['peak_rss_mib_median']:>9.1f} {s['peak_tree_rss_mib_median']:>9.1f} {fmt(q.get('all')):>8} {fmt(q.get('en')):>7} {fmt(q.get('ja')):>7}"  # type: ignore[union-attr]
        )
    if scan:
        lines.append("")
        lines.append("Quote scan")
        for key, value in scan.items():
            lines.append(f"  {key}: {value}")
    return "\n".join(lines)


def scan_comparison(summary: dict[str, dict[str, object]]) -> dict[str, object]:
    naive = summary.get("naive-scan")
    kb_eval = summary.get("kb-eval")
    out: dict[str, object] = {}
    if naive:
        out["naive_scan_seconds"] = round(naive["phases_median"]["scan"], 4)  # type: ignore[index]
        out["naive_extrapolated"] = naive["extra"].get("extrapolated")  # type: ignore[union-attr]
        out["needles"] = naive["extra"].get("needles")  # type: ignore[union-attr]
    if kb_eval:
        scan_seconds = kb_eval["phases_median"].get("scan")  # type: ignore[union-attr]
        if scan_seconds is not None:
            out["kb_eval_scan_seconds"] = round(scan_seconds, 4)
            out["kb_eval_scan_share_of_total"] = round(scan_seconds / kb_eval["total_seconds_median"], 4)  # type: ignore[operator]
            if naive and scan_seconds > 0:
                out["naive_over_kb_eval"] = round(naive["phases_median"]["scan"] / scan_seconds, 1)  # type: ignore[index]
                pairs = zip(naive["phases_runs"], kb_eval["phases_runs"])  # type: ignore[call-overload]
                out["naive_over_kb_eval_paired_median"] = round(median(n["scan"] / k["scan"] for n, k in pairs), 1)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--docs", type=int, default=1000)
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--kb", type=Path, help="a real KB folder instead of a generated one")
    parser.add_argument("--golden", type=Path, help="golden file for --kb (default KB/.kb-eval.yml)")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--systems", default=",".join(DEFAULT_SYSTEMS), help="comma-separated subset of " + ",".join(ALL_SYSTEMS))
    parser.add_argument("--naive-budget", type=float, default=120.0, help="seconds before the naive scan extrapolates")
    parser.add_argument("--workdir", type=Path, default=Path(tempfile.gettempdir()) / "kb-eval-bench")
    parser.add_argument("--json", type=Path, help="write the full results here")
    args = parser.parse_args(argv)

    systems = [s for s in args.systems.split(",") if s]
    unknown = [s for s in systems if s not in ALL_SYSTEMS]
    if unknown:
        parser.error(f"unknown systems {unknown}; choose from {', '.join(ALL_SYSTEMS)}")
    if importlib.util.find_spec("scanner.pipeline.evaluate") is None:
        skipped = [s for s in systems if s.startswith("kb-eval")]
        if skipped:
            print(f"kb-eval's scanner.pipeline.evaluate is not importable here; skipping {skipped}", file=sys.stderr)
        systems = [s for s in systems if s not in skipped]

    kb, golden = prepare_kb(args)
    cache = args.workdir / "parse-cache"
    shutil.rmtree(cache, ignore_errors=True)  # round 1 of kb-eval-cached runs cold, later rounds warm
    os.environ[CACHE_ENV] = str(cache)
    runs: dict[str, list[WorkerResult]] = {s: [] for s in systems}
    for round_number in range(args.repeat):
        for system in systems:
            result = run_worker(system, kb, golden, args.naive_budget)
            runs[system].append(result)
            print(f"round {round_number + 1}/{args.repeat} {system}: {sum(result.phases.values()):.3f} s", file=sys.stderr)

    summary: dict[str, dict[str, object]] = {}
    for system in systems:
        summary[system] = summarise(runs[system])
        if system != "naive-scan" and runs[system][0].rankings:
            summary[system]["ndcg_at_10"] = quality(runs[system][0], golden)
    reference = summary.get(REFERENCE, {}).get("total_seconds_median")
    for system, s in summary.items():
        s["ratio_to_" + REFERENCE] = s["total_seconds_median"] / reference if reference else None  # type: ignore[operator]
        if REFERENCE in runs:
            # Paired by round: both ran within the same minute, so a noisy minute cancels out.
            paired = [sum(a.phases.values()) / sum(b.phases.values()) for a, b in zip(runs[system], runs[REFERENCE])]
            s["ratio_to_" + REFERENCE + "_paired_median"] = median(paired)
            s["ratio_to_" + REFERENCE + "_paired_runs"] = paired
    scan = scan_comparison(summary)
    print(render_table(summary, scan, args.repeat))
    if args.json:
        document = {
            "command": [Path(sys.executable).name, *sys.argv],
            "machine": machine(),
            "kb": str(kb),
            "golden": str(golden),
            "queries": len(load_queries(golden)),
            "repeat": args.repeat,
            "ndcg_metric": best_ndcg_function()[1],
            "systems": summary,
            "scan": scan,
        }
        args.json.write_text(json.dumps(document, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
