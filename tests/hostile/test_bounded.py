"""The capped child the hostile cost tests run in: its room is the same whatever the test process
had mapped before it."""

from __future__ import annotations

import mmap

import pytest

from tests.hostile.bounded import ChildFailed, in_capped_child

MIB = 1024 * 1024


def test_a_case_past_its_room_fails_in_the_child() -> None:
    with pytest.raises(ChildFailed):
        in_capped_child(lambda: len(bytearray(256 * MIB)), limit_mib=128)


def test_the_room_is_counted_from_what_the_test_process_has_mapped() -> None:
    # 1 GiB mapped (never touched) by the parent: an absolute 1 GiB cap would leave the child no room.
    reserved = mmap.mmap(-1, 1024 * MIB)
    try:
        assert in_capped_child(lambda: len(bytearray(64 * MIB)), limit_mib=128) == 64 * MIB
    finally:
        reserved.close()
