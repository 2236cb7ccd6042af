"""What the docs name in the code exists: a constant written `module.NAME` (docs/limits-and-safety.md
names every cap so) is defined in a module or package of that name, and a file of scanner/, bench/ or
tests/ named in the docs or in the code's comments is there."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOCUMENTS = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
CONSTANT = re.compile(r"`([a-z_]+)\.([A-Z][A-Z0-9_]{3,})`")
PATH = re.compile(r"\b((?:scanner|bench|tests)/[A-Za-z0-9_/]+\.py)\b")
"""A file of the project named in prose or a comment (`scanner/git/tree.py`)."""
SOURCES = [*sorted((ROOT / "scanner").rglob("*.py")), *sorted((ROOT / "bench").glob("*.py")), ROOT / "Dockerfile"]
"""The code whose comments name files (tests are left out: they plant made-up paths on purpose)."""


def module_level_names() -> dict[str, set[str]]:
    """Each module-level name of scanner/, with the modules and packages that define it (the docs
    write `markdown.MAX_FRONTMATTER_BYTES` and `golden.MAX_QUERIES` alike)."""
    defined: dict[str, set[str]] = {}
    for path in (ROOT / "scanner").rglob("*.py"):
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            if isinstance(node, ast.Assign):
                names = [target.id for target in node.targets if isinstance(target, ast.Name)]
            elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
                names = [node.target.id]
            else:
                continue
            for name in names:
                defined.setdefault(name, set()).update((path.stem, path.parent.name))
    return defined


def missing_constants(text: str, defined: dict[str, set[str]]) -> list[str]:
    return [match.group(0) for match in CONSTANT.finditer(text) if match.group(1) not in defined.get(match.group(2), set())]


def test_every_constant_the_docs_name_is_defined_in_the_module_they_name() -> None:
    defined = module_level_names()
    missing = {document.name: missing_constants(document.read_text(encoding="utf-8"), defined) for document in DOCUMENTS}
    assert {name: names for name, names in missing.items() if names} == {}


def test_a_constant_named_in_a_module_that_no_longer_holds_it_is_seen() -> None:
    defined = module_level_names()
    assert missing_constants("the cap (`chunking.MAX_SECTIONS_PER_DOCUMENT`)", defined) == ["`chunking.MAX_SECTIONS_PER_DOCUMENT`"]
    assert missing_constants("the cap (`markdown.MAX_SECTIONS_PER_DOCUMENT`)", defined) == []


def test_every_file_the_docs_and_the_code_name_is_there() -> None:
    missing = {
        source.relative_to(ROOT).as_posix(): [
            path for path in PATH.findall(source.read_text(encoding="utf-8")) if not (ROOT / path).is_file()
        ]
        for source in [*DOCUMENTS, *SOURCES]
    }
    assert {name: paths for name, paths in missing.items() if paths} == {}


def test_a_file_that_moved_would_be_seen() -> None:
    text = "read by dulwich (scanner/git/base.py), cut by scanner/corpus/markdown.py"
    assert [path for path in PATH.findall(text) if not (ROOT / path).is_file()] == ["scanner/git/base.py"]
