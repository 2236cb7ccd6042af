"""Peak memory and time of the untrusted-file parsers at their caps, each in a fresh child process.

    python bench/parser_rss.py            # every case
    python bench/parser_rss.py run_trec_at_cap

Prints one Markdown table row per case: name, outcome, seconds, peak RSS in MiB (the child's
ru_maxrss from os.wait4, so the figure is that parse alone plus the interpreter).
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

_RUN_TREC = """
import sys
from pathlib import Path
from scanner.retrievers.runfile import MAX_RUN_FILE_BYTES, MAX_RUN_LINES, RunFileRetriever
path = Path(sys.argv[1]) / "run.trec"
with open(path, "w") as handle:
    width = MAX_RUN_FILE_BYTES // MAX_RUN_LINES
    for n in range(MAX_RUN_LINES):
        line = f"q{n % 10000} Q0 d{n}.md {n} 1.0 t"
        handle.write(line + " " * (width - len(line) - 1) + "\\n")
print(path.stat().st_size, file=sys.stderr)
RunFileRetriever(path)
print("read")
"""

_RUN_JSONL_LINE = """
import sys
from pathlib import Path
from scanner.foundation.strict_json import MAX_JSON_CONTAINERS
from scanner.retrievers.runfile import MAX_RUN_FILE_BYTES, RunFileRetriever
path = Path(sys.argv[1]) / "run.jsonl"
# One line holding the most objects a line may: each hit an empty-ish object (refused by the mapping,
# which is the point: the parse is what costs).
hits = ",".join(['{"path":"a.md"}'] * (MAX_JSON_CONTAINERS - 2))
path.write_text('{"id":"q1","hits":[' + hits + ']}\\n')
print(path.stat().st_size, file=sys.stderr)
try:
    RunFileRetriever(path)
    print("read")
except Exception as error:
    print(type(error).__name__)
"""

_ANSWER = """
import sys
from scanner.retrievers.base import SearchRequest
from scanner.foundation.strict_json import MAX_JSON_CONTAINERS, loads_strict
from scanner.retrievers.mapping import ErrorContext, ResponseMapping, map_response
data = b'{"results":[' + b",".join([b"{}"] * (MAX_JSON_CONTAINERS - 2)) + b"]}"
print(len(data), file=sys.stderr)
body = loads_strict(data)
try:
    map_response(body, ResponseMapping(), SearchRequest("q1", "a", 10), ErrorContext("bench"))
except Exception as error:
    print(type(error).__name__)
"""

CASES = {"run_trec_at_cap": _RUN_TREC, "run_jsonl_line_at_cap": _RUN_JSONL_LINE, "answer_at_cap": _ANSWER}


def measure(name: str) -> str:
    with tempfile.TemporaryDirectory() as folder:
        started = time.perf_counter()
        child = subprocess.Popen(
            [sys.executable, "-c", CASES[name], folder], cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE
        )
        _, status, usage = os.wait4(child.pid, 0)
        seconds = time.perf_counter() - started
        assert child.stdout is not None and child.stderr is not None
        outcome = child.stdout.read().decode().strip() or f"exit {os.waitstatus_to_exitcode(status)}"
        size = child.stderr.read().decode().strip().splitlines()[:1]
        child.stdout.close()
        child.stderr.close()
    return f"| {name} | {size[0] if size else '?'} bytes | {outcome} | {seconds:.1f} | {usage.ru_maxrss / 1024:.0f} |"


def main(names: list[str]) -> None:
    print("| case | input | outcome | seconds | peak RSS (MiB) |")
    print("|---|---|---|---|---|")
    for name in names or list(CASES):
        print(measure(name), flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
