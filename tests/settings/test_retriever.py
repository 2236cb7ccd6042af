"""Choosing and building a retriever (scanner/settings/retriever.py), from either interface."""

from __future__ import annotations

import json
import os
import shlex
import sys
from collections.abc import Mapping
from pathlib import Path

import pytest

from scanner.action.inputs import read_inputs
from scanner.cli.main import execute, parse_cli
from scanner.corpus.reader import build_document
from scanner.foundation.diagnostics import Diagnostics
from scanner.foundation.errors import ExitCode, InputError
from scanner.retrievers.base import Hit, Retriever, RetrieverKind, SearchRequest
from scanner.retrievers.builtin import BuiltinRetriever, FieldWeights, Tokenization
from scanner.retrievers.command import CommandRetriever
from scanner.retrievers.http import HttpRetriever
from scanner.retrievers.runfile import RunFileRetriever
from scanner.search.index import Index
from scanner.search.query_compiler import QUERY_COMPILER_VERSION
from scanner.settings.declaration import SETTINGS, RunSettings
from scanner.settings.retriever import SOURCE_SETTING, build_retriever, choose_kind, retriever_builder
from tests.conftest import REPO
from tests.support.container import action_inputs, input_environment
from tests.support.loopback_server import Received, Reply, running

FAKE = Path(__file__).parents[1] / "support" / "fake_kb_search.py"
COMMAND = f"{shlex.quote(sys.executable)} {shlex.quote(str(FAKE))} search --format json --limit {{limit}} {{query}}"

SAMPLE_VALUES: Mapping[str, str] = {
    "tokenization": "word",
    "weights": "9,1,1",
    "http-url": "http://127.0.0.1:9/search",
    "http-method": "GET",
    "http-body": '{"q": "{query}"}',
    "http-header": "X-Key: k",
    "http-timeout": "5",
    "http-retries": "0",
    "command": COMMAND,
    "command-timeout": "5",
    "command-env": "KB_TOKEN",
    "concurrency": "2",
    "hits-path": "data.items",
    "path-field": "doc.file",
    "heading-field": "title",
    "score-field": "rel",
    "path-prefix-strip": "/kb",
    "run-file": "run.trec",
    # Real programs: describing a retriever built with them runs them.
    "index-command": "true {kb} {work}",
    "index-timeout": "30",
    "serve-command": f"{sys.executable} -m http.server --bind 127.0.0.1 --directory {{kb}} {{port}}",
    "serve-timeout": "30",
    "mcp-command": f"{shlex.quote(sys.executable)} {shlex.quote(str(REPO / 'tests' / 'support' / 'mcp_test_server.py'))} {{kb}}",
    "mcp-url": "http://127.0.0.1:9/mcp",
    "mcp-tool": "find",
    "mcp-arguments": '{"q": "{query}"}',
    "mcp-timeout": "5",
    "latency-budget": "p95=800ms",
    "answer-budget": "max=64KiB",
}
"""A value each retriever's setting accepts (a new retriever setting needs one here)."""

RETRIEVER_SETTINGS = [spec for spec in SETTINGS if spec.retrievers]


def index_of(files: Mapping[str, str]) -> Index:
    documents = tuple(build_document(path, text, Diagnostics()) for path, text in sorted(files.items()))
    return Index.build(documents)


def cli(*argv: str) -> RunSettings:
    return parse_cli(list(argv))


def action(tmp_path: Path, **inputs: str) -> RunSettings:
    return read_inputs(input_environment(action_inputs(inputs)), tmp_path).settings


def never_builtin_index() -> Index:
    return index_of({"a.md": "# A\nalpha\n"})


def test_every_retriever_setting_has_a_sample_value() -> None:
    assert set(SAMPLE_VALUES) == {spec.name for spec in RETRIEVER_SETTINGS}


def test_no_flags_means_the_builtin_retriever_built_over_the_pipelines_index() -> None:
    index = index_of({"deploy.md": "# Rollback\nRolling back means redeploying the previous image.\n"})
    retriever = build_retriever(cli("--weights", "3,1,1", "--tokenization", "word"), index, [])
    assert isinstance(retriever, BuiltinRetriever) and retriever.index is index
    assert retriever.weights == FieldWeights(3, 1, 1) and retriever.tokenization is Tokenization.WORD
    assert retriever.search_all([SearchRequest("q", "rolling back", 5)])[0][0].path == "deploy.md"


@pytest.mark.parametrize(
    ("argv", "kind"),
    [
        (["--http-url", "http://127.0.0.1:9/s"], RetrieverKind.HTTP),
        (["--command", "kb-mcp search {query}"], RetrieverKind.COMMAND),
        (["--run-file", "run.trec"], RetrieverKind.RUN),
        (["--run", "run.trec"], RetrieverKind.RUN),  # the old spelling
        (["--retriever", "builtin"], RetrieverKind.BUILTIN),
        ([], RetrieverKind.BUILTIN),
    ],
)
def test_the_retriever_is_implied_by_its_source_setting(argv: list[str], kind: RetrieverKind) -> None:
    assert choose_kind(cli(*argv)) is kind


def test_two_source_settings_without_a_choice_are_refused() -> None:
    with pytest.raises(InputError, match="more than one retriever source is given: --command, --run-file"):
        cli("--run", "r.trec", "--command", "x {query}")


def test_a_chosen_retriever_without_its_source_is_refused_in_each_interfaces_words(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="--retriever http needs --http-url") as refused:
        cli("--retriever", "http")
    assert refused.value.field == "--http-url"
    with pytest.raises(InputError, match="retriever run needs run-file") as refused:
        action(tmp_path, retriever="run")
    assert refused.value.field == "run-file"


def _other_kind_cases() -> list[tuple[RetrieverKind, str]]:
    return [(kind, spec.name) for kind in RetrieverKind for spec in RETRIEVER_SETTINGS if kind not in spec.retrievers]


def _source_argv(kind: RetrieverKind) -> list[str]:
    if kind is RetrieverKind.BUILTIN:
        return []
    source = SOURCE_SETTING[kind][0]
    return [f"--{source}={SAMPLE_VALUES[source]}"]


@pytest.mark.parametrize(("kind", "name"), _other_kind_cases(), ids=lambda value: getattr(value, "value", value))
def test_a_setting_of_another_retriever_is_refused_for_every_kind(kind: RetrieverKind, name: str) -> None:
    argv = [f"--retriever={kind.value}", *_source_argv(kind), f"--{name}={SAMPLE_VALUES[name]}"]
    with pytest.raises(InputError) as refused:
        cli(*argv)
    assert str(refused.value).startswith(f"--{name} does not apply to --retriever {kind.value}")


@pytest.mark.parametrize("kind", list(RetrieverKind), ids=lambda kind: kind.value)
def test_every_setting_of_the_chosen_retriever_is_accepted(kind: RetrieverKind) -> None:
    # The near miss of the refusal above: the retriever's own settings, all at once.
    own = [spec.name for spec in RETRIEVER_SETTINGS if kind in spec.retrievers]
    assert own, "each retriever has settings of its own"
    argv = [f"--retriever={kind.value}", *_source_argv(kind)]
    # One source of the retriever's (the others are each its own way to reach it, refused together).
    argv += [f"--{name}={SAMPLE_VALUES[name]}" for name in own if name not in SOURCE_SETTING.get(kind, ())]
    settings = cli(*argv)
    assert choose_kind(settings) is kind
    assert set(own) - set(SOURCE_SETTING.get(kind, ())[1:]) <= settings.given


def test_an_mcp_server_given_both_ways_is_refused_in_each_interfaces_words(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="--mcp-command and --mcp-url are both given"):
        cli("--mcp-command", "server {kb}", "--mcp-url", "http://127.0.0.1:9/mcp")
    with pytest.raises(InputError, match="^mcp-command and mcp-url are both given"):
        action(tmp_path, **{"mcp-command": "server {kb}", "mcp-url": "http://127.0.0.1:9/mcp"})
    with pytest.raises(InputError, match="--retriever mcp needs --mcp-command or --mcp-url"):
        cli("--retriever", "mcp")
    # The near miss: either one alone chooses the MCP retriever.
    assert choose_kind(cli("--mcp-url", "http://127.0.0.1:9/mcp")) is RetrieverKind.MCP
    assert choose_kind(action(tmp_path, **{"mcp-command": "server {kb}"})) is RetrieverKind.MCP




def test_builtin_flags_with_a_run_file_are_exit_2_naming_both(tmp_path: Path) -> None:
    run = tmp_path / "r.jsonl"
    run.write_text('{"id": "q", "hits": []}\n', encoding="utf-8")
    result = execute(["--kb-path", str(REPO / "examples" / "kb"), "--run", str(run), "--weights", "9,1,1",
                      "--tokenization", "word"])
    assert result.exit_code == ExitCode.BAD_INPUT and result.report is None
    assert "--tokenization, --weights do not apply to --retriever run" in result.stderr_text


def test_in_a_workflow_the_refusal_names_the_inputs(tmp_path: Path) -> None:
    with pytest.raises(InputError) as refused:
        action(tmp_path, **{"run-file": "r.jsonl", "weights": "9,1,1", "tokenization": "word"})
    message = str(refused.value)
    assert message.startswith("tokenization, weights do not apply to retriever run")
    assert "--" not in message and refused.value.field == "tokenization"
    # The near miss: the same inputs at their defaults are not "given", so nothing is refused.
    assert choose_kind(action(tmp_path, **{"run-file": "r.jsonl", "weights": "2,3.5,1"})) is RetrieverKind.RUN


def test_http_settings_build_an_http_retriever_that_uses_them() -> None:
    def answer(_request: Received) -> Reply:
        return Reply(body={"data": {"items": [{"doc": {"file": "/kb/a.md"}, "title": "T", "rel": 0.5}]}})

    with running(answer) as server:
        settings = cli(
            "--http-url", server.url + "/q", "--http-method", "get", "--http-body", '{"q": "{query}"}',
            "--http-header", "X-Key: ${KEY}", "--http-timeout", "2", "--http-retries", "0",
            "--concurrency", "2", "--hits-path", "data.items", "--path-field", "doc.file",
            "--heading-field", "title", "--score-field", "rel", "--path-prefix-strip", "/kb",
        )
        retriever = build_retriever(settings, never_builtin_index(), [], env={"KEY": "k-123"})
        assert isinstance(retriever, HttpRetriever)
        assert retriever.search_all([SearchRequest("q1", "hello", 5)]) == [[Hit(1, "a.md", "T", 0.5)]]
    assert server.received[0].params == {"q": ["hello"]}
    assert server.received[0].headers["X-Key"] == "k-123"


def test_command_settings_build_a_command_retriever() -> None:
    retriever = build_retriever(cli("--command", COMMAND, "--command-timeout", "5"), never_builtin_index(), [])
    assert isinstance(retriever, CommandRetriever)
    assert retriever.search_all([SearchRequest("q1", "x", 5)]) == [[Hit(1, "echo.md", "x", 1.0)]]


def test_a_run_file_builds_a_run_file_retriever(tmp_path: Path) -> None:
    run = tmp_path / "run.trec"
    run.write_text("q1 Q0 a.md 1 1 t\n")
    assert isinstance(build_retriever(cli("--run-file", str(run)), never_builtin_index(), []), RunFileRetriever)


def test_the_builder_checks_the_choice_before_the_index_exists() -> None:
    settings = cli("--run-file", "absent.trec")
    stray = RunSettings(**{**vars(settings), "given": settings.given | {"concurrency"}})
    with pytest.raises(InputError, match="--concurrency does not apply"):
        retriever_builder(stray)


@pytest.mark.parametrize("kind", list(RetrieverKind), ids=lambda kind: kind.value)
def test_a_built_retriever_is_of_the_kind_chosen_and_its_description_records_that_kind(
    kind: RetrieverKind, tmp_path: Path,
) -> None:
    # The pipeline words its checks of the answers by `kind`; the report's `name` is the same word.
    run = tmp_path / "run.trec"
    run.write_text("q1 Q0 a.md 1 1 t\n")
    argv = [f"--run-file={run}"] if kind is RetrieverKind.RUN else _source_argv(kind)
    retriever = build_retriever(cli(*argv), never_builtin_index(), [], env={"PATH": os.environ["PATH"]})
    try:
        assert retriever.kind is kind and retriever.describe()["name"] == kind.value
    finally:
        retriever.close()


def test_a_retriever_bound_to_a_side_is_of_the_kind_it_wraps() -> None:
    settings = cli(f"--command={COMMAND}", f"--index-command={SAMPLE_VALUES['index-command']}")
    retriever = build_retriever(settings, never_builtin_index(), [], env={"PATH": os.environ["PATH"]})
    try:
        assert not isinstance(retriever, CommandRetriever)  # the side's wrapper, not the command itself
        assert retriever.kind is RetrieverKind.COMMAND and retriever.describe()["name"] == "command"
    finally:
        retriever.close()


def test_a_retriever_gives_the_checks_of_its_answers_the_prefixes_it_strips_with_urls_redacted() -> None:
    prefixes = ["--path-prefix-strip=https://u:secret@kb.example/docs", "--path-prefix-strip=/srv/kb"]
    for argv in ([f"--command={COMMAND}", *prefixes],
                 [f"--command={COMMAND}", f"--index-command={SAMPLE_VALUES['index-command']}", *prefixes]):
        retriever = build_retriever(cli(*argv), never_builtin_index(), [], env={"PATH": os.environ["PATH"]})
        try:
            assert retriever.path_prefixes == ("https://kb.example/docs", "/srv/kb")
        finally:
            retriever.close()
    # The near miss: the built-in search maps no answers, so it strips nothing.
    assert build_retriever(cli(), never_builtin_index(), []).path_prefixes == ()


# --- the fingerprint: each retriever's describe() alone holds its settings ------------------


def _describe(settings: RunSettings) -> dict[str, object]:
    retriever: Retriever = build_retriever(settings, never_builtin_index(), [], env={"PATH": os.environ["PATH"]})
    try:
        return retriever.describe()
    finally:
        retriever.close()  # a server started for it is stopped


@pytest.mark.parametrize(
    "name", [spec.name for spec in RETRIEVER_SETTINGS
             if not any(spec.name in sources for sources in SOURCE_SETTING.values())]
)
def test_a_setting_is_in_the_fingerprint_exactly_when_declared_so(name: str) -> None:
    spec = next(s for s in SETTINGS if s.name == name)
    kind = min(spec.retrievers, key=lambda k: k.value)
    base = [f"--retriever={kind.value}", *_source_argv(kind)]
    changed = _describe(cli(*base, f"--{name}={SAMPLE_VALUES[name]}"))
    if spec.fingerprint == "retriever":
        assert changed != _describe(cli(*base)), f"{name} is declared in the fingerprint but describe() ignores it"
    else:
        assert changed == _describe(cli(*base)), f"{name} changes describe() but is not declared in the fingerprint"


def test_only_the_builtin_retriever_records_the_query_compiler_version(tmp_path: Path) -> None:
    kb = REPO / "examples" / "kb"
    builtin = execute(["--kb-path", str(kb), "--no-history", "--format", "json"])
    assert builtin.exit_code == ExitCode.OK
    report = json.loads(builtin.stdout_text)
    assert "query_compiler_version" not in report["fingerprint"]
    assert report["fingerprint"]["retriever"]["query_compiler_version"] == QUERY_COMPILER_VERSION
    run = tmp_path / "run.jsonl"
    rows = [{"id": row["id"], "hits": []} for row in report["per_query"]]
    run.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    external = execute(["--kb-path", str(kb), "--no-history", "--format", "json", "--run-file", str(run)])
    assert external.exit_code == ExitCode.OK, external.stderr_text
    assert "query_compiler_version" not in json.dumps(json.loads(external.stdout_text)["fingerprint"])


def test_a_retrievers_own_refusal_is_reworded_for_a_workflow(tmp_path: Path) -> None:
    # The command and run-file modules word their refusals for the command line.
    with pytest.raises(InputError) as on_cli:
        build_retriever(cli("--run", str(tmp_path / "absent.trec")), never_builtin_index(), [])
    assert on_cli.value.field == "--run"
    with pytest.raises(InputError) as in_action:
        build_retriever(action(tmp_path, **{"run-file": "absent.trec"}), never_builtin_index(), [])
    assert in_action.value.field == "run-file"
    with pytest.raises(InputError) as command:
        build_retriever(action(tmp_path, command="{query} x"), never_builtin_index(), [])
    assert command.value.field == "command" and "--" not in str(command.value)
