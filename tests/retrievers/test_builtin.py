"""The built-in retriever on a real index: safe query compilation, BM25 scoring, English and CJK."""

from __future__ import annotations

import math
import os

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scanner.corpus.reader import build_document
from scanner.foundation.diagnostics import Diagnostics
from scanner.retrievers.base import SearchRequest
from scanner.retrievers.builtin import BuiltinRetriever, FieldWeights, Tokenization
from scanner.search.bm25 import Bm25Parameters
from scanner.search.index import Index
from scanner.search.query_compiler import QUERY_COMPILER_VERSION, compile_query


def index_of(files: dict[str, str]) -> Index:
    documents = tuple(build_document(path, text, Diagnostics()) for path, text in sorted(files.items()))
    return Index.build(documents)


CORPUS = {
    "deploy.md": "# Rollback\nRolling back means redeploying the previous image.\n## Database\nMigrations are forward-only.\n",
    "search.md": "# Ranking\nSections are ranked with BM25 and reranked by a cross-encoder.\n",
    "ja.md": "# 全文検索\n日本語の文書は単語の間に空白がないため、トライグラム索引で検索する。\n",
    "zh.md": "# 检索\n中文文本没有空格，所以使用三元组索引进行检索。\n",
}


@pytest.fixture(scope="module")
def retriever() -> BuiltinRetriever:
    return BuiltinRetriever(index_of(CORPUS))


HOSTILE = [
    '"unbalanced', 'a "b" "', "NEAR(a b)", "a NEAR/2 b", "-excluded", "col:value", "heading:rollback",
    "(((", ")", "*", "roll*", "a AND OR NOT b", "^start", "a + b", "'single'", '""', "{heading body}: x",
    "\\", "%_", "rollback\x00back", "\u3000全文\u3000", "SELECT * FROM chunks; --",
]


@pytest.mark.parametrize("query", HOSTILE)
def test_untrusted_query_syntax_is_searched_as_plain_text(retriever: BuiltinRetriever, query: str) -> None:
    compiled = compile_query(query)
    if compiled is None:
        assert not any(ch.isalnum() for ch in query)
        return
    hits = retriever.search(query, 10)
    assert all(hit.rank == n for n, hit in enumerate(hits, 1))


def test_a_query_of_only_punctuation_or_operators_compiles_to_nothing() -> None:
    assert compile_query('"" * - ( ) : ^') is None
    assert compile_query("AND") is not None  # a word that happens to be an operator is still a word


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=60))
def test_any_string_compiles_to_terms_the_search_accepts_or_to_a_clean_refusal(text: str) -> None:
    compiled = compile_query(text)
    if compiled is None:
        assert not any(ch.isalnum() for ch in text)
        return
    assert len(compiled.terms) <= 64
    assert all(count >= 1 for _, count in compiled.terms)


def test_quotes_and_operators_are_plain_text() -> None:
    assert compile_query('how "image tag" works') == compile_query("how image tag works")
    assert compile_query("roll* -back NEAR(x)") == compile_query("roll back near x")


def test_function_words_are_left_out_and_words_are_stemmed() -> None:
    compiled = compile_query("how do I roll back the databases")
    assert compiled is not None and compiled.terms == (("roll", 1), ("back", 1), ("databas", 1))
    only_function_words = compile_query("how do I")
    assert only_function_words is not None and only_function_words.terms == ()


def test_a_repeated_query_word_keeps_its_count() -> None:
    compiled = compile_query("pressure distribution and pressure gradients of pressure")
    assert compiled is not None and dict(compiled.terms) == {"pressur": 3, "distribut": 1, "gradient": 1}


def test_the_word_a_question_repeats_decides_between_two_chunks() -> None:
    files = {"a.md": "# A\nalpha alpha note\n", "b.md": "# B\nbeta beta note\n"}
    retriever = BuiltinRetriever(index_of(files))
    assert retriever.search("alpha alpha beta", 1)[0].path == "a.md"
    assert retriever.search("alpha beta beta", 1)[0].path == "b.md"


def test_cjk_runs_are_searched_as_bigrams_plus_their_han_characters() -> None:
    compiled = compile_query("中文检索 の BM25")
    assert compiled is not None
    assert [t for t, _ in compiled.terms] == ["中文", "文检", "检索", "中", "文", "检", "索", "の", "bm25"]
    # Kana (and hangul) are not unigrams: a kana alone is mostly a particle. A one-character run
    # is one term, not two.
    mixed = compile_query("検索のしくみ 猫")
    assert mixed is not None
    assert [t for t, _ in mixed.terms] == ["検索", "索の", "のし", "しく", "くみ", "検", "索", "猫"]


def test_a_one_character_chinese_word_finds_the_text_it_is_part_of() -> None:
    # 猫 is a word on its own; in the documents it sits inside longer runs, so only the Han
    # unigram connects them. The near miss: a kana alone (の) is no unigram, so it finds nothing.
    files = {"cat.md": "# 宠物\n我的猫很可爱。\n", "dog.md": "# 宠物\n我的狗很可爱。\n", "ja.md": "# 文書\n日本の文書です。\n"}
    retriever = BuiltinRetriever(index_of(files))
    assert [h.path for h in retriever.search("猫", 10)] == ["cat.md"]
    assert retriever.search("の", 10) == []


def test_english_matches_other_word_forms_through_stemming(retriever: BuiltinRetriever) -> None:
    assert retriever.search("how do I roll back", 1)[0].path == "deploy.md"
    assert retriever.search("reranking sections", 1)[0].path == "search.md"


def test_japanese_and_chinese_queries_without_spaces_find_their_documents(retriever: BuiltinRetriever) -> None:
    assert retriever.search("トライグラムで日本語を検索する方法", 1)[0].path == "ja.md"
    assert retriever.search("中文检索使用什么索引", 1)[0].path == "zh.md"


def test_cjk_bigrams_find_a_paraphrase_that_shares_no_three_character_run() -> None:
    # The query shares only two-character words (中文, 检索, 使用, 索引) with zh.md.
    query = "中文检索使用什么索引"
    word = BuiltinRetriever(index_of(CORPUS), tokenization=Tokenization.WORD)
    assert word.search(query, 1)[0].path == "zh.md"


def test_hits_are_chunks_and_one_document_may_hold_several_ranks(retriever: BuiltinRetriever) -> None:
    hits = retriever.search("rollback database migrations image", 10)
    assert [h.path for h in hits[:2]] == ["deploy.md", "deploy.md"]
    assert {h.heading for h in hits[:2]} == {"Rollback", "Database"}
    assert len(retriever.search("rollback database", 1)) == 1


def test_the_heading_weight_changes_the_ranking() -> None:
    # Titled pages, so the headings are section headings, not the page's title (corpus/titles.py).
    files = {
        "a.md": "---\ntitle: A\n---\n# Kubernetes\nplain text\n",
        "b.md": "---\ntitle: B\n---\n# Other\nkubernetes kubernetes mention\n",
    }
    heavy = BuiltinRetriever(index_of(files), FieldWeights(heading=20.0), Tokenization.WORD)
    light = BuiltinRetriever(index_of(files), FieldWeights(heading=0.01), Tokenization.WORD)
    assert heavy.search("kubernetes", 1)[0].path == "a.md"
    assert light.search("kubernetes", 1)[0].path == "b.md"


def test_the_description_records_the_compiler_version_analysis_weights_and_bm25_parameters(
    retriever: BuiltinRetriever,
) -> None:
    described = retriever.describe()
    assert described["query_compiler_version"] == QUERY_COMPILER_VERSION == 7
    assert described["tokenization"] == "auto"
    assert described["analysis"] == (
        "words, snowball english stemmer, english stopwords; cjk runs as bigrams, han characters as unigrams"
    )
    assert described["weights"] == {"heading": 2.0, "breadcrumb": 3.5, "body": 1.0}
    assert described["bm25"] == {"k1": 1.5, "b": 0.75}
    assert described["alone"] == {"heading": 0.0, "breadcrumb": 0.125, "body": 0.0}
    other = BuiltinRetriever(retriever.index, parameters=Bm25Parameters(k1=0.9, b=0.4)).describe()
    assert other["bm25"] == {"k1": 0.9, "b": 0.4}


def test_per_field_scoring_sums_each_fields_own_bm25_times_its_weight() -> None:
    # "kettle" is in one heading (rare there: high idf per field) and in every other body (common
    # there), twice in b's: per field, a's heading match wins; over the combined fields, b's tf does.
    # Titled pages, so the headings are section headings, not the page's title (corpus/titles.py).
    files = {"a.md": "---\ntitle: A\n---\n# Kettle\nstove\n", "b.md": "---\ntitle: B\n---\n# Other\nkettle kettle\n"}
    files.update({f"{name}.md": f"---\ntitle: {name}\n---\n# {name}x\nkettle pan\n" for name in "cde"})
    index = index_of(files)
    per_field = BuiltinRetriever(index, FieldWeights(1.0, 1.0, 1.0), parameters=Bm25Parameters(1.2, 0.75, True))
    combined = BuiltinRetriever(index, FieldWeights(1.0, 1.0, 1.0), parameters=Bm25Parameters(1.2, 0.75, False))
    assert per_field.search("kettle", 1)[0].path == "a.md"
    assert combined.search("kettle", 1)[0].path == "b.md"


def test_a_title_match_scores_its_own_bm25_beside_bm25f() -> None:
    # "kettle" is in a's title (its breadcrumb) and four times in b's body. Over the weighted fields
    # alone (BM25F), b's four occurrences outweigh a's one title occurrence; the breadcrumb's own
    # BM25, on by default, lifts a's title match above them. The near miss: the same index with
    # the breadcrumb scored only inside BM25F (alone = 0) ranks b first.
    files = {
        "a.md": "---\ntitle: Kettle\n---\n# Care\nDescale it monthly with vinegar and rinse twice.\n",
        "b.md": "# Care\nThe kettle, the old kettle, the new kettle and the spare kettle all need descaling.\n",
    }
    files.update({f"{name}.md": f"# Care\nThe {name} pan needs oil.\n" for name in "cdefgh"})
    index = index_of(files)
    assert BuiltinRetriever(index).search("kettle", 1)[0].path == "a.md"
    without = Bm25Parameters(alone=(0.0, 0.0, 0.0))
    inside = FieldWeights(2.0, 3.0625, 1.0)
    assert BuiltinRetriever(index, inside, parameters=without).search("kettle", 1)[0].path == "b.md"
    # The split: an eighth of the breadcrumb's weight 3.5 scored alone, the rest inside BM25F. a's
    # heading and body lack "kettle", so with the whole weight alone (share 1) a's score is
    # 3.5 x the breadcrumb's own BM25, and the default is BM25F at 2/3.0625/1 plus an eighth of that.
    def score_of_a(weights: FieldWeights, parameters: Bm25Parameters) -> float:
        return next(h.score for h in BuiltinRetriever(index, weights, parameters=parameters).search("kettle", 10) if h.path == "a.md")

    default = score_of_a(FieldWeights(), Bm25Parameters())
    inside_only = score_of_a(inside, without)
    all_alone = score_of_a(FieldWeights(), Bm25Parameters(alone=(0.0, 1.0, 0.0)))
    assert default == pytest.approx(inside_only + all_alone / 8, rel=1e-5)
    assert all_alone > 0


def test_a_section_that_is_only_its_title_gets_no_second_title_score() -> None:
    # t.md is nothing but its title: BM25F already scores that title on its own (the chunk's
    # length is the title's), so the breadcrumb's own BM25 is not added to it; a.md's title sits
    # beside text and gets it. The near miss: with alone_beside_text off, t.md gets it too.
    files = {
        "t.md": "---\ntitle: Kettle\n---\n",
        "a.md": "---\ntitle: Kettle\n---\nDescale it monthly with vinegar.\n",
    }
    files.update({f"{name}.md": f"---\ntitle: {name}\n---\nThe {name} pan needs oil.\n" for name in "cdefgh"})
    index = index_of(files)

    def scores(parameters: Bm25Parameters, weights: FieldWeights | None = None) -> dict[str, float]:
        retriever = BuiltinRetriever(index, weights or FieldWeights(), parameters=parameters)
        return {h.path: h.score for h in retriever.search("kettle", 10)}

    default = scores(Bm25Parameters())
    inside_only = scores(Bm25Parameters(alone=(0.0, 0.0, 0.0)), FieldWeights(2.0, 3.0625, 1.0))
    assert default["t.md"] == pytest.approx(inside_only["t.md"], rel=1e-6)
    assert default["a.md"] > inside_only["a.md"] * 1.01
    both = scores(Bm25Parameters(alone_beside_text=False))
    assert both["t.md"] > default["t.md"] * 1.01


def test_scores_are_bm25_with_weighted_fields_and_lucene_idf() -> None:
    # Three one-section documents; the query term is in the body of two of them (so the
    # breadcrumb's own BM25, the documents' titles One/Two/Three, adds nothing here).
    files = {"a.md": "# One\nkettle kettle stove\n", "b.md": "# Two\nkettle pan pan pan\n", "c.md": "# Three\npan\n"}
    index = index_of(files)
    weights = (2.0, 3.0625, 1.0)  # the default 2,3.5,1 with an eighth of the breadcrumb's scored alone
    hits = BuiltinRetriever(index).search("kettle", 10)
    # The text search scores: each page's `# Title` counted once, in the breadcrumb (corpus/titles.py).
    rows = index.connection.execute(
        "SELECT COALESCE(scored_heading, heading), COALESCE(scored_breadcrumb, breadcrumb), body FROM chunks ORDER BY id"
    ).fetchall()
    assert rows[0][:2] == ("", "One")
    lengths = [sum(w * len(analysed_terms(text)) for w, text in zip(weights, row)) for row in rows]
    mean = sum(lengths) / len(lengths)
    idf = math.log(1 + (3 - 2 + 0.5) / (2 + 0.5))
    expected = [idf * tf * 2.5 / (tf + 1.5 * (0.25 + 0.75 * lengths[i] / mean)) for i, tf in ((0, 2), (1, 1))]
    assert [h.path for h in hits] == ["a.md", "b.md"]
    assert [h.score for h in hits] == pytest.approx(expected, rel=1e-5)


def analysed_terms(text: str) -> list[str]:
    from scanner.search.analysis import Analyzer

    return Analyzer().query_terms(text)


def test_equal_scores_are_ranked_in_path_order() -> None:
    files = {f"{name}.md": "# Same\nidentical words here\n" for name in ("c", "a", "b")}
    assert [h.path for h in BuiltinRetriever(index_of(files)).search("identical words", 10)] == ["a.md", "b.md", "c.md"]


def test_the_postings_are_built_only_when_a_search_needs_them() -> None:
    index = index_of(CORPUS)
    assert not index.analyzer.vocabulary
    BuiltinRetriever(index).prepare([])
    assert not index.analyzer.vocabulary
    BuiltinRetriever(index).prepare([SearchRequest("q", "rollback", 10)])
    assert "rollback" in index.analyzer.vocabulary


def test_the_index_folder_is_removed_when_the_index_is_dropped() -> None:
    import gc

    index = index_of(CORPUS)
    BuiltinRetriever(index).prepare([SearchRequest("q", "全文検索の仕組み and rollback", 10)])
    folder = index.folder
    assert os.path.exists(os.path.join(folder, "chunks.sqlite"))
    del index
    gc.collect()
    assert not os.path.exists(folder)


def test_answering_many_queries_reads_where_the_hits_sit_in_statements_of_many_ids(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from scanner.search import index as index_module

    files = {f"n{n:03d}.md": f"# Note {n}\nrollback image ranking {'database ' * (n % 5)}\n" for n in range(60)}
    retriever = BuiltinRetriever(index_of(files))
    requests = [SearchRequest(f"q{n}", ["rollback image", "ranking database", "note"][n % 3], 10) for n in range(300)]
    one_by_one = [retriever.search(request.text, request.limit) for request in requests]
    statements: list[int] = []
    locate = retriever.index.locate_chunks

    def counted(chunk_ids: list[int], *, parents: bool = True) -> dict[int, tuple[str, str, tuple[str, ...] | None]]:
        statements.append(len(chunk_ids))
        return locate(chunk_ids, parents=parents)

    monkeypatch.setattr(retriever.index, "locate_chunks", counted)
    monkeypatch.setattr(index_module, "_SQL_BATCH", 20)
    with retriever.index.read_snapshot():
        together = retriever.search_all(requests)
    assert together == one_by_one and sum(len(hits) for hits in together) == 3_000
    # One look-up for the 300 queries, of every chunk they returned, once each.
    assert statements == [len({(h.path, h.heading) for hits in together for h in hits})]


@pytest.mark.parametrize("queries", [10, 1_000])
def test_hits_carry_their_enclosing_headings_only_when_asked_and_are_otherwise_the_same(
    monkeypatch: pytest.MonkeyPatch, queries: int
) -> None:
    from scanner.search import index as index_module

    files = {f"n{n:03d}.md": f"# Note {n}\n## Rollback\nrollback image {'database ' * (n % 5)}\n" for n in range(40)}
    requests = [SearchRequest(f"q{n}", ["rollback image", "database", "note"][n % 3], 10) for n in range(queries)]
    index = index_of(files)
    split: list[str] = []
    parents_of = index_module._parents

    def counting(breadcrumb: str, lengths: str) -> tuple[str, ...]:
        split.append(breadcrumb)
        return parents_of(breadcrumb, lengths)

    monkeypatch.setattr(index_module, "_parents", counting)
    with index.read_snapshot():
        placed = BuiltinRetriever(index).search_all(requests)
        asked = len(split)
        unplaced = BuiltinRetriever(index, parents=False).search_all(requests)
    assert len(split) == asked
    assert all(hit.parents is None for hits in unplaced for hit in hits)
    assert [[(h.rank, h.path, h.heading, h.score) for h in hits] for hits in unplaced] == [
        [(h.rank, h.path, h.heading, h.score) for h in hits] for hits in placed
    ]
    # The near miss: asked for, every hit says where it sits (a `## Rollback` under its note's
    # heading), each located chunk's headings split once.
    assert 0 < asked <= 80
    assert all(hit.parents == (f"Note {int(hit.path[1:4])}",) for hits in placed for hit in hits if hit.heading == "Rollback")
    assert any(hit.heading == "Rollback" for hits in placed for hit in hits)
    assert all(hit.parents is not None for hits in placed for hit in hits)
