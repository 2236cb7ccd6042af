"""How many sections an index analysed: what tells an index that reused another's analysis from
one that analysed everything again."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from scanner.search.bm25 import Postings
from scanner.search.index import Index


def spy_on_analysis(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """A list that gets, for each analysis any index runs from now on, the sections it analysed."""
    analysed: list[int] = []
    real_analyse = Index._analyse

    def spy(self: Index, job: object, ranges: list[tuple[int, int]], tick: Callable[[int], None]) -> list[Postings]:
        analysed.append(sum(last - first for first, last in ranges))
        return real_analyse(self, job, ranges, tick)  # type: ignore[arg-type]

    monkeypatch.setattr(Index, "_analyse", spy)
    return analysed
