"""`kb-eval compare --format markdown` rendered as GitHub renders a step summary, and photographed.

    python bench/compare_screenshot.py REPORT... [--out docs/screenshots/runs/compare]

Writes OUT.md (the Markdown), OUT.html and OUT.png, with bench/screenshots.py's renderer (cmark-gfm,
github-markdown-css, headless Chromium).
"""

from __future__ import annotations

import argparse
import io
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from screenshots import ROOT, github_css, page_height, screenshot, stable, to_html

from scanner.cli.main import main as kb_eval


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("reports", nargs="+")
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "screenshots" / "runs" / "compare")
    args = parser.parse_args()
    out, err = io.StringIO(), io.StringIO()
    if kb_eval(["compare", *args.reports, "--format", "markdown"], out, err) != 0:
        sys.stderr.write(err.getvalue())
        return 2
    markdown = stable(out.getvalue())
    args.out.with_suffix(".md").write_text(markdown, encoding="utf-8")
    with tempfile.TemporaryDirectory() as work:
        html = args.out.with_suffix(".html")
        html.write_text(to_html(markdown, github_css(Path(work))), encoding="utf-8")
        screenshot(html, args.out.with_suffix(".png"), page_height(html))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
