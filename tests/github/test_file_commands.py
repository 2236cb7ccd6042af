"""GITHUB_OUTPUT, GITHUB_STEP_SUMMARY, the annotation budget and Markdown escaping."""

from __future__ import annotations

import html as htmllib
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from markdown_it import MarkdownIt

from scanner.github.workflow import (
    STEP_SUMMARY_LIMIT_BYTES,
    Annotation,
    AnnotationKind,
    AnnotationProperties,
    append_output,
    append_summary,
    bound_summary,
    budget_annotations,
    escape_markdown_text,
    format_output,
    new_delimiter,
)
from tests.support.runner_log import FileCommandError, parse_env_file

# --- GITHUB_OUTPUT -------------------------------------------------------------------


def test_outputs_round_trip_through_the_runners_reader(tmp_path: Path) -> None:
    path = tmp_path / "output"
    values = {
        "report": "/github/workspace/kb-eval-report.json",
        "multi": "line one\nline two\n",
        "tricky": "a=b<<c\r\n=== \n",
        "empty": "",
        "unicode": "ünï 🚀",
    }
    for name, value in values.items():
        append_output(path, name, value)
    assert parse_env_file(path.read_bytes().decode("utf-8")) == list(values.items())


@settings(max_examples=200, deadline=None)
@given(st.text())
def test_any_value_round_trips(value: str) -> None:
    block = format_output("value", value, new_delimiter())
    assert parse_env_file(block) == [("value", value)]


def test_delimiter_is_toolkits_form_and_fresh_each_time() -> None:
    first, second = new_delimiter(), new_delimiter()
    assert first.startswith("ghadelimiter_") and len(first) == len("ghadelimiter_") + 36
    assert first != second


def test_a_value_containing_the_delimiter_is_refused() -> None:
    delimiter = "ghadelimiter_fixed"
    with pytest.raises(ValueError):
        format_output("x", f"before\n{delimiter}\nforged=1", delimiter)
    with pytest.raises(ValueError):
        format_output(f"x{delimiter}", "v", delimiter)


def test_what_the_refusal_prevents_is_a_forged_output() -> None:
    # The near miss: written anyway, the runner would read a second output.
    delimiter = "ghadelimiter_fixed"
    raw = f"x<<{delimiter}\nbefore\n{delimiter}\nforged=1\n{delimiter}\n"
    with pytest.raises(FileCommandError):
        parse_env_file(raw)
    assert ("forged", "1") in parse_env_file(f"x<<{delimiter}\nbefore\n{delimiter}\nforged=1\n")


@pytest.mark.parametrize("name", ["", "a=b", "a<<b", "a\nb"])
def test_output_names_the_runner_would_misread_are_refused(name: str) -> None:
    with pytest.raises(ValueError):
        format_output(name, "v", new_delimiter())


def test_append_output_appends_and_keeps_crlf_bytes(tmp_path: Path) -> None:
    path = tmp_path / "output"
    path.write_text("earlier=1\n", encoding="utf-8")
    append_output(path, "v", "a\r\nb")
    assert b"a\r\nb" in path.read_bytes()  # no newline translation
    assert parse_env_file(path.read_bytes().decode("utf-8")) == [
        ("earlier", "1"),
        ("v", "a\r\nb"),
    ]


# --- GITHUB_STEP_SUMMARY --------------------------------------------------------------


def test_a_summary_under_the_budget_is_written_unchanged(tmp_path: Path) -> None:
    path = tmp_path / "summary"
    append_summary(path, "# kb-eval\n\n| a | b |\n")
    append_summary(path, "more\n")
    assert path.read_text(encoding="utf-8") == "# kb-eval\n\n| a | b |\nmore\n"


def test_an_oversized_summary_is_cut_at_a_line_end_with_a_visible_note(
    tmp_path: Path,
) -> None:
    path = tmp_path / "summary"
    row = "| é | query text that is long enough |\n"
    markdown = row * (2 * STEP_SUMMARY_LIMIT_BYTES // len(row.encode()))
    append_summary(path, markdown)
    data = path.read_bytes()
    assert len(data) < STEP_SUMMARY_LIMIT_BYTES
    text = data.decode("utf-8")
    assert "Summary truncated" in text
    head = text.split("\n\n> [!WARNING]")[0]
    assert head.endswith(row)  # whole rows only
    assert markdown.startswith(head)


def test_what_the_file_already_holds_counts_against_the_limit(tmp_path: Path) -> None:
    path = tmp_path / "summary"
    path.write_bytes(b"x" * (STEP_SUMMARY_LIMIT_BYTES - 10_000))
    append_summary(path, "line\n" * 5_000)  # 25 kB: fits alone, not on top
    assert path.stat().st_size < STEP_SUMMARY_LIMIT_BYTES
    assert "Summary truncated" in path.read_text(encoding="utf-8")


@settings(max_examples=100, deadline=None)
@given(
    st.text(),
    st.integers(min_value=0, max_value=400),
)
def test_bound_summary_never_exceeds_a_workable_budget(markdown: str, budget: int) -> None:
    result = bound_summary(markdown, budget + 300)
    assert len(result.encode("utf-8")) <= budget + 300
    if len(markdown.encode("utf-8")) <= budget + 300:
        assert result == markdown


# --- annotation budget -------------------------------------------------------------------


def warnings(count: int, kind: AnnotationKind = AnnotationKind.WARNING) -> list[Annotation]:
    return [Annotation(kind, f"{kind.value} {index}") for index in range(count)]


def test_annotations_within_the_budget_pass_unchanged_with_no_notice() -> None:
    annotations = warnings(10) + warnings(10, AnnotationKind.ERROR) + warnings(10, AnnotationKind.NOTICE)
    assert budget_annotations(annotations, 10) == annotations


def test_over_budget_keeps_the_first_of_each_kind_and_adds_one_counting_notice() -> None:
    annotations = warnings(13) + warnings(2, AnnotationKind.ERROR)
    kept = budget_annotations(annotations, 10)
    assert kept[:-1] == annotations[:10] + annotations[13:]
    notice = kept[-1]
    assert notice.kind is AnnotationKind.NOTICE
    assert "3 more annotations left out (3 warnings)" in notice.message
    assert "step summary and the JSON report" in notice.message


def test_the_left_out_notice_fits_inside_the_notice_budget() -> None:
    kept = budget_annotations(warnings(11) + warnings(10, AnnotationKind.NOTICE), 10)
    notices = [annotation for annotation in kept if annotation.kind is AnnotationKind.NOTICE]
    assert len(notices) == 10  # 9 ordinary + the counting one, never 11
    assert "2 more annotations left out (1 warning, 1 notice)" in notices[-1].message


def test_zero_means_no_annotations_at_all() -> None:
    assert budget_annotations(warnings(3), 0) == []


def test_annotation_properties_survive_the_budget() -> None:
    located = Annotation(AnnotationKind.WARNING, "m", AnnotationProperties(file="a.md", line=3))
    assert budget_annotations([located], 1) == [located]


# --- Markdown for PR-controlled text --------------------------------------------------------

MARKDOWN = MarkdownIt("commonmark").enable("table")  # html on, as on GitHub before its sanitizer


def rendered(markdown: str) -> str:
    return str(MARKDOWN.render(markdown))


@pytest.mark.parametrize(
    "hostile",
    [
        "<script>alert(1)</script>",
        "<img src=x onerror=alert(1)>",
        "[click](https://evil.example)",
        "![img](https://evil.example/x.png)",
        "**bold** _em_ `code`",
        "# heading",
        "a | b | c",
        "line one\nline two",
        "&amp; &lt;",
    ],
)
def test_pr_text_renders_as_its_literal_characters_in_a_table_cell(
    hostile: str,
) -> None:
    table = f"| query | next |\n| --- | --- |\n| {escape_markdown_text(hostile)} | ok |\n"
    html = rendered(table)
    assert "<script" not in html and "<img" not in html and "<a " not in html
    assert "<strong>" not in html and "<em>" not in html and "<code>" not in html and "<h1>" not in html
    assert "<td>ok</td>" in html  # pipes and newlines did not shift the cells or end the row
    cell = html.split("<td>")[1].split("</td>")[0]
    assert htmllib.unescape(cell.replace("<br>", "\n")).replace("\u200b", "") == hostile


def test_unescaped_text_would_have_rendered_markup() -> None:
    # The near miss for the test above: raw text does become HTML.
    html = rendered("| query | next |\n| --- | --- |\n| [click](https://evil.example) a | b | ok |\n")
    assert "<a " in html and "<td>ok</td>" not in html


def test_mentions_are_broken_so_a_comment_notifies_nobody() -> None:
    assert "@\u200borg/team" in escape_markdown_text("@org/team")
