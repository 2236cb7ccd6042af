"""Distinct words and postings: text whose words never repeat cannot outgrow the caps' memory.

The file, byte and section caps bound notes whose words repeat; a pull request of random words
makes every word a new term and a new posting. `max-terms` and `max-postings` bound those, counted
as the index is built (before the dictionaries and arrays grow past them), in every analysis
process together. Each test holds the refusal and the near miss at exactly the cap; the counts
come from building the same KB without caps, so no figure is written in by hand.
"""

from __future__ import annotations

import random
import string
from array import array
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

import scanner.search.bm25
import scanner.search.index
from scanner.corpus.reader import CorpusCaps, read_corpus
from scanner.foundation.errors import ExitCode
from scanner.retrievers.builtin import FieldWeights
from scanner.search.analysis import Analyzer, IndexCapExceeded
from scanner.search.bm25 import Bm25Parameters, FieldRun, PostingsBuilder
from scanner.search.index import Index
from tests.conftest import run_cli, write_tree
from tests.hostile.support import ANSWER, GOLDEN

UNCAPPED = CorpusCaps(10**9, 10**9, 10**9, 10**12, 10**12)


def random_words(count: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    return ["".join(rng.choices(string.ascii_lowercase, k=10)) for _ in range(count)]


def random_kb(root: Path, files: int, sections: int, words: int) -> Path:
    """`files` notes of `sections` headed sections of `words` random words each, and the golden file."""
    tree: dict[str, str | bytes] = {".kb-eval.yml": GOLDEN, "a.md": ANSWER}
    for number in range(files):
        parts = [f"## Part {s}\n\n{' '.join(random_words(words, number * 1000 + s))}\n" for s in range(sections)]
        tree[f"words-{number:03d}.md"] = "\n".join(parts)
    return write_tree(root, tree)


def counts(kb: Path, workers: int = 1) -> tuple[int, int]:
    """(postings, distinct words) of the built-in search's analysis of `kb`, uncapped."""
    index = Index.build(iter(read_corpus(kb, workers=1, caps=UNCAPPED).documents), analysis_workers=workers,
                        caps=UNCAPPED)
    scorer = index.scorer(FieldWeights().as_tuple(), Bm25Parameters())
    return sum(len(chunks) for _, chunks, _ in scorer.layers), index.analyzer.words


def analysed(kb: Path, caps: CorpusCaps, workers: int = 1) -> Index:
    index = Index.build(iter(read_corpus(kb, workers=1, caps=UNCAPPED).documents), analysis_workers=workers, caps=caps)
    index.scorer(FieldWeights().as_tuple(), Bm25Parameters())
    return index


def test_a_kb_of_random_words_past_max_terms_is_exit_2_naming_the_setting(tmp_path: Path) -> None:
    kb = random_kb(tmp_path / "kb", files=3, sections=2, words=50)
    _, words = counts(kb)
    refused = run_cli("--kb-path", kb, "--no-history", "--max-terms", str(words - 1))
    assert refused.code == ExitCode.BAD_INPUT, refused.stderr
    assert f"more than {words - 1} distinct words" in refused.stderr and "--max-terms" in refused.stderr
    assert "words-002.md" in refused.stderr and "Traceback" not in refused.stderr
    # The near miss: exactly as many distinct words as the cap is evaluated.
    assert run_cli("--kb-path", kb, "--no-history", "--max-terms", str(words)).code == ExitCode.OK


def test_a_kb_past_max_postings_is_exit_2_naming_the_setting(tmp_path: Path) -> None:
    kb = random_kb(tmp_path / "kb", files=3, sections=2, words=50)
    postings, _ = counts(kb)
    refused = run_cli("--kb-path", kb, "--no-history", "--max-postings", str(postings - 1))
    assert refused.code == ExitCode.BAD_INPUT, refused.stderr
    assert f"more than {postings - 1} postings" in refused.stderr and "--max-postings" in refused.stderr
    assert "Traceback" not in refused.stderr
    assert run_cli("--kb-path", kb, "--no-history", "--max-postings", str(postings)).code == ExitCode.OK


def test_the_caps_stop_the_analysis_as_it_grows_not_after_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # 40 sections of 400 new words each: the word cap is crossed in the third section, the
    # postings cap (checked at each fold of BATCH_TOKENS tokens) in the first batch. Rows are
    # analysed a batch at a time: here a batch is one row, so what is added counts the sections.
    monkeypatch.setattr(scanner.search.bm25, "BATCH_TOKENS", 1000)
    monkeypatch.setattr(scanner.search.index, "ROWS_BATCH_CHARACTERS", 1)
    monkeypatch.setattr(scanner.search.index, "ROWS_FETCHED", 1)
    kb = random_kb(tmp_path / "kb", files=4, sections=10, words=400)
    added: list[int] = []
    original = PostingsBuilder.extend

    def counting(self: PostingsBuilder, fields: Sequence[FieldRun], start: int, stop: int) -> None:
        added.append(stop - start)
        original(self, fields, start, stop)

    monkeypatch.setattr(PostingsBuilder, "extend", counting)
    texts: list[int] = []
    analyse = Analyzer.index_ids_of

    def given(self: Analyzer, batch: Sequence[str]) -> Iterator[array[int]]:
        texts.append(len(batch))
        return analyse(self, batch)

    monkeypatch.setattr(Analyzer, "index_ids_of", given)
    with pytest.raises(IndexCapExceeded) as words:
        analysed(kb, CorpusCaps(terms=1000))
    assert words.value.setting == "max-terms"
    # Two layers add per section: stopped within the third of 41 sections.
    assert 0 < sum(added) <= 2 * 3
    added.clear()
    texts.clear()
    with pytest.raises(IndexCapExceeded) as postings:
        analysed(kb, CorpusCaps(postings=1500))
    assert postings.value.setting == "max-postings"
    # Uncapped, 41 sections make 82 adds; the cap is crossed at the second fold (about 6 sections).
    assert 0 < sum(added) <= 2 * 7, "the postings cap was checked after the analysis, not at its folds"
    # Nor was the rest analysed first: at most the three fields of those sections' rows.
    assert sum(texts) <= 3 * 7


def test_the_word_cap_keeps_the_dictionaries_at_or_under_it(tmp_path: Path) -> None:
    kb = random_kb(tmp_path / "kb", files=2, sections=5, words=300)
    index = Index.build(iter(read_corpus(kb, workers=1, caps=UNCAPPED).documents), analysis_workers=1,
                        caps=CorpusCaps(terms=1000))
    with pytest.raises(IndexCapExceeded):
        index.scorer(FieldWeights().as_tuple(), Bm25Parameters())
    assert 0 < index.analyzer.words <= 1000 and len(index.analyzer.vocabulary) <= 1000


def test_the_postings_cap_counts_every_analysis_process_together(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(scanner.search.index, "PARALLEL_MIN_CHUNKS", 10)
    kb = random_kb(tmp_path / "kb", files=6, sections=5, words=40)
    postings, _ = counts(kb)
    # Each of two processes builds about half: a cap of two thirds is crossed only by their sum.
    with pytest.raises(IndexCapExceeded) as caught:
        analysed(kb, CorpusCaps(postings=postings * 2 // 3), workers=2)
    assert caught.value.setting == "max-postings"
    assert analysed(kb, CorpusCaps(postings=postings), workers=2).corpus.documents == 7


def test_the_word_cap_holds_for_the_merged_vocabulary_of_parallel_processes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(scanner.search.index, "PARALLEL_MIN_CHUNKS", 10)
    kb = random_kb(tmp_path / "kb", files=6, sections=5, words=40)
    _, words = counts(kb)
    # Two processes hold about half the words each, under the cap; merged, they are one over.
    with pytest.raises(IndexCapExceeded) as caught:
        analysed(kb, CorpusCaps(terms=words - 1), workers=2)
    assert caught.value.setting == "max-terms"
    assert analysed(kb, CorpusCaps(terms=words), workers=2).corpus.documents == 7
