"""Answers like `kb-mcp search --format json --limit N QUERY`, for the command retriever tests.

Usage: fake_kb_search.py search --format json --limit N [--rankings FILE] QUERY

It prints `{"results": [...], "argv": [...]}`: the hits for QUERY from the
rankings file (a JSON object: query text -> list of hits), or one hit whose
heading is the query itself, so a test can see exactly which argument
arrived. `argv` is the argument list as received.

Some queries misbehave on purpose:
  fail          stderr noise, then exit status 3
  garbage       prints text that is not JSON
  sleep         sleeps 30 s
  orphan        starts a grandchild that holds stdout open for 30 s, then exits 0
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="fake_kb_search")
    sub = parser.add_subparsers(dest="command", required=True)
    search = sub.add_parser("search")
    search.add_argument("--format", choices=["json"], required=True)
    search.add_argument("--limit", type=int, required=True)
    search.add_argument("--rankings", default=None)
    search.add_argument("query")
    args = parser.parse_args(argv)

    if args.query == "fail":
        sys.stderr.write("noise\n" * 1000 + "Traceback: index is locked\n")
        return 3
    if args.query == "garbage":
        print("Searching... found 2 results")
        return 0
    if args.query == "sleep":
        time.sleep(30)
        return 0
    if args.query == "orphan":
        subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
        return 0

    if args.rankings is not None:
        with open(args.rankings, encoding="utf-8") as handle:
            hits = json.load(handle).get(args.query, [])
    else:
        hits = [{"path": "echo.md", "heading": args.query, "score": 1.0}]
    print(json.dumps({"results": hits[: args.limit], "argv": argv}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
