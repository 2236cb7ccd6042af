"""The README's inputs and outputs tables, generated from action.yml.

`python -m tests.action_docs` prints both tables for pasting into README.md;
tests/test_action_metadata.py checks the README holds exactly these.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parent.parent
ACTION_YML = ROOT / "action.yml"


def load_action(path: Path = ACTION_YML) -> dict[str, Any]:
    with path.open(encoding="utf-8") as file:
        data = yaml.safe_load(file)
    assert isinstance(data, dict)
    return data


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


def _default(value: object) -> str:
    text = str(value)
    return "`''`" if text == "" else f"`{text}`"


def inputs_table(action: dict[str, Any]) -> str:
    lines = ["| Input | Default | Description |", "| --- | --- | --- |"]
    for name, spec in action["inputs"].items():
        lines.append(f"| `{name}` | {_default(spec.get('default', ''))} | {_cell(spec['description'])} |")
    return "\n".join(lines) + "\n"


def outputs_table(action: dict[str, Any]) -> str:
    lines = ["| Output | Description |", "| --- | --- |"]
    for name, spec in action["outputs"].items():
        lines.append(f"| `{name}` | {_cell(spec['description'])} |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    action = load_action()
    print("### Inputs\n")
    print(inputs_table(action))
    print("### Outputs\n")
    print(outputs_table(action))
