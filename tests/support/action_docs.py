"""action.yml's `inputs:` and the README's settings table, derived from scanner/settings/declaration.py.

`python -m tests.support.action_docs --write` rewrites action.yml's `inputs:` section and
the README's settings table (every flag and input, one row per setting) from the declarations;
`python -m tests.support.action_docs` prints them. tests/action/test_metadata.py fails
when the checked-in files differ from what this module derives.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import yaml

from scanner.settings.declaration import RUN_SETTINGS, SETTINGS, Form, Setting

ROOT = Path(__file__).resolve().parents[2]
ACTION_YML = ROOT / "action.yml"
README = ROOT / "README.md"

SETTINGS_TABLE_HEADER = "| flag | Action input | default | what it does |\n|---|---|---|---|\n"
PATH_NOTE = "Relative to the repository root"
"""How the Action's path inputs are read; the README says it once, above the settings table."""
OUTPUTS_TABLE_HEADER = "| Output | Description |\n| --- | --- |\n"


def load_action(path: Path = ACTION_YML) -> dict[str, Any]:
    with path.open(encoding="utf-8") as file:
        data = yaml.safe_load(file)
    assert isinstance(data, dict)
    return data


def action_description(spec: Setting) -> str:
    """The input's description: the help as a sentence, the Action's note, then the default when it needs words.

    A note that says what an empty input means replaces the CLI's default note (the
    history input: empty keeps none, where the CLI's default is a file in the KB).
    """
    text = spec.help[0].upper() + spec.help[1:] + "."
    if spec.action_note:
        text += " " + spec.action_note
    if (
        spec.action_default_text == ""
        and spec.default_note not in (None, "none")
        and "empty" not in spec.action_note.lower()
    ):
        text += f" Default: {spec.default_note}."
    if spec.aliases:
        text += " Also spelled " + ", ".join(f"`{alias}`" for alias in spec.aliases) + "."
    return text


def action_inputs() -> dict[str, dict[str, str]]:
    """The `inputs:` mapping: every Action setting, then each old spelling (default empty)."""
    inputs: dict[str, dict[str, str]] = {}
    for spec in SETTINGS:
        if spec.action:
            inputs[spec.name] = {"description": action_description(spec), "default": spec.action_default_text}
    for spec in SETTINGS:
        if spec.action:
            for alias in spec.aliases:
                inputs[alias] = {
                    "description": f"Another spelling of {spec.name}, kept from earlier versions; set one of the two.",
                    "default": "",
                }
    return inputs


def _quoted(text: str) -> str:
    # A JSON string is a valid YAML double-quoted scalar: no YAML syntax inside a value matters.
    return json.dumps(text, ensure_ascii=False)


def action_inputs_yaml() -> str:
    lines = ["inputs:"]
    for name, spec in action_inputs().items():
        lines += [
            f"  {name}:",
            f"    description: {_quoted(spec['description'])}",
            "    required: false",
            f"    default: {_quoted(spec['default'])}",
        ]
    return "\n".join(lines) + "\n"


def with_inputs(action_yml: str) -> str:
    """`action_yml` with its `inputs:` section replaced by the derived one (up to the next top-level key)."""
    lines = action_yml.splitlines(keepends=True)
    start = lines.index("inputs:\n")
    end = next(
        (i for i in range(start + 1, len(lines)) if lines[i][:1] not in (" ", "\n", "#")),
        len(lines),
    )
    return "".join(lines[:start]) + action_inputs_yaml() + "\n" + "".join(lines[end:])


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


def _default(value: object) -> str:
    text = str(value)
    return "`''`" if text == "" else f"`{text}`"


def _flag_cell(spec: Setting) -> str:
    def one(flag: str) -> str:
        if spec.form is Form.SWITCH:
            return f"`{flag}`"
        return f"`{flag} {spec.metavar}`"

    return _cell(" / ".join(one(flag) for flag in spec.flags))


def _cli_default(spec: Setting) -> str:
    default = spec.default_note if spec.default_note is not None else f"`{spec.default_text}`"
    if any(char in default for char in "<{"):
        default = f"`{default}`"  # `<kb>` would be read as an HTML tag
    return default


def settings_table() -> str:
    """One row per setting, in declaration order: its flag and its Action input (a dash where an
    interface lacks it), the default of each where they differ, and what it does, with the Action's
    own note (what an input's path is relative to, one value per line)."""
    lines = [SETTINGS_TABLE_HEADER.rstrip("\n")]
    on_cli = {spec.name for spec in RUN_SETTINGS}
    for spec in SETTINGS:
        flag = _flag_cell(spec) if spec.name in on_cli else "-"
        names = [spec.name, *spec.aliases] if spec.action else []
        action = " / ".join(f"`{name}`" for name in names) or "-"
        cli_default = _cli_default(spec) if spec.name in on_cli else None
        action_default = _default(spec.action_default_text) if spec.action else None
        if cli_default is None or action_default is None:
            default = cli_default or action_default or ""
        elif spec.action_default_text == "" or action_default == cli_default:
            default = cli_default
        else:
            default = f"{cli_default} (Action: {action_default})"
        what = spec.help + ("; repeatable" if spec.form is Form.LIST and spec.name in on_cli else "")
        # Said once above the table: an input's path is relative to the repository root.
        note = spec.action_note.removeprefix(PATH_NOTE).strip(" ;.") if spec.action else ""
        if note:
            what += f". Action: {note[0].upper()}{note[1:]}"
        lines.append(f"| {flag} | {action} | {_cell(default)} | {_cell(what)} |")
    return "\n".join(lines) + "\n"


def outputs_table(action: dict[str, Any]) -> str:
    lines = [OUTPUTS_TABLE_HEADER.rstrip("\n")]
    for name, spec in action["outputs"].items():
        lines.append(f"| `{name}` | {_cell(spec['description'])} |")
    return "\n".join(lines) + "\n"


def _replace_table(text: str, header: str, table: str) -> str:
    """The Markdown table starting with `header` replaced by `table` (it ends at the first blank line)."""
    start = text.index(header)
    end = text.index("\n\n", start) + 1
    return text[:start] + table + text[end:]


def with_tables(readme: str) -> str:
    return _replace_table(readme, SETTINGS_TABLE_HEADER, settings_table())


def main(argv: list[str]) -> int:
    if argv == ["--write"]:
        ACTION_YML.write_text(with_inputs(ACTION_YML.read_text(encoding="utf-8")), encoding="utf-8")
        README.write_text(with_tables(README.read_text(encoding="utf-8")), encoding="utf-8")
        return 0
    print(action_inputs_yaml())
    print(settings_table())
    print(outputs_table(load_action()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
