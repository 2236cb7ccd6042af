"""Counting the calls of one function: how the cost tests tell a sum of two sizes from their product
without timing anything."""

from __future__ import annotations

import sys
from collections.abc import Callable
from types import FrameType, ModuleType
from typing import Any

import pytest


class CallCounter:
    """Replaces `module.name` for the test with a wrapper counting its calls (`calls`)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, module: ModuleType, name: str) -> None:
        self.calls = 0
        original: Callable[..., Any] = getattr(module, name)

        def counting(*args: Any, **kwargs: Any) -> Any:
            self.calls += 1
            return original(*args, **kwargs)

        monkeypatch.setattr(module, name, counting)


def steps(function: Callable[[], object]) -> int:
    """The Python lines `function()` executes plus the C functions it calls, in every frame it
    enters on this thread: a count of work that a busy machine does not change, for telling a cost
    that grows with the input from one that grows with its square (on a small and a large input).
    What a single C call does inside (a regular expression's backtracking, one `str.find`) counts
    as one step, so a rule whose cost lives there keeps a timed twin in the slow suite."""
    count = 0

    def line(frame: FrameType, event: str, arg: object) -> Any:
        nonlocal count
        if event == "line":
            count += 1
        return line

    def call(frame: FrameType, event: str, arg: object) -> Any:
        return line

    def c_call(frame: FrameType, event: str, arg: object) -> None:
        nonlocal count
        if event == "c_call":
            count += 1

    trace, profile = sys.gettrace(), sys.getprofile()
    sys.settrace(call)
    sys.setprofile(c_call)
    try:
        function()
    finally:
        sys.settrace(trace)
        sys.setprofile(profile)
    return count
