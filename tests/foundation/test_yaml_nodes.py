"""compose_untrusted: PyYAML's node tree, parsed by libyaml, with aliases and deep nesting refused."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from scanner.foundation.yaml_nodes import (
    LIBYAML_NESTING_PROBLEM,
    MAX_YAML_DEPTH,
    compose_untrusted,
    refuse_deep_nesting,
)

GOLDEN_LIKE = (
    "# a comment\ndefaults:\n  limit: 5\nqueries:\n"
    "  - id: q1\n    query: \"how do I roll back?\"\n    expected:\n      - path: ops/rollback.md\n"
    "        heading: Steps\n        grade: 2\n    tags: [en, ops]\n"
    "  - {id: 7, query: 'flow style', expected: [a.md, b.md], tags: []}\n"
    "  - id: q3\n    query: |\n      a block\n      scalar\n    expected: ~\n    extra: !!str 12\n"
    "  - id: ジ\n    query: 接続記録 レビュー\n    rerank: yes\n    score: 1.5e3\n"
)


def shape(node: yaml.Node | None) -> object:
    """Everything the golden loader reads of a node: kind, tag, value, lines and columns."""
    if node is None:
        return None
    where = (node.start_mark.line, node.start_mark.column, node.end_mark.line, node.end_mark.column)
    if isinstance(node, yaml.ScalarNode):
        return ("scalar", node.tag, node.value, node.style, where)
    if isinstance(node, yaml.SequenceNode):
        return ("sequence", node.tag, [shape(item) for item in node.value], where)
    return ("mapping", node.tag, [(shape(k), shape(v)) for k, v in node.value], where)


@pytest.mark.parametrize("text", [GOLDEN_LIKE, "", "just a scalar\n", "[1, [2, [3]]]\n", "---\na: 1\n...\n"])
def test_the_nodes_are_the_ones_pyyaml_composes(text: str) -> None:
    assert shape(compose_untrusted(text, 1000)) == shape(yaml.compose(text, Loader=yaml.SafeLoader))


def test_the_repository_s_golden_files_compose_as_pyyaml_composes_them() -> None:
    files = sorted(Path(__file__).resolve().parents[2].glob("examples/**/*.yml"))
    assert files, "no example golden files found: the comparison would pass vacuously"
    for path in files:
        text = path.read_text(encoding="utf-8")
        assert shape(compose_untrusted(text, 1000)) == shape(yaml.compose(text, Loader=yaml.SafeLoader)), path


def test_a_valid_text_never_reaches_pyyaml_s_python_scanner(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = []
    original = yaml.scanner.Scanner.fetch_more_tokens
    monkeypatch.setattr(yaml.scanner.Scanner, "fetch_more_tokens", lambda self: calls.append(1) or original(self))
    assert compose_untrusted(GOLDEN_LIKE, 1000) is not None
    assert calls == []
    # The near miss: a text libyaml refuses (a lone surrogate escape) is read by the Python parser.
    node = compose_untrusted('a: "\\ud800"\n', 1000)
    assert calls and isinstance(node, yaml.MappingNode) and node.value[0][1].value == "\ud800"


def test_an_alias_is_refused_at_its_line() -> None:
    with pytest.raises(yaml.composer.ComposerError) as caught:
        compose_untrusted("a: &x [1]\nb: *x\n", 1000)
    assert "aliases" in str(caught.value) and caught.value.problem_mark.line == 1  # type: ignore[union-attr]
    # An anchor alone composes.
    assert compose_untrusted("a: &x [1]\n", 1000) is not None


def test_nesting_is_refused_past_the_limit_and_composed_at_it() -> None:
    at_limit = "[" * MAX_YAML_DEPTH + "]" * MAX_YAML_DEPTH
    node = compose_untrusted(at_limit, 1000)
    depth = 0
    while isinstance(node, yaml.SequenceNode):
        depth += 1
        node = node.value[0] if node.value else None
    assert depth == MAX_YAML_DEPTH
    with pytest.raises(yaml.composer.ComposerError, match="nested more than"):
        compose_untrusted("[" * (MAX_YAML_DEPTH + 1) + "]" * (MAX_YAML_DEPTH + 1), 1000)
    # Far deeper than any C or Python stack: refused, not crashed.
    with pytest.raises(yaml.composer.ComposerError, match="nested more than"):
        compose_untrusted("[" * 100_000 + "]" * 100_000, 1000)


def test_a_second_document_is_refused() -> None:
    with pytest.raises(yaml.composer.ComposerError, match="single document"):
        compose_untrusted("a: 1\n---\nb: 2\n", 1000)


def test_values_past_the_node_cap_are_refused_and_the_cap_itself_composes() -> None:
    assert len(compose_untrusted("[" + "a," * 999 + "]", 1000).value) == 999  # type: ignore[union-attr]
    with pytest.raises(yaml.composer.ComposerError, match="more than 1000 values"):
        compose_untrusted("[" + "a," * 1000 + "]", 1000)


@pytest.mark.parametrize(("problem", "refused_as_nesting"), [
    (LIBYAML_NESTING_PROBLEM, True),
    ("found unexpected end of stream", False),
])
def test_libyamls_own_nesting_refusal_reads_as_kb_evals_and_its_other_errors_pass_through(
    monkeypatch: pytest.MonkeyPatch, problem: str, refused_as_nesting: bool
) -> None:
    # libyaml 0.2.6 (PyYAML 6.0.4's wheels) raises this while scanning ahead of a deep flow
    # collection; the lock's PyYAML never does, so the scanner's error is raised here as it raises it.
    mark = yaml.Mark("<frontmatter>", 0, 1, 1006, None, None)

    def scanning_ahead(text: str, Loader: type) -> Iterator[object]:
        raise yaml.scanner.ScannerError("while increasing flow level", mark, problem, mark)
        yield  # a generator, as yaml.parse is

    monkeypatch.setattr(yaml, "parse", scanning_ahead)
    with pytest.raises(yaml.MarkedYAMLError) as caught:
        refuse_deep_nesting("nest: [[[", yaml.SafeLoader)
    assert (f"nested more than {MAX_YAML_DEPTH} levels deep" in str(caught.value)) is refused_as_nesting
    assert (caught.value.problem == problem) is not refused_as_nesting
    assert caught.value.problem_mark is not None and caught.value.problem_mark.line == 1
