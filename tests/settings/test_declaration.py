"""One declaration per setting (scanner/settings/declaration.py): each interface is derived from it.

action.yml and the README tables are checked in tests/action/test_metadata.py;
here: the CLI's flags, the Action's input reading, the old spellings in both
interfaces, and refusals worded for the interface the value came from.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from scanner.action.inputs import INPUT_DEFAULTS, read_inputs
from scanner.cli.main import build_parser, execute, parse_cli
from scanner.compare.gate import MetricSelector
from scanner.foundation.errors import ExitCode, InputError
from scanner.github.comment import CommentMode
from scanner.retrievers.base import RetrieverKind
from scanner.retrievers.builtin import FieldWeights, Tokenization
from scanner.settings.declaration import (
    RUN_SETTINGS,
    SETTINGS,
    Form,
    Interface,
    RunSettings,
    default_settings,
    display_name,
    setting,
)
from tests.conftest import REPO
from tests.support.container import action_inputs, input_environment

BAD_VALUES = {
    "max-files": "0",
    "max-mib": "-1",
    "max-sections": "1e6",
    "max-postings": "0",
    "max-terms": "-5",
    "baseline-ref": "-n",  # a revision git would read as an option
    "comment": "sometimes",
    "limit": "0",
    "relevance-level": "0",
    "k": "1,x",
    "format": "xml",
    "history-size": "0",
    "regression-threshold": "1.5",
    "fail-under": "mrr=1.5",
    "alpha": "0",
    "retriever": "elastic",
    "tokenization": "fused",
    "weights": "1,1",
    "http-method": "PUT",
    "http-header": "no colon",
    "http-timeout": "0",
    "http-retries": "-1",
    "command-timeout": "nan",
    "index-timeout": "-1",
    "latency-budget": "p95=800",
    "answer-budget": "max=64",
    "serve-timeout": "inf",
    "mcp-timeout": "-1",
    "command-env": "KB_TOKEN=x",
    "concurrency": "0",
    "hits-path": "a..b",
    "path-field": "a..b",
    "heading-field": ".",
    "score-field": "a.",
    "max-annotations": "1001",
    "score-level": "chunk",
}
"""A value each checked setting refuses."""


def run_settings_attributes() -> frozenset[str]:
    """RunSettings' value attributes (what `SETTINGS` must declare)."""
    return frozenset(f.name for f in dataclasses.fields(RunSettings)) - {"given", "interface"}


def action(tmp_path: Path, **inputs: str) -> RunSettings:
    return read_inputs(input_environment(action_inputs(inputs)), tmp_path).settings


# --- the declaration ----------------------------------------------------------------------------


def test_names_are_unique_across_names_and_old_spellings() -> None:
    spellings = [spelling for spec in SETTINGS for spelling in (spec.name, *spec.aliases)]
    assert len(spellings) == len(set(spellings))
    assert len({spec.attribute for spec in SETTINGS}) == len(SETTINGS)


def test_run_settings_has_exactly_the_cli_settings_attributes() -> None:
    assert run_settings_attributes() == {spec.attribute for spec in RUN_SETTINGS}


def test_the_parsed_result_keeps_the_historic_argparse_names() -> None:
    historic = {
        "kb_path", "golden", "exclude", "limit", "k", "format", "output", "cache_dir", "tokenization", "weights",
        "history", "no_history", "history_size", "baseline", "baseline_ref", "save_baseline", "fail_on_regression",
        "regression_threshold", "alpha", "retriever", "http_url", "http_method", "http_body", "http_headers",
        "http_timeout", "http_retries", "concurrency", "hits_path", "path_field", "heading_field", "score_field",
        "path_prefix_strip", "command", "command_timeout", "command_env", "run", "score_level",
        "summary_file",
        # Added after the argparse era, named as the flag is.
        "relevance_level", "export_trec", "index_command", "index_timeout", "serve_command", "serve_timeout",
        "latency_budget", "answer_budget", "max_files", "max_mib", "max_sections", "max_postings", "max_terms",
        "mcp_command", "mcp_url", "mcp_tool", "mcp_arguments", "mcp_timeout", "fail_under",
    }
    assert run_settings_attributes() == historic


def test_each_default_is_what_its_default_text_parses_to() -> None:
    for spec in SETTINGS:
        if spec.form is Form.VALUE and spec.default_text and spec.default is not None:
            assert spec.parse(spec.default_text) == spec.default, spec.name


def test_every_setting_that_makes_sense_in_a_workflow_is_an_input() -> None:
    # --no-history is the CLI's way to say what an empty history input says; --summary FILE is what the
    # Action's step summary is (the input `summary` switches that).
    assert [spec.name for spec in RUN_SETTINGS if not spec.action] == ["summary-file", "no-history"]


def test_the_cli_spells_the_summary_file_summary_and_the_action_input_summary_stays_a_switch(tmp_path: Path) -> None:
    assert setting("summary-file").flags == ("--summary",)
    assert parse_cli(["--summary", "s.md"]).summary_file == Path("s.md")
    assert display_name(setting("summary-file"), Interface.CLI) == "--summary"
    assert setting("summary").form is Form.SWITCH and not setting("summary").cli
    for name in ("hits-path", "path-field", "heading-field", "score-field", "path-prefix-strip", "http-timeout",
                 "http-retries", "concurrency", "command-timeout", "tokenization", "weights", "history-size"):
        assert setting(name).action and name in INPUT_DEFAULTS, name


def test_tokenization_offers_only_the_values_that_exist() -> None:
    assert [t.value for t in Tokenization] == ["auto", "word"]
    help_text = build_parser().format_help()
    assert "{auto,word}" in help_text
    assert "fused" not in help_text and "CJK runs as bigrams" in help_text
    with pytest.raises(InputError, match="not one of auto, word"):
        parse_cli(["--tokenization", "fused"])


# --- the command line ---------------------------------------------------------------------------


def test_every_cli_setting_is_a_flag_whose_help_states_its_default() -> None:
    actions = {a.dest: a for a in build_parser()._actions}  # reading argparse's result, not driving it
    for spec in RUN_SETTINGS:
        flag = actions[spec.attribute]
        assert tuple(flag.option_strings) == spec.flags, spec.name
        assert flag.help is not None and "(default: " in flag.help, spec.name
    assert not any(spec.cli for spec in SETTINGS if spec.name in ("annotations", "comment", "github-token"))


def test_help_lists_the_exit_codes_and_the_examples_starting_with_init(capsys: pytest.CaptureFixture[str]) -> None:
    result = execute(["--help"])
    assert result.exit_code == 0
    for line in ("0  the run completed", "1  --fail-on-regression", "2  bad input or usage", "3  internal error"):
        assert line in result.stdout_text
    examples = result.stdout_text.split("examples:")[1]
    # A newcomer's first command is `kb-eval init`: --help shows it before the runs.
    assert examples.count("\n  kb-eval ") == 3
    assert examples.lstrip("\n").startswith("  kb-eval init --kb-path")


def test_no_flags_gives_the_declared_defaults() -> None:
    parsed = parse_cli([])
    assert parsed == default_settings(Interface.CLI)
    assert parsed.kb_path == Path(".") and parsed.k == (1, 5, 10) and parsed.weights == FieldWeights()
    assert parsed.retriever is None and parsed.given == frozenset()


def test_a_flag_given_is_recorded_as_given_even_at_its_default_value() -> None:
    parsed = parse_cli(["--weights", "2,1,1", "--exclude", "a/*", "--exclude", "b/*", "--fail-on-regression"])
    assert parsed.given == {"weights", "exclude", "fail-on-regression"}
    assert parsed.exclude == ("a/*", "b/*") and parsed.fail_on_regression is True


@pytest.mark.parametrize(
    ("old", "new", "attribute", "value", "expected"),
    [
        ("--output", "--report", "output", "r.json", Path("r.json")),
        ("--run", "--run-file", "run", "r.trec", Path("r.trec")),
        ("--http-headers", "--http-header", "http_headers", "A: b", ("A: b",)),
    ],
)
def test_the_old_cli_spellings_keep_working(old: str, new: str, attribute: str, value: str, expected: object) -> None:
    extra = ["--http-url", "http://127.0.0.1:9/"] if attribute == "http_headers" else []
    via_old = parse_cli([*extra, old, value])
    via_new = parse_cli([*extra, new, value])
    assert getattr(via_old, attribute) == getattr(via_new, attribute) == expected
    assert via_old == via_new


# --- the Action -----------------------------------------------------------------------------------


def test_the_action_reads_every_declared_input_by_its_runner_variable(tmp_path: Path) -> None:
    # Set each input to a non-default value through INPUT_<NAME> (hyphens kept) and see it arrive.
    values = {
        "kb-path": "docs", "golden": "g.yml", "exclude": "x/*", "limit": "7", "score-level": "document", "k": "1,3",
        "format": "json", "relevance-level": "2", "export-trec": "trec",
        "report": "out.json", "cache-dir": "c", "history": "h.json", "history-size": "4", "baseline": "b.json",
        "baseline-ref": "origin/main", "save-baseline": "s.json", "fail-on-regression": "true", "regression-threshold": "0.1", "alpha": "0.2",
        "fail-under": "mrr=0.5",
        "retriever": "http", "http-url": "http://127.0.0.1:9/", "http-method": "GET", "http-body": '{"q": "{query}"}',
        "http-header": "A: b", "http-timeout": "2", "http-retries": "1", "concurrency": "3", "hits-path": "h",
        "path-field": "p", "heading-field": "t", "score-field": "s", "path-prefix-strip": "/kb",
        "index-command": "make-index {kb}", "index-timeout": "30", "serve-command": "serve {port}",
        "serve-timeout": "40", "latency-budget": "p95=800ms", "answer-budget": "max=64KiB",
        "max-files": "5", "max-mib": "6", "max-sections": "7", "max-postings": "8", "max-terms": "9",
        "annotations": "false", "max-annotations": "3", "summary": "false", "comment": "true",
        "github-token": "t-123",
    }
    untestable_together = {"tokenization", "weights", "command", "command-timeout", "command-env", "run-file",
                           "mcp-command", "mcp-url", "mcp-tool", "mcp-arguments", "mcp-timeout"}
    assert set(values) | untestable_together == set(INPUT_DEFAULTS)
    environ = input_environment(action_inputs(values))
    assert "INPUT_KB-PATH" in environ and "INPUT_HTTP-HEADER" in environ
    inputs = read_inputs(environ, tmp_path)
    run = inputs.settings
    assert run.given == set(values) - {"annotations", "max-annotations", "summary", "comment", "github-token"}
    assert (run.kb_path, run.golden, run.exclude, run.limit, run.k) == (Path("docs"), Path("g.yml"), ("x/*",), 7, (1, 3))
    assert run.relevance_level == 2 and run.export_trec == Path("trec")
    assert (run.format, run.output, run.cache_dir, run.history, run.history_size) == (
        "json", Path("out.json"), Path("c"), Path("h.json"), 4)
    assert (run.baseline, run.save_baseline, run.fail_on_regression, run.regression_threshold.default, run.alpha) == (
        Path("b.json"), Path("s.json"), True, 0.1, 0.2)
    assert run.baseline_ref is not None and run.baseline_ref.revision == "origin/main"
    assert run.fail_under.items == ((MetricSelector("mrr", None), 0.5),)
    assert (run.retriever, run.http_url, run.http_method, run.http_body, run.http_headers) == (
        RetrieverKind.HTTP, "http://127.0.0.1:9/", "GET", '{"q": "{query}"}', ("A: b",))
    assert (run.http_timeout, run.http_retries, run.concurrency) == (2.0, 1, 3)
    assert (run.hits_path, run.path_field, run.heading_field, run.score_field, run.path_prefix_strip) == (
        "h", "p", "t", "s", ("/kb",))
    assert (run.index_command, run.index_timeout, run.serve_command, run.serve_timeout) == (
        "make-index {kb}", 30.0, "serve {port}", 40.0)
    assert (run.latency_budget.time, run.answer_budget.size) == ((("p95", 0.8),), (("max", 65536.0),))
    assert (inputs.annotations, inputs.max_annotations, inputs.summary, inputs.comment, inputs.github_token) == (
        False, 3, False, CommentMode.ALWAYS, "t-123")
    assert (run.max_files, run.max_mib, run.max_sections, run.max_postings, run.max_terms) == (5, 6, 7, 8, 9)
    assert run.interface is Interface.ACTION


def test_the_builtin_and_command_inputs_arrive_too(tmp_path: Path) -> None:
    builtin = action(tmp_path, tokenization="word", weights="3,1,1")
    assert builtin.tokenization is Tokenization.WORD and builtin.weights == FieldWeights(3, 1, 1)
    command = action(tmp_path, command="prog {query}", **{"command-timeout": "9"})
    assert command.command == "prog {query}" and command.command_timeout == 9.0
    run = action(tmp_path, **{"run-file": "r.trec"})
    assert run.run == Path("r.trec")


@pytest.mark.parametrize(
    ("old", "new", "attribute", "value", "expected"),
    [
        ("output", "report", "output", "r.json", Path("r.json")),
        ("run", "run-file", "run", "r.trec", Path("r.trec")),
        ("http-headers", "http-header", "http_headers", "A: b", ("A: b",)),
    ],
)
def test_the_old_input_spellings_keep_working(
    tmp_path: Path, old: str, new: str, attribute: str, value: str, expected: object
) -> None:
    extra = {"http-url": "http://127.0.0.1:9/"} if attribute == "http_headers" else {}
    via_old = action(tmp_path, **extra, **{old: value})
    via_new = action(tmp_path, **extra, **{new: value})
    assert getattr(via_old, attribute) == getattr(via_new, attribute) == expected
    # Both spellings with different values is a mistake worth a refusal; the same value is fine.
    with pytest.raises(InputError, match=f"inputs {new} and {old} are both set"):
        action(tmp_path, **extra, **{old: value, new: value + "x"})
    assert getattr(action(tmp_path, **extra, **{old: value, new: value}), attribute) == expected


def test_an_empty_input_means_its_default(tmp_path: Path) -> None:
    run = action(tmp_path, k="", limit="", report="", **{"max-annotations": "", "http-method": ""})
    assert run.k == (1, 5, 10) and run.limit is None and run.output == Path("kb-eval-report.json")
    assert run.given == {"no-history"}


def test_a_path_input_leaving_the_workspace_is_refused_under_its_spelling(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="input output is '../r.json'") as refused:
        action(tmp_path, output="../r.json")
    assert refused.value.field == "output"


# --- refusals in the interface's words ------------------------------------------------------------


def test_every_setting_not_listed_with_a_bad_value_accepts_any_text() -> None:
    # So a setting that gains a check must gain a case above.
    for spec in SETTINGS:
        if spec.form is not Form.SWITCH and spec.name not in BAD_VALUES:
            spec.parse("any text: with {braces}, spaces and ../dots")


@pytest.mark.parametrize("name", sorted(BAD_VALUES))
def test_a_refused_value_names_the_flag_on_the_command_line_and_the_input_in_a_workflow(
    tmp_path: Path, name: str
) -> None:
    spec = setting(name)
    if spec.cli:
        with pytest.raises(InputError) as on_cli:
            parse_cli([f"--{name}={BAD_VALUES[name]}"])
        assert on_cli.value.field == f"--{name}" == display_name(spec, Interface.CLI)
        assert str(on_cli.value).startswith(f"--{name} ") and f"e.g. --{name}=" in str(on_cli.value)
    with pytest.raises(InputError) as in_action:
        action(tmp_path, **{name: BAD_VALUES[name]})
    assert in_action.value.field == name == display_name(spec, Interface.ACTION)
    message = str(in_action.value)
    assert message.startswith(f"input {name} is ") and f"set `{name}:`" in message and "--" not in message


def test_a_header_value_is_never_echoed_in_a_refusal() -> None:
    with pytest.raises(InputError) as refused:
        parse_cli(["--http-url", "http://h/", "--http-header", "Bearer secret-token-123"])
    assert "secret-token-123" not in str(refused.value)


def test_a_refused_value_from_the_cli_is_exit_2_through_execute() -> None:
    result = execute(["--kb-path", str(REPO / "examples" / "kb"), "--concurrency", "0"])
    assert result.exit_code == ExitCode.BAD_INPUT and result.input_error is not None
    assert result.input_error.field == "--concurrency"


def test_the_cli_code_no_longer_drives_argparse_internals() -> None:
    for path in (REPO / "scanner").rglob("*.py"):
        text = path.read_text(encoding="utf-8")
        assert "_option_string_actions" not in text and "pass_if_known" not in text, path
