"""The command line's flags, derived from the declaration: one flag per CLI setting (aliases
included) in its group, and the namespace they produce checked into RunSettings."""

from __future__ import annotations

import argparse
from typing import Any

from scanner.settings.declaration import RUN_SETTINGS, Form, Group, Interface, RunSettings, convert, run_settings


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Every CLI setting as a flag (aliases included) in its group.

    Values are collected as text and checked by `read_cli`, so a refusal has
    the same shape and hint as in the Action. A flag not given is absent from
    the namespace (SUPPRESS), which is how `given` is known.
    """
    groups: dict[Group, Any] = {}
    for spec in RUN_SETTINGS:
        group = groups.get(spec.group)
        if group is None:
            group = groups[spec.group] = parser.add_argument_group(spec.group.value)
        shown = spec.default_note or spec.default_text
        help_text = f"{spec.help} (default: {shown})".replace("%", "%%")
        if spec.form is Form.SWITCH:
            group.add_argument(*spec.flags, dest=spec.attribute, action="store_true", default=argparse.SUPPRESS,
                               help=help_text)
        elif spec.form is Form.LIST:
            group.add_argument(*spec.flags, dest=spec.attribute, action="append", default=argparse.SUPPRESS,
                               metavar=spec.metavar, help=help_text + "; repeatable")
        else:
            group.add_argument(*spec.flags, dest=spec.attribute, default=argparse.SUPPRESS, metavar=spec.metavar,
                               help=help_text)


def read_cli(namespace: argparse.Namespace) -> RunSettings:
    """The namespace `add_arguments`' flags produced, checked; the first bad value raises InputError."""
    given = vars(namespace)
    values: dict[str, object] = {}
    names: list[str] = []
    for spec in RUN_SETTINGS:
        if spec.attribute not in given:
            continue
        raw = given[spec.attribute]
        names.append(spec.name)
        if spec.form is Form.SWITCH:
            values[spec.attribute] = bool(raw)
        elif spec.form is Form.LIST:
            values[spec.attribute] = tuple(convert(spec, item, Interface.CLI) for item in raw)
        else:
            values[spec.attribute] = convert(spec, raw, Interface.CLI)
    return run_settings(values, names, Interface.CLI)
