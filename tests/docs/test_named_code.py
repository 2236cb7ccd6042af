"""What the docs name in the code exists: a constant written `module.NAME` (docs/limits-and-safety.md
names every cap so) is defined in a module or package of that name, and a `scanner/...` path is a file."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOCUMENTS = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
CONSTANT = re.compile(r"`([a-z_]+)\.([A-Z][A-Z0-9_]{3,})`")
PATH = re.compile(r"`(scanner/[A-Za-z0-9_/]+\.py)`")


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


def test_every_scanner_path_the_docs_name_is_a_file() -> None:
    missing = {
        document.name: [path for path in PATH.findall(document.read_text(encoding="utf-8")) if not (ROOT / path).is_file()]
        for document in DOCUMENTS
    }
    assert {name: paths for name, paths in missing.items() if paths} == {}
