"""A basic-memory recipe run on the example KB, made once for the tests that read it: each of
basic-memory's programs takes 10-20 s on a CI machine, and its run is what the recipe test checks
against basic-memory's own command line and the pull-request test checks the base against.

It runs in a thread from the moment a test asks for it (its work is in subprocesses), so the
pull-request test's own run uses the machine's other core meanwhile."""

from __future__ import annotations

from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor

import pytest

from tests.engines.runs import EXAMPLE_KB, EngineRun, basic_memory_mcp


@pytest.fixture(scope="session")
def basic_memory_on_the_example(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Future[EngineRun]]:
    with ThreadPoolExecutor(max_workers=1) as pool:
        yield pool.submit(basic_memory_mcp, EXAMPLE_KB, tmp_path_factory.mktemp("basic-memory"))
