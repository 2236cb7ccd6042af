"""Answering queries on a thread pool while keeping golden order."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

Request = TypeVar("Request")
Answer = TypeVar("Answer")


def map_in_order(
    answer: Callable[[Request], Answer], requests: Sequence[Request], concurrency: int
) -> list[Answer]:
    """`[answer(r) for r in requests]`, with up to `concurrency` calls in flight (its bounds are
    the setting's, checked once where it is read: scanner/settings/declaration.py).

    The result is in input order whatever the completion order. When calls
    fail, the error raised is the one of the earliest failing request in input
    order (every request before it succeeded), so the message does not depend
    on thread timing; requests not yet started are cancelled.
    """
    if concurrency <= 1 or len(requests) <= 1:
        return [answer(request) for request in requests]
    executor = ThreadPoolExecutor(max_workers=concurrency, thread_name_prefix="kb-eval-retriever")
    try:
        futures = [executor.submit(answer, request) for request in requests]
        return [future.result() for future in futures]
    finally:
        executor.shutdown(wait=True, cancel_futures=True)
