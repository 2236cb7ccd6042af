"""What the head's read of the KB learnt about each file, for reading the pull request's base.

Evaluating a pull request's base in the same job reads the KB twice: from the
working tree, then from the base commit. Most files are byte-identical on both
sides. The key is the path and the bytes' git blob id (`memo_key`): an entry can
only stand for exactly the file content it was read from, the path is in the key
because a document's title can come from its file name, and the blob id is what a
commit's tree lists, so which of the base's files the head already holds is known
from the tree's listing, before any of them is read (or sized).

An entry holds no document, only the file's size and section count: the base
takes such a document's rows and analysis from the head's index
(scanner.search.index.Reuse), so the parsed KB is never held whole in memory.
Lives for one run and is never written anywhere.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field


def blob_id(data: bytes) -> str:
    """`data`'s git blob id (`git hash-object`), the id a tree lists the file by."""
    digest = hashlib.sha1(b"blob %d\x00" % len(data), usedforsecurity=False)
    digest.update(data)
    return digest.hexdigest()


def memo_key(path: str, blob: str) -> str:
    return f"{blob}:{path}"


@dataclass(frozen=True, slots=True)
class Remembered:
    """One file the head read and indexed, parsed without a warning."""

    size: int
    """Its bytes: the base's corpus byte cap counts it without reading it."""
    sections: int
    """Its chunks in the head's index: the base's section cap counts them, and its index takes them."""


@dataclass(slots=True)
class ParseMemo:
    """The files one read remembered, by path and blob id (`memo_key`)."""

    entries: dict[str, Remembered] = field(default_factory=dict)
    sizes: dict[str, int] = field(default_factory=dict)
    """Blob id -> size, for a tree listing (the same bytes under any path)."""
    hits: int = 0
    """How many recalls found an entry (for the benchmark and the tests)."""

    def remember(self, path: str, blob: str, size: int, sections: int) -> None:
        self.entries[memo_key(path, blob)] = Remembered(size, sections)
        self.sizes[blob] = size

    def holds(self, key: str) -> bool:
        """Whether these bytes at this path were read before (no recall is counted)."""
        return key in self.entries

    def recall(self, key: str) -> Remembered | None:
        found = self.entries.get(key)
        if found is not None:
            self.hits += 1
        return found
