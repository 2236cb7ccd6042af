"""The bench scripts run as `python bench/X.py`, which puts bench/ first on sys.path: a module
there named like a standard-library or installed module would replace it for every script (a
`bench/collections.py` once broke every `import collections` in the bench)."""

from __future__ import annotations

import importlib.metadata
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "bench"


def bench_modules() -> list[str]:
    return sorted(path.stem for path in BENCH.glob("*.py") if path.stem != "__init__")


def third_party_names() -> set[str]:
    """Top-level import names of every installed distribution, and the bench's own requirements
    (which may not be installed where the tests run)."""
    names = {name.casefold() for name in importlib.metadata.packages_distributions()}
    for line in (BENCH / "requirements.txt").read_text(encoding="utf-8").splitlines():
        requirement = line.split("#", 1)[0].split("==", 1)[0].strip()
        if requirement:
            names.update({requirement.casefold(), requirement.casefold().replace("-", "_")})
    return names


def test_the_check_sees_the_bench_modules() -> None:
    assert {"run", "public_collections", "quality_table"} <= set(bench_modules())


def test_no_bench_module_shadows_a_standard_library_module() -> None:
    shadowing = [name for name in bench_modules() if name in sys.stdlib_module_names]
    assert shadowing == [], f"bench modules named like standard-library modules: {shadowing}"


def test_no_bench_module_shadows_an_installed_or_required_module() -> None:
    known = third_party_names()
    shadowing = [name for name in bench_modules() if name.casefold() in known]
    assert shadowing == [], f"bench modules named like installed modules: {shadowing}"


def test_the_standard_library_check_catches_the_name_that_broke_the_bench() -> None:
    # The near miss: the old name is caught, its replacement is not.
    assert "collections" in sys.stdlib_module_names
    assert "public_collections" not in sys.stdlib_module_names
