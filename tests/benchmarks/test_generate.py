"""The benchmark's synthetic KB generator: deterministic, realistic in shape, consistent golden set."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

BENCH = Path(__file__).resolve().parents[2] / "bench"
sys.path.insert(0, str(BENCH))

import random

from sections import read_chunks, split_sections
from vocabulary import ENGLISH_WORDS, build_vocabulary, zipf_rank_share


def generate(out: Path, docs: int, queries: int, seed: int) -> Path:
    subprocess.run(
        [sys.executable, str(BENCH / "generate.py"), "--docs", str(docs), "--queries", str(queries), "--seed", str(seed), str(out)],
        check=True,
        capture_output=True,
        timeout=120,
    )
    return out


def snapshot(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.fixture(scope="module")
def kb(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return generate(tmp_path_factory.mktemp("kb") / "out", docs=80, queries=40, seed=7)


def test_the_same_seed_gives_identical_bytes(tmp_path: Path) -> None:
    first = snapshot(generate(tmp_path / "a", docs=12, queries=6, seed=3))
    second = snapshot(generate(tmp_path / "b", docs=12, queries=6, seed=3))
    assert len(first) > 12  # the KB files plus the golden file; guards against comparing two empty folders
    assert first == second


def test_a_different_seed_gives_a_different_corpus(tmp_path: Path) -> None:
    first = snapshot(generate(tmp_path / "a", docs=12, queries=6, seed=3))
    second = snapshot(generate(tmp_path / "b", docs=12, queries=6, seed=4))
    assert first != second


def test_documents_taken_from_another_query_count_are_the_bytes_it_would_write(tmp_path: Path) -> None:
    generate(tmp_path / "few", docs=12, queries=3, seed=3)
    written = snapshot(generate(tmp_path / "written", docs=12, queries=8, seed=3))
    subprocess.run(
        [sys.executable, str(BENCH / "generate.py"), "--docs", "12", "--queries", "8", "--seed", "3",
         "--documents-from", str(tmp_path / "few"), str(tmp_path / "linked")],
        check=True, capture_output=True, timeout=120,
    )
    linked = tmp_path / "linked"
    assert snapshot(linked) == written
    documents = [p for p in (linked / "kb").rglob("*.md") if p.parent.name != "eval-notes"]
    assert len(documents) == 12
    # The documents are the other generation's files; the leak notes quote this golden set.
    assert all(p.stat().st_nlink == 2 for p in documents)
    assert all(p.stat().st_nlink == 1 for p in (linked / "kb" / "eval-notes").iterdir())


def test_documents_from_a_generation_of_other_documents_are_refused(tmp_path: Path) -> None:
    generate(tmp_path / "other", docs=12, queries=3, seed=4)
    result = subprocess.run(
        [sys.executable, str(BENCH / "generate.py"), "--docs", "12", "--queries", "3", "--seed", "3",
         "--documents-from", str(tmp_path / "other"), str(tmp_path / "linked")],
        check=False, capture_output=True, text=True, timeout=120,
    )
    assert result.returncode == 2
    assert "not this generation's document" in result.stderr


def test_a_non_empty_output_folder_is_refused(tmp_path: Path) -> None:
    (tmp_path / "keep.txt").write_text("mine")
    result = subprocess.run(
        [sys.executable, str(BENCH / "generate.py"), "--docs", "2", "--queries", "1", str(tmp_path)],
        check=False, capture_output=True, text=True, timeout=60,
    )
    assert result.returncode == 2
    assert "not empty" in result.stderr
    assert (tmp_path / "keep.txt").read_text() == "mine"


def test_the_corpus_has_the_shape_of_a_real_kb(kb: Path) -> None:
    files = list((kb / "kb").rglob("*.md"))
    texts = [p.read_text(encoding="utf-8") for p in files]
    joined = "\n".join(texts)
    assert len(files) == 80 + 2  # documents plus the two default leak notes
    assert sum(t.startswith("---\ntitle: ") for t in texts) > len(texts) // 2
    assert re.search(r"^## \S", joined, re.MULTILINE) and re.search(r"^### \S", joined, re.MULTILINE)
    assert re.search(r"^\S.*\n-{3,}$", joined, re.MULTILINE) or re.search(r"^\S.*\n={3,}$", joined, re.MULTILINE)  # setext
    assert "```" in joined and re.search(r"^[-*] \S", joined, re.MULTILINE) and re.search(r"^1\. \S", joined, re.MULTILINE)
    assert re.search(r"[\u3040-\u30ff\u4e00-\u9fff]", joined)  # Japanese text
    assert max(len(p.relative_to(kb / "kb").parts) for p in files) >= 3  # nested folders
    sizes = sorted(len(t) for t in texts)
    assert sizes[-1] > 10 * sizes[len(sizes) // 10]  # long and short documents


def test_every_golden_query_points_at_an_existing_section(kb: Path) -> None:
    golden = yaml.safe_load((kb / ".kb-eval.yml").read_text(encoding="utf-8"))
    chunks = read_chunks(kb / "kb")
    sections = {(c.path, c.heading) for c in chunks}
    paths = {c.path for c in chunks}
    queries = golden["queries"]
    assert len(queries) == 40
    assert {q["tags"][0] for q in queries} == {"en", "ja"}
    for query in queries:
        assert set(query) <= {"id", "query", "expected", "tags"}
        (entry,) = query["expected"]
        assert entry["path"] in paths
        if "heading" in entry:
            assert (entry["path"], entry["heading"]) in sections


def test_queries_are_drawn_from_their_section_but_are_not_quotes_of_it(kb: Path) -> None:
    golden = yaml.safe_load((kb / ".kb-eval.yml").read_text(encoding="utf-8"))
    chunks = read_chunks(kb / "kb")
    by_section = {(c.path, c.heading): c for c in chunks}
    verbatim = 0
    overlapping = 0
    checked = 0
    for query in golden["queries"]:
        entry = query["expected"][0]
        if "heading" not in entry or "tags" not in query or query["tags"] != ["en"]:
            continue
        chunk = by_section[(entry["path"], entry["heading"])]
        text = f"{chunk.heading}\n{chunk.body}".lower()
        words = [w.removeprefix("how").strip() for w in query["query"].split()]
        checked += 1
        verbatim += query["query"] in text
        overlapping += sum(w in text for w in words if w) >= 2
    assert checked >= 5
    assert verbatim == 0
    assert overlapping >= checked * 0.8


def test_leak_notes_quote_at_least_two_golden_queries_verbatim(kb: Path) -> None:
    golden = yaml.safe_load((kb / ".kb-eval.yml").read_text(encoding="utf-8"))
    texts = [q["query"] for q in golden["queries"]]
    notes = sorted((kb / "kb" / "eval-notes").glob("*.md"))
    assert len(notes) == 2
    for note in notes:
        body = note.read_text(encoding="utf-8")
        assert sum(f"`{t}`" in body for t in texts) >= 2


def test_zipf_weights_put_most_mass_on_the_head_but_keep_a_long_tail() -> None:
    vocabulary = build_vocabulary(ENGLISH_WORDS, 5000, random.Random(1), 48)
    assert zipf_rank_share(vocabulary, 10) > 0.1
    assert 0.2 < 1 - zipf_rank_share(vocabulary, len(ENGLISH_WORDS)) < 0.6
    assert not any(w.startswith("the") and w != "the" and w[3:] in ENGLISH_WORDS for w in vocabulary.words)


def test_the_section_splitter_ignores_headings_inside_code_fences() -> None:
    text = "---\ntitle: T\n---\n# A\n\n```\n# not a heading\n```\n\nB\n---\n\nbody\n"
    chunks = split_sections("x.md", text)
    assert [c.heading for c in chunks] == ["A", "B"]
    assert "# not a heading" in chunks[0].body
    assert chunks[1].breadcrumb == "T > A"


def test_a_thematic_break_after_a_list_is_not_a_setext_heading() -> None:
    chunks = split_sections("x.md", "# A\n\n- item\n---\n")
    assert [c.heading for c in chunks] == ["A"]
