"""The default gate on a real MkDocs site: one event passes, a dozen lost answers fail.

    python bench/mkdocs_gate.py DOCS_FOLDER     # mkdocs-material's docs/ (96 pages)

36 questions written in other words than the pages' (below), each labelled with its page. Three
pull requests against the same first run, through the CLI with `--fail-on-regression`:
- a FAQ page that answers two of them better takes their rank 1 (the default gate must pass; the
  threshold alone, `--alpha off`, failed it);
- a dozen labelled pages removed (the gate must fail).
Prints each exit code and the gate's reason. The docs folder is copied, never changed.
"""

from __future__ import annotations

import argparse
import io
import json
import shutil
import sys
import tempfile
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from scanner.cli.main import main as kb_eval

QUESTIONS = {
 "setup/adding-a-comment-system.md": "let readers leave comments under a page",
 "setup/adding-a-git-repository.md": "show a link to the source repository in the header",
 "setup/building-an-optimized-site.md": "make the built site smaller and faster to load",
 "setup/building-for-offline-usage.md": "read the documentation without an internet connection",
 "setup/changing-the-colors.md": "switch the primary colour and offer a dark mode",
 "setup/changing-the-fonts.md": "use a different typeface for the text and the code",
 "setup/changing-the-language.md": "translate the interface into German",
 "setup/changing-the-logo-and-icons.md": "replace the logo and the favicon",
 "setup/ensuring-data-privacy.md": "show a cookie consent banner for GDPR",
 "setup/setting-up-a-blog.md": "write blog posts with authors and categories",
 "setup/setting-up-navigation.md": "put the top level sections in tabs and collapse the sidebar",
 "setup/setting-up-site-analytics.md": "track page views with Google Analytics",
 "setup/setting-up-site-search.md": "configure the search box and highlight the matches",
 "setup/setting-up-social-cards.md": "generate preview images for links shared on social media",
 "setup/setting-up-tags.md": "label pages with tags and list them on an index",
 "setup/setting-up-the-footer.md": "add social links and a copyright notice at the bottom",
 "setup/setting-up-the-header.md": "hide the header when scrolling and add an announcement bar",
 "setup/setting-up-versioning.md": "publish several versions of the docs with mike",
 "reference/admonitions.md": "draw a collapsible warning box around a paragraph",
 "reference/annotations.md": "attach numbered markers with explanations to a code line",
 "reference/buttons.md": "turn a link into a button",
 "reference/code-blocks.md": "highlight specific lines in a code snippet and add a title",
 "reference/content-tabs.md": "show alternative instructions side by side in tabs",
 "reference/data-tables.md": "make a table sortable",
 "reference/diagrams.md": "draw a flowchart with mermaid",
 "reference/footnotes.md": "add a reference note at the end of the page",
 "reference/formatting.md": "mark inserted and deleted text and keyboard keys",
 "reference/grids.md": "arrange cards in columns",
 "reference/icons-emojis.md": "use an emoji or an icon inside the text",
 "reference/images.md": "align an image to the left and add a caption",
 "reference/lists.md": "write a task list with checkboxes",
 "reference/math.md": "render LaTeX equations with MathJax",
 "reference/tooltips.md": "show a hint when hovering over an abbreviation",
 "getting-started.md": "install the theme with pip or docker",
 "creating-your-site.md": "create a new project and preview it locally",
 "publishing-your-site.md": "deploy the site to GitHub Pages with an action",
}
"""Page -> a question a reader would ask, in other words than the page's."""

FAQ = """# Frequently asked questions

## How do I make a table sortable?

Add the tablesort script to `extra_javascript` and every data table becomes sortable: click a
column header to sort the table by it.

## How do I draw a flowchart with mermaid?

Write a `mermaid` code block with `graph LR` and the flowchart is drawn when the page loads;
flowchart, sequence and class diagrams work out of the box with mermaid.
"""
"""A good new page: it answers `data-tables` and `diagrams` better than their labelled pages."""

REMOVED = [
    "setup/adding-a-comment-system.md", "setup/changing-the-colors.md", "setup/changing-the-logo-and-icons.md",
    "setup/ensuring-data-privacy.md", "setup/setting-up-a-blog.md", "setup/setting-up-navigation.md",
    "setup/setting-up-site-analytics.md", "setup/setting-up-site-search.md", "setup/setting-up-the-footer.md",
    "reference/buttons.md", "reference/grids.md", "reference/math.md",
]
"""Twelve labelled pages that answer their question first."""


def run(kb: Path, history: Path, *extra: str) -> tuple[int, dict[str, object]]:
    out = io.StringIO()
    code = kb_eval(["--kb-path", str(kb), "--history", str(history), "--format", "json", *extra], out, io.StringIO())
    return code, json.loads(out.getvalue())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("docs", type=Path)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as work:
        base = Path(work) / "base"
        shutil.copytree(args.docs, base)
        queries = [{"id": Path(p).stem, "query": q, "expected": [p]} for p, q in QUESTIONS.items()]
        (base / ".kb-eval.yml").write_text(yaml.safe_dump({"queries": queries}, sort_keys=False), encoding="utf-8")
        history = Path(work) / "history.json"
        run(base, history)
        cases = {"useful new page": ("faq", ()), "useful new page, --alpha off": ("faq", ("--alpha", "off")),
                 "a dozen pages removed": ("removed", ())}
        for name, (change, extra) in cases.items():
            kb = Path(work) / name.replace(" ", "-").replace(",", "")
            shutil.copytree(base, kb)
            if change == "faq":
                (kb / "faq.md").write_text(FAQ, encoding="utf-8")
            else:
                for path in REMOVED:
                    (kb / path).unlink()
            copy = Path(work) / f"{kb.name}.json"
            shutil.copy(history, copy)
            code, report = run(kb, copy, "--fail-on-regression", *extra)
            gate = report["gate"]
            assert isinstance(gate, dict)
            print(f"{name}: exit {code}; {str(gate['reason'])[:220]}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
