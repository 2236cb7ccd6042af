"""Choosing and building the retriever from the command line.

The CLI only parses: `add_retriever_arguments` declares the flags,
`options_from_namespace` reads them back, and `build_retriever` turns them
into a Retriever. Every flag defaults to None ("not given") so a flag that
belongs to another retriever can be refused instead of silently ignored.
"""

from __future__ import annotations

import argparse
import enum
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from scanner.errors import InputError
from scanner.retrievers import command as command_module
from scanner.retrievers import http as http_module
from scanner.retrievers.base import Retriever
from scanner.retrievers.mapping import ResponseMapping, validate_dotted_path
from scanner.retrievers.runfile import RunFileRetriever

T = TypeVar("T")


class RetrieverKind(enum.Enum):
    BUILTIN = "builtin"
    """The embedded SQLite FTS5 index over the KB (the default)."""
    HTTP = "http"
    """A search service over HTTP."""
    COMMAND = "command"
    """A program run once per query, printing JSON."""
    RUN = "run"
    """Precomputed rankings from a TREC or JSONL run file."""


@dataclass(frozen=True, slots=True)
class RetrieverOptions:
    """The retriever flags as given; None means the flag was not given."""

    retriever: str | None = None
    http_url: str | None = None
    http_method: str | None = None
    http_body: str | None = None
    http_headers: tuple[str, ...] = ()
    http_timeout: float | None = None
    http_retries: int | None = None
    concurrency: int | None = None
    hits_path: str | None = None
    path_field: str | None = None
    heading_field: str | None = None
    score_field: str | None = None
    path_prefix_strip: tuple[str, ...] = ()
    command: str | None = None
    command_timeout: float | None = None
    run: str | None = None


_FLAGS_OF: dict[RetrieverKind, tuple[str, ...]] = {
    RetrieverKind.BUILTIN: (),
    RetrieverKind.HTTP: (
        "http_url", "http_method", "http_body", "http_headers", "http_timeout", "http_retries",
        "concurrency", "hits_path", "path_field", "heading_field", "score_field", "path_prefix_strip",
    ),
    RetrieverKind.COMMAND: (
        "command", "command_timeout", "concurrency", "hits_path", "path_field", "heading_field",
        "score_field", "path_prefix_strip",
    ),
    RetrieverKind.RUN: ("run",),
}
_SOURCE_FLAG = {RetrieverKind.HTTP: "http_url", RetrieverKind.COMMAND: "command", RetrieverKind.RUN: "run"}


def add_retriever_arguments(parser: argparse.ArgumentParser) -> None:
    """Declare the retriever flags on the CLI's parser."""
    group = parser.add_argument_group("retriever (what answers the golden queries)")
    group.add_argument("--retriever", choices=[kind.value for kind in RetrieverKind], default=None,
                       help="default: builtin, or the one whose --http-url/--command/--run is given")
    group.add_argument("--http-url", default=None, help="search endpoint; may hold ${ENV_NAME}")
    group.add_argument("--http-method", default=None, help="GET or POST (default POST)")
    group.add_argument("--http-body", default=None,
                       help="JSON template with {query} and {limit}; for GET its fields become "
                       'query parameters (default {"query": "{query}", "limit": {limit}})')
    group.add_argument("--http-header", dest="http_headers", action="append", default=None,
                       metavar="'NAME: VALUE'", help="repeatable; VALUE may hold ${ENV_NAME}, never recorded")
    group.add_argument("--http-timeout", type=float, default=None, metavar="SECONDS")
    group.add_argument("--http-retries", type=int, default=None, metavar="N")
    group.add_argument("--concurrency", type=int, default=None, metavar="N",
                       help="queries in flight at once (http, command; default 1)")
    group.add_argument("--hits-path", default=None, help="dotted path to the hit list (e.g. hits.hits)")
    group.add_argument("--path-field", default=None, help="dotted path in a hit (default path)")
    group.add_argument("--heading-field", default=None, help="dotted path in a hit (default heading)")
    group.add_argument("--score-field", default=None, help="dotted path in a hit (default score)")
    group.add_argument("--path-prefix-strip", action="append", default=None, metavar="PREFIX",
                       help="repeatable; removed from returned paths to make them KB-relative")
    group.add_argument("--command", default=None,
                       help="e.g. 'kb-mcp search --format json --limit {limit} {query}' (no shell)")
    group.add_argument("--command-timeout", type=float, default=None, metavar="SECONDS")
    group.add_argument("--run", default=None, metavar="FILE", help="TREC or JSONL run file")


def options_from_namespace(namespace: argparse.Namespace) -> RetrieverOptions:
    return RetrieverOptions(
        retriever=namespace.retriever,
        http_url=namespace.http_url,
        http_method=namespace.http_method,
        http_body=namespace.http_body,
        http_headers=tuple(namespace.http_headers or ()),
        http_timeout=namespace.http_timeout,
        http_retries=namespace.http_retries,
        concurrency=namespace.concurrency,
        hits_path=namespace.hits_path,
        path_field=namespace.path_field,
        heading_field=namespace.heading_field,
        score_field=namespace.score_field,
        path_prefix_strip=tuple(namespace.path_prefix_strip or ()),
        command=namespace.command,
        command_timeout=namespace.command_timeout,
        run=namespace.run,
    )


def choose_kind(options: RetrieverOptions) -> RetrieverKind:
    """The --retriever given, or the one implied by its source flag, or builtin."""
    if options.retriever is not None:
        kind = RetrieverKind(options.retriever)
    else:
        implied = [kind for kind, flag in _SOURCE_FLAG.items() if getattr(options, flag) is not None]
        if len(implied) > 1:
            raise InputError(
                "more than one of --http-url, --command, --run is given",
                field="--retriever",
                hint="keep one, or say which with --retriever",
            )
        kind = implied[0] if implied else RetrieverKind.BUILTIN
    stray = [
        "--" + name.replace("_", "-").replace("http-headers", "http-header")
        for name in RetrieverOptions.__slots__
        if name != "retriever" and name not in _FLAGS_OF[kind] and _given(getattr(options, name))
    ]
    if stray:
        raise InputError(
            f"{', '.join(stray)} do(es) not apply to --retriever {kind.value}",
            field="--retriever",
            hint="remove the flag, or choose the retriever it belongs to",
        )
    source = _SOURCE_FLAG.get(kind)
    if source is not None and getattr(options, source) is None:
        raise InputError(
            f"--retriever {kind.value} needs --{source.replace('_', '-')}",
            field="--" + source.replace("_", "-"),
        )
    return kind


def build_retriever(
    options: RetrieverOptions,
    builtin: Callable[[], Retriever],
    env: Mapping[str, str] | None = None,
) -> Retriever:
    """The retriever the options ask for; `builtin` is only called when it is the one chosen.

    `env` resolves `${ENV_NAME}` in --http-url, --http-header and --http-body (default os.environ).
    """
    kind = choose_kind(options)
    if kind is RetrieverKind.BUILTIN:
        return builtin()
    if kind is RetrieverKind.RUN:
        assert options.run is not None  # choose_kind refused a missing --run
        return RunFileRetriever(Path(options.run))
    mapping = _mapping(options)
    if kind is RetrieverKind.HTTP:
        assert options.http_url is not None
        settings = http_module.HttpSettings(
            url=options.http_url,
            method=http_module.parse_method(options.http_method or "POST"),
            body_template=options.http_body or http_module.DEFAULT_BODY_TEMPLATE,
            headers=tuple(http_module.parse_header(text) for text in options.http_headers),
            timeout_s=_or(options.http_timeout, http_module.DEFAULT_TIMEOUT_S),
            retries=_or(options.http_retries, http_module.DEFAULT_RETRIES),
            concurrency=_or(options.concurrency, 1),
        )
        return http_module.HttpRetriever(settings, mapping, os.environ if env is None else env)
    if kind is RetrieverKind.COMMAND:
        assert options.command is not None
        return command_module.CommandRetriever(
            command_module.CommandSettings(
                template=options.command,
                timeout_s=_or(options.command_timeout, command_module.DEFAULT_TIMEOUT_S),
                concurrency=_or(options.concurrency, 1),
            ),
            mapping,
        )
    raise AssertionError(f"unhandled retriever kind {kind}")


def external_retriever_factory(
    options: RetrieverOptions, env: Mapping[str, str] | None = None
) -> Callable[[], Retriever] | None:
    """None when the built-in retriever is chosen, else a factory for the external one.

    The choice and the flags are checked now, so a usage error surfaces before
    the corpus is read; the retriever itself is built when the factory is called.
    """
    if choose_kind(options) is RetrieverKind.BUILTIN:
        return None

    def build() -> Retriever:
        return build_retriever(options, _builtin_not_expected, env)

    return build


def _builtin_not_expected() -> Retriever:
    raise AssertionError("choose_kind said the retriever is external")


def _mapping(options: RetrieverOptions) -> ResponseMapping:
    defaults = ResponseMapping()
    return ResponseMapping(
        hits_path=None if options.hits_path is None else validate_dotted_path(options.hits_path, "--hits-path"),
        path_field=validate_dotted_path(_or(options.path_field, defaults.path_field), "--path-field"),
        heading_field=validate_dotted_path(_or(options.heading_field, defaults.heading_field), "--heading-field"),
        score_field=validate_dotted_path(_or(options.score_field, defaults.score_field), "--score-field"),
        path_prefix_strip=options.path_prefix_strip,
    )


def _given(value: object) -> bool:
    return value is not None and value != ()


def _or(value: T | None, default: T) -> T:
    return default if value is None else value
