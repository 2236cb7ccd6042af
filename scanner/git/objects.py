"""Objects read by their id: a blob's size from its header, before its body is inflated, and
blobs' bytes, one at a time, under the per-file cap and the deadline."""

from __future__ import annotations

import os
import zlib
from collections.abc import Iterator, Sequence

from dulwich.errors import ApplyDeltaError, ChecksumMismatch, FileFormatException, ObjectFormatException
from dulwich.object_store import DiskObjectStore
from dulwich.objects import ObjectID

from scanner.git.repository import Deadline, GitFailed, missing, open_repository
from scanner.git.revision import Repository

UNREADABLE = (
    zlib.error, OSError, ValueError, IndexError, ApplyDeltaError, ChecksumMismatch, FileFormatException,
    ObjectFormatException,
)
"""What reading an object of a damaged or crafted store raises (a truncated pack entry, a bad zlib
stream, a delta against nothing): the revision cannot be read, never a kb-eval bug."""


def read_blobs(repository: Repository, blobs: Sequence[str], deadline: Deadline, cap: int) -> Iterator[bytes]:
    """Each blob's bytes, in order, read in this process (no filters, no textconv: the object as
    stored). Streamed: one blob is held at a time; the deadline is checked before each."""
    with open_repository(repository) as repo:
        yield from read_from(repo.object_store, blobs, deadline, cap)


PACK_PAGES_RELEASED_EVERY = 64
"""Blobs read between two releases of the packs' pages. dulwich maps each pack whole, and a read
maps the pages around the object too: the 1,000 blobs a pull request edited, scattered over the
200 MB pack of a 100,000-document bench KB, left 99 MiB of it resident in the base's process (the
run's peak, beside the head). Closed, a pack is mapped again at the next read, with its pages
still in the system's cache; git bounds its mapped pack windows the same way."""


def read_from(store: DiskObjectStore, blobs: Sequence[str], deadline: Deadline, cap: int | None) -> Iterator[bytes]:
    for count, blob in enumerate(blobs, start=1):
        if count % PACK_PAGES_RELEASED_EVERY == 0:
            release_pack_pages(store)
        deadline.check()
        try:
            if cap is not None and object_size(store, blob) > cap:
                # Only blobs a listing showed under the cap are asked for; a larger one is not them.
                raise GitFailed(f"blob {blob} is over {cap} bytes, not what the tree listed")
            kind, data = store.get_raw(ObjectID(blob.encode("ascii")))
        except KeyError:
            raise GitFailed(f"object {blob} is missing (a partial clone's blobs are never fetched)") from None
        except UNREADABLE as error:
            raise GitFailed(f"object {blob} cannot be read ({type(error).__name__})") from None
        if kind != 3:  # a blob
            raise GitFailed(f"object {blob} is not a blob")
        yield data


def object_size(store: DiskObjectStore, blob: str) -> int:
    """An object's size from its header, reading only the first bytes: a loose object's zlib
    stream, or a packed object's entry header (and a delta's first bytes, which hold the size of
    the object it makes). dulwich has no call for this; git's `ls-tree -l` does the same.

    GitFailed when the object is not here (a partial clone's blob: a tree of a pull request can
    name any blob) or cannot be read: the revision is then unavailable, never an internal error."""
    sha = ObjectID(blob.encode("ascii"))
    try:
        for one in _stores(store):
            loose = os.path.join(one.path, blob[:2], blob[2:])
            if os.path.isfile(loose):
                return _loose_size(loose, blob)
            for pack in one.packs:
                try:
                    offset = pack.index.object_offset(sha)
                except KeyError:
                    continue
                return _packed_size(os.fspath(pack.data.path), offset, blob)
    except UNREADABLE as error:
        raise GitFailed(f"object {blob} cannot be read ({type(error).__name__})") from None
    raise missing(KeyError(sha))


def release_pack_pages(store: DiskObjectStore) -> None:
    """Unmap every pack of `store` and its alternates (each is opened again by its next read)."""
    for one in _stores(store):
        for pack in one.packs:
            pack.close()


def _stores(store: DiskObjectStore) -> Iterator[DiskObjectStore]:
    # This repository's objects, then its alternates' (a `git clone --shared` or `--reference`).
    yield store
    for alternate in store.alternates:
        if isinstance(alternate, DiskObjectStore):
            yield from _stores(alternate)


_HEADER_BYTES = 64


def _loose_size(path: str, blob: str) -> int:
    inflater = zlib.decompressobj()
    with open(path, "rb") as stream:
        head = inflater.decompress(stream.read(_HEADER_BYTES * 4), _HEADER_BYTES)
    kind, _, rest = head.partition(b" ")
    size_text, nul, _ = rest.partition(b"\0")
    if kind != b"blob" or not nul or not size_text.isdigit():
        raise GitFailed(f"object {blob} is not a readable blob")
    return int(size_text)


_OFS_DELTA, _REF_DELTA = 6, 7


def _packed_size(pack_path: str, offset: int, blob: str) -> int:
    with open(pack_path, "rb") as stream:
        stream.seek(offset)
        head = stream.read(_HEADER_BYTES)
        byte = head[0]
        kind = (byte >> 4) & 7
        size, shift, i = byte & 15, 4, 1
        while byte & 0x80:
            byte = head[i]
            size |= (byte & 0x7F) << shift
            shift, i = shift + 7, i + 1
        if kind not in (_OFS_DELTA, _REF_DELTA):
            return size
        if kind == _REF_DELTA:
            i += 20
        else:
            while head[i] & 0x80:
                i += 1
            i += 1
        stream.seek(offset + i)
        delta = zlib.decompressobj().decompress(stream.read(_HEADER_BYTES * 4), 2 * 10)
    _source_size, at = _varint(delta, 0, blob)
    target_size, _ = _varint(delta, at, blob)
    return target_size


def _varint(data: bytes, at: int, blob: str) -> tuple[int, int]:
    value = shift = 0
    while True:
        if at >= len(data):
            raise GitFailed(f"packed object {blob} has an unreadable delta header")
        byte = data[at]
        value |= (byte & 0x7F) << shift
        shift, at = shift + 7, at + 1
        if not byte & 0x80:
            return value, at
