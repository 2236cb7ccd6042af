"""Documents parsed earlier in this process, keyed by each file's path and bytes.

Evaluating a pull request's base in the same job reads the KB twice: from the
working tree, then from the base commit. Most files are byte-identical on both
sides, so the second read takes their parsed documents from here instead of
parsing them again. The key is the path and the bytes' git blob id (`memo_key`):
an entry can only stand for exactly the file content it was parsed from, the
path is in the key because a document's title can come from its file name, and
the blob id is what a commit's tree lists, so which of the base's files the head
already holds is known from the tree's listing, before any of them is read.

Unlike the parse cache this lives in memory for one run, holds the very
Document objects the first read produced (no copy: they are immutable), and
is never written anywhere.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

from scanner.corpus.documents import Document
from scanner.foundation.diagnostics import Diagnostic


def blob_id(data: bytes) -> str:
    """`data`'s git blob id (`git hash-object`), the id a tree lists the file by."""
    digest = hashlib.sha1(b"blob %d\x00" % len(data), usedforsecurity=False)
    digest.update(data)
    return digest.hexdigest()


def memo_key(path: str, blob: str) -> str:
    return f"{blob}:{path}"


@dataclass(slots=True)
class ParseMemo:
    """What one file's bytes parsed into: its document and the warnings parsing it recorded."""

    entries: dict[str, tuple[Document, tuple[Diagnostic, ...]]] = field(default_factory=dict)
    hits: int = 0
    """How many recalls found an entry (for the benchmark and the tests)."""

    def remember(self, key: str, document: Document, warnings: list[Diagnostic]) -> None:
        self.entries[key] = (document, tuple(warnings))

    def holds(self, key: str) -> bool:
        """Whether these bytes at this path were parsed before (no recall is counted)."""
        return key in self.entries

    def recall(self, key: str) -> tuple[Document, list[Diagnostic]] | None:
        found = self.entries.get(key)
        if found is None:
            return None
        self.hits += 1
        return found[0], list(found[1])
