"""The index's analysis adds chunks to the postings a batch of rows at a time: the postings, the
folds and a cap's refusal are those of adding the chunks one by one (PostingsBuilder.add), and the
calls made grow with the batches and folds, not with the chunks."""

from __future__ import annotations

import os
from array import array
from collections.abc import Sequence

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from scanner.corpus.reader import build_document
from scanner.foundation.diagnostics import Diagnostics
from scanner.search import bm25 as bm25_module
from scanner.search import index as index_module
from scanner.search.analysis import Analyzer, IndexCapExceeded
from scanner.search.bm25 import PostingsBuilder
from scanner.search.index import Index, _AnalysisJob, _PostingsCount

TOKENS = ["kettle", "stove", "the", "of", "rollback", "ranking", "全文検索", "日本語の文書", "中文", "BM25の", "café"]
COLUMNS = ("COALESCE(scored_heading, heading)", "COALESCE(scored_breadcrumb, breadcrumb)", "body")
LAYERS = {"one layer": ((1.0, 1.0, 1.0),), "two layers": ((2.0, 1.0, 1.0), (1.0, 0.0, 0.0))}

Postings = list[tuple[list[int], list[int], list[float], list[float]]]
Outcome = tuple[Postings, list[tuple[str, int]]] | tuple[str, int]
"""Each layer's postings as lists and the vocabulary; or a refusal: (setting, chunk id)."""


def corpus(pages: list[list[list[int]]]) -> Index:
    """Pages of sections; a section is token positions in TOKENS, past it a word of its own."""
    def word(n: int) -> str:
        return TOKENS[n] if n < len(TOKENS) else f"word{n}"

    documents = []
    for number, sections in enumerate(pages):
        text = "".join(f"## {word(s[0]) if s else 'empty'}\n{' '.join(map(word, s))}\n" for s in sections)
        documents.append(build_document(f"page-{number:03d}.md", f"# Page {number}\n{text}", Diagnostics()))
    return Index.build(documents, analysis_workers=1)


def finished(builders: Sequence[PostingsBuilder], analyzer: Analyzer) -> Outcome:
    try:
        done = [builder.finish(len(analyzer.vocabulary)) for builder in builders]
    except IndexCapExceeded as over:
        return over.setting, -1  # at the last fold, after every chunk
    return [(p.start.tolist(), p.chunks.tolist(), p.tf.tolist(), p.lengths.tolist()) for p in done], list(
        analyzer.vocabulary.items()
    )


def one_by_one(index: Index, layers: tuple[tuple[float, ...], ...], postings: int, words: int) -> Outcome:
    """The reference: each chunk's texts analysed in order and added alone."""
    rows = index.connection.execute(f"SELECT {', '.join(COLUMNS)} FROM chunks ORDER BY id").fetchall()
    analyzer, count = Analyzer(), [0]
    analyzer.max_words = words

    def counted(added: int) -> None:
        count[0] += added
        if count[0] > postings:
            raise IndexCapExceeded("max-postings", postings)

    builders = [PostingsBuilder(len(rows), [w for w in layer if w > 0], counted) for layer in layers]
    used = [[c for c, w in enumerate(layer) if w > 0] for layer in layers]
    for chunk_id, row in enumerate(rows, start=1):
        try:
            ids = [array("i", analyzer.index_ids(text)) for text in row]
            for builder, fields in zip(builders, used):
                builder.add([ids[c] for c in fields])
        except IndexCapExceeded as over:
            return over.setting, chunk_id
    return finished(builders, analyzer)


def batched(index: Index, layers: tuple[tuple[float, ...], ...], postings: int, words: int) -> Outcome:
    job = _AnalysisJob(os.path.join(index.folder, "chunks.sqlite"), COLUMNS, layers, postings, words)
    analyzer = Analyzer()
    try:
        builders = job._build([(0, index.corpus.chunks)], analyzer, index.connection, lambda _: None, _PostingsCount(), None)
    except IndexCapExceeded as over:
        return over.setting, over.chunk_id
    return finished(builders, analyzer)


def folds_of(run: object, *args: object) -> tuple[object, list[int]]:
    """`run`'s outcome and the chunk count at each fold."""
    seen: list[int] = []
    original = PostingsBuilder._fold

    def spied(self: PostingsBuilder) -> None:
        seen.append(len(self._lengths[0]))
        original(self)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(PostingsBuilder, "_fold", spied)
        outcome = run(*args)  # type: ignore[operator]
    return outcome, seen


section = st.lists(st.integers(0, 40), max_size=12)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    pages=st.lists(st.lists(section, min_size=1, max_size=4), min_size=1, max_size=6),
    layers=st.sampled_from(sorted(LAYERS)),
    batch_tokens=st.integers(1, 40),
    rows_characters=st.integers(1, 300),
    fetched=st.integers(1, 4),
    postings=st.one_of(st.integers(1, 150), st.just(10**9)),
    words=st.one_of(st.integers(1, 40), st.just(10**9)),
)
def test_a_batch_of_rows_gives_the_postings_folds_and_refusal_of_adding_its_chunks_one_by_one(
    pages: list[list[list[int]]], layers: str, batch_tokens: int, rows_characters: int, fetched: int, postings: int,
    words: int,
) -> None:
    index = corpus(pages)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(bm25_module, "BATCH_TOKENS", batch_tokens)
        patch.setattr(index_module, "ROWS_BATCH_CHARACTERS", rows_characters)
        patch.setattr(index_module, "ROWS_FETCHED", fetched)
        expected = folds_of(one_by_one, index, LAYERS[layers], postings, words)
        got = folds_of(batched, index, LAYERS[layers], postings, words)
    # The same postings and vocabulary (or the same refusal, naming the same chunk), with the
    # folds at the same chunks: adding in runs moved no batch boundary.
    assert got == expected


def test_the_adds_grow_with_the_folds_and_batches_not_with_the_chunks(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = {"add": 0, "extend": 0}
    for name in calls:
        original = getattr(PostingsBuilder, name)

        def counting(self: PostingsBuilder, *args: object, _name: str = name, _original: object = original) -> None:
            calls[_name] += 1
            _original(self, *args)  # type: ignore[operator]

        monkeypatch.setattr(PostingsBuilder, name, counting)
    made = []
    for sections in (10, 1000):
        index = corpus([[[n % 30, (n * 7) % 30] for n in range(sections)]])
        calls.update(add=0, extend=0)
        index._postings([(1.0, 1.0, 1.0)])
        made.append(dict(calls))
    # A few hundred characters a section fit one batch of rows and one fold: one run added, however
    # many sections (adding them one by one was a call per section).
    assert made == [{"add": 0, "extend": 1}, {"add": 0, "extend": 1}]
