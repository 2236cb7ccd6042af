"""Run one benchmark system in this (fresh) process and write its SystemRun as JSON.

    python bench/worker.py SYSTEM KB GOLDEN OUT.json [--naive-budget SECONDS]

bench/run.py starts one of these per system and repeat and reads the child's
peak RSS from os.wait4, so no system's memory is charged to another.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from systems import SYSTEMS, run_naive_scan


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("system", choices=sorted(SYSTEMS))
    parser.add_argument("kb", type=Path)
    parser.add_argument("golden", type=Path)
    parser.add_argument("out", type=Path)
    parser.add_argument("--naive-budget", type=float, default=120.0)
    args = parser.parse_args()
    if args.system == "naive-scan":
        run = run_naive_scan(args.kb, args.golden, args.naive_budget)
    else:
        run = SYSTEMS[args.system](args.kb, args.golden)
    args.out.write_text(json.dumps(dataclasses.asdict(run), ensure_ascii=False), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
