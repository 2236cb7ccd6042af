"""Every relative link in the README, the CHANGELOG and docs/ points at a file that exists, and
every `#fragment` at a heading of its target, as GitHub renders them.

Links are read from cmark-gfm's HTML (the renderer GitHub uses), so links inside code blocks and
code spans are not links, as on GitHub. Heading anchors follow GitHub's rule: the heading's text,
lower-cased, with everything but letters, digits, spaces, hyphens and underscores removed, spaces
turned into hyphens, and `-1`, `-2`, ... added to repeats.
"""

from __future__ import annotations

import re
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit

import cmarkgfm
import pytest

ROOT = Path(__file__).resolve().parents[2]


def documents(root: Path = ROOT) -> list[Path]:
    return sorted([root / "README.md", root / "CHANGELOG.md", *(root / "docs").rglob("*.md")])


class _Page(HTMLParser):
    """The link targets and heading texts of one rendered page."""

    def __init__(self) -> None:
        super().__init__()
        self.targets: list[str] = []
        self.headings: list[str] = []
        self._heading: list[str] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = dict(attrs)
        if tag == "a" and values.get("href"):
            self.targets.append(values["href"] or "")
        elif tag == "img" and values.get("src"):
            self.targets.append(values["src"] or "")
        elif re.fullmatch(r"h[1-6]", tag):
            self._heading = []

    def handle_endtag(self, tag: str) -> None:
        if re.fullmatch(r"h[1-6]", tag) and self._heading is not None:
            self.headings.append("".join(self._heading))
            self._heading = None

    def handle_data(self, data: str) -> None:
        if self._heading is not None:
            self._heading.append(data)


def read_page(path: Path) -> _Page:
    page = _Page()
    page.feed(cmarkgfm.github_flavored_markdown_to_html(path.read_text(encoding="utf-8")))
    return page


def anchors(headings: list[str]) -> set[str]:
    found: set[str] = set()
    seen: dict[str, int] = {}
    for text in headings:
        slug = re.sub(r"[^\w\- ]", "", text.strip().lower()).replace(" ", "-")
        count = seen.get(slug, 0)
        seen[slug] = count + 1
        found.add(slug if count == 0 else f"{slug}-{count}")
    return found


def broken_links(path: Path) -> list[str]:
    """Each relative link of `path` whose file is missing, or whose fragment names no heading there."""
    broken = []
    for target in read_page(path).targets:
        parts = urlsplit(target)
        if parts.scheme or parts.netloc:
            continue  # another site: not checked here (no network in the tests)
        file = (path.parent / unquote(parts.path)).resolve() if parts.path else path
        if not file.exists():
            broken.append(f"{target}: no such file")
        elif (
            parts.fragment
            and file.suffix == ".md"
            and unquote(parts.fragment) not in anchors(read_page(file).headings)
        ):
            broken.append(f"{target}: no such heading in {file.name}")
    return broken


@pytest.mark.parametrize("path", documents(), ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_resolves(path: Path) -> None:
    assert broken_links(path) == []


def test_the_check_reads_the_links_it_should() -> None:
    # Guard against a vacuous pass: the README's links to docs/ and its own anchors are seen.
    targets = read_page(ROOT / "README.md").targets
    assert "docs/golden-file.md" in targets and "#command-line-flags-and-action-inputs" in targets
    assert "docs/screenshots/regressed.png" in targets


def test_a_missing_file_and_a_missing_heading_are_reported(tmp_path: Path) -> None:
    (tmp_path / "other.md").write_text("# Other page\n\n## A command (`--command`)\n", encoding="utf-8")
    page = tmp_path / "page.md"
    page.write_text(
        "# Page\n\n[fine](other.md#a-command---command) [fine too](#page) [site](https://example.com/x.md)\n"
        "[gone](missing.md) [no anchor](other.md#a-command) `[in code](missing-too.md)`\n",
        encoding="utf-8",
    )
    assert broken_links(page) == ["missing.md: no such file", "other.md#a-command: no such heading in other.md"]


def test_repeated_headings_get_numbered_anchors() -> None:
    assert anchors(["Inputs", "Inputs", "Étape 2: écrire"]) == {"inputs", "inputs-1", "étape-2-écrire"}
