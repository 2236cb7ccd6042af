"""Choosing and building the retriever: the one place that knows every kind.

`choose_kind` decides which retriever a run uses and refuses a setting that
belongs to another one (for every kind, the built-in one included: a setting
that would silently do nothing is a mistake the person wants to hear about).
`build_retriever` builds it; the built-in one needs the index the pipeline
built, the others ignore it. Which setting belongs to which retriever is
declared once, in scanner/settings/declaration.py.

Adding a retriever: a module in this package, a `RetrieverKind` member
(base.py), its settings in scanner/settings/declaration.py, and a branch in
`build_retriever`.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from scanner.foundation.errors import InputError
from scanner.retrievers import command as command_module
from scanner.retrievers import http_settings, mcp_settings, sides
from scanner.retrievers.base import AnswerCost, AnswerNote, Hit, Retriever, RetrieverKind, SearchRequest
from scanner.retrievers.builtin import BuiltinRetriever
from scanner.retrievers.mapping import ResponseMapping, validate_dotted_path
from scanner.retrievers.runfile import RunFileRetriever
from scanner.retrievers.templates import SideSlots, fill_side, uses_side
from scanner.search.index import Index
from scanner.settings.declaration import SETTINGS, RunSettings, Setting, display_name, in_interface_words, setting

__all__ = ["RetrieverBuilder", "RetrieverKind", "build_retriever", "choose_kind", "retriever_builder"]

@dataclass(frozen=True, slots=True)
class RetrieverBuilder:
    """Builds the run's retriever for one side: over that side's index, with that side's KB
    folder for the templates' `{kb}`, ready for these requests."""

    kind: RetrieverKind
    build: Callable[[Index, Sequence[SearchRequest], Path | None], Retriever]

    def __call__(self, index: Index, requests: Sequence[SearchRequest], folder: Path | None = None) -> Retriever:
        return self.build(index, requests, folder)

SOURCE_SETTING: Mapping[RetrieverKind, tuple[str, ...]] = {
    RetrieverKind.HTTP: ("http-url",),
    RetrieverKind.COMMAND: ("command",),
    RetrieverKind.MCP: ("mcp-command", "mcp-url"),
    RetrieverKind.RUN: ("run-file",),
}
"""The settings without one of which a retriever has nothing to ask (exactly one is given); giving
one alone chooses that retriever."""


def choose_kind(settings: RunSettings) -> RetrieverKind:
    """The retriever given, or the one implied by its source setting, or builtin.

    Refused (InputError naming the settings as the person wrote them): two
    source settings without a choice, a chosen retriever without its source
    (or with two of its sources), and any setting given that belongs to
    another retriever.
    """
    interface = settings.interface
    retriever = setting("retriever")
    given_sources = {
        kind: [name for name in names if name in settings.given] for kind, names in SOURCE_SETTING.items()
    }
    if settings.retriever is not None:
        kind = settings.retriever
    else:
        implied = [kind for kind, names in given_sources.items() if names]
        if len(implied) > 1:
            names = ", ".join(display_name(setting(given_sources[kind][0]), interface) for kind in implied)
            raise InputError(
                f"more than one retriever source is given: {names}",
                field=display_name(retriever, interface),
                hint=f"keep one, or say which with {display_name(retriever, interface)}",
            )
        kind = implied[0] if implied else RetrieverKind.BUILTIN
    refuse_settings_of_other_retrievers(settings, kind)
    sources = SOURCE_SETTING.get(kind, ())
    if sources and not given_sources[kind]:
        needed = " or ".join(display_name(setting(name), interface) for name in sources)
        raise InputError(
            f"{display_name(retriever, interface)} {kind.value} needs {needed}",
            field=display_name(setting(sources[0]), interface),
            hint=f"give {needed}, or choose another retriever",
        )
    if len(given_sources.get(kind, ())) > 1:
        both = " and ".join(display_name(setting(name), interface) for name in given_sources[kind])
        raise InputError(
            f"{both} are both given; the {kind.value} retriever asks one server",
            field=display_name(setting(given_sources[kind][1]), interface),
            hint="keep the one that reaches the server to evaluate",
        )
    return kind


def refuse_settings_of_other_retrievers(settings: RunSettings, kind: RetrieverKind) -> None:
    """A retriever's setting given for another retriever would do nothing and be recorded nowhere."""
    stray = [s for s in SETTINGS if s.retrievers and kind not in s.retrievers and s.name in settings.given]
    if not stray:
        return
    names = ", ".join(display_name(s, settings.interface) for s in stray)
    owners = "; ".join(f"{display_name(s, settings.interface)}: {_kinds(s)}" for s in stray)
    raise InputError(
        f"{names} {'does' if len(stray) == 1 else 'do'} not apply to "
        f"{display_name(setting('retriever'), settings.interface)} {kind.value}",
        field=display_name(stray[0], settings.interface),
        hint=f"remove {'it' if len(stray) == 1 else 'them'}, or choose the retriever "
        f"{'it belongs' if len(stray) == 1 else 'each belongs'} to ({owners})",
    )


def _kinds(spec: Setting) -> str:
    return " or ".join(kind.value for kind in RetrieverKind if kind in spec.retrievers)


def retriever_builder(settings: RunSettings, env: Mapping[str, str] | None = None) -> RetrieverBuilder:
    """`build_retriever` for these settings, to be called once the index exists.

    The choice is checked now, so a usage error stops the run before the corpus is read.
    """
    kind = choose_kind(settings)

    def build(index: Index, requests: Sequence[SearchRequest], folder: Path | None) -> Retriever:
        return build_retriever(settings, index, requests, env, folder)

    return RetrieverBuilder(kind, build)


def build_retriever(
    settings: RunSettings,
    index: Index,
    requests: Sequence[SearchRequest],
    env: Mapping[str, str] | None = None,
    folder: Path | None = None,
) -> Retriever:
    """The retriever the settings ask for, ready to answer `requests`.

    `index` is the pipeline's index of the KB (only the built-in retriever
    reads it). `env` resolves `${ENV_NAME}` in the http settings (default os.environ).
    """
    kind = choose_kind(settings)
    try:
        if not answers_per_side(settings) or kind is RetrieverKind.BUILTIN:
            return _build(kind, settings, index, requests, env, None)
        environ = os.environ if env is None else env
        environment = command_module.command_environment(settings.command_env, environ)
        side = sides.Side(
            folder if folder is not None else Path.cwd(), side_programs(settings), environment,
            sides.withheld(environment, environ), command_module.passed_secrets(environment, settings.command_env),
        )
        slots = side.open()
        try:
            return SideBound(_build(kind, settings, index, requests, env, slots), side, settings)
        except BaseException:
            side.close()
            raise
    except InputError as error:
        # The retriever modules word their refusals for the command line.
        raise in_interface_words(error, settings.interface) from None


def side_programs(settings: RunSettings) -> sides.SidePrograms:
    return sides.SidePrograms(
        index_command=settings.index_command, index_timeout_s=settings.index_timeout,
        serve_command=settings.serve_command, serve_timeout_s=settings.serve_timeout,
        address=(settings.http_url or settings.mcp_url) if settings.serve_command is not None else None,
    )


def answers_per_side(settings: RunSettings) -> bool:
    """Whether the retriever answers for the tree it is given: the built-in search, or one whose
    index is built or served per side, or whose templates name the side's folder. Any other
    answers from one index whatever tree is evaluated, so it cannot evaluate a pull request's base."""
    if choose_kind(settings) is RetrieverKind.BUILTIN:
        return True
    if settings.index_command is not None or settings.serve_command is not None:
        return True
    templates = [
        settings.command, settings.http_url, settings.http_body, str(settings.run) if settings.run else None,
        settings.mcp_command, settings.mcp_url, settings.mcp_arguments,
    ]
    return any(template is not None and uses_side(template) for template in templates)


class SideBound:
    """A retriever with its own index, bound to one side: closing it stops that side's server and
    removes its work folder. Its description adds the per-side programs (when given) to the
    retriever's, so two runs built or served differently are not compared."""

    def __init__(self, inner: Retriever, side: sides.Side, settings: RunSettings) -> None:
        self._inner = inner
        self._side = side
        self._programs = {
            key: value for key, value in (
                ("index_command", settings.index_command), ("serve_command", settings.serve_command)
            ) if value is not None
        }

    @property
    def kind(self) -> RetrieverKind:
        return self._inner.kind

    @property
    def path_prefixes(self) -> tuple[str, ...]:
        return self._inner.path_prefixes

    def describe(self) -> dict[str, object]:
        return {**self._inner.describe(), **self._programs}

    def search_all(self, requests: Sequence[SearchRequest]) -> list[list[Hit]]:
        return self._inner.search_all(requests)

    def notes(self) -> tuple[AnswerNote, ...]:
        return self._inner.notes()

    def costs(self) -> tuple[AnswerCost, ...]:
        return self._inner.costs()

    def close(self) -> None:
        try:
            self._inner.close()
        finally:
            self._side.close()


def _build(
    kind: RetrieverKind,
    settings: RunSettings,
    index: Index,
    requests: Sequence[SearchRequest],
    env: Mapping[str, str] | None,
    slots: SideSlots | None,
) -> Retriever:
    if kind is RetrieverKind.BUILTIN:
        builtin = BuiltinRetriever(index, settings.weights, settings.tokenization)
        # Its scorer is built now (the corpus analysed), before the pipeline opens the read snapshot.
        builtin.prepare(requests)
        return builtin
    if kind is RetrieverKind.RUN:
        assert settings.run is not None  # choose_kind refused a missing run-file
        if slots is not None and uses_side(str(settings.run)):
            return RunFileRetriever(Path(fill_side(str(settings.run), slots, "--run-file")), template=str(settings.run))
        return RunFileRetriever(settings.run)
    mapping = _mapping(settings)
    if kind is RetrieverKind.HTTP:
        assert settings.http_url is not None  # choose_kind refused a missing http-url
        http = http_settings.HttpSettings(
            url=settings.http_url,
            method=http_settings.parse_method(settings.http_method),
            body_template=settings.http_body or http_settings.DEFAULT_BODY_TEMPLATE,
            headers=tuple(
                http_settings.parse_header(text, number) for number, text in enumerate(settings.http_headers, start=1)
            ),
            timeout_s=settings.http_timeout,
            retries=settings.http_retries,
            concurrency=settings.concurrency,
        )
        from scanner.retrievers.http import HttpRetriever  # requests is imported by the runs that use it

        return HttpRetriever(http, mapping, os.environ if env is None else env, slots)
    if kind is RetrieverKind.COMMAND:
        assert settings.command is not None  # choose_kind refused a missing command
        return command_module.CommandRetriever(
            command_module.CommandSettings(
                template=settings.command, timeout_s=settings.command_timeout, concurrency=settings.concurrency,
                env_names=settings.command_env,
            ),
            mapping,
            env,
            slots,
        )
    if kind is RetrieverKind.MCP:
        from scanner.retrievers.mcp import McpRetriever  # the MCP SDK is imported by the runs that use it

        return McpRetriever(
            mcp_settings.McpSettings(
                command=settings.mcp_command,
                url=settings.mcp_url,
                tool=settings.mcp_tool,
                arguments=settings.mcp_arguments,
                headers=tuple(
                    http_settings.parse_header(text, number)
                    for number, text in enumerate(settings.http_headers, start=1)
                ),
                timeout_s=settings.mcp_timeout,
                concurrency=settings.concurrency,
                env_names=settings.command_env,
            ),
            mapping,
            env,
            slots=slots,
        )
    raise AssertionError(f"unhandled retriever kind {kind}")


def _mapping(settings: RunSettings) -> ResponseMapping:
    def dotted(value: str, name: str) -> str:
        return validate_dotted_path(value, display_name(setting(name), settings.interface))

    return ResponseMapping(
        hits_path=None if settings.hits_path is None else dotted(settings.hits_path, "hits-path"),
        path_field=dotted(settings.path_field, "path-field"),
        heading_field=dotted(settings.heading_field, "heading-field"),
        score_field=dotted(settings.score_field, "score-field"),
        path_prefix_strip=settings.path_prefix_strip,
    )
