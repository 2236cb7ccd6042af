"""Peak memory and wall time of the CLI on the largest hostile inputs.

Each case is built in a temporary folder, then the CLI runs in a fresh child
process (so the figure is that run's alone) and the child's ru_maxrss is read
with os.wait4. Usage, from the repository root:

    python bench/peak_rss.py            # every case
    python bench/peak_rss.py tiny_100k  # some cases, by name

Prints one Markdown table row per case: name, exit code, documents, seconds, peak RSS in MiB.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
MIB = 1024 * 1024
GOLDEN = 'queries:\n  - id: q1\n    query: "alpha beta gamma"\n    expected: [a.md]\n'
CLI = "import sys; from scanner.cli import main; sys.exit(main())"


def _kb(root: Path) -> Path:
    kb = root / "kb"
    kb.mkdir()
    (kb / ".kb-eval.yml").write_text(GOLDEN, encoding="utf-8")
    (kb / "a.md").write_text("# A\nalpha beta gamma\n", encoding="utf-8")
    return kb


def baseline(root: Path) -> Path:
    return _kb(root)


def sparse_200mb(root: Path) -> Path:
    kb = _kb(root)
    with open(kb / "huge.md", "wb") as handle:
        handle.truncate(200 * MIB)  # sparse: no disk used, and the size cap must refuse it unread
    return kb


def line_50mb(root: Path) -> Path:
    kb = _kb(root)
    with open(kb / "line.md", "wb") as handle:
        handle.writelines(b"alpha " * (MIB // 6) + b"x" * (MIB % 6) for _ in range(50))
    return kb


def line_under_cap(root: Path) -> Path:
    """One line of 8 MiB - 1 byte: the largest document that is indexed."""
    kb = _kb(root)
    words = b"alpha beta gamma delta " * ((8 * MIB - 1) // 23)
    (kb / "line.md").write_bytes(words + b"x" * (8 * MIB - 1 - len(words)))
    return kb


def spaces_heading_under_cap(root: Path) -> Path:
    """A heading line of 8 MiB - 1 byte that is mostly one run of spaces (the old quadratic case)."""
    kb = _kb(root)
    (kb / "spaces.md").write_bytes(b"# a" + b" " * (8 * MIB - 6) + b"b\n")
    return kb


def tiny_100k(root: Path) -> Path:
    kb = _kb(root)
    for folder in range(100):
        sub = kb / f"d{folder:03}"
        sub.mkdir()
        for n in range(1000):
            (sub / f"n{n:04}.md").write_bytes(b"# t\nw\n")
    return kb


def headings_10k(root: Path) -> Path:
    kb = _kb(root)
    (kb / "many.md").write_text("".join(f"## Heading {n}\nbody {n}\n" for n in range(10_000)), encoding="utf-8")
    return kb


def headings_100kb(root: Path) -> Path:
    """Six nested headings of 100 KB each, repeated to just under the cap: every chunk's
    breadcrumb carries its ancestors, the worst amplification a document can cause."""
    kb = _kb(root)
    block = "".join("#" * level + " " + ("h" * 9 + " ") * 10_000 + "\n" for level in range(1, 7))
    (kb / "long.md").write_text(block * (8 * MIB // len(block)), encoding="utf-8")
    return kb


def golden_flat_1mib(root: Path) -> Path:
    """A golden file at the byte cap made of the cheapest YAML nodes: the loader's worst case."""
    kb = _kb(root)
    (kb / ".kb-eval.yml").write_text("queries: [" + ",".join(["a"] * (MIB // 2 - 10)) + "]\n", encoding="utf-8")
    return kb


def golden_10000_queries(root: Path) -> Path:
    kb = _kb(root)
    (kb / ".kb-eval.yml").write_text(
        "queries:\n" + "".join(f"  - {{query: alpha beta {n}, expected: [a.md]}}\n" for n in range(10_000)),
        encoding="utf-8",
    )
    return kb


CASES: dict[str, Callable[[Path], Path]] = {
    f.__name__: f
    for f in (
        baseline, sparse_200mb, line_50mb, line_under_cap, spaces_heading_under_cap, tiny_100k,
        headings_10k, headings_100kb, golden_flat_1mib, golden_10000_queries,
    )
}


def measure(name: str) -> str:
    with tempfile.TemporaryDirectory() as folder:
        kb = CASES[name](Path(folder))
        report = Path(folder) / "report.json"
        started = time.perf_counter()
        child = subprocess.Popen(
            [sys.executable, "-c", CLI, "--kb-path", str(kb), "--format", "json", "--output", str(report)],
            cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )
        _, status, usage = os.wait4(child.pid, 0)
        seconds = time.perf_counter() - started
        code = os.waitstatus_to_exitcode(status)
        documents = json.loads(report.read_text(encoding="utf-8"))["corpus"]["documents"] if report.exists() else "-"
    # ru_maxrss is in KiB on Linux.
    return f"| {name} | {code} | {documents} | {seconds:.1f} | {usage.ru_maxrss / 1024:.0f} |"


def main(names: list[str]) -> None:
    print("| case | exit | documents | seconds | peak RSS (MiB) |")
    print("|---|---|---|---|---|")
    for name in names or list(CASES):
        print(measure(name), flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
