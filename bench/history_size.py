"""Measure the size of a kb-eval history file for realistic run records.

Usage: python bench/history_size.py [QUERIES ...]
Prints, for each query count, the bytes of one run record and of a 10-run
history as `tests.support.history.save_history` writes it (compact JSON), and the
time to read it back. The synthetic rows use top_k 10 with KB-relative paths
of about 45 characters and headings of about 30, k = 1, 5, 10, and every
metric filled in, i.e. the widest row the report produces.
"""

from __future__ import annotations

import random
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from scanner.report.history import read_history
from tests.support.history import save_history

WORDS = [
    "retrieval",
    "index",
    "chunk",
    "golden",
    "query",
    "recall",
    "ranking",
    "embedding",
    "notes",
    "design",
]


def _path(rng: random.Random) -> str:
    return (
        "/".join("-".join(rng.choice(WORDS) for _ in range(2)) for _ in range(2))
        + f"/{rng.choice(WORDS)}-{rng.randint(1, 999)}.md"
    )


def _heading(rng: random.Random) -> str:
    return " ".join(rng.choice(WORDS).capitalize() for _ in range(4))


def synthetic_run(queries: int, seed: int) -> dict[str, object]:
    rng = random.Random(seed)
    ks = ["1", "5", "10"]
    rows = []
    for index in range(queries):
        rows.append(
            {
                "id": f"q{index:04d}",
                "query": " ".join(rng.choice(WORDS) for _ in range(6)),
                "tags": ["core"],
                "line": 3 * index + 1,
                "expected": [{"path": _path(rng), "heading": None}],
                "top_k": [
                    {
                        "rank": r,
                        "path": _path(rng),
                        "heading": _heading(rng),
                        "score": rng.random() * 20,
                    }
                    for r in range(1, 11)
                ],
                "metrics": {
                    "rr": rng.random(),
                    "recall_at_k": {k: rng.random() for k in ks},
                    "ndcg_at_k": {k: rng.random() for k in ks},
                },
            }
        )
    aggregate = {
        "query_count": queries,
        "mrr": 0.5,
        "recall_at_k": {k: 0.5 for k in ks},
        "ndcg_at_k": {k: 0.5 for k in ks},
    }
    return {
        "$schema": "https://kb-eval.github.io/schema/report-v1.json",
        "schema_version": 1,
        "tool": {"name": "kb-eval", "version": "0.1.0"},
        "timestamp": "2026-12-02T15:44:16Z",
        "fingerprint": {
            "retriever": {"name": "builtin"},
            "limit": 10,
            "k": [1, 5, 10],
            "golden_sha256": "0" * 64,
            "metric_version": 2,
            "query_compiler_version": 1,
        },
        "corpus": {"documents": 642, "chunks": 9400, "digest": "sha256:" + "0" * 64},
        "aggregate": aggregate,
        "by_tag": {"core": aggregate},
        "per_query": rows,
        "findings": [],
        "warnings": [],
    }


def main() -> None:
    counts = [int(a) for a in sys.argv[1:]] or [100, 300, 500, 1000]
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "history.json"
        for queries in counts:
            runs = [synthetic_run(queries, seed) for seed in range(10)]
            saved = save_history(path, runs, max_runs=10, cap_bytes=1 << 40)
            start = time.perf_counter()
            read_history(path, cap_bytes=1 << 40)
            elapsed = time.perf_counter() - start
            print(
                f"{queries:5d} queries: 10-run history {saved.bytes_written / 1e6:6.2f} MB "
                f"({saved.bytes_written / 10 / queries:.0f} bytes/query/run), read in {elapsed:.2f} s"
            )


if __name__ == "__main__":
    main()
