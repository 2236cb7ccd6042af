"""Workflow-command escaping, checked against the real `@actions/core` and the runner's parser.

The reference is the npm package itself, run by the machine's node: the
command lines scanner/github/workflow.py prints must equal, byte for byte, what
`core.warning/error/notice` print for the same annotation. tests/support/runner_log.py
then reads them back the way actions/runner does.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scanner.foundation.errors import InputError
from scanner.github.workflow import (
    AnnotationKind,
    AnnotationProperties,
    annotation_file,
    commands_stopped,
    escape_data,
    escape_property,
    format_command,
    input_variable,
    new_stop_token,
    read_bool_input,
    read_input,
    resume_commands,
    stop_commands,
)
from tests.support.npm import NpmUnavailable, npm_package
from tests.support.runner_log import RUNNER_COMMANDS, parse_log, parse_v2
from tests.support.workflow import wrap_untrusted

ACTIONS_CORE_VERSION = "3.0.1"
"""Latest @actions/core on the npm registry on 2026-12-02 (`npm view @actions/core version`)."""
ROOT = Path(__file__).resolve().parents[2]

HOSTILE = [
    "%",
    "\r",
    "\n",
    "\r\n",
    ":",
    ",",
    "::set-output name=x::y",
    "::add-mask::secret",
    "##[error]legacy form",
    "%25",
    "%0A already escaped %3A %2C %0D",
    "%%25%",
    "title=x,line=3",
    "=leading equals",
    "ünïcødé 🚀 \u2028 \u00a0 \ufeff",
    "",
    "  padded  ",
    "C:\\notes\\a,b.md",
    "end::",
]


# --- the reference: @actions/core run by node ------------------------------------


@pytest.fixture(scope="session")
def actions_core() -> Path:
    """Folder holding node_modules/@actions/core at the pinned version (installed once per version)."""
    try:
        return npm_package("@actions/core", ACTIONS_CORE_VERSION)
    except NpmUnavailable as missing_part:
        pytest.skip(f"{missing_part}: cannot compare escaping with the real @actions/core")


NODE_ANNOTATIONS = """
import * as core from '@actions/core';
import { readFileSync } from 'fs';
for (const c of JSON.parse(readFileSync(process.argv[2], 'utf8'))) {
  core[c.kind](c.message, c.properties);
}
"""

NODE_INPUTS = """
import * as core from '@actions/core';
const out = {};
for (const name of JSON.parse(process.argv[2])) {
  try { out[name] = core.getInput(name); } catch (e) { out[name] = 'THROWS ' + e.message; }
}
process.stdout.write(JSON.stringify(out));
"""


def run_node(folder: Path, script: str, *args: str, env: dict[str, str] | None = None) -> str:
    # The script must sit in the install folder so the bare '@actions/core' import resolves.
    path = folder / "kb_eval_reference.mjs"
    path.write_text(script, encoding="utf-8")
    result = subprocess.run(
        ["node", str(path), *args],
        check=False,
        cwd=folder,
        capture_output=True,
        timeout=60,
        env=env,
    )
    assert result.returncode == 0, result.stderr.decode()
    return result.stdout.decode("utf-8")


def node_properties(properties: AnnotationProperties) -> dict[str, Any]:
    """toolkit's AnnotationProperties for the same annotation; empty ones left out."""
    fields = {
        "title": properties.title,
        "file": properties.file,
        "startLine": properties.line,
        "endLine": properties.end_line,
        "startColumn": properties.column,
        "endColumn": properties.end_column,
    }
    return {key: value for key, value in fields.items() if value}


def annotation_cases() -> list[tuple[AnnotationKind, AnnotationProperties, str]]:
    cases: list[tuple[AnnotationKind, AnnotationProperties, str]] = []
    for text in HOSTILE:
        cases.append((AnnotationKind.WARNING, AnnotationProperties(), text))
        cases.append(
            (
                AnnotationKind.ERROR,
                AnnotationProperties(title=text, file=text, line=3, end_line=3, column=2, end_column=9),
                "message " + text,
            )
        )
        cases.append((AnnotationKind.NOTICE, AnnotationProperties(title=text), text))
        cases.append(
            (
                AnnotationKind.WARNING,
                AnnotationProperties(file=f"notes/{text}.md", line=7),
                text,
            )
        )
    cases.append((AnnotationKind.WARNING, AnnotationProperties(line=1, end_line=40), "range"))
    cases.append((AnnotationKind.NOTICE, AnnotationProperties(end_column=5), "odd but legal"))
    return cases


@pytest.fixture(scope="module")
def core_reference(actions_core: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, bytes]:
    """The hostile annotation cases as a spec file both sides read (toolkit's properties and
    ours), and the bytes `@actions/core` prints for them: node runs once for the module."""
    spec = tmp_path_factory.mktemp("annotations") / "cases.json"
    spec.write_text(
        json.dumps(
            [
                {
                    "kind": kind.value,
                    "message": message,
                    "properties": node_properties(properties),
                    "ours": {
                        "title": properties.title,
                        "file": properties.file,
                        "line": properties.line,
                        "end_line": properties.end_line,
                        "column": properties.column,
                        "end_column": properties.end_column,
                    },
                }
                for kind, properties, message in annotation_cases()
            ]
        ),
        encoding="utf-8",
    )
    return spec, run_node(actions_core, NODE_ANNOTATIONS, str(spec)).encode("utf-8")


PYTHON_ANNOTATIONS = """
import json, sys
from scanner.github.workflow import Annotation, AnnotationKind, AnnotationProperties, write_annotations
cases = json.load(open(sys.argv[1], encoding="utf-8"))
write_annotations(sys.stdout, [
    Annotation(AnnotationKind(c["kind"]), c["message"], AnnotationProperties(**c["ours"])) for c in cases
])
"""


def formatted_in_process(spec: Path, cwd: Path) -> bytes:
    """format_command's line for each case, as UTF-8."""
    lines = [format_command(kind, properties, message) + "\n" for kind, properties, message in annotation_cases()]
    return "".join(lines).encode("utf-8")


def printed_by_a_python_process_in_the_c_locale(spec: Path, cwd: Path) -> bytes:
    """What write_annotations prints in a process with no locale set, as in the image: the
    bytes must still be UTF-8."""
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [sys.executable, "-c", PYTHON_ANNOTATIONS, str(spec)],
        check=True, cwd=cwd, capture_output=True, timeout=60, env=env,
    ).stdout  # fmt: skip


@pytest.mark.parametrize("ours", [formatted_in_process, printed_by_a_python_process_in_the_c_locale])
def test_annotation_lines_equal_what_actions_core_prints_for_hostile_strings(
    core_reference: tuple[Path, bytes], tmp_path: Path, ours: Callable[[Path, Path], bytes]
) -> None:
    spec, reference = core_reference
    printed = ours(spec, tmp_path)
    assert reference.endswith(b"\n")  # every command line ends with os.EOL
    assert "🚀".encode() in printed  # hostile unicode reached the output, as itself
    cases = annotation_cases()
    mine, theirs = printed.split(b"\n"), reference.split(b"\n")
    assert len(mine) == len(theirs) == len(cases) + 1
    for line, reference_line, case in zip(mine, theirs, cases):
        assert line == reference_line, case
    assert printed == reference


def test_the_comparison_would_catch_a_missing_escape(actions_core: Path, tmp_path: Path) -> None:
    # Guard against a vacuous pass: a line escaped without `:`/`,` in properties differs.
    spec = tmp_path / "one.json"
    spec.write_text(json.dumps([{"kind": "warning", "message": "m", "properties": {"title": "a:b,c"}}]))
    reference = run_node(actions_core, NODE_ANNOTATIONS, str(spec)).rstrip("\n")
    assert reference == "::warning title=a%3Ab%2Cc::m"
    assert reference != "::warning title=" + escape_data("a:b,c") + "::m"


def test_all_empty_properties_differ_from_toolkit_only_by_a_space_the_runner_ignores(
    actions_core: Path, tmp_path: Path
) -> None:
    spec = tmp_path / "one.json"
    spec.write_text(json.dumps([{"kind": "warning", "message": "m", "properties": {"title": ""}}]))
    theirs = run_node(actions_core, NODE_ANNOTATIONS, str(spec)).rstrip("\n")
    ours = format_command("warning", AnnotationProperties(title=""), "m")
    assert (theirs, ours) == ("::warning ::m", "::warning::m")
    parsed = [parse_log(line).commands[0] for line in (theirs, ours)]
    assert parsed[0] == parsed[1]


def test_read_input_trims_and_names_variables_exactly_as_getinput(
    actions_core: Path,
) -> None:
    values = {
        "kb-path": "  docs/kb \n",
        "max annotations": "\ufeff\u00a0 7 \u2028",
        "golden": "\x1f kept control \x85",
        "fail-on-regression": "\ttrue\r\n",
        "empty": "",
    }
    env = {key: value for key, value in os.environ.items() if not key.startswith("INPUT_")}
    for name, value in values.items():
        env[input_variable(name)] = value
    reference = json.loads(
        run_node(
            actions_core,
            NODE_INPUTS,
            json.dumps(list(values) + ["unset-input"]),
            env=env,
        )
    )
    for name in [*values, "unset-input"]:
        assert read_input(env, name) == reference[name], name


# --- the escaping rules themselves -------------------------------------------------


def test_percent_is_escaped_first_so_already_escaped_text_survives() -> None:
    assert escape_data("%0A") == "%250A"
    assert escape_property("%3A") == "%253A"
    assert escape_data("a\r\nb") == "a%0D%0Ab"


def test_message_keeps_colon_and_comma_but_properties_do_not() -> None:
    assert escape_data("a:b,c") == "a:b,c"
    assert escape_property("a:b,c") == "a%3Ab%2Cc"


def test_empty_properties_are_left_out() -> None:
    line = format_command("warning", AnnotationProperties(title="", file="a.md", line=2), "m")
    assert line == "::warning file=a.md,line=2::m"
    assert format_command("notice", AnnotationProperties(), "m") == "::notice::m"


def test_property_order_is_toolkits() -> None:
    line = format_command("error", AnnotationProperties("T", "f.md", 1, 2, 3, 4), "m")
    assert line == "::error title=T,file=f.md,line=1,endLine=2,col=3,endColumn=4::m"


def test_unknown_kinds_and_zero_lines_are_refused_as_bugs() -> None:
    with pytest.raises(ValueError):
        format_command("set-output", AnnotationProperties(), "x")
    with pytest.raises(ValueError):
        AnnotationProperties(line=0)


@pytest.mark.parametrize("text", HOSTILE)
def test_runner_reads_back_every_hostile_string_as_one_annotation(text: str) -> None:
    line = format_command("warning", AnnotationProperties(title=text, file="a.md", line=4), text)
    log = parse_log(line + "\n")
    assert [command.name for command in log.commands] == ["warning"]
    command = log.commands[0]
    assert command.data == text
    expected_title = text.lstrip("=")  # see test_property_values_lose_leading_equals_in_the_runner
    if expected_title:
        assert command.properties["title"] == expected_title
    assert command.properties["file"] == "a.md"
    assert command.properties["line"] == "4"


def test_property_values_lose_leading_equals_in_the_runner() -> None:
    # toolkit does not escape `=`, and .NET's Split('=', 2, RemoveEmptyEntries)
    # skips empty entries before the value: a title "=x" arrives as "x". Pinned
    # so nobody "fixes" it with an escape the runner would not undo (%3D).
    line = format_command("warning", AnnotationProperties(title="==x", line=1), "m")
    assert parse_log(line).commands[0].properties["title"] == "x"


def test_trailing_whitespace_of_the_last_property_is_trimmed_by_the_runner() -> None:
    line = format_command("warning", AnnotationProperties(title="t ", file="a.md "), "m")
    command = parse_log(line).commands[0]
    assert command.properties["title"] == "t "  # not last: kept
    assert command.properties["file"] == "a.md"  # last: Trim() removes it


def test_an_unescaped_newline_would_have_forged_a_command() -> None:
    # The near miss: without escaping, the second line is a command of its own.
    forged = parse_log("::warning::hello\n::add-mask::secret\n")
    assert [command.name for command in forged.commands] == ["warning", "add-mask"]
    safe = parse_log(format_command("warning", AnnotationProperties(), "hello\n::add-mask::secret") + "\n")
    assert [command.name for command in safe.commands] == ["warning"]


@settings(max_examples=300, deadline=None)
@given(st.text())
def test_runner_unescapes_any_message_to_the_original(text: str) -> None:
    line = format_command("notice", AnnotationProperties(), text)
    assert parse_v2(line, set(RUNNER_COMMANDS)) is not None
    log = parse_log(line + "\n")
    assert len(log.commands) == 1 and log.commands[0].data == text


@settings(max_examples=300, deadline=None)
@given(st.text().filter(lambda text: not text.startswith("=")))
def test_runner_unescapes_any_property_value_that_is_not_last(text: str) -> None:
    line = format_command("error", AnnotationProperties(title=text, file=text, line=9), "m")
    command = parse_log(line + "\n").commands[0]
    if text:
        assert command.properties["title"] == text
        assert command.properties["file"] == text
    else:
        assert "title" not in command.properties
    assert command.properties["line"] == "9"


# --- stop-commands -----------------------------------------------------------------


def test_untrusted_text_between_stop_and_resume_issues_no_command() -> None:
    hostile = "::add-mask::secret\n::set-output name=x::y\n##[error]legacy\r::warning file=a::b"
    token = new_stop_token()
    log = parse_log(wrap_untrusted(hostile, token) + format_command("warning", AnnotationProperties(), "ours") + "\n")
    assert [command.name for command in log.commands] == ["warning"]
    assert log.commands[0].data == "ours"
    assert [command.name for command in log.ignored] == [
        "add-mask",
        "set-output",
        "error",
        "warning",
    ]
    assert log.stop_tokens == [token] and not log.still_stopped and log.step_failed is None


def test_the_same_text_unwrapped_would_issue_commands() -> None:
    log = parse_log("::add-mask::secret\nsome ##[error]legacy\n")
    assert [command.name for command in log.commands] == ["add-mask", "error"]


def test_resume_line_is_on_its_own_line_even_when_text_lacks_a_newline() -> None:
    token = new_stop_token()
    log = parse_log(wrap_untrusted("no newline at end", token) + "::notice::after\n")
    assert not log.still_stopped
    assert [command.data for command in log.commands] == ["after"]


def test_commands_stopped_context_manager_resumes_after_partial_lines(
    tmp_path: Path,
) -> None:
    out = tmp_path / "log.txt"
    with out.open("w", encoding="utf-8", newline="") as stream:
        with commands_stopped(stream) as writer:
            writer.write("::add-mask::x")
        stream.write(format_command("notice", AnnotationProperties(), "after") + "\n")
    log = parse_log(out.read_text(encoding="utf-8"))
    assert [command.data for command in log.commands] == ["after"]
    assert [command.name for command in log.ignored] == ["add-mask"]


def test_commands_stopped_resumes_when_the_block_raises(tmp_path: Path) -> None:
    out = tmp_path / "log.txt"
    with (
        out.open("w", encoding="utf-8", newline="") as stream,
        pytest.raises(RuntimeError),
        commands_stopped(stream) as writer,
    ):
        writer.write("partial")
        raise RuntimeError("boom")
    assert not parse_log(out.read_text(encoding="utf-8")).still_stopped


def test_text_containing_the_token_is_refused() -> None:
    token = new_stop_token()
    with pytest.raises(ValueError):
        wrap_untrusted(f"::{token}::\n::add-mask::x", token)


@pytest.mark.parametrize(
    "token",
    ["", "warning", "WARNING", "pause-logging", "short", "has space1", "a:b:c:d:e"],
)
def test_tokens_the_runner_would_reject_or_misread_are_refused(token: str) -> None:
    with pytest.raises(ValueError):
        stop_commands(token)
    with pytest.raises(ValueError):
        resume_commands(token)


def test_stop_tokens_are_fresh_and_accepted_by_the_runner() -> None:
    first, second = new_stop_token(), new_stop_token()
    assert first != second
    log = parse_log(stop_commands(first) + "\n" + resume_commands(first) + "\n")
    assert log.step_failed is None and not log.still_stopped


def test_runner_fails_the_step_on_a_command_name_token() -> None:
    # What _check_stop_token protects against, shown on the runner side.
    assert parse_log("::stop-commands::warning\n").step_failed


# --- inputs ------------------------------------------------------------------------


def test_input_names_keep_hyphens_and_turn_spaces_into_underscores() -> None:
    assert input_variable("fail-on-regression") == "INPUT_FAIL-ON-REGRESSION"
    assert input_variable("max annotations") == "INPUT_MAX_ANNOTATIONS"


def test_read_input_does_not_read_the_underscore_spelling_of_a_hyphenated_name() -> None:
    assert read_input({"INPUT_KB_PATH": "wrong"}, "kb-path") == ""
    assert read_input({"INPUT_KB-PATH": " docs "}, "kb-path") == "docs"


def test_required_input_missing_is_an_input_error_naming_it() -> None:
    with pytest.raises(InputError) as caught:
        read_input({"INPUT_GOLDEN": "  "}, "golden", required=True)
    assert caught.value.field == "golden"
    assert "golden" in str(caught.value)


@pytest.mark.parametrize(
    "value, expected",
    [
        ("true", True),
        ("True", True),
        ("TRUE", True),
        (" true\n", True),
        ("false", False),
        ("False", False),
        ("FALSE", False),
    ],
)
def test_boolean_inputs_accept_the_yaml_core_spellings(value: str, expected: bool) -> None:
    assert read_bool_input({"INPUT_SUMMARY": value}, "summary") is expected


@pytest.mark.parametrize("value", ["yes", "1", "tRUE", "on", "", "true false"])
def test_other_boolean_spellings_are_an_input_error_naming_the_input(
    value: str,
) -> None:
    with pytest.raises(InputError) as caught:
        read_bool_input({"INPUT_FAIL-ON-REGRESSION": value}, "fail-on-regression")
    assert caught.value.field == "fail-on-regression"
    assert "true | True | TRUE" in (caught.value.hint or "")


def test_boolean_default_applies_only_when_the_variable_is_absent() -> None:
    assert read_bool_input({}, "summary", default=True) is True
    with pytest.raises(InputError):
        read_bool_input({"INPUT_SUMMARY": ""}, "summary", default=True)


# --- annotation paths ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "path, expected",
    [
        ("notes/a.md", "notes/a.md"),
        ("./notes/a.md", "notes/a.md"),
        ("notes//sub/./a.md", "notes/sub/a.md"),
        ("/github/workspace/kb/a.md", "kb/a.md"),
        ("kb/../notes/a.md", "notes/a.md"),
        ("notes\\not-a-separator.md", "notes\\not-a-separator.md"),
    ],
)
def test_annotation_files_are_repository_relative(path: str, expected: str) -> None:
    assert annotation_file(path) == expected


@pytest.mark.parametrize("path", ["/etc/passwd", "../outside.md", "kb/../../x.md", "", ".", "/github/workspace"])
def test_annotation_files_outside_the_repository_are_refused(path: str) -> None:
    with pytest.raises(ValueError):
        annotation_file(path)
