"""The golden-set health checks on real golden sets: how similar each query is to its answers'
titles and headings, duplicated wordings, and how much of the KB the labels reach.

    python bench/golden_health.py KB GOLDEN [KB GOLDEN ...]

For each pair prints: queries, the distribution of each query's highest title similarity
(scanner/evaluation/health.py `title_similarity`), the queries at or above 0.7 with the title they
resemble, duplicated wordings, and the share of documents that are some query's answer.
TITLE_SIMILARITY was chosen from this output (its docstring gives the figures).
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from scanner.corpus.reader import read_corpus
from scanner.evaluation.health import TITLE_SIMILARITY, answer_paths, duplicate_wordings, title_similarity
from scanner.foundation.diagnostics import Diagnostics
from scanner.golden.file import load_golden

BANDS = (0.5, 0.6, 0.7, 0.8, 0.85, 0.9, 1.0)


def report(kb: Path, golden_file: Path) -> None:
    golden = load_golden(golden_file)
    documents = read_corpus(kb, (), Diagnostics()).documents
    titles = {d.path: [d.title, *dict.fromkeys(c.heading for c in d.chunks if c.heading)] for d in documents}
    best = []
    for query in golden.queries:
        scored = [(title_similarity(query.text, t), t, p) for p in answer_paths([query]) for t in titles.get(p, ())]
        best.append((max(scored, default=(0.0, "", "")), query))
    print(f"== {golden_file} ({len(golden.queries)} queries, {len(documents)} documents)")
    counts = [sum(1 for (s, _, _), _ in best if s >= band) for band in BANDS]
    print("  highest title similarity >= " + ", ".join(f"{band}: {n}" for band, n in zip(BANDS, counts)))
    for (similarity, title, path), query in sorted(best, key=lambda item: -item[0][0]):
        if similarity < 0.7:
            break
        flag = "WARN" if similarity >= TITLE_SIMILARITY else "    "
        print(f"  {flag} {similarity:.3f} {query.id}: {query.text[:70]!r} ~ {path}: {title[:60]!r}")
    duplicates = duplicate_wordings(golden.queries)
    print(f"  duplicated wordings: {len(duplicates)}" + "".join(f"\n    {d.ids}: {d.wording[:60]!r}" for d in duplicates))
    answers = sum(1 for p in answer_paths(golden.queries) if p in titles)
    print(f"  documents that are some query's answer: {answers} of {len(documents)} ({answers / max(len(documents), 1):.1%})")


def main() -> int:
    arguments = sys.argv[1:]
    if not arguments or len(arguments) % 2:
        sys.stderr.write(__doc__ or "")
        return 2
    for kb, golden in zip(arguments[::2], arguments[1::2]):
        report(Path(kb), Path(golden))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
