"""Counting the calls of one function: how the cost tests tell a sum of two sizes from their product
without timing anything."""

from __future__ import annotations

from collections.abc import Callable
from types import ModuleType
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
