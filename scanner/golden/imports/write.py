"""An import written as a golden file: the format a person writes, every grade explicit."""

from __future__ import annotations

import yaml

from scanner.foundation.errors import InputError
from scanner.foundation.untrusted_text import defused
from scanner.golden.file import MAX_GOLDEN_BYTES, MAX_QUERIES
from scanner.golden.imports.records import Imported, Judgment

HEADER = """\
# kb-eval golden queries imported by `kb-eval import` from {sources}.
# Grades as the source gave them (0: judged, not relevant); --relevance-level decides which
# grades count as relevant for recall, precision, success, MRR and MAP; nDCG uses every grade.
"""


def golden_text(imported: Imported) -> str:
    """The golden file's text. Refused (exit 2) when kb-eval would refuse to read it back: more
    queries than MAX_QUERIES or more bytes than MAX_GOLDEN_BYTES."""
    if len(imported.queries) > MAX_QUERIES:
        raise InputError(
            f"{len(imported.queries)} judged queries is over the golden file's limit of {MAX_QUERIES}",
            file=imported.sources[0], hint="import a subset (e.g. the test split's qrels)",
        )
    entries = []
    for query in imported.queries:
        entry = {"id": query.id, "query": query.text, "expected": [_expected(j) for j in query.judgments]}
        dumped = yaml.safe_dump([entry], allow_unicode=True, sort_keys=False, width=1_000_000)
        entries.append("".join("  " + line + "\n" for line in dumped.splitlines()))
    text = HEADER.format(sources=" and ".join(defused(name) for name in imported.sources)) + "queries:\n" + "".join(entries)
    size = len(text.encode("utf-8"))
    if size > MAX_GOLDEN_BYTES:
        raise InputError(
            f"the golden file would be {size} bytes, over the limit of {MAX_GOLDEN_BYTES}",
            file=imported.sources[0], hint="import a subset of the queries",
        )
    return text


def _expected(judgment: Judgment) -> dict[str, object]:
    entry: dict[str, object] = {"path": judgment.path}
    if judgment.heading is not None:
        entry["heading"] = judgment.heading
    entry["grade"] = judgment.grade
    return entry
