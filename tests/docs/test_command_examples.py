"""The documented command-retriever examples are safe as written.

A golden query is text from the pull request: one that starts with `-` is read as an option by
the program unless `--` ends its options first. People copy examples, so every `--command`
example in the README and the docs puts `--` right before `{query}`.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOCUMENTS = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md")), *sorted((ROOT / "examples").rglob("*.yml"))]
EXAMPLE = re.compile(r"""(?:--command|command:)\s*(?:'([^']*\{query\}[^']*)'|"([^"]*\{query\}[^"]*)")""")


def command_examples() -> list[tuple[str, str]]:
    found = []
    for document in DOCUMENTS:
        for match in EXAMPLE.finditer(document.read_text(encoding="utf-8")):
            found.append((document.name, match.group(1) or match.group(2)))
    return found


def query_can_be_an_option(template: str) -> bool:
    """Whether a query starting with `-` would reach the program as an argument of its own that it
    may parse as an option: `{query}` alone as an argument, with no `--` before it. Safe as
    written: `-- {query}`, `{query}` inside a larger argument (`P={query}`, SQL), and the operands
    after `sh SCRIPT` (sh reads no option after the script's name; the script sees a value)."""
    words = shlex.split(template)
    if "{query}" not in words:
        return False
    at = words.index("{query}")
    if "--" in words[:at]:
        return False
    return not (words[0] == "sh" and at >= 2 and not words[1].startswith("-"))


def test_every_command_example_ends_options_before_the_query() -> None:
    examples = command_examples()
    assert examples, "no --command example found: the pattern no longer matches the docs"
    for name, template in examples:
        assert not query_can_be_an_option(template), (name, template)


def test_the_check_sees_an_example_without_the_separator() -> None:
    # The near miss: the check itself finds an unsafe example, and lets the safe forms through.
    assert query_can_be_an_option("tool search --limit {limit} {query}")
    assert not query_can_be_an_option("tool search --limit {limit} -- {query}")
    assert not query_can_be_an_option("sh script.sh {query} {limit}")
    assert not query_can_be_an_option("omega P={query}")
