"""What each answer cost, kept per query while a retriever answers (possibly on several threads)."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

from scanner.retrievers.base import AnswerCost, SearchRequest


class CostLog:
    """Each query's answer time and size, recorded as it is answered, read back in request order."""

    def __init__(self) -> None:
        self._by_id: dict[str, AnswerCost] = {}
        self._lock = threading.Lock()
        self._order: tuple[str, ...] = ()

    def start(self, requests: Sequence[SearchRequest]) -> None:
        """A new `search_all`: forget the last one's costs."""
        with self._lock:
            self._by_id = {}
            self._order = tuple(request.query_id for request in requests)

    @contextmanager
    def timing(self, request: SearchRequest) -> Iterator[list[int]]:
        """Times the block; the block appends the answer's size in bytes to the list it is given.
        Nothing is recorded for a block that raises: the run stops on it."""
        size: list[int] = []
        started = time.perf_counter()
        yield size
        cost = AnswerCost(time.perf_counter() - started, size[-1] if size else None)
        with self._lock:
            self._by_id[request.query_id] = cost

    def in_order(self) -> tuple[AnswerCost, ...]:
        """The last `search_all`'s costs in its request order; () when one is missing."""
        with self._lock:
            if any(query_id not in self._by_id for query_id in self._order):
                return ()
            return tuple(self._by_id[query_id] for query_id in self._order)
