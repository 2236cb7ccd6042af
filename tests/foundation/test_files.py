"""The one capped file reader: each refusal, for each link policy, and the near miss that reads."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from scanner.foundation.files import FileRefused, LinkPolicy, Refusal, check_replaceable, read_capped, write_atomically
from tests.conftest import REPO


def refusal(path: Path, cap: int = 100, links: LinkPolicy = LinkPolicy.REFUSE, hard: bool = False) -> FileRefused:
    with pytest.raises(FileRefused) as caught:
        read_capped(path, cap, links, refuse_hard_links=hard)
    return caught.value


def test_a_regular_file_within_the_cap_is_read(tmp_path: Path) -> None:
    (tmp_path / "a").write_bytes(b"x" * 100)
    assert read_capped(tmp_path / "a", 100, LinkPolicy.REFUSE) == b"x" * 100


def test_one_byte_over_the_cap_is_refused(tmp_path: Path) -> None:
    (tmp_path / "a").write_bytes(b"x" * 101)
    refused = refusal(tmp_path / "a")
    assert refused.refusal is Refusal.TOO_LARGE and refused.reason == "is 101 bytes, over the 100-byte cap"


def test_a_link_is_refused_or_followed_by_policy(tmp_path: Path) -> None:
    (tmp_path / "target").write_bytes(b"ok")
    (tmp_path / "link").symlink_to("target")
    assert refusal(tmp_path / "link").refusal is Refusal.LINK
    assert read_capped(tmp_path / "link", 100, LinkPolicy.FOLLOW) == b"ok"


def test_a_loop_and_a_dangling_link_are_named_when_followed(tmp_path: Path) -> None:
    (tmp_path / "loop").symlink_to("loop")
    (tmp_path / "dangling").symlink_to("nowhere")
    assert refusal(tmp_path / "loop", links=LinkPolicy.FOLLOW).reason == "is a symbolic link loop"
    assert refusal(tmp_path / "dangling", links=LinkPolicy.FOLLOW).reason == "is a symbolic link to nothing"


def test_a_fifo_is_refused_without_blocking(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "fifo")
    for links in LinkPolicy:
        assert refusal(tmp_path / "fifo", links=links).reason == "is a FIFO (named pipe), not a regular file"


def test_a_hard_linked_file_is_refused_only_where_asked(tmp_path: Path) -> None:
    (tmp_path / "a").write_bytes(b"x")
    os.link(tmp_path / "a", tmp_path / "b")
    assert refusal(tmp_path / "a", hard=True).reason == "has 2 hard links"
    assert read_capped(tmp_path / "a", 100, LinkPolicy.REFUSE) == b"x"
    with pytest.raises(FileRefused):
        check_replaceable(tmp_path / "a", 100)


def test_a_missing_file_is_its_own_refusal_and_replaceable(tmp_path: Path) -> None:
    assert refusal(tmp_path / "absent").refusal is Refusal.MISSING
    check_replaceable(tmp_path / "absent", 100)  # nothing there: nothing to protect


def test_no_other_module_opens_an_input_file_by_itself() -> None:
    # The readers of untrusted files call read_capped; a second `open(..., "rb")` would be a second policy.
    readers = ["scanner/golden/file.py", "scanner/corpus/reader.py", "scanner/retrievers/runfile.py", "scanner/report/history.py"]
    for module in readers:
        source = (REPO / module).read_text(encoding="utf-8")
        assert "read_capped(" in source or "_read_regular_file(" in source, module
        assert 'open(absolute, "rb")' not in source and "os.O_RDONLY | os.O_NOFOLLOW" not in source, module


def test_a_replaced_file_keeps_its_permission_bits_but_not_a_setuid_or_sticky_bit(tmp_path: Path) -> None:
    kept, planted = tmp_path / "kept.json", tmp_path / "planted.sqlite"
    kept.write_bytes(b"old")
    kept.chmod(0o640)
    planted.write_bytes(b"old")
    planted.chmod(0o4755 | stat.S_ISVTX)
    write_atomically(kept, b"new", "history")
    write_atomically(planted, b"new", "parse cache")
    assert stat.S_IMODE(kept.stat().st_mode) == 0o640 and kept.read_bytes() == b"new"
    assert stat.S_IMODE(planted.stat().st_mode) == 0o755
