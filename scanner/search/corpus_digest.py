"""The corpus digest (CorpusSnapshot.digest): sha256 over every chunk's values in index order, fed
a document at a time; and each document's share of it, kept for an index that reuses this one's
rows (a pull request's base, scanner.search.index.Reuse)."""

from __future__ import annotations

import hashlib
import os
from array import array
from dataclasses import dataclass

READ_BYTES = 1 << 20
"""Bytes of kept shares read at a time: the documents a base takes from its head come in long runs
(every one the pull request left alone), read in blocks of this size rather than held whole."""


@dataclass(frozen=True, slots=True)
class KeptShares:
    """Each document's share of a corpus digest, one after another in `path`."""

    path: str
    starts: array[int]
    """Where each document's share starts, in index order, then the file's length."""


class CorpusDigest:
    """The digest's hash, fed each document's share (its chunks' values, each length-prefixed, as
    scanner.corpus.table's `digested` holds them) in index order.

    With `keep` (a file path), the shares are written there too (`kept`): an index reusing this
    one's rows feeds its own digest the shares of the documents it takes from that file
    (`add_kept`), instead of reading their rows back from the chunk table (a pull request's base
    at 100,000 bench documents: 1.9 s of its CPU, py-spy)."""

    def __init__(self, keep: str | None = None) -> None:
        self._hash = hashlib.sha256()
        self._keep = open(keep, "wb") if keep is not None else None  # noqa: SIM115 - closed by finish/close
        self._starts = array("q", [0]) if keep is not None else None
        self._source: KeptShares | None = None
        self._source_file: int | None = None
        self._pending: tuple[int, int] | None = None
        """(start, end) in the source's file of the kept shares added and not yet read."""

    def add(self, share: bytes) -> None:
        """The next document's share."""
        self._read_pending()
        self._take(share)
        if self._starts is not None:
            self._starts.append(self._starts[-1] + len(share))

    def add_kept(self, source: KeptShares, document: int) -> None:
        """The next document's share: the `document`-th of `source` (another index's, the same
        bytes). Adjacent documents of the source are read together."""
        if self._source is None:
            self._source = source
            self._source_file = os.open(source.path, os.O_RDONLY)
        elif source is not self._source:
            raise RuntimeError("the shares of one corpus digest come from one other index")
        start, end = source.starts[document], source.starts[document + 1]
        if self._pending is not None and self._pending[1] == start:
            self._pending = (self._pending[0], end)
        else:
            self._read_pending()
            self._pending = (start, end)
        if self._starts is not None:
            self._starts.append(self._starts[-1] + end - start)

    def _take(self, data: bytes) -> None:
        self._hash.update(data)
        if self._keep is not None:
            self._keep.write(data)

    def _read_pending(self) -> None:
        if self._pending is None or self._source_file is None:
            return
        at, end = self._pending
        self._pending = None
        while at < end:
            block = os.pread(self._source_file, min(READ_BYTES, end - at), at)
            if not block:
                raise RuntimeError("another index's kept digest shares ended early")
            self._take(block)
            at += len(block)

    def finish(self) -> tuple[str, KeptShares | None]:
        """("sha256:" and the hex digest, the kept shares when they were kept)."""
        self._read_pending()
        kept = None
        if self._keep is not None and self._starts is not None:
            kept = KeptShares(self._keep.name, self._starts)
        self.close()
        return "sha256:" + self._hash.hexdigest(), kept

    def close(self) -> None:
        if self._keep is not None:
            self._keep.close()
        if self._source_file is not None:
            os.close(self._source_file)
            self._source_file = None
