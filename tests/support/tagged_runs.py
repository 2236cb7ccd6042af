"""A KB and a golden set of tagged queries, and reports of built-in runs whose rankings a test
chooses by editing the KB (the corpus is not in the fingerprint, so the runs stay comparable): the
gate's per-tag budgets and floors end to end."""

from __future__ import annotations

import io
from collections.abc import Sequence
from pathlib import Path

from scanner.cli.main import main

DOCS = ("a.md", "b.md", "c.md", "d.md")


def kb_eval(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(list(argv), out, err)
    return code, out.getvalue(), err.getvalue()


class TaggedKB:
    """`tags[i]` tags query `q{i+1}` (its text the one word `topicq{i+1}`); every query expects a.md."""

    def __init__(self, root: Path, tags: Sequence[str]) -> None:
        self.root = root
        self.kb = root / "kb"
        self.kb.mkdir()
        for doc in DOCS:
            (self.kb / doc).write_text(f"# {doc}\n\nText about {doc}.\n", encoding="utf-8")
        self.ids = [f"q{n}" for n in range(1, len(tags) + 1)]
        self.golden = root / "golden.yml"
        self.golden.write_text("queries:\n" + "".join(
            f"  - id: {qid}\n    query: topic{qid}\n    expected: [a.md]\n    tags: [{tag}]\n"
            for qid, tag in zip(self.ids, tags)
        ), encoding="utf-8")

    def run(self, name: str, second: set[str], *extra: str) -> tuple[int, str, str]:
        """A built-in run where a.md answers every query first, except the queries in `second`, which
        b.md (short, repeating the query's one word) answers first and a.md second."""
        (self.kb / "a.md").write_text("# A\n\n" + " ".join(f"topic{qid}" for qid in self.ids) + "\n", encoding="utf-8")
        (self.kb / "b.md").write_text("# B\n\n" + " ".join(f"topic{qid} " * 3 for qid in sorted(second)) + "\n",
                                      encoding="utf-8")
        return kb_eval("--kb-path", str(self.kb), "--golden", str(self.golden), "--no-history",
                       "--report", str(self.root / f"{name}.json"), *extra)
