"""A basic-memory recipe run on the example KB, made once for the tests that read it: each of
basic-memory's programs takes 10-20 s on a CI machine, and its run is what the recipe test checks
against basic-memory's own command line and the pull-request test checks the base against (asked
for while that test's own run goes on in a process of its own)."""

from __future__ import annotations

import pytest

from tests.engines.runs import EXAMPLE_KB, EngineRun, basic_memory_mcp


@pytest.fixture(scope="session")
def basic_memory_on_the_example(tmp_path_factory: pytest.TempPathFactory) -> EngineRun:
    return basic_memory_mcp(EXAMPLE_KB, tmp_path_factory.mktemp("basic-memory"))
