"""Choosing and building a retriever from the command-line flags."""

from __future__ import annotations

import argparse
import shlex
import sys
from pathlib import Path

import pytest

from scanner.errors import InputError
from scanner.retrievers.base import Hit, Retriever, SearchRequest
from scanner.retrievers.command import CommandRetriever
from scanner.retrievers.factory import (
    RetrieverKind,
    RetrieverOptions,
    add_retriever_arguments,
    build_retriever,
    choose_kind,
    external_retriever_factory,
    options_from_namespace,
)
from scanner.retrievers.http import HttpRetriever
from scanner.retrievers.runfile import RunFileRetriever
from tests.loopback_server import Received, Reply, running

FAKE = Path(__file__).with_name("fake_kb_search.py")


class StubBuiltin:
    def describe(self) -> dict[str, object]:
        return {"name": "builtin"}

    def search_all(self, requests: object) -> list[list[Hit]]:
        return []


def parse(*argv: str) -> RetrieverOptions:
    parser = argparse.ArgumentParser()
    add_retriever_arguments(parser)
    return options_from_namespace(parser.parse_args(list(argv)))


def never_builtin() -> Retriever:
    raise AssertionError("the builtin retriever was built although another was chosen")


def test_no_flags_means_the_builtin_retriever() -> None:
    builtin = StubBuiltin()
    assert build_retriever(parse(), lambda: builtin) is builtin


@pytest.mark.parametrize(
    ("argv", "kind"),
    [
        (["--http-url", "http://127.0.0.1:9/s"], RetrieverKind.HTTP),
        (["--command", "kb-mcp search {query}"], RetrieverKind.COMMAND),
        (["--run", "run.trec"], RetrieverKind.RUN),
        (["--retriever", "builtin"], RetrieverKind.BUILTIN),
    ],
)
def test_the_retriever_is_implied_by_its_source_flag(argv: list[str], kind: RetrieverKind) -> None:
    assert choose_kind(parse(*argv)) is kind


def test_two_source_flags_without_retriever_are_refused() -> None:
    with pytest.raises(InputError, match="more than one"):
        choose_kind(parse("--run", "r.trec", "--command", "x {query}"))


@pytest.mark.parametrize(
    ("argv", "stray"),
    [
        (["--retriever", "builtin", "--concurrency", "4"], "--concurrency"),
        (["--run", "r.trec", "--hits-path", "hits"], "--hits-path"),
        (["--command", "x {query}", "--http-header", "A: b"], "--http-header"),
        (["--http-url", "http://h/", "--command-timeout", "3"], "--command-timeout"),
    ],
)
def test_a_flag_for_another_retriever_is_refused_not_ignored(argv: list[str], stray: str) -> None:
    with pytest.raises(InputError, match=stray):
        choose_kind(parse(*argv))


def test_a_chosen_retriever_without_its_source_is_refused() -> None:
    with pytest.raises(InputError, match="needs --http-url"):
        choose_kind(parse("--retriever", "http"))


def test_http_flags_build_an_http_retriever_that_uses_them() -> None:
    def answer(_request: Received) -> Reply:
        return Reply(body={"data": {"items": [{"doc": {"file": "/kb/a.md"}, "title": "T", "rel": 0.5}]}})

    with running(answer) as server:
        options = parse(
            "--http-url", server.url + "/q", "--http-method", "get", "--http-body", '{"q": "{query}"}',
            "--http-header", "X-Key: ${KEY}", "--http-timeout", "2", "--http-retries", "0",
            "--concurrency", "2", "--hits-path", "data.items", "--path-field", "doc.file",
            "--heading-field", "title", "--score-field", "rel", "--path-prefix-strip", "/kb",
        )
        retriever = build_retriever(options, never_builtin, env={"KEY": "k-123"})
        assert isinstance(retriever, HttpRetriever)
        assert retriever.search_all([SearchRequest("q1", "hello", 5)]) == [[Hit(1, "a.md", "T", 0.5)]]
    assert server.received[0].params == {"q": ["hello"]}
    assert server.received[0].headers["X-Key"] == "k-123"


def test_command_flags_build_a_command_retriever() -> None:
    template = f"{shlex.quote(sys.executable)} {shlex.quote(str(FAKE))} search --format json --limit {{limit}} {{query}}"
    retriever = build_retriever(parse("--command", template, "--command-timeout", "5"), never_builtin)
    assert isinstance(retriever, CommandRetriever)
    assert retriever.search_all([SearchRequest("q1", "x", 5)]) == [[Hit(1, "echo.md", "x", 1.0)]]


def test_run_flag_builds_a_run_file_retriever(tmp_path: Path) -> None:
    run = tmp_path / "run.trec"
    run.write_text("q1 Q0 a.md 1 1 t\n")
    assert isinstance(build_retriever(parse("--run", str(run)), never_builtin), RunFileRetriever)


@pytest.mark.parametrize("flag", ["--hits-path", "--path-field"])
def test_an_empty_dotted_path_segment_is_refused(flag: str) -> None:
    with pytest.raises(InputError, match="not a dotted path"):
        build_retriever(parse("--http-url", "http://127.0.0.1:9/", flag, "a..b"), never_builtin, env={})


def test_an_unknown_http_method_is_refused() -> None:
    with pytest.raises(InputError, match="GET or POST"):
        build_retriever(parse("--http-url", "http://127.0.0.1:9/", "--http-method", "PUT"), never_builtin, env={})


def test_a_concurrency_below_one_is_refused() -> None:
    with pytest.raises(InputError, match="at least 1"):
        build_retriever(parse("--http-url", "http://127.0.0.1:9/", "--concurrency", "0"), never_builtin, env={})


def test_the_external_factory_is_none_for_builtin_and_builds_the_others(tmp_path: Path) -> None:
    run = tmp_path / "run.trec"
    run.write_text("q1 Q0 a.md 1 1 t\n")
    assert external_retriever_factory(parse()) is None
    factory = external_retriever_factory(parse("--run", str(run)))
    assert factory is not None
    assert isinstance(factory(), RunFileRetriever)


def test_the_external_factory_checks_the_flags_before_building() -> None:
    with pytest.raises(InputError, match="--concurrency"):
        external_retriever_factory(parse("--run", "absent.trec", "--concurrency", "2"))
