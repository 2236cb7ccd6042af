"""The JSON report is a superset of `kb-mcp eval --format json` wherever kb-mcp defines a key.

The reference is tests/fixtures/kbmcp/eval-report.json, written from kb-mcp's source (its
README names the commit and the structs), not from kb-eval's output. Every key path in it
must exist in kb-eval's report with a value of the same JSON type; where either side is null
(kb-mcp's optional values), the key must still be there.
"""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from scanner.cli.main import main
from scanner.foundation.strict_json import json_type

KBMCP = json.loads((Path(__file__).parents[1] / "fixtures" / "kbmcp" / "eval-report.json").read_text())




def key_paths(node: Any, path: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], str]]:
    """(path, type) of every value; an array contributes its first element as `[]`; the keys of
    a k map (`"1"`, `"5"`, `"10"`) are data, written as `<k>`."""
    yield path, json_type(node)
    if isinstance(node, dict):
        for key, value in node.items():
            yield from key_paths(value, (*path, "<k>" if key.isdigit() else key))
    elif isinstance(node, list) and node:
        yield from key_paths(node[0], (*path, "[]"))


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    # A second run against a history: `previous` and `diff` are filled, as in the fixture.
    folder = tmp_path_factory.mktemp("kbmcp")
    argv = ["--kb-path", "tests/fixtures/redesign/kb", "--run", "tests/fixtures/redesign/run.jsonl",
            "--history", str(folder / "h.json"), "--output", str(folder / "r.json")]
    for _ in range(2):
        assert main(argv, stdout=io.StringIO(), stderr=io.StringIO()) == 0
    return json.loads((folder / "r.json").read_text())


def test_every_kb_mcp_key_is_in_the_report_with_kb_mcp_s_type(report: dict[str, Any]) -> None:
    ours = dict(key_paths(report))
    missing, mistyped = [], []
    for path, kind in key_paths(KBMCP):
        if path not in ours:
            missing.append("/".join(path))
        elif "null" not in (kind, ours[path]) and kind != ours[path]:
            mistyped.append(f"{'/'.join(path)}: kb-mcp {kind}, kb-eval {ours[path]}")
    assert missing == [] and mistyped == []


def test_the_comparison_walks_the_fixture_deeply() -> None:
    # Guards the test above against an empty or shallow fixture.
    paths = {"/".join(p) for p, _ in key_paths(KBMCP)}
    assert {"per_query/[]/metrics/reciprocal_rank", "per_query/[]/top_k/[]/heading", "diff/mrr",
            "fingerprint/golden_hash", "findings/[]/quoted/[]/rank_in_top_k", "previous/per_query"} <= paths


def test_kb_mcp_s_nulls_are_nulls_here(report: dict[str, Any]) -> None:
    headings = [hit["heading"] for q in report["per_query"] for hit in q["top_k"]]
    assert None in headings and "" not in headings  # a hit with no heading
    assert report["fingerprint"]["reranker"] is None


def test_a_type_mismatch_is_caught() -> None:
    # The near miss: the same shape with `reciprocal_rank` as a string must not pass.
    broken = json.loads(json.dumps(KBMCP))
    broken["per_query"][0]["metrics"]["reciprocal_rank"] = "1.0"
    assert dict(key_paths(broken))[("per_query", "[]", "metrics", "reciprocal_rank")] == "string"
