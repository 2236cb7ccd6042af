"""The Markdown chunker: sections, headings, fences, frontmatter, line spans."""

from __future__ import annotations

import re
import textwrap

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from markdown_it import MarkdownIt

from scanner.corpus import markdown
from scanner.corpus.markdown import parse_document, split_lines
from scanner.corpus.reader import build_document
from scanner.foundation.diagnostics import Diagnostics
from tests.support.counting import CallCounter, steps


def doc(text: str):  # type: ignore[no-untyped-def]
    return parse_document(textwrap.dedent(text).lstrip("\n"), "fallback")


def test_atx_headings_split_sections_and_leave_the_body_without_the_heading_line() -> None:
    parsed = doc(
        """
        intro
        # One
        body one
        ## Two ##
        body two
        """
    )
    assert [(s.heading, s.level, s.body) for s in parsed.sections] == [
        ("", 0, "intro"),
        ("One", 1, "body one"),
        ("Two", 2, "body two"),
    ]
    assert [(s.start_line, s.end_line, s.heading_line, s.body_start_line) for s in parsed.sections] == [
        (1, 1, None, 1),
        (2, 3, 2, 3),
        (4, 5, 4, 5),
    ]


def test_a_hash_without_a_space_or_indented_four_spaces_is_not_a_heading() -> None:
    parsed = doc(
        """
        #hashtag
            # indented code
        # C#
        """
    )
    assert [s.heading for s in parsed.sections] == ["", "C#"]


def test_setext_headings_are_headings_and_a_lone_rule_is_not() -> None:
    parsed = doc(
        """
        Title
        =====
        text

        ---
        Sub
        ---
        sub text
        """
    )
    assert [(s.heading, s.level) for s in parsed.sections] == [("Title", 1), ("Sub", 2)]
    assert parsed.sections[0].body == "text\n\n---"
    assert parsed.sections[1].heading_line == 6 and parsed.sections[1].body_start_line == 8


def test_headings_inside_fenced_code_do_not_split_and_an_unterminated_fence_runs_to_the_end() -> None:
    parsed = doc(
        """
        # Real
        ```bash
        # not a heading
        ```
        ~~~
        # still code
        """
    )
    assert [s.heading for s in parsed.sections] == ["Real"]
    assert "# not a heading" in parsed.sections[0].body
    assert "# still code" in parsed.sections[0].body


def test_ancestors_form_the_breadcrumb_after_the_title() -> None:
    document = build_document(
        "guides/deploy.md",
        "---\ntitle: Deploy guide\n---\n# Rollback\n## Database\nx\n# Other\ny\n",
        Diagnostics(),
    )
    assert [(c.heading, c.breadcrumb) for c in document.chunks] == [
        ("Rollback", "Deploy guide"),
        ("Database", "Deploy guide > Rollback"),
        ("Other", "Deploy guide"),
    ]
    assert document.chunks[1].breadcrumb_lines == (2, 4)


def test_frontmatter_title_is_used_and_removed_from_the_body() -> None:
    document = build_document("a/b.md", "---\ntags: [x]\ntitle: My Title\n---\nhello\n", Diagnostics())
    assert document.title == "My Title" and document.title_line == 3
    assert document.chunks[0].body == "hello"
    assert "title" not in document.chunks[0].body


def test_without_a_title_the_file_name_without_extension_is_the_title() -> None:
    document = build_document("a/notes.on.x.md", "hello\n", Diagnostics())
    assert document.title == "notes.on.x" and document.title_line == 1


def test_broken_frontmatter_is_a_warning_with_file_and_line_and_the_document_is_still_indexed() -> None:
    diagnostics = Diagnostics()
    document = build_document("x.md", "---\ntitle: ok\nbad: [unclosed\n---\nbody text\n", diagnostics)
    assert document.title == "x"
    assert document.chunks[0].body == "body text"
    [warning] = diagnostics.items
    assert warning.code == "frontmatter-invalid" and warning.file == "x.md" and warning.line in (3, 4)


def test_unterminated_frontmatter_is_indexed_as_body_with_a_warning() -> None:
    diagnostics = Diagnostics()
    document = build_document("x.md", "---\ntitle: never closed\nbody\n", diagnostics)
    assert "never closed" in document.chunks[0].body
    assert [(w.code, w.line) for w in diagnostics.items] == [("frontmatter-invalid", 1)]


def test_a_frontmatter_billion_laughs_costs_nothing_and_the_title_falls_back() -> None:
    levels = ["a0: &a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol, lol]"]
    levels += [f"a{n}: &a{n} [" + ", ".join([f"*a{n - 1}"] * 10) + "]" for n in range(1, 10)]
    bomb = "---\n" + "\n".join(levels) + "\ntitle: *a9\n---\nbody\n"
    # The same lines with every alias a plain word: expanded, the bomb would be 10**10 strings.
    plain = "---\n" + "\n".join(re.sub(r"\*a[0-9]", "lol", re.sub(r"&a[0-9] ", "", level)) for level in levels) + "\ntitle: lol\n---\nbody\n"
    assert steps(lambda: build_document("bomb.md", bomb, Diagnostics())) < 2 * steps(lambda: build_document("p.md", plain, Diagnostics()))
    document = build_document("bomb.md", bomb, Diagnostics())
    assert document.title == "bomb" and document.chunks[0].body == "body"


@pytest.mark.parametrize(("block", "checked"), [
    ('title: "Plain"\ntags: [ml, reference]', False),
    ("title: x\nnest: " + "[" * 24 + "]" * 24, False),  # 24 brackets and 2 colons: 26 openers
    ("title: x\nnest: " + "[" * 49 + "]" * 49, True),  # 51 openers: could be 51 deep
    ("title: x\n" + "- " * 50 + "y", True),  # 1 colon and 50 entries
    ("title: &t x\nother: *t", True),  # the composer could refuse an alias before a later syntax error
    ("title: x\n--- y", True),
    ("title: Wait...", True),
])
def test_the_frontmatter_nesting_check_parses_only_a_block_that_could_nest_past_the_limit_or_fail_to_compose(
    monkeypatch: pytest.MonkeyPatch, block: str, checked: bool
) -> None:
    counter = CallCounter(monkeypatch, markdown, "refuse_deep_nesting")
    parse_document(f"---\n{block}\n---\nbody\n", "fallback")
    assert counter.calls == (1 if checked else 0)


@pytest.mark.parametrize("block", [
    "title: ok\nbad: [unclosed",
    "title: *missing\nbad: [unclosed",
    "a: &x 1\nb: &x 2\nc: {",
    "title: x\n...\nb: [",
    "title: [a, {b: c}]\nnest: " + "[" * 30 + "]" * 30,
    "- - - - x",
    "title: 'unclosed",
])
def test_skipping_the_nesting_check_leaves_the_title_and_the_warning_as_the_check_gives_them(
    monkeypatch: pytest.MonkeyPatch, block: str
) -> None:
    text = f"---\n{block}\n---\nbody\n"
    skipped = parse_document(text, "fallback")
    monkeypatch.setattr(markdown, "_may_nest_deeply", lambda _: True)
    assert parse_document(text, "fallback") == skipped


def test_a_line_is_tried_only_against_the_constructs_its_first_character_can_open(monkeypatch: pytest.MonkeyPatch) -> None:
    fences = CallCounter(monkeypatch, markdown, "fence_opening")
    headings = CallCounter(monkeypatch, markdown, "_atx_heading")
    parsed = doc("# Title\n" + "- item\n1. step\n  > quote\n    # indented code\n" * 50 + "  ```\n# not a heading\n```\n")
    assert (fences.calls, headings.calls) == (1, 1)  # the `# Title` line, then the opening fence
    assert [section.heading for section in parsed.sections] == ["Title"]
    assert "# not a heading" in parsed.sections[0].body


def test_crlf_and_lone_cr_line_endings_count_lines_like_an_editor() -> None:
    parsed = parse_document("# A\r\nx\r# B\ny\n", "t")
    assert [(s.heading, s.heading_line, s.body) for s in parsed.sections] == [("A", 1, "x"), ("B", 3, "y")]


def test_a_byte_order_mark_does_not_hide_the_first_heading() -> None:
    parsed = parse_document("\ufeff# Title\nbody", "t")
    assert parsed.sections[0].heading == "Title"


def test_only_cr_lf_and_crlf_end_lines() -> None:
    assert split_lines("a\x0bb\u2028c\nd") == ["a\x0bb\u2028c", "d"]
    assert split_lines("a\r\nb\rc\n\nd\r") == ["a", "b", "c", "", "d"]


@given(st.text(alphabet="ab \r\n\x0b\u2028", max_size=30))
def test_lines_are_cut_the_same_with_or_without_a_carriage_return_in_the_text(text: str) -> None:
    # What an editor counts: \r\n, \r, \n; a final break ends the last line.
    expected = re.split(r"\r\n|\r|\n", text)
    if len(expected) > 1 and expected[-1] == "":
        expected.pop()
    assert split_lines(text) == expected


# --- Differential: headings agree with markdown-it-py's CommonMark parse --------------------

_LINES = st.sampled_from(
    [
        "# Heading one", "## Two ##", "### three", "#nospace", "    # indented", "   # three spaces",
        "Para text", "more text", "", "", "===", "---", "- - -", "***", "```", "```py", "~~~", "````",
        "- item", "1. item", "> quote", "\t# tab", "#", "# #", "####### seven", "Setext?", "  ===  ",
    ]
)


def _markdown_it_headings(text: str) -> list[tuple[int, str]]:
    tokens = MarkdownIt("commonmark").parse(text)
    headings = []
    for n, token in enumerate(tokens):
        if token.type == "heading_open" and token.level == 0:
            content = " ".join(line.strip() for line in tokens[n + 1].content.split("\n"))
            headings.append((token.map[0] + 1, content))
    return headings


@settings(max_examples=400, deadline=None)
@given(st.lists(_LINES, max_size=14))
def test_top_level_headings_match_markdown_it_py(lines: list[str]) -> None:
    # Lists and block quotes can hold headings in CommonMark; this tool only splits at top-level
    # ones, so the generator keeps such lines from preceding a heading-like line ambiguously.
    assume(not lines or lines[0] != "---")  # that is frontmatter here, a thematic break to CommonMark
    text = "\n".join(lines) + "\n"
    ours = [(s.heading_line, s.heading) for s in parse_document(text, "t").sections if s.heading_line is not None]
    theirs = _markdown_it_headings(text)
    if any(line.startswith(("- ", "1. ", "> ")) for line in lines):
        # Container blocks: only require that we never invent a heading markdown-it lacks at top level
        # outside a container's lazy continuation. Compare the headings both agree are top level.
        assert set(ours) >= {h for h in theirs if not _inside_container(lines, h[0])}
        return
    assert ours == theirs


def _inside_container(lines: list[str], line_number: int) -> bool:
    return any(line.startswith(("- ", "1. ", "> ")) for line in lines[: line_number - 1])


@settings(max_examples=300, deadline=None)
@given(st.lists(_LINES, max_size=20), st.booleans())
def test_every_line_is_in_exactly_one_place(lines: list[str], frontmatter: bool) -> None:
    text = ("---\ntitle: T\n---\n" if frontmatter else "") + "\n".join(lines)
    parsed = parse_document(text, "t")
    total = len(split_lines(text))
    owner = [0] * (total + 1)
    if parsed.frontmatter is not None:
        for n in range(parsed.frontmatter.first_line, parsed.frontmatter.last_line + 1):
            owner[n] += 1
    for section in parsed.sections:
        assert section.start_line <= section.body_start_line <= section.end_line + 1
        for n in range(section.start_line, section.end_line + 1):
            owner[n] += 1
        body_lines = section.body.split("\n") if section.body_start_line <= section.end_line else []
        assert body_lines == split_lines(text)[section.body_start_line - 1 : section.end_line]
    all_lines = split_lines(text)
    for n in range(1, total + 1):
        # A line outside every section is allowed only when it is blank text before the first heading.
        assert owner[n] == 1 or (owner[n] == 0 and not all_lines[n - 1].strip()), (n, owner[n], text)
