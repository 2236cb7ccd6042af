"""The worst single files within the caps run under a 1 GiB address-space limit.

Each case is one of bench/peak_rss.py's, run as the CLI in a child process under RLIMIT_AS (via
prlimit), so a regression that needs gigabytes fails fast with MemoryError instead of swapping CI.
Before the caps, two of these inputs peaked at 2.7 GB and 12.8 GB.
"""

from __future__ import annotations

import importlib.util
import json
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
AS_LIMIT_BYTES = 1024 * 1024 * 1024
CLI = "from scanner.cli.main import run; run()"


def _bench_case(name: str) -> Callable[[Path], Path]:
    spec = importlib.util.spec_from_file_location("peak_rss", ROOT / "bench" / "peak_rss.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    case: Callable[[Path], Path] = module.CASES[name]
    return case


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("prlimit") is None, reason="needs prlimit (util-linux)")
@pytest.mark.parametrize(
    ("case", "warning"),
    [
        ("title_x_headings_114kb", "sections-capped"),
        ("empty_headings_under_cap", "sections-capped"),
        ("nested_title_headings_under_cap", None),
        ("line_under_cap", None),
        ("frontmatter_at_cap", None),
        ("fence_over_short_lines_under_cap", None),
        ("random_han_under_cap", None),
        ("random_hangul_under_cap", None),
        ("random_kana_under_cap", None),
        ("random_latin_under_cap", None),
        ("random_latin_han_kana_hangul_under_cap", None),
    ],
)
def test_the_worst_file_at_each_cap_runs_within_1_gib_of_address_space(
    tmp_path: Path, case: str, warning: str | None
) -> None:
    kb = _bench_case(case)(tmp_path)
    report = tmp_path / "report.json"
    result = subprocess.run(
        ["prlimit", f"--as={AS_LIMIT_BYTES}", sys.executable, "-c", CLI, "--kb-path", str(kb), "--no-history",
         "--format", "json", "--output", str(report)],
        check=False, cwd=ROOT, capture_output=True, text=True, timeout=600,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    codes = [w["code"] for w in json.loads(report.read_text())["warnings"]]
    assert (warning in codes) if warning else "sections-capped" not in codes
