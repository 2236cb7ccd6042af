"""One strict-JSON reader with one cap, for every JSON kb-eval did not write this run."""

from __future__ import annotations

import ast

import pytest

from scanner.foundation import strict_json
from scanner.foundation.strict_json import NotJson, loads_strict
from tests.conftest import REPO

TRUSTED_JSON_LOADS = {
    "scanner/report/document.py": "the schema shipped inside the package",
    "scanner/pipeline/beside.py": "the answer of kb-eval's own forked base evaluation",
    "scanner/retrievers/templates.py": "a body template from the settings, checked as a template",
    "scanner/action/event.py": "the runner's event payload (GITHUB_EVENT_PATH)",
    "scanner/corpus/parse_cache.py": "a cache entry, checked field by field after parsing",
}


def test_json_from_outside_is_parsed_only_by_the_strict_reader() -> None:
    callers = set()
    for path in (REPO / "scanner").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Attribute) and node.attr in {"loads", "load"} and \
                    isinstance(node.value, ast.Name) and node.value.id == "json":
                callers.add(path.relative_to(REPO).as_posix())
    assert callers - {"scanner/foundation/strict_json.py"} <= set(TRUSTED_JSON_LOADS)


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        (b"[NaN]", "NaN is not a JSON number"),
        (b"[1e400]", "out of range"),
        (b"[" * 100_000 + b"]" * 100_000, "nested too deeply"),
        (b'"\xff"', "not UTF-8"),
        (b"1" * 5000, "too many digits"),
        (b"{", "line 1"),
    ],
)
def test_every_way_to_be_wrong_is_one_exception(data: bytes, reason: str) -> None:
    with pytest.raises(NotJson, match=reason):
        loads_strict(data)


def test_the_container_cap_is_read_at_call_time(monkeypatch: pytest.MonkeyPatch) -> None:
    assert loads_strict(b"[{}, {}]") == [{}, {}]
    monkeypatch.setattr(strict_json, "MAX_JSON_CONTAINERS", 2)
    with pytest.raises(NotJson, match="more than 2 objects and arrays"):
        loads_strict(b"[{}, {}]")
