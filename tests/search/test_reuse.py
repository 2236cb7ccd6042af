"""An index that takes another index's analysis (a pull request's base from its head) ranks and
scores exactly as one built from scratch: same hits, same scores to the last bit, same postings."""

from __future__ import annotations

import numpy as np
import pytest

from scanner.corpus.documents import Document, HeldDocument
from scanner.corpus.reader import build_document
from scanner.foundation.diagnostics import Diagnostics
from scanner.retrievers.builtin import BuiltinRetriever, FieldWeights
from scanner.search import index as index_module
from scanner.search.bm25 import DerivedPostings, KeptAnalysis, Postings
from scanner.search.index import Index, Reuse
from scanner.search.query_compiler import compile_query
from tests.search.test_index import documents
from tests.support.analysis_spy import spy_on_analysis

DEFAULT_KEY = (FieldWeights().as_tuple(), BuiltinRetriever(None).parameters)  # type: ignore[arg-type]

QUERIES = [
    "kettle stove", "rollback image 7", "全文検索の索引", "中文检索 问题", "note ranking answer",
    "zeppelin hangar",  # only in the document the pull request deleted (the base has it)
    "quokka burrow",  # only in the document the pull request added (the base lacks it)
    "migration kettle zeppelin",
    "edited paragraph rollout checklist",  # words the pull request's edits wrote
]


def pull_request(head: tuple[Document, ...]) -> tuple[tuple[Document, ...], tuple[Document, ...], set[str]]:
    """(head, base, paths whose document is the same on both sides): the head adds a document and
    edits three; the base also has a document the head deleted."""
    edited = {head[3].path, head[70].path, head[151].path}
    added = build_document("d2/added.md", "# Quokka\nquokka burrow notes, kettle once\n", Diagnostics())
    deleted = build_document(
        "d0/deleted.md", "# Zeppelin\nzeppelin hangar, kettle stove kettle\n## More\nhangar doors\n", Diagnostics()
    )
    base = []
    for n, document in enumerate(head):
        if document.path in edited:
            # The base's version: words the head's version lacks; two with more sections, one with
            # as many.
            text = f"# Old {document.title}\nold text zeppelin\n"
            if n != 70:
                text += "## Older\nrollout kettle\n## Oldest\nimage\n"
            base.append(build_document(document.path, text, Diagnostics()))
        else:
            base.append(document)
    head_docs = tuple(sorted((*head, added), key=lambda d: d.path))
    base_docs = tuple(sorted((*base, deleted), key=lambda d: d.path))
    same = {d.path for d in base_docs} & {d.path for d in head_docs} - edited
    return head_docs, base_docs, same


def held(documents: tuple[Document, ...], same: set[str]) -> list[Document | HeldDocument]:
    """The documents as the base's reader gives them: those the head holds as HeldDocuments."""
    return [HeldDocument(d.path, len(d.chunks)) if d.path in same else d for d in documents]


def edited_head(corpus: tuple[Document, ...]) -> tuple[Document, ...]:
    """The head's edits: a paragraph appended to three documents."""
    out = []
    for n, document in enumerate(corpus):
        if n in (3, 70, 151):
            text = f"# {document.title}\nedited paragraph rollout checklist\n"
            document = build_document(document.path, text, Diagnostics())
        out.append(document)
    return tuple(out)


def layer_table(index: Index) -> list[dict[str, tuple[bytes, bytes]]]:
    """Per scorer layer: term -> (its chunk positions, its impacts), as bytes; terms by name, as
    the two indexes number them differently."""
    scorer = index._scorers[DEFAULT_KEY]
    tables = []
    for layer in range(len(scorer.layers)):
        table = {}
        for term, term_id in index.analyzer.vocabulary.items():
            chunks, impacts = scorer.postings_of(layer, term_id)
            if len(chunks):
                table[term] = (chunks.astype(np.int32).tobytes(), impacts.tobytes())
        tables.append(table)
    return tables


def ranked(index: Index) -> list[list[tuple[str, str, float]]]:
    retriever = BuiltinRetriever(index)
    return [[(h.path, h.heading, h.score) for h in retriever.search(query, 30)] for query in QUERIES]


@pytest.mark.parametrize("workers", [1, 3], ids=["one process", "worker processes"])
def test_an_index_reusing_anothers_analysis_ranks_and_scores_as_one_built_from_scratch(
    workers: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    if workers > 1:
        # Every analysis, the head's and the changed chunks', split over worker processes.
        monkeypatch.setattr(index_module, "PARALLEL_MIN_CHUNKS", 1)
    head_docs, base_docs, same = pull_request(edited_head(documents(240)))
    head = Index.build(head_docs, analysis_workers=workers, keep_analysis=True, donor=True)
    head_hits = ranked(head)
    analysed = spy_on_analysis(monkeypatch)
    reusing = Index.build(held(base_docs, same), analysis_workers=workers, reuse=Reuse(head))
    reused_hits = ranked(reusing)
    changed = [d for d in base_docs if d.path not in same]
    assert len(changed) == 4  # three edited, one deleted by the pull request
    head_by_path, base_by_path = {d.path: d for d in head_docs}, {d.path: d for d in base_docs}
    # One edit keeps the document's section count: it is read, not taken, all the same.
    assert any(len(head_by_path[d.path].chunks) == len(d.chunks) for d in changed if d.path in head_by_path)
    assert len(base_by_path) == len(head_by_path)
    # Only the changed documents' chunks were analysed for the reusing index.
    assert analysed == [sum(len(d.chunks) for d in changed)]
    scratch = Index.build(base_docs, analysis_workers=workers)
    scratch_hits = ranked(scratch)

    assert reused_hits == scratch_hits  # paths, headings and scores, float for float
    added = QUERIES.index("quokka burrow")
    assert all(hits for n, hits in enumerate(scratch_hits) if n != added) and not scratch_hits[added]
    assert scratch_hits[QUERIES.index("zeppelin hangar")][0][0] == "d0/deleted.md"
    assert head_hits[added][0][0] == "d2/added.md"
    assert not any(hit[0] == "d2/added.md" for hits in reused_hits for hit in hits)
    assert layer_table(reusing) == layer_table(scratch)
    assert reusing.corpus == scratch.corpus
    # The chunk table too, every column, as the index reads it: the unchanged documents' rows where
    # the head's table holds them. Its own table holds the changed documents' alone (nothing copied).
    assert every_row(reusing) == every_row(scratch)
    own = reusing.connection.execute("SELECT path FROM main.chunks").fetchall()
    assert {path for (path,) in own} == {d.path for d in changed if d.path in base_by_path}
    assert len(own) == sum(len(base_by_path[d.path].chunks) for d in changed if d.path in base_by_path)
    assert [reusing.chunk(n) for n in range(1, reusing.corpus.chunks + 1)] == [
        chunk for document in base_docs for chunk in document.chunks
    ]
    # The near miss the equality guards against: the head's statistics are not the base's, so a
    # score taken over from the head (stale df, N or mean length) would differ.
    unchanged = next(hits for hits in head_hits if hits)[0]
    assert unchanged[0] in same
    base_score = next(s for p, h, s in scratch_hits[QUERIES.index("kettle stove")] if (p, h) == unchanged[:2])
    assert base_score != unchanged[2]


def every_row(index: Index) -> list[tuple[object, ...]]:
    """Every chunk's row as the index reads it (its id here, then every column), in chunk order."""
    columns = (
        "path, heading, breadcrumb, body, start_line, end_line, heading_line, body_start_line, breadcrumb_lines,"
        " breadcrumb_part_lengths, scored_heading, scored_breadcrumb"
    )
    return list(index._select(columns, 0, index.corpus.chunks, with_id=True))


def test_without_the_donors_analysis_the_index_is_analysed_whole() -> None:
    head_docs, base_docs, same = pull_request(edited_head(documents(240)))
    head = Index.build(head_docs, analysis_workers=1, donor=True)  # keeps no analysis
    ranked(head)
    reusing = Index.build(held(base_docs, same), analysis_workers=1, reuse=Reuse(head))
    scratch = Index.build(base_docs, analysis_workers=1)
    before = reusing.connection.execute("SELECT count(*) FROM main.chunks").fetchone()[0]
    assert ranked(reusing) == ranked(scratch)
    # Analysed whole by processes reading its own table: the head's rows were copied into it first.
    assert before < scratch.corpus.chunks
    table = "SELECT * FROM main.chunks ORDER BY id"
    assert reusing.connection.execute(table).fetchall() == scratch.connection.execute(table).fetchall()
    assert every_row(reusing) == every_row(scratch)
    # Its own vocabulary, in its own order: nothing was taken from the head.
    assert reusing.analyzer.vocabulary == scratch.analyzer.vocabulary
    assert "quokka" in head.analyzer.vocabulary and "quokka" not in reusing.analyzer.vocabulary


def test_a_held_document_the_donor_holds_with_other_sections_is_refused_as_a_bug() -> None:
    one = build_document("a.md", "# A\nkettle\n", Diagnostics())
    two = build_document("b.md", "# B\nstove\n", Diagnostics())
    head = Index.build([one, two], analysis_workers=1, keep_analysis=True, donor=True)
    ranked(head)
    # The reader gives a held document only for a path and bytes the head indexed: one the donor
    # does not hold as many chunks, or at all, would take another's rows.
    for wrong in (HeldDocument("b.md", 2), HeldDocument("c.md", 1)):
        with pytest.raises(RuntimeError, match="held by no index"):
            Index.build([HeldDocument("a.md", 1), wrong], analysis_workers=1, reuse=Reuse(head))
    with pytest.raises(RuntimeError, match="held by no index"):
        Index.build([HeldDocument("a.md", 1)], analysis_workers=1)  # nothing to take it from
    reusing = Index.build([HeldDocument("a.md", 1), HeldDocument("b.md", 1)], analysis_workers=1, reuse=Reuse(head))
    assert ranked(reusing) == ranked(Index.build([one, two], analysis_workers=1))


def test_derived_postings_drop_the_donors_other_chunks_and_merge_the_new_ones_in_chunk_order() -> None:
    # Donor: chunks 0..3, terms x (0, 2, 3), y (1, 3). Here: donor chunks 0, 2, 3 at 0, 2, 4;
    # new chunks at 1 and 3 with terms y (1), z (1, 3).
    donor = Postings(
        start=np.array([0, 3, 5]), chunks=np.array([0, 2, 3, 1, 3], dtype=np.int32),
        tf=np.array([1, 2, 3, 4, 5], dtype=np.float32), lengths=np.array([10, 11, 12, 13], dtype=np.float32),
    )
    new = Postings(
        start=np.array([0, 0, 1, 3]), chunks=np.array([0, 0, 1], dtype=np.int32),
        tf=np.array([6, 7, 8], dtype=np.float32), lengths=np.array([20, 21], dtype=np.float32),
    )
    derived = DerivedPostings.of(KeptAnalysis.of(donor), np.array([0, -1, 2, 4, 1, 3], dtype=np.int32), new, 5)
    got = [(derived.term(t)[0].tolist(), derived.term(t)[1].tolist()) for t in range(4)]
    assert got == [([0, 2, 4], [1, 2, 3]), ([1, 4], [6, 5]), ([1, 3], [7, 8]), ([], [])]
    assert derived.lengths.tolist() == [10, 20, 12, 21, 13]
    kept = np.array([0, 2, 3])
    assert KeptAnalysis.of(donor).count_of(kept) == 4  # x's three and y's one: chunk 1 is not here
    # Kept for the terms a reusing index will be asked for: the same postings of those, the same
    # count (of every term's postings), and a term not kept refused rather than answered as absent.
    only = KeptAnalysis.of(donor).only(frozenset({1}))
    only_y = DerivedPostings.of(only, np.array([0, -1, 2, 4, 1, 3], dtype=np.int32), new, 5)
    assert only_y.term(1)[0].tolist() == [1, 4] and only.count_of(kept) == 4 and only.total == 5
    with pytest.raises(RuntimeError, match="not kept"):
        only_y.term(0)


def test_derived_postings_are_every_kept_and_new_posting_of_the_term_in_chunk_order() -> None:
    rng = np.random.default_rng(7)
    terms, donor_chunks = 40, 300
    pairs = sorted({(int(t), int(c)) for t, c in zip(rng.integers(0, terms, 3000), rng.integers(0, donor_chunks, 3000))})
    start = np.searchsorted([t for t, _ in pairs], np.arange(terms + 1))
    donor = Postings(
        start=start.astype(np.int64), chunks=np.array([c for _, c in pairs], dtype=np.int32),
        tf=rng.random(len(pairs)).astype(np.float32), lengths=rng.random(donor_chunks).astype(np.float32),
    )
    keep = rng.random(donor_chunks) < 0.7
    size = int(keep.sum()) + 50
    slots = np.sort(rng.choice(size, 50, replace=False))
    kept_to = np.full(donor_chunks, -1)
    kept_to[keep] = np.setdiff1d(np.arange(size), slots)
    new_pairs = sorted({(int(t), int(c)) for t, c in zip(rng.integers(0, terms + 5, 400), rng.integers(0, 50, 400))})
    new = Postings(
        start=np.searchsorted([t for t, _ in new_pairs], np.arange(terms + 6)).astype(np.int64),
        chunks=np.array([c for _, c in new_pairs], dtype=np.int32),
        tf=rng.random(len(new_pairs)).astype(np.float32), lengths=rng.random(50).astype(np.float32),
    )
    derived = DerivedPostings.of(KeptAnalysis.of(donor), DerivedPostings.to_base_of(kept_to, slots), new, size)
    # Against the obvious: every (term, chunk, tf) of both sides, sorted.
    expected = sorted(
        [(t, int(kept_to[c]), float(donor.tf[i])) for t in range(terms) for i in range(start[t], start[t + 1])
         if kept_to[(c := int(donor.chunks[i]))] >= 0]
        + [(t, int(slots[new.chunks[i]]), float(new.tf[i])) for t in range(terms + 5)
           for i in range(new.start[t], new.start[t + 1])]
    )
    got = [(t, int(c), float(f)) for t in range(terms + 5) for c, f in zip(*derived.term(t))]
    assert got == expected


def test_the_postings_cap_counts_the_postings_the_base_holds_not_the_donors(monkeypatch: pytest.MonkeyPatch) -> None:
    from scanner.corpus.reader import CorpusCaps
    from scanner.search import bm25
    from scanner.search.analysis import IndexCapExceeded

    counted: list[int] = []
    count = bm25.postings_per_chunk

    def spy(chunks: np.ndarray, n_chunks: int) -> np.ndarray:
        counted.append(len(chunks))
        return count(chunks, n_chunks)

    monkeypatch.setattr(bm25, "postings_per_chunk", spy)

    head_docs, base_docs, same = pull_request(edited_head(documents(240)))
    head = Index.build(head_docs, analysis_workers=1, keep_analysis=True, donor=True)
    ranked(head)
    scratch = Index.build(base_docs, analysis_workers=1)
    scratch.scorer(*DEFAULT_KEY)
    exact = sum(len(p.chunks) for p in scratch._postings(_default_layers()))
    # Under the donor's whole count and the new postings, nothing is counted chunk by chunk.
    donor_total = sum(part.total for parts in head._kept.values() for part in parts)
    roomy = Index.build(
        held(base_docs, same), analysis_workers=1, reuse=Reuse(head), caps=CorpusCaps(postings=donor_total + exact)
    )
    assert ranked(roomy) == ranked(scratch) and counted == []
    # At the base's own count it is built, counted chunk by chunk; one under, refused.
    reusing = Index.build(held(base_docs, same), analysis_workers=1, reuse=Reuse(head), caps=CorpusCaps(postings=exact))
    assert ranked(reusing) == ranked(scratch) and counted
    with pytest.raises(IndexCapExceeded, match="max-postings"):
        over = Index.build(
            held(base_docs, same), analysis_workers=1, reuse=Reuse(head), caps=CorpusCaps(postings=exact - 1)
        )
        ranked(over)


def _default_layers() -> list[tuple[float, ...]]:
    """The layers the default search analyses: BM25F's, then the fields scored alone."""
    weights, parameters = DEFAULT_KEY
    inside = tuple(w * (1 - share) for w, share in zip(weights, parameters.alone))
    alone = [f for f, (w, share) in enumerate(zip(weights, parameters.alone)) if w * share > 0]
    return [inside] + [tuple(1.0 if f == field else 0.0 for f in range(len(weights))) for field in alone]


def test_a_donor_keeping_only_the_query_terms_ranks_them_as_one_keeping_all() -> None:
    head_docs, base_docs, same = pull_request(edited_head(documents(240)))
    head = Index.build(head_docs, analysis_workers=1, keep_analysis=True, donor=True)
    ranked(head)
    asked = {term for query in QUERIES if (compiled := compile_query(query)) is not None for term, _ in compiled.terms}
    head.keep_only_terms(asked)
    kept = sum(len(part.postings.chunks) for parts in head._kept.values() for part in parts)
    reusing = Index.build(held(base_docs, same), analysis_workers=1, reuse=Reuse(head))
    assert ranked(reusing) == ranked(Index.build(base_docs, analysis_workers=1))
    everything = Index.build(head_docs, analysis_workers=1, keep_analysis=True)
    ranked(everything)
    assert kept < sum(len(part.postings.chunks) for parts in everything._kept.values() for part in parts)
    # A query the donor was not told of is a kb-eval bug, not a search that finds nothing.
    other = next(term for term in sorted(head.analyzer.vocabulary) if term not in asked and term.isalpha())
    with pytest.raises(RuntimeError, match="not kept"):
        BuiltinRetriever(reusing).search(f"note {other}", 5)



def test_a_donor_told_its_terms_before_the_analysis_keeps_the_same_postings_and_its_impacts_take_the_tfs_place(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    consumed: list[bool] = []
    scorer = index_module.Bm25Scorer

    def spy(*args: object, consume: bool = False, **kwargs: object) -> object:
        consumed.append(consume)
        return scorer(*args, consume=consume, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(index_module, "Bm25Scorer", spy)
    head_docs, base_docs, same = pull_request(edited_head(documents(240)))
    asked = {term for query in QUERIES if (compiled := compile_query(query)) is not None for term, _ in compiled.terms}
    before = Index.build(head_docs, analysis_workers=1, keep_analysis=True, donor=True)
    before.keep_only_terms(asked)
    after = Index.build(head_docs, analysis_workers=1, keep_analysis=True)
    assert ranked(before) == ranked(after)
    after.keep_only_terms(asked)
    # Told first, the scorer writes its impacts over the term counts; told after, it could not
    # (the donor still held them all) and kept an array of its own.
    assert consumed == [True, False]
    for key, parts in after._kept.items():
        for told, late in zip(before._kept[key], parts, strict=True):
            assert told.terms == late.terms
            assert kept_postings(told) == kept_postings(late)
            every = np.arange(len(told.postings.lengths))
            assert told.count_of(every) == late.count_of(every) == told.total == late.total
    reusing = Index.build(held(base_docs, same), analysis_workers=1, reuse=Reuse(before))
    assert ranked(reusing) == ranked(Index.build(base_docs, analysis_workers=1))


def kept_postings(part: KeptAnalysis) -> dict[int, tuple[bytes, bytes]]:
    """Each kept term's chunks and term counts, as the reusing index reads them."""
    postings, table = part.postings, {}
    for term in sorted(part.terms or ()):
        if term + 1 < len(postings.start):
            lo, hi = int(postings.start[term]), int(postings.start[term + 1])
            table[term] = (postings.chunks[lo:hi].tobytes(), postings.tf[lo:hi].tobytes())
    return table


def held_bytes(index: Index) -> tuple[int, int]:
    """(bytes of the arrays the scorer and the kept analysis hold, each array once; those held by
    the kept analysis alone)."""
    scorer_arrays = {id(a): a for layer in index._scorers[DEFAULT_KEY].layers for a in vars_of(layer)}
    kept_arrays = {
        id(a): a for parts in index._kept.values() for part in parts
        for a in (part.postings.start, part.postings.chunks, part.postings.tf)
    }
    every = scorer_arrays | kept_arrays
    return sum(a.nbytes for a in every.values()), sum(a.nbytes for k, a in kept_arrays.items() if k not in scorer_arrays)


def vars_of(layer: object) -> list[np.ndarray]:
    names = ("start", "chunks", "impacts", "values")
    return [value for name in names if isinstance(value := getattr(layer, name, None), np.ndarray)]


def test_a_donor_told_its_terms_before_the_analysis_holds_each_posting_once_for_its_scorer_and_the_base() -> None:
    head_docs, base_docs, same = pull_request(edited_head(documents(240)))
    asked = {term for query in QUERIES if (compiled := compile_query(query)) is not None for term, _ in compiled.terms}
    told = Index.build(head_docs, analysis_workers=1, keep_analysis=True, donor=True)
    told.keep_only_terms(asked)
    plain = Index.build(head_docs, analysis_workers=1)
    told.scorer(*DEFAULT_KEY)
    plain.scorer(*DEFAULT_KEY)
    assert layer_table(told) == layer_table(plain)  # every term's impacts, shared or not, to the bit
    assert ranked(told) == ranked(plain)
    late = Index.build(head_docs, analysis_workers=1, keep_analysis=True)
    ranked(late)
    late.keep_only_terms(asked)
    kept = sum(len(part.postings.chunks) for parts in late._kept.values() for part in parts)
    assert kept > 0
    # Told first: the kept analysis is the scorer's own arrays, not a byte more. The near miss,
    # told after the analysis: a copy of the kept postings, 8 bytes each, beside the scorer's.
    assert held_bytes(told)[1] == 0
    assert held_bytes(late)[1] >= 8 * kept
    assert held_bytes(told)[0] + 8 * kept <= held_bytes(late)[0]
    # The base reads the very arrays the head's scorer has, and ranks as one built from scratch.
    reusing = Index.build(held(base_docs, same), analysis_workers=1, reuse=Reuse(told))
    assert ranked(reusing) == ranked(Index.build(base_docs, analysis_workers=1))
    # Only the terms told before the analysis still hold their counts: more is refused.
    other = next(term for term in sorted(told.analyzer.vocabulary) if term not in asked and term.isalpha())
    with pytest.raises(RuntimeError, match="did not keep"):
        told.keep_only_terms(asked | {other})


def test_a_shared_layer_keeps_impacts_within_its_budget_and_answers_the_same_without_them(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from scanner.search import bm25

    head_docs, _, _ = pull_request(edited_head(documents(240)))
    asked = {term for query in QUERIES if (compiled := compile_query(query)) is not None for term, _ in compiled.terms}
    plain = ranked(Index.build(head_docs, analysis_workers=1))
    cached, computed = {}, {}
    for budget in (10**9, 5):
        monkeypatch.setattr(bm25, "SHARED_CACHE_POSTINGS", budget)
        told = Index.build(head_docs, analysis_workers=1, keep_analysis=True)
        told.keep_only_terms(asked)
        assert ranked(told) == ranked(told) == plain  # asked twice: from the cache, or again
        layers = told._scorers[DEFAULT_KEY].layers
        cached[budget] = [sum(len(i) for parts in layer._terms.values() for _, i in parts) for layer in layers]
        computed[budget] = sum(layer.computed for layer in layers)
    # Unbounded, each term's impacts are computed once and kept; at 5, at most one term's postings
    # past the budget are kept, and the terms asked again are computed again.
    assert all(total > 5 for total in cached[10**9])
    assert all(len(layer._terms) <= 1 or total <= 5 for layer, total in zip(layers, cached[5]))
    assert computed[5] > computed[10**9] == sum(cached[10**9])


def test_once_every_query_is_answered_the_shared_and_derived_layers_keep_no_impacts() -> None:
    from scanner.retrievers.base import SearchRequest

    head_docs, base_docs, same = pull_request(edited_head(documents(240)))
    asked = {term for query in QUERIES if (compiled := compile_query(query)) is not None for term, _ in compiled.terms}
    head = Index.build(head_docs, analysis_workers=1, keep_analysis=True, donor=True)
    head.keep_only_terms(asked)
    requests = [SearchRequest(f"q{n}", query, 10) for n, query in enumerate(QUERIES)]
    answered = BuiltinRetriever(head).search_all(requests)
    reusing = Index.build(held(base_docs, same), analysis_workers=1, reuse=Reuse(head))
    BuiltinRetriever(reusing).search_all(requests)
    layers = [*head._scorers[DEFAULT_KEY].layers, *reusing._scorers[DEFAULT_KEY].layers]
    assert all(layer.cached_bytes == 0 for layer in layers)
    assert sum(layer.computed for layer in layers) > 0  # not vacuous: impacts were computed on demand
    # The near miss: one query at a time (Retriever.search), the impacts stay for the next one; and
    # a search after search_all computes them again, to the same answers.
    assert BuiltinRetriever(head).search_all(requests) == answered
    BuiltinRetriever(head).search(QUERIES[0], 10)
    assert sum(layer.cached_bytes for layer in head._scorers[DEFAULT_KEY].layers) > 0


def test_a_donor_told_the_same_terms_again_copies_nothing_and_told_fewer_keeps_fewer() -> None:
    head_docs, _, _ = pull_request(edited_head(documents(240)))
    asked = {term for query in QUERIES if (compiled := compile_query(query)) is not None for term, _ in compiled.terms}
    donor = Index.build(head_docs, analysis_workers=1, keep_analysis=True)
    donor.keep_only_terms(asked)
    ranked(donor)
    kept = {key: [part.postings.chunks for part in parts] for key, parts in donor._kept.items()}
    donor.keep_only_terms(set(asked))
    assert all(
        again.postings.chunks is first for key, parts in donor._kept.items() for again, first in zip(parts, kept[key])
    )
    # The near miss: fewer terms are a new request, and what is kept shrinks to them.
    donor.keep_only_terms(sorted(asked)[:1])
    assert sum(len(part.postings.chunks) for parts in donor._kept.values() for part in parts) < sum(
        len(chunks) for chunks_list in kept.values() for chunks in chunks_list
    )


def test_a_derived_layer_keeps_impacts_within_its_budget_and_answers_the_same_without_them(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from scanner.search import bm25

    head_docs, base_docs, same = pull_request(edited_head(documents(240)))
    head = Index.build(head_docs, analysis_workers=1, keep_analysis=True, donor=True)
    ranked(head)
    scratch = ranked(Index.build(base_docs, analysis_workers=1))
    kept = {}
    for budget in (10**9, 5):
        monkeypatch.setattr(bm25, "DERIVED_CACHE_POSTINGS", budget)
        reusing = Index.build(held(base_docs, same), analysis_workers=1, reuse=Reuse(head))
        assert ranked(reusing) == ranked(reusing) == scratch  # asked twice: from the cache, or again
        layers = reusing._scorers[DEFAULT_KEY].layers
        kept[budget] = [sum(len(c) for parts in layer._terms.values() for c, _ in parts) for layer in layers]
    # Unbounded, every term asked is kept; at 5, at most one term's postings past the budget.
    assert all(total > 5 for total in kept[10**9])
    assert all(len(layer._terms) <= 1 or total <= 5 for layer, total in zip(layers, kept[5]))


def test_counting_each_chunks_postings_holds_a_block_of_them_at_a_time_however_many_there_are(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import tracemalloc

    from scanner.search import bm25

    monkeypatch.setattr(bm25, "COUNT_BLOCK", 1 << 14)
    rng = np.random.default_rng(7)
    extra = {}
    for size in (1 << 16, 1 << 21):
        chunks = np.sort(rng.integers(0, 1000, size)).astype(np.int32)
        tracemalloc.start()
        counts = bm25.postings_per_chunk(chunks, 1000)
        extra[size] = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        assert counts.tolist() == np.bincount(chunks, minlength=1000).tolist()
    # A block's 64-bit copy and the counts, at 64 thousand postings and at 2 million alike; the
    # near miss, one bincount over them all, holds 8 bytes for every posting.
    assert extra[1 << 21] <= 8 * (1 << 14) + 3 * 8 * 1000 + 4096
    assert extra[1 << 21] < 8 * (1 << 21) // 16


def test_an_index_taking_the_donors_analyzer_copies_no_vocabulary_and_ranks_as_one_built_from_scratch(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from scanner.search.analysis import Analyzer

    copies: list[int] = []
    real_copy = Analyzer.copy

    def counted(self: Analyzer) -> Analyzer:
        copies.append(len(self.vocabulary))
        return real_copy(self)

    monkeypatch.setattr(Analyzer, "copy", counted)
    head_docs, base_docs, same = pull_request(edited_head(documents(240)))
    scratch = ranked(Index.build(base_docs, analysis_workers=1))
    head = Index.build(head_docs, analysis_workers=1, keep_analysis=True, donor=True)
    ranked(head)
    words = len(head.analyzer.vocabulary)
    # The near miss first: a reusing index copies the donor's vocabulary, which stays as it was.
    copying = Index.build(held(base_docs, same), analysis_workers=1, reuse=Reuse(head))
    assert ranked(copying) == scratch
    assert copies == [words] and len(head.analyzer.vocabulary) == words
    assert copying.analyzer is not head.analyzer
    # Taken: no copy, the very analyzer, grown by the base's own words; the same rankings.
    taking = Index.build(held(base_docs, same), analysis_workers=1, reuse=Reuse(head, take_analyzer=True))
    assert ranked(taking) == scratch
    assert copies == [words]
    assert taking.analyzer is head.analyzer and len(head.analyzer.vocabulary) > words


def test_a_derived_layer_scores_the_donors_postings_where_they_are_and_maps_only_what_it_ranks() -> None:
    from scanner.search.bm25 import Bm25Parameters, Bm25Scorer

    head_docs, base_docs, same = pull_request(edited_head(documents(240)))
    head = Index.build(head_docs, analysis_workers=1, keep_analysis=True, donor=True)
    ranked(head)
    reusing = Index.build(held(base_docs, same), analysis_workers=1, reuse=Reuse(head))
    ranked(reusing)
    scorer = reusing._scorers[DEFAULT_KEY]
    assert scorer.to_base is not None
    layer = scorer.layers[0]  # BM25F: every field
    donor = layer.postings.donor  # type: ignore[attr-defined]

    def parts(word: str) -> tuple[tuple[np.ndarray, np.ndarray], ...]:
        compiled = compile_query(word)
        assert compiled is not None
        return layer.term_parts(reusing.analyzer.vocabulary[compiled.terms[0][0]])

    # A word of documents the pull request left alone: the donor's own chunk positions, no copy.
    (kettle, _), *_ = parts("kettle")
    assert np.shares_memory(kettle, donor.chunks)
    # The near miss: a word the base's changed documents add to the head's is theirs, after the donor's.
    *_, (rollout, _) = parts("rollout")
    assert not np.shares_memory(rollout, donor.chunks) and rollout.min() >= len(donor.lengths)
    # A donor's chunk that is not here (the document the head added) scores 0 wherever it is read.
    gone = set(np.flatnonzero(scorer.to_base < 0).tolist())
    assert gone
    read = [(int(c), float(i)) for chunks, impacts in parts("quokka") for c, i in zip(chunks, impacts)]
    assert {c for c, _ in read} & gone and all(i == 0 for c, i in read if c in gone)
    # Mixed with layers read in positions, derived layers would sum scores of two numberings.
    plain = Postings(np.array([0, 0]), np.zeros(0, np.int32), np.zeros(0, np.float32), layer.postings.lengths)  # type: ignore[attr-defined]
    with pytest.raises(ValueError, match="one union numbering"):
        Bm25Scorer([layer.postings, plain], Bm25Parameters())  # type: ignore[attr-defined]


def test_a_reusing_index_reads_every_row_where_it_is_as_one_built_from_scratch_reads_its_own() -> None:
    head_docs, base_docs, same = pull_request(edited_head(documents(240)))
    head = Index.build(head_docs, analysis_workers=1, keep_analysis=True, donor=True)
    ranked(head)
    reusing = Index.build(held(base_docs, same), analysis_workers=1, reuse=Reuse(head))
    scratch = Index.build(base_docs, analysis_workers=1)
    total = scratch.corpus.chunks
    assert reusing.corpus == scratch.corpus  # the digest over rows read from both tables
    assert reusing._layout is not None and scratch._layout is None
    for index in (reusing, scratch):
        with pytest.raises(KeyError):
            index.chunk(0)
        with pytest.raises(KeyError):
            index.chunk(total + 1)
    assert list(reusing.chunks_by_document()) == list(scratch.chunks_by_document())
    assert list(reusing.chunks_by_document(frozenset(same))) == list(scratch.chunks_by_document(frozenset(same)))
    ids = list(range(total, 0, -3)) + [0, total + 1]  # out of order, and two no chunk has
    for parents in (True, False):
        assert reusing.locate_chunks(ids, parents=parents) == scratch.locate_chunks(ids, parents=parents)
    paths = sorted(same)[::5] + ["d0/deleted.md", "d2/added.md", "nowhere.md"]
    assert reusing.sections(paths) == scratch.sections(paths)
    assert reusing.titles_and_headings(paths) == scratch.titles_and_headings(paths)
    # Every range, across the runs of the two tables: the same rows as the scratch index's.
    rows = every_row(scratch)
    for first in range(0, total, 7):
        for last in (first + 1, first + 13, total):
            got = list(reusing._select("path, body", first, min(last, total), with_id=True))
            assert got == [row[:2] + (row[4],) for row in rows[first : min(last, total)]]
