"""The corpus digest fed a document at a time, and a reusing index's digest fed the shares its donor
kept: the same sha256 as over every chunk's values, without reading the donor's rows back."""

from __future__ import annotations

import hashlib
import os
import sqlite3
import tempfile
from pathlib import Path

import pytest

from scanner.search import corpus_digest
from scanner.search import index as index_module
from scanner.search.corpus_digest import CorpusDigest
from scanner.search.index import Index, Reuse
from tests.search.test_index import documents
from tests.search.test_reuse import edited_head, held, pull_request

SHARES = [b"alpha", b"", b"beta-gamma", b"d" * 50, b"epsilon", b"z"]


def test_a_digest_kept_holds_every_share_where_its_starts_say(tmp_path: Path) -> None:
    digest = CorpusDigest(str(tmp_path / "kept"))
    for share in SHARES:
        digest.add(share)
    hexdigest, kept = digest.finish()
    assert hexdigest == "sha256:" + hashlib.sha256(b"".join(SHARES)).hexdigest()
    assert kept is not None
    data = Path(kept.path).read_bytes()
    assert [data[kept.starts[n] : kept.starts[n + 1]] for n in range(len(SHARES))] == SHARES
    assert CorpusDigest().finish()[1] is None  # not asked to keep: nothing written


@pytest.mark.parametrize("read_bytes", [3, 1 << 20])
def test_shares_taken_from_another_digest_give_the_digest_of_their_bytes_read_a_run_at_a_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, read_bytes: int
) -> None:
    monkeypatch.setattr(corpus_digest, "READ_BYTES", read_bytes)
    donor = CorpusDigest(str(tmp_path / "donor"))
    for share in SHARES:
        donor.add(share)
    _, kept = donor.finish()
    assert kept is not None
    reads: list[int] = []
    pread = os.pread

    def counted(fd: int, size: int, offset: int) -> bytes:
        reads.append(size)
        return pread(fd, size, offset)

    monkeypatch.setattr(corpus_digest.os, "pread", counted)
    # Documents 0-2 taken (one run), one of its own, 4 taken, 5 skipped (the pull request deleted it).
    taking = CorpusDigest(str(tmp_path / "taking"))
    for n in (0, 1, 2):
        taking.add_kept(kept, n)
    taking.add(b"own")
    taking.add_kept(kept, 4)
    hexdigest, again = taking.finish()
    expected = SHARES[0] + SHARES[1] + SHARES[2] + b"own" + SHARES[4]
    assert hexdigest == "sha256:" + hashlib.sha256(expected).hexdigest()
    assert again is not None and Path(again.path).read_bytes() == expected
    assert list(again.starts) == [0, 5, 5, 15, 18, 25]  # a start per document, not per read
    if read_bytes > 100:
        assert reads == [15, 7]  # the run of three in one read; the near miss would read three times
    else:
        assert all(size <= read_bytes for size in reads) and sum(reads) == 22


def test_a_reusing_index_takes_the_donors_shares_and_reads_none_of_its_rows_for_the_digest(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    head_docs, base_docs, same = pull_request(edited_head(documents(240)))
    head = Index.build(head_docs, analysis_workers=1, donor=True)
    statements: list[str] = []
    connect = index_module._connect

    def traced(path: str) -> sqlite3.Connection:
        connection = connect(path)
        connection.set_trace_callback(statements.append)
        return connection

    monkeypatch.setattr(index_module, "_connect", traced)
    reusing = Index.build(held(base_docs, same), analysis_workers=1, reuse=Reuse(head))
    assert reusing.corpus == Index.build(base_docs, analysis_workers=1).corpus
    assert reusing.corpus.digest != head.corpus.digest
    # Written, never read back: the near miss (the digest over the rows read again) selects them.
    assert statements and not [s for s in statements if "SELECT" in s.upper()]


def test_an_index_not_built_as_a_donor_is_refused_as_a_bug_and_leaves_no_folder() -> None:
    head_docs, base_docs, same = pull_request(edited_head(documents(240)))
    head = Index.build(head_docs, analysis_workers=1)
    before = set(os.listdir(tempfile.gettempdir()))
    with pytest.raises(RuntimeError, match="not built as a donor"):
        Index.build(held(base_docs, same), analysis_workers=1, reuse=Reuse(head))
    assert {name for name in set(os.listdir(tempfile.gettempdir())) - before if name.startswith("kb-eval-index-")} == set()


def test_only_an_index_built_as_a_donor_writes_its_digest_shares() -> None:
    docs = documents(40)
    plain, donor = Index.build(docs, analysis_workers=1), Index.build(docs, analysis_workers=1, donor=True)
    assert plain.corpus == donor.corpus
    assert plain._digest_shares is None and "digest-shares" not in os.listdir(plain.folder)
    assert donor._digest_shares is not None and os.path.getsize(os.path.join(donor.folder, "digest-shares")) > 0
