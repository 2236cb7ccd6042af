"""MkDocs headings compare as the site shows them, checked against Python-Markdown itself.

MkDocs renders with Python-Markdown; its `attr_list` extension takes `{ #id .class key="value" }`
off the end of a heading, and `toc` names the heading in the table of contents by its
`data-toc-label` when there is one. Each heading below is rendered by the real library, and what
the page shows (the heading's text) and what the table of contents shows (the toc token's name)
must both be forms kb-eval compares the heading in.
"""

from __future__ import annotations

import html
import html.parser

import markdown
import pytest

from scanner.evaluation.records import Hit
from scanner.golden.file import ExpectedEntry
from scanner.golden.headings import closest, heading_forms, reader_heading, split_attribute_list
from scanner.golden.labels import SectionInfo
from scanner.metrics.measures import score_query
from tests.golden.test_headings import _golden
from tests.support.matching import hit_matches

HEADINGS = [
    'With pip { #with-pip data-toc-label="pip" }',
    'Overriding blocks <small>recommended</small> { #overriding-blocks data-toc-label="Overriding blocks" }',
    "Context <small>optional</small> { #context }",
    "Changes to `*.html` files { data-search-exclude }",
    "Closing hashes ## { #closing }",
    "Leftmost that opens {} then {: .wide }",
    "Setup {#setup .wide lang=en}",
    "Single quotes { data-toc-label='Quoted' }",
    "Unparsed brace { #a } b }",
    "A code span `{#not-attributes}`",
    "Braces { in the middle } and text after",
    "No space before{#glued}",
    "Install <span class=\"badge\">new</span> today",
    "API <!-- a note for writers --> reference",
    "Plain words only",
    "**Strong** and `code` { #mixed }",
]


class _Text(html.parser.HTMLParser):
    """The text a browser shows of an HTML fragment: comments and tags are not shown."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []

    def handle_data(self, data: str) -> None:
        self.parts.append(data)


def as_compared(text: str) -> str:
    return " ".join(text.split()).casefold()


def rendered(heading: str) -> tuple[str, str]:
    """(the page's heading text, its table-of-contents name) as Python-Markdown renders `## heading`."""
    md = markdown.Markdown(extensions=["attr_list", "toc"])
    page = md.convert("## " + heading)
    inner = page[page.index(">") + 1:page.rindex("</h2>")]
    parser = _Text()
    parser.feed(inner)
    [token] = md.toc_tokens  # type: ignore[attr-defined]
    return as_compared("".join(parser.parts)), as_compared(html.unescape(token["name"]))


@pytest.mark.parametrize("heading", HEADINGS)
def test_a_heading_reads_as_python_markdown_shows_it_on_the_page_and_in_the_table_of_contents(heading: str) -> None:
    page, toc = rendered(heading)
    forms = heading_forms(heading)
    assert forms[0] == reader_heading(heading) == page, (forms, page)
    assert toc in forms, (forms, toc)


def test_the_cases_hold_attribute_lists_that_python_markdown_takes_and_leaves() -> None:
    # Guard: the list is not all plain text; some lists are taken off, some are left as text.
    taken = [h for h in HEADINGS if split_attribute_list(h)[1] is not None]
    left = [h for h in HEADINGS if "{" in h and split_attribute_list(h)[1] is None]
    assert len(taken) >= 6 and len(left) >= 3
    assert {rendered(h)[0] for h in left} == {reader_heading(h) for h in left}
    assert all("{" in rendered(h)[0] for h in left)


def test_a_heading_that_is_only_a_comment_is_named_by_the_comment() -> None:
    # Python-Markdown shows nothing (a build hook fills the heading in, which kb-eval cannot run):
    # the comment's text and its last word name it, rather than an empty heading every such one shares.
    assert rendered("<!-- md:setting config.cache_dir -->")[0] == ""
    assert heading_forms("<!-- md:setting config.cache_dir -->") == ("md:setting config.cache_dir", "config.cache_dir")
    assert heading_forms("<!-- md:option a -->") != heading_forms("<!-- md:option b -->")


def test_a_label_written_as_the_site_shows_a_heading_matches_its_section() -> None:
    source = 'Overriding blocks <small>recommended</small> { #overriding-blocks data-toc-label="Overriding blocks" }'
    hit = Hit(1, "customization.md", source, 1.0, ("Customization",))
    for label in ("Overriding blocks", "Overriding blocks recommended", "overriding blocks <small>recommended</small>"):
        assert hit_matches(hit, ExpectedEntry("customization.md", label, 1)), label
        assert score_query([hit], [ExpectedEntry("customization.md", label, 1)], (1,)).recall_at_k[1] == 1.0
    # The near misses: another heading's words, or the attribute list's own text, match nothing.
    for label in ("Overriding", "overriding-blocks", "recommended"):
        assert not hit_matches(hit, ExpectedEntry("customization.md", label, 1)), label
    nested = Hit(1, "customization.md", "Details", 1.0, ("Customization", source))
    parented = ExpectedEntry("customization.md", "Details", 1, parent="Overriding blocks")
    assert hit_matches(nested, parented)
    assert not hit_matches(nested, ExpectedEntry("customization.md", "Details", 1, parent="Customizing"))


def test_a_label_naming_a_heading_by_its_table_of_contents_label_raises_no_warning_and_a_typo_is_pointed_at_it() -> None:
    from scanner.golden.labels import check_headings

    document = [SectionInfo('With pip { #with-pip data-toc-label="pip" }', ()), SectionInfo("Other", ())]
    assert check_headings(_golden([ExpectedEntry("install.md", "pip", 1)]), {"install.md": document}) == []
    assert check_headings(_golden([ExpectedEntry("install.md", "with pip", 1)]), {"install.md": document}) == []
    [warning] = check_headings(_golden([ExpectedEntry("install.md", "With pipx", 1)]), {"install.md": document})
    assert "With pip { #with-pip" in warning.message
    assert closest("Overridng blocks", ["Intro", "Overriding blocks <small>recommended</small> { #o }"])[0].startswith(
        "Overriding blocks"
    )


def test_an_attribute_list_costs_its_length_once(monkeypatch: pytest.MonkeyPatch) -> None:
    # Leftmost-first like the library, but one pass: a heading of thousands of ` {` that cannot
    # open a list, or of items that never close, reads each character a bounded number of times.
    from scanner.golden import headings

    read: list[int] = []
    pattern = headings._ATTRIBUTE

    class Counting:
        def match(self, text: str, position: int) -> object:
            read.append(position)
            return pattern.match(text, position)

    monkeypatch.setattr(headings, "_ATTRIBUTE", Counting())
    for size in (1_000, 4_000):
        for hostile in ("x" + " {}" * size + " {#x}", "x" + ' {a="' * size + "}", "x" + " {" * size + "}"):
            read.clear()
            forms = heading_forms(hostile)
            assert len(read) <= len(hostile) + 2, (hostile[:20], len(read))  # one item per character at most
            assert forms[0] == rendered(hostile)[0] if size == 1_000 else forms
    # The near miss: an ordinary list is read item by item.
    read.clear()
    assert heading_forms('Setup { #s .wide data-toc-label="Set up" }') == ("setup", "set up")
    assert 0 < len(read) <= 7
