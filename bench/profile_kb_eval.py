"""Profile one kb-eval run (cProfile) and print the top functions by cumulative and own time.

    python bench/profile_kb_eval.py KB GOLDEN [--top 25] [--out run.prof]

Most of kb-eval's time is inside SQLite (C), which cProfile charges to
`sqlite3.Cursor.execute` / `Connection.execute` calls; the callers listed
with them say which stage issued the statement.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import pstats
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from scanner.pipeline.evaluate import EvalOptions
from tests.support.phases import evaluate_head


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("kb", type=Path)
    parser.add_argument("golden", type=Path)
    parser.add_argument("--top", type=int, default=25)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    profiler = cProfile.Profile()
    profiler.enable()
    outcome = evaluate_head(EvalOptions(kb_path=args.kb, golden_path=args.golden))
    profiler.disable()
    print("phase seconds (under the profiler):", {k: round(v, 3) for k, v in outcome.phase_seconds.items()})
    if args.out:
        profiler.dump_stats(str(args.out))
    for order in ("cumulative", "tottime"):
        buffer = io.StringIO()
        pstats.Stats(profiler, stream=buffer).sort_stats(order).print_stats(args.top)
        print(f"\n=== top {args.top} by {order} ===")
        print(buffer.getvalue().split("\n", 6)[-1] if order else buffer.getvalue())
    return 0


if __name__ == "__main__":
    sys.exit(main())
