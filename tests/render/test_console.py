"""stderr lines, and the one path every printed line takes (defused as the runner reads it)."""

from __future__ import annotations

import dataclasses
import io

from hypothesis import given
from hypothesis import strategies as st

from scanner.github.workflow import defuse_workflow_commands
from scanner.render.console import SafeStream, findings_warning, log_safe
from tests.support.run_records import run_with_a_finding
from tests.support.runner_log import parse_log

# Line breaks the runner splits at, and whitespace .NET's Trim() removes before `::`.
BREAKS = ["\n", "\r", "\r\n"]
DOTNET_WHITESPACE = [" ", "\t", "\u00a0", "\u2028", "\u2029", "\u3000", "\u1680", "\u0085", "\u000b", "\u000c"]


@given(st.lists(st.sampled_from(["::", "##[", "add-mask::x", "error::boom", "warning]y", *BREAKS,
                                 *DOTNET_WHITESPACE, "plain", "é", ":"]), max_size=30))
def test_no_text_through_the_output_path_is_a_workflow_command(pieces: list[str]) -> None:
    log = parse_log(log_safe("".join(pieces)))
    assert log.commands == []


def test_a_command_after_any_runner_whitespace_or_break_is_defused() -> None:
    for space in DOTNET_WHITESPACE:
        for brk in BREAKS:
            hostile = f"id{brk}{space}::add-mask::secret"
            assert [c.name for c in parse_log(hostile).commands] == ["add-mask"], repr(hostile)  # the attack is real
            assert parse_log(log_safe(hostile)).commands == [], repr(hostile)


def test_a_legacy_command_anywhere_in_a_line_is_defused() -> None:
    hostile = "query q1 ##[error]forged"
    assert parse_log(hostile).commands != []
    assert log_safe(hostile) == "query q1 #\\x23[error]forged"


def test_plain_lines_pass_unchanged() -> None:
    # The near miss: colons and hashes that are not commands are left alone.
    text = "kb-eval: warning: a.md:3: heading ## [draft] and a: b::c\n  x ::y\r\n"
    assert log_safe(text) == text
    assert defuse_workflow_commands("") == ""


def test_a_command_split_across_writes_is_still_seen_whole() -> None:
    out = io.StringIO()
    stream = SafeStream(out)
    stream.write("one\n:")
    stream.write(":add-mask::x\n")
    stream.flush()
    assert parse_log(out.getvalue()).commands == [] and out.getvalue() == "one\n\\x3a:add-mask::x\n"


def test_the_findings_warning_names_the_check_each_path_each_query_and_both_causes() -> None:
    run = run_with_a_finding()
    text = findings_warning(run.findings)
    assert text.splitlines()[:4] == [
        "kb-eval: 1 document quotes 2 or more golden queries verbatim (golden-queries-quoted).",
        "  notes/about-the-eval.md",
        "    rollback-migration (took rank 1 above the expected document)",
        "    image-tags (took rank 1 above the expected document)",
    ]
    assert "notes about the test" in text and "looks worse than search is" in text and "belong in `expected`" in text
    assert findings_warning(()) == ""


def test_findings_that_displaced_a_labelled_answer_are_listed_first() -> None:
    [located] = run_with_a_finding().findings
    overview = dataclasses.replace(located, finding=dataclasses.replace(
        located.finding, path="a-overview.md",
        quoted=tuple(dataclasses.replace(q, displaces_expected=False) for q in located.finding.quoted)))
    lines = findings_warning((overview, located)).splitlines()
    assert lines.index("  notes/about-the-eval.md") < lines.index("  a-overview.md")
    assert "below the expected document" in findings_warning((overview,))




def test_the_two_causes_say_the_eval_looks_worse_and_the_docs_agree() -> None:
    """A note quoting golden queries takes the labelled answers' places: the score falls (decision
    0006: "the more that is written about the evaluation, the harder the evaluation is to pass")."""
    from pathlib import Path

    from scanner.render import phrases

    assert "worse than search is" in phrases.TWO_CAUSES
    assert "better than" not in phrases.TWO_CAUSES
    root = Path(__file__).resolve().parents[2]
    for doc in ["README.md", "docs/golden-queries-quoted.md"]:
        text = (root / doc).read_text(encoding="utf-8")
        assert "look better than" not in text and "looks better than" not in text, doc
    assert phrases.TWO_CAUSES in (root / "docs/golden-queries-quoted.md").read_text(encoding="utf-8")
