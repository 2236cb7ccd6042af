"""docs/container.md's recipe runs as written in a clone of kb-eval: every KB folder it names is
there, with its golden file."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
KB_PATHS = re.compile(r"INPUT_KB-PATH=([^'\s]+)|--kb-path ([^`\s]+)")


def kb_paths(text: str) -> list[str]:
    return [match.group(1) or match.group(2) for match in KB_PATHS.finditer(text)]


def test_every_kb_folder_the_container_recipe_names_is_in_the_clone() -> None:
    paths = kb_paths((ROOT / "docs" / "container.md").read_text(encoding="utf-8"))
    assert paths, "the recipe names no KB folder: the check would pass vacuously"
    assert [path for path in paths if not (ROOT / path / ".kb-eval.yml").is_file()] == []


def test_a_folder_the_clone_lacks_would_be_seen() -> None:
    missing = [path for path in kb_paths("-e 'INPUT_KB-PATH=docs/kb' \\") if not (ROOT / path / ".kb-eval.yml").is_file()]
    assert missing == ["docs/kb"]
