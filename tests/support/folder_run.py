"""A run file made from a folder of Markdown, for the per-side run-file tests: each golden query's
documents ranked by the words they share with it, written as JSONL (an empty list where none does).

    python folder_run.py KB GOLDEN OUT
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import yaml

WORD = re.compile(r"\w+")


def main() -> int:
    kb, golden, out = (Path(argument) for argument in sys.argv[1:4])
    documents = {
        path.relative_to(kb).as_posix(): set(WORD.findall(path.read_text(encoding="utf-8").lower()))
        for path in sorted(kb.rglob("*.md"))
    }
    rows = []
    for query in yaml.safe_load(golden.read_text(encoding="utf-8"))["queries"]:
        words = set(WORD.findall(query["query"].lower()))
        scored = sorted(
            ((len(words & document), path) for path, document in documents.items() if words & document),
            key=lambda item: (-item[0], item[1]),
        )
        rows.append({"id": query["id"], "hits": [{"path": path, "score": score} for score, path in scored[:10]]})
    out.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
