"""Worker pools: results in order, with only a bounded number of tasks waiting for the consumer."""

from __future__ import annotations

from concurrent.futures import Future
from typing import Any

from scanner.foundation.workers import ordered_map, worker_pool


def squared(value: int) -> int:
    return value * value


def test_ordered_map_gives_every_result_in_order_with_at_most_its_window_of_tasks_ahead_of_the_consumer() -> None:
    with worker_pool(2) as pool:
        submitted: list[int] = []
        submit = pool.submit

        def counted(*args: Any) -> Future[Any]:
            submitted.append(len(args[2]))
            return submit(*args)

        pool.submit = counted  # type: ignore[method-assign]
        results = []
        for consumed, value in enumerate(ordered_map(pool, squared, list(range(100)), 5, 3), start=1):
            results.append(value)
            # The tasks whose results were reached, plus the window: never every task at once.
            assert len(submitted) <= -(-consumed // 5) + 3
        assert results == [n * n for n in range(100)]
        assert len(submitted) == 20 and set(submitted) == {5}
        # The near miss: before the first result only the window was submitted, not all 20 tasks.
        submitted.clear()
        first = ordered_map(pool, squared, list(range(100)), 5, 3)
        assert next(first) == 0 and len(submitted) == 4
