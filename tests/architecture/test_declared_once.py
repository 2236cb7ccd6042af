"""docs/architecture.md's "one copy of each rule" table, checked on the parsed code (ast): where the
fingerprint is read by key, where each rule and bound is defined, who writes a file, who checks a
setting's bounds. Each detector is also run on a planted copy, so none can pass by seeing nothing.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

from scanner.compare.comparison import QueryStatus, Source
from tests.conftest import REPO


def modules(root: Path) -> Iterator[tuple[str, ast.Module]]:
    for path in sorted((root / "scanner").rglob("*.py")):
        yield path.relative_to(root).as_posix(), ast.parse(path.read_text(encoding="utf-8"))


def _is_fingerprint(node: ast.AST, tainted: set[str]) -> bool:
    """`run.fingerprint`, or a name holding the fingerprint or a value taken from it."""
    return (isinstance(node, ast.Name) and node.id in tainted) or (
        isinstance(node, ast.Attribute) and node.attr == "fingerprint"
    )


def _read_by_key(node: ast.AST, tainted: set[str]) -> bool:
    """`x[...]` or `x.get(...)` with `x` the fingerprint (not `document["fingerprint"]`, which takes
    the fingerprint out of a JSON document)."""
    if isinstance(node, ast.Subscript):
        return _is_fingerprint(node.value, tainted) and not (
            isinstance(node.slice, ast.Constant) and node.slice.value == "fingerprint"
        )
    return (
        isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get"
        and _is_fingerprint(node.func.value, tainted)
    )


def reads_the_fingerprint_by_key(tree: ast.Module) -> bool:
    """A subscript or `.get()` on the fingerprint, or on a value taken from it (`document =
    _plain(fingerprint)`, `retriever = document.get("retriever")`), in any function or at module level.
    What holds the fingerprint: a parameter named for it, `.fingerprint`, and what is assigned from
    one of those, its copy (`dict(run.fingerprint)`) or a value read from it."""
    scopes: list[ast.AST] = [tree, *(n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)))]
    for scope in scopes:
        tainted: set[str] = set()
        if isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef)):
            tainted |= {arg.arg for arg in scope.args.args if "fingerprint" in arg.arg}
        for node in ast.walk(scope):
            if not isinstance(node, (ast.Assign, ast.AnnAssign)) or node.value is None:
                continue
            value = node.value
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            copied = isinstance(value, ast.Call) and any(_is_fingerprint(arg, tainted) for arg in value.args)
            if _is_fingerprint(value, tainted) or copied or _read_by_key(value, tainted):
                tainted |= {target.id for target in targets if isinstance(target, ast.Name)}
        if any(_read_by_key(node, tainted) for node in ast.walk(scope)):
            return True
    return False


def test_the_fingerprint_is_read_by_key_only_where_the_table_says() -> None:
    # The record's properties answer every reader (an older file may lack a key: one answer for
    # all), and the JSON writer derives kb-mcp's alias keys from it; compare/fingerprint.py compares
    # two fingerprints key by key, whatever the keys, and is the rule itself.
    readers = {name for name, tree in modules(REPO) if reads_the_fingerprint_by_key(tree)}
    assert readers == {"scanner/evaluation/records.py", "scanner/report/document.py"}


def test_a_renderer_reading_the_fingerprint_would_be_seen() -> None:
    for planted in (
        'name = run.fingerprint.get("retriever")\n',
        'def f(run):\n    settings = dict(run.fingerprint)\n    return settings["limit"]\n',
    ):
        assert reads_the_fingerprint_by_key(ast.parse(planted)), planted
    # The near misses: listing the fingerprint whole, or taking it out of a JSON document.
    for plain in ('text = "".join(f"{k}: {v}" for k, v in run.fingerprint.items())\n', 'raw = document["fingerprint"]\n'):
        assert not reads_the_fingerprint_by_key(ast.parse(plain)), plain


def test_statuses_and_sources_keep_their_report_spelling() -> None:
    assert [status.value for status in QueryStatus] == ["worse", "better", "mixed", "unchanged"]
    assert [source.value for source in Source] == ["history", "baseline", "git"]


def definitions(root: Path) -> dict[str, list[str]]:
    """Every module-level constant and function of scanner/, with the modules defining it."""
    defined: dict[str, list[str]] = {}
    for name, tree in modules(root):
        for node in tree.body:
            targets: list[str] = []
            if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
                targets = [node.name]
            elif isinstance(node, ast.Assign):
                targets = [target.id for target in node.targets if isinstance(target, ast.Name)]
            elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
                targets = [node.target.id]
            for target in targets:
                defined.setdefault(target, []).append(name)
    return defined


ONCE = {
    "read_capped": "scanner/foundation/files.py",
    "write_atomically": "scanner/foundation/files.py",
    "loads_strict": "scanner/foundation/strict_json.py",
    "json_type": "scanner/foundation/strict_json.py",
    "is_revision_name": "scanner/git/revision.py",
    "MAX_REVISION_CHARS": "scanner/git/revision.py",
    "KbFiles": "scanner/corpus/kb_files.py",
    "INDEXED_SUFFIXES": "scanner/corpus/kb_files.py",
    "MAX_DOCUMENT_BYTES": "scanner/corpus/kb_files.py",
    "compile_excludes": "scanner/corpus/kb_files.py",
    "reader_heading": "scanner/golden/headings.py",
    "Judgments": "scanner/metrics/measures.py",
    "CATALOGUE": "scanner/metrics/catalogue.py",
    "MAX_LIMIT": "scanner/golden/file.py",
    "MAX_CONCURRENCY": "scanner/settings/declaration.py",
}
"""The table's rules and bounds, each with the one module that defines it."""


def test_each_rule_and_bound_of_the_table_is_defined_in_one_module() -> None:
    defined = definitions(REPO)
    assert {name: defined.get(name) for name in ONCE} == {name: [module] for name, module in ONCE.items()}


def test_a_second_definition_would_be_seen(tmp_path: Path) -> None:
    (tmp_path / "scanner").mkdir()
    (tmp_path / "scanner" / "a.py").write_text("MAX_LIMIT = 1000\ndef write_atomically(): ...\n", encoding="utf-8")
    (tmp_path / "scanner" / "b.py").write_text("MAX_LIMIT: int = 1000\n", encoding="utf-8")
    assert definitions(tmp_path) == {"MAX_LIMIT": ["scanner/a.py", "scanner/b.py"], "write_atomically": ["scanner/a.py"]}


def renamers(root: Path) -> set[str]:
    """Modules that rename a file into place (`os.replace`, `os.rename`): the last step of a writer."""
    return {
        name
        for name, tree in modules(root)
        for node in ast.walk(tree)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in ("replace", "rename")
        and isinstance(node.func.value, ast.Name) and node.func.value.id == "os"
    }


def test_one_writer_renames_files_into_place() -> None:
    assert renamers(REPO) == {"scanner/foundation/files.py"}


def test_a_second_writer_would_be_seen(tmp_path: Path) -> None:
    (tmp_path / "scanner").mkdir()
    (tmp_path / "scanner" / "cache.py").write_text("import os\nos.replace(temporary, path)\n", encoding="utf-8")
    (tmp_path / "scanner" / "text.py").write_text('line = text.replace("a", "b")\n', encoding="utf-8")  # the near miss
    assert renamers(tmp_path) == {"scanner/cache.py"}


def bound_checks(root: Path, setting: str) -> set[str]:
    """Modules comparing `setting` (a name or attribute) with a number: where its bounds are checked."""
    found = set()
    for name, tree in modules(root):
        for node in ast.walk(tree):
            if not isinstance(node, ast.Compare):
                continue
            operands = [node.left, *node.comparators]
            named = any(
                (isinstance(o, ast.Name) and o.id == setting) or (isinstance(o, ast.Attribute) and o.attr == setting)
                for o in operands
            )
            if named and any(isinstance(o, ast.Constant) and isinstance(o.value, int) for o in operands):
                found.add(name)
    return found


def test_concurrency_is_checked_where_the_setting_is_read_and_nowhere_else() -> None:
    # The declaration's int_in(1, MAX_CONCURRENCY) is the check; the retrievers take the value as
    # given, and map_in_order's `concurrency <= 1` chooses the sequential path (not a bound).
    assert bound_checks(REPO, "concurrency") == {"scanner/retrievers/concurrency.py"}


def literal_bounds(root: Path, value: int) -> set[str]:
    """Modules comparing anything with the number `value` written out."""
    return {
        name
        for name, tree in modules(root)
        for node in ast.walk(tree)
        if isinstance(node, ast.Compare)
        and any(isinstance(o, ast.Constant) and o.value == value for o in [node.left, *node.comparators])
    }


def test_the_limit_bound_is_written_once_and_compared_by_its_name() -> None:
    # `defaults.limit` in the golden file and `limit`/k in the settings: the same MAX_LIMIT.
    from scanner.golden.file import MAX_LIMIT

    assert literal_bounds(REPO, MAX_LIMIT) == set()
    assert literal_bounds(REPO, 1) != set()  # the near miss: the detector sees a literal where there is one


def test_a_second_check_of_a_bound_would_be_seen(tmp_path: Path) -> None:
    (tmp_path / "scanner").mkdir()
    (tmp_path / "scanner" / "http.py").write_text("if settings.concurrency < 1:\n    raise Bad\n", encoding="utf-8")
    (tmp_path / "scanner" / "pool.py").write_text("if concurrency <= other:\n    pass\n", encoding="utf-8")  # no number
    assert bound_checks(tmp_path, "concurrency") == {"scanner/http.py"}
