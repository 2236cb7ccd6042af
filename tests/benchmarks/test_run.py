"""The benchmark harness end to end, on a tiny generated KB, with the systems that need no
benchmark-only dependency (kb-eval, SQLite FTS5 trigram, the naive scan)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench"
sys.path.insert(0, str(BENCH))

from quality import kb_eval_ndcg_at_k, ndcg_at_k


@pytest.mark.parametrize(
    ("systems", "repeat"),
    [
        # The quick subset runs each kind of system once: measured, cached, extrapolating scan.
        (["kb-eval", "kb-eval-cached", "naive-scan"], 1),
        pytest.param(["kb-eval", "kb-eval-cached", "fts5-trigram", "naive-scan"], 2, marks=pytest.mark.slow),
    ],
)
def test_the_harness_prints_a_table_and_writes_every_system_phase_and_quality(
    tmp_path: Path, systems: list[str], repeat: int
) -> None:
    out = tmp_path / "bench.json"
    result = subprocess.run(
        [sys.executable, str(BENCH / "run.py"), "--docs", "40", "--queries", "12", "--repeat", str(repeat),
         "--systems", ",".join(systems), "--workdir", str(tmp_path / "work"), "--json", str(out)],
        check=False, capture_output=True, text=True, timeout=240,
    )
    assert result.returncode == 0, result.stderr
    assert "Totals" in result.stdout and "kb-eval" in result.stdout
    data = json.loads(out.read_text(encoding="utf-8"))
    assert data["queries"] == 12 and data["repeat"] == repeat
    assert sorted(data["systems"]) == sorted(systems)
    assert data["machine"]["nproc"] >= 1
    kb_eval = data["systems"]["kb-eval"]
    assert set(kb_eval["phases_median"]) == {"walk_parse", "index", "search", "scan", "report"}
    assert set(kb_eval["rss_mib_after_phase_median"]) == {"walk_parse", "index", "search", "scan", "report"}
    assert len(kb_eval["total_seconds_runs"]) == repeat
    assert kb_eval["peak_rss_mib_median"] > 10
    assert 0 < kb_eval["ndcg_at_10"]["all"] <= 1
    assert data["systems"]["naive-scan"]["extra"]["extrapolated"] is False
    assert data["scan"]["naive_over_kb_eval"] > 0
    # the generated KB holds two notes quoting golden queries; kb-eval must report them
    assert kb_eval["extra"]["findings"] == 2
    # the parse cache was emptied before round 1 and filled by it; the cached run ranks the same
    assert any((tmp_path / "work" / "parse-cache").iterdir())
    assert data["systems"]["kb-eval-cached"]["ndcg_at_10"] == kb_eval["ndcg_at_10"]


def test_the_fallback_ndcg_agrees_with_kb_eval_metric_on_section_and_document_entries() -> None:
    expected = [("a.md", "Intro"), ("b.md", None)]
    rankings = [
        [("b.md", "x"), ("a.md", "Intro")],
        [("a.md", "intro"), ("c.md", "")],  # kb-eval compares headings case-insensitively
        [("b.md", "x"), ("b.md", "y")],  # a second chunk of a credited document earns nothing
        [],
    ]
    for ranking in rankings[:1] + rankings[2:]:
        assert ndcg_at_k(ranking, expected, 10) == kb_eval_ndcg_at_k(ranking, expected, 10)
    assert kb_eval_ndcg_at_k(rankings[1], expected, 10) > ndcg_at_k(rankings[1], expected, 10)
