"""What each engine's recipe scores on the project's own collections, as a Markdown table.

    python -m tests.engines.score_table

Runs every recipe of docs/retrievers.md (the engines must be installed: .ci/run installs them) and
kb-eval's built-in retriever, each at --score-level document, on examples/kb and
tests/fixtures/redesign/kb. The table in docs/retrievers.md is this command's output.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path

from tests.engines.runs import ENGINES, copy_kb

REPO = Path(__file__).resolve().parents[2]
COLLECTIONS = {"examples/kb": REPO / "examples" / "kb", "tests/fixtures/redesign/kb": REPO / "tests" / "fixtures" / "redesign" / "kb"}


def builtin(kb: Path, work: Path) -> dict[str, object]:
    kb = copy_kb(kb, work)
    report = work / "report.json"
    subprocess.run(
        [str(Path(sys.executable).parent / "kb-eval"), "--kb-path", str(kb), "--score-level", "document",
         "--report", str(report)],
        check=True, capture_output=True, timeout=300,
    )
    loaded: dict[str, object] = json.loads(report.read_text())
    return loaded


def main() -> None:
    rows: list[str] = []
    for collection, kb in COLLECTIONS.items():
        runs: dict[str, dict[str, object]] = {}
        with tempfile.TemporaryDirectory() as work:
            runs["kb-eval built-in (BM25F, sections)"] = builtin(kb, Path(work))
        for name, engine in ENGINES.items():
            with tempfile.TemporaryDirectory() as work:
                run = engine(kb, Path(work))
                if run.report is None:
                    raise SystemExit(f"{name} on {collection} wrote no report: {run.result.stderr}")
                runs[name] = run.report
        for name, report in runs.items():
            aggregate = report["aggregate"]
            assert isinstance(aggregate, dict)
            rows.append(
                f"| {collection} | {name} | {aggregate['query_count']} | {aggregate['mrr']:.3f} | "
                f"{aggregate['recall_at_k']['1']:.3f} | {aggregate['recall_at_k']['5']:.3f} | "
                f"{aggregate['ndcg_at_k']['10']:.3f} |"
            )
    print("| collection | engine | queries | MRR | recall@1 | recall@5 | nDCG@10 |")
    print("|---|---|---:|---:|---:|---:|---:|")
    print("\n".join(rows))


if __name__ == "__main__":
    main()
