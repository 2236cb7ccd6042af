"""The base's evaluation against the head's, in CPU time, in one process (no fork, no other run).

    python bench/base_and_head.py --docs 10000 --queries 200 --repeat 1 --workdir /tmp/kb-eval-bench
    python bench/base_cost.py /tmp/kb-eval-bench/base-head-10000-200-1-5/repo --repeat 3

REPO is a repository bench/base_and_head.py made (its HEAD~1 the base, HEAD the pull request,
`kb/` and `golden.yml` in it). Each round evaluates the head with a fresh parse memo, then the
base at HEAD~1 with that memo and the head's analysed index, as a pull request's run does, and prints the CPU time (user +
system, this process and the analysis workers it waited for) of each and (head + base) / head:
the work the base adds, without the fork's overlap or its noise. To compare two versions of
kb-eval, run this from each checkout with PYTHONPATH set to it, interleaved.
"""

from __future__ import annotations

import argparse
import resource
import sys
from pathlib import Path
from statistics import median

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests.support, beside scanner

from scanner.compare.comparison import BaseRequest
from scanner.corpus.parse_memo import ParseMemo
from scanner.pipeline.base import BaseEvaluation, ResolvedBase, evaluate_base, resolve_base
from scanner.pipeline.evaluate import EvalOptions
from tests.support.phases import head_keeping_analysis


def cpu_seconds() -> float:
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("repo", type=Path, help="a repository bench/base_and_head.py made")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args(argv)
    kb, golden = args.repo / "kb", args.repo / "golden.yml"
    ratios = []
    for _ in range(args.repeat):
        memo = ParseMemo()
        started = cpu_seconds()
        _, plan, head_index = head_keeping_analysis(EvalOptions(kb_path=kb, golden_path=golden), memo)
        head_done = cpu_seconds()
        resolved = resolve_base(kb, BaseRequest("HEAD~1"), one_index=False)
        assert isinstance(resolved, ResolvedBase), resolved
        base = evaluate_base(resolved, EvalOptions(kb_path=kb, golden_path=golden), plan, memo, head_index)
        assert isinstance(base, BaseEvaluation), base
        base_done = cpu_seconds()
        ratios.append((base_done - started) / (head_done - started))
        print(f"head {head_done - started:.2f} s CPU, base {base_done - head_done:.2f} s CPU, "
              f"(head + base) / head {ratios[-1]:.2f}", flush=True)
    print(f"median (head + base) / head: {median(ratios):.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
