"""The Action's inputs: every declared setting read from its `INPUT_*` variable (the runner sets
each one, defaults included; names keep their hyphens), checked once by the declaration, and paths
refused when they leave the workspace. A refusal names the input as the workflow spells it."""

from __future__ import annotations

import os
import posixpath
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from scanner.foundation.errors import InputError
from scanner.github.comment import CommentMode
from scanner.github.workflow import (
    input_variable,
    read_bool_input,
    read_input,
)
from scanner.settings.declaration import SETTINGS, Form, Interface, RunSettings, Setting, convert, run_settings
from scanner.settings.retriever import choose_kind


def _outside_a_runner(default: str) -> str:
    # An expression default (`${{ github.token }}`) is evaluated by the runner only; outside a
    # runner the input is simply not set.
    return "" if "${{" in default else default


INPUT_DEFAULTS: Mapping[str, str] = {
    spec.name: _outside_a_runner(spec.action_default_text) for spec in SETTINGS if spec.action
}
"""action.yml's defaults, derived from the same declarations (scanner/settings/declaration.py). The runner
always sets every input; these only fill in for a run outside a runner."""


@dataclass(frozen=True, slots=True)
class ActionInputs:
    """The inputs, checked: the run's settings and the Action's own.

    Paths are relative to the workspace, `/`-separated, normalised.
    """

    settings: RunSettings
    """What `kb-eval` runs with, read from the inputs (`interface` is ACTION)."""
    annotations: bool
    max_annotations: int
    summary: bool
    comment: CommentMode
    github_token: str

    @property
    def kb_path(self) -> str:
        return self.settings.kb_path.as_posix()

    @property
    def golden(self) -> str | None:
        return _posix(self.settings.golden)

    @property
    def report(self) -> str:
        # The report input has a non-empty default and an empty value means that default.
        assert self.settings.output is not None
        return self.settings.output.as_posix()

    @property
    def history(self) -> str | None:
        return _posix(self.settings.history)

    @property
    def save_baseline(self) -> str | None:
        return _posix(self.settings.save_baseline)

    @property
    def fail_on_regression(self) -> bool:
        return self.settings.fail_on_regression


def _posix(path: Path | None) -> str | None:
    return None if path is None else path.as_posix()


def _why_unresolvable(error: BaseException) -> str:
    if isinstance(error, OSError) and error.strerror:
        return error.strerror
    return "a loop of symbolic links"


def workspace_path(workspace: Path, raw: str, name: str) -> str:
    """`raw` (relative to the workspace, or absolute inside it) as a normalised relative path.

    Refused with an InputError (exit 2): a path that leaves the workspace,
    by `..`, by being absolute elsewhere, or through a symbolic link that
    resolves outside it. The action must read only the checked-out
    repository, and write only there (its files are handed to the
    workspace owner afterwards). A line break is refused too: one path per
    input, and a `|` block in YAML is the usual way to get one by mistake.
    """
    if "\n" in raw or "\r" in raw or "\0" in raw:
        raise InputError(
            f"input {name} holds a line break or NUL; give one path",
            field=name,
            hint="write the path on one line (a `|` block in the workflow adds a line break)",
        )
    root = workspace.resolve()
    relative: str | None
    if os.path.isabs(raw):
        # /github/workspace/x names the workspace by its own path, or by the resolved one.
        absolute = posixpath.normpath(raw)
        relative = None
        for base in (posixpath.normpath(workspace.as_posix()), root.as_posix()):
            if absolute == base or absolute.startswith(base.rstrip("/") + "/"):
                relative = posixpath.relpath(absolute, base)
                break
    else:
        relative = posixpath.normpath(raw)
    # The lexical form is what the CLI is given; the resolved form is where it really leads.
    leaves = relative is None or relative == ".." or relative.startswith("../")
    if not leaves:
        try:
            resolved = (root / str(relative)).resolve()
        except (RuntimeError, OSError) as error:  # RuntimeError: a symbolic link loop (Python 3.11)
            raise InputError(
                f"input {name} is {raw!r}, which cannot be followed ({_why_unresolvable(error)})",
                field=name,
                hint="give a path inside the repository checkout that is not a loop of symbolic links",
            ) from None
        leaves = resolved != root and root not in resolved.parents
    if leaves or relative is None:
        raise InputError(
            f"input {name} is {raw!r}, which points outside the workspace ({workspace})",
            field=name,
            hint="give a path inside the repository checkout, relative to its root (symbolic links included)",
        )
    return relative


def _spelling(environ: Mapping[str, str], spec: Setting) -> tuple[str, str]:
    """The input's text and the spelling it was given under (an alias such as `output`, or the name).

    The runner sets every declared input, aliases to "" by default; an alias set
    to something else stands in for the name, unless both say different things.
    """
    name = spec.name
    text = read_input(environ, name) if input_variable(name) in environ else INPUT_DEFAULTS[name]
    for alias in spec.aliases:
        other = read_input(environ, alias)
        if not other or other == text:
            continue
        if text not in ("", INPUT_DEFAULTS[name]):
            raise InputError(
                f"inputs {name} and {alias} are both set, to different values",
                field=name,
                hint=f"{alias} is another spelling of {name}: keep one",
            )
        return other, alias
    return text, name


def _value(environ: Mapping[str, str], workspace: Path, spec: Setting) -> tuple[Any, bool]:
    """One input's value and whether it was given (set to other than its default)."""
    if spec.form is Form.SWITCH:
        value = read_bool_input(environ, spec.name, default=bool(spec.default))
        return value, value != spec.default
    text, spelling = _spelling(environ, spec)
    if spec.form is Form.LIST:
        items = tuple(line.strip() for line in text.splitlines() if line.strip())
        return tuple(convert(spec, item, Interface.ACTION) for item in items), bool(items)
    # An empty input means its default: `with: limit: ${{ inputs.limit }}` passes "" when unset.
    default_text = INPUT_DEFAULTS[spec.name]
    if text in ("", default_text):
        if spec.action_default is None or not default_text:
            return spec.default, False
        text = default_text
    if spec.path:
        text = workspace_path(workspace, text, spelling)
    return convert(spec, text, Interface.ACTION), text != default_text


def _no_history_unless_named(values: dict[str, Any], given: list[str]) -> None:
    """An empty history input keeps no history: a workflow's files are gone after the job, so a
    default history file in the KB folder would be written for nothing (the CLI's default)."""
    if values.get("history") is None:
        values["no_history"] = True
        given.append("no-history")


def read_inputs(environ: Mapping[str, str], workspace: Path) -> ActionInputs:
    """Every input, checked once, in declaration order; the first bad one raises an InputError naming it."""
    values: dict[str, Any] = {}
    given: list[str] = []
    for spec in SETTINGS:
        if not spec.action:
            continue
        values[spec.attribute], is_given = _value(environ, workspace, spec)
        if is_given and spec.cli:
            given.append(spec.name)
    _no_history_unless_named(values, given)
    run = run_settings(values, given, Interface.ACTION)
    choose_kind(run)  # a setting of another retriever, named as an input
    return ActionInputs(
        settings=run,
        annotations=values["annotations"],
        max_annotations=values["max_annotations"],
        summary=values["summary"],
        comment=values["comment"],
        github_token=values["github_token"],
    )
