"""bench/lean.py's loader: what a user of bm25s or tantivy writes, reading every Markdown file once."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

from lean import lean_documents


def test_the_lean_loader_reads_each_markdown_file_with_its_frontmatter_cut(tmp_path: Path) -> None:
    (tmp_path / "ops").mkdir()
    (tmp_path / "ops" / "a.md").write_text("---\ntitle: A\n---\n# Heading\nbody\n", encoding="utf-8")
    (tmp_path / "b.markdown").write_text("no frontmatter\n---\nstill body\n", encoding="utf-8")
    (tmp_path / "unclosed.md").write_text("---\ntitle: never closed\n", encoding="utf-8")
    # Near misses: a file of another type and a dot-folder are not read.
    (tmp_path / "notes.txt").write_text("text\n", encoding="utf-8")
    (tmp_path / ".git").mkdir()
    (tmp_path / ".git" / "c.md").write_text("hidden\n", encoding="utf-8")
    assert sorted(lean_documents(str(tmp_path))) == [
        ("b.markdown", "no frontmatter\n---\nstill body\n"),
        ("ops/a.md", "# Heading\nbody\n"),
        ("unclosed.md", "---\ntitle: never closed\n"),
    ]
