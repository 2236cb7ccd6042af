"""How many headings of a real MkDocs docs folder kb-eval reads as the site shows them.

    python bench/mkdocs_headings.py DOCS_FOLDER

Each heading kb-eval's parser finds is rendered by Python-Markdown with `attr_list` and `toc`
(what MkDocs runs); a heading counts as read right when kb-eval's forms of it hold both what the
page shows and the table of contents' name. Headings that are only an HTML comment (a build hook
fills them in) are counted apart: no library shows what the hook will write. Needs the test extra
(`pip install -e '.[test]'`, for Markdown).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from scanner.corpus.markdown import parse_document
from scanner.golden.headings import heading_forms
from tests.golden.test_mkdocs_headings import rendered


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("docs", type=Path, help="the folder of Markdown files (a MkDocs site's docs/)")
    parser.add_argument("--show", type=int, default=5, help="print this many headings read wrong")
    args = parser.parse_args()
    total = marked = wrong = comment_only = 0
    shown = 0
    for path in sorted(args.docs.rglob("*.md")):
        document = parse_document(path.read_text(encoding="utf-8"), path.stem)
        for section in document.sections:
            heading = section.heading
            if not heading or section.level == 0:
                continue
            total += 1
            page, toc = rendered(heading)
            forms = heading_forms(heading)
            if forms[0] != " ".join(heading.split()).casefold():
                marked += 1
            if not page and "<!--" in heading:
                comment_only += 1
                continue
            if page not in forms or toc not in forms:
                wrong += 1
                if shown < args.show:
                    shown += 1
                    print(f"  {path.relative_to(args.docs)}: {heading!r} -> {forms} (page {page!r}, toc {toc!r})")
    print(
        f"{total} headings; {marked} whose source differs from what kb-eval compares; "
        f"{wrong} read unlike the page or its table of contents; {comment_only} only a comment"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
