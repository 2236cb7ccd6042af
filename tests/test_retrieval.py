"""The built-in retriever on a real SQLite FTS5 index: safe query compilation, English and CJK."""

from __future__ import annotations

import os
import sqlite3

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scanner.corpus import Corpus, build_document
from scanner.diagnostics import Diagnostics
from scanner.index import Index
from scanner.query_compiler import compile_query
from scanner.retrievers.base import SearchRequest
from scanner.retrievers.builtin import BuiltinRetriever, FieldWeights, Tokenization


def index_of(files: dict[str, str]) -> Index:
    documents = tuple(build_document(path, text, Diagnostics()) for path, text in sorted(files.items()))
    return Index.build(Corpus(documents))


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
def test_untrusted_query_syntax_never_reaches_fts5_as_syntax(retriever: BuiltinRetriever, query: str) -> None:
    compiled = compile_query(query)
    if compiled is None:
        assert not any(ch.isalnum() for ch in query)
        return
    hits = retriever.search(query, 10)  # raises sqlite3.OperationalError on a syntax error
    assert all(hit.rank == n for n, hit in enumerate(hits, 1))


def test_a_query_of_only_punctuation_or_operators_compiles_to_nothing() -> None:
    assert compile_query('"" * - ( ) : ^') is None
    assert compile_query("AND") is not None  # a word that happens to be an operator is still a word


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=60))
def test_any_string_compiles_to_an_expression_fts5_accepts_or_to_a_clean_refusal(text: str) -> None:
    compiled = compile_query(text)
    if compiled is None:
        return
    connection = sqlite3.connect(":memory:")
    connection.execute("CREATE VIRTUAL TABLE w USING fts5(x, tokenize='porter unicode61 remove_diacritics 2')")
    connection.execute("CREATE VIRTUAL TABLE t USING fts5(x, tokenize='trigram')")
    for table, expression in (("w", compiled.word), ("t", compiled.trigram)):
        if expression is not None:
            connection.execute(f"SELECT * FROM {table} WHERE {table} MATCH ?", (expression,)).fetchall()


def test_a_quoted_phrase_stays_one_phrase() -> None:
    compiled = compile_query('how "image tag" works')
    assert compiled is not None and compiled.word == '"image tag" OR "works"'


def test_function_words_are_left_out_unless_quoted_or_alone() -> None:
    assert (compile_query("how do I roll back the database") or _nothing).word == '"roll" OR "back" OR "database"'
    assert (compile_query('what is "the one"') or _nothing).word == '"the one"'
    assert (compile_query("how do I") or _nothing).word == '"how" OR "do" OR "i"'


_nothing = compile_query("nothing")


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
    files = {"a.md": "# Kubernetes\nplain text\n", "b.md": "# Other\nkubernetes kubernetes mention\n"}
    heavy = BuiltinRetriever(index_of(files), FieldWeights(heading=20.0), Tokenization.WORD)
    light = BuiltinRetriever(index_of(files), FieldWeights(heading=0.01), Tokenization.WORD)
    assert heavy.search("kubernetes", 1)[0].path == "a.md"
    assert light.search("kubernetes", 1)[0].path == "b.md"


def test_the_description_records_tokenizers_weights_and_routing_for_the_fingerprint(retriever: BuiltinRetriever) -> None:
    described = retriever.describe()
    assert described["tokenization"] == "auto"
    assert described["tokenizers"] == {"word": "porter unicode61 remove_diacritics 2 + cjk bigrams", "trigram": "trigram"}
    assert described["weights"] == {"heading": 2.0, "breadcrumb": 1.0, "body": 1.0}
    assert described["routing"] == "cjk queries: trigram, filled from word"
    assert BuiltinRetriever(retriever.index, tokenization=Tokenization.WORD).describe()["routing"] is None


def test_auto_answers_english_from_the_word_index_alone_and_never_builds_the_trigram_index() -> None:
    index = index_of(CORPUS)
    retriever = BuiltinRetriever(index)
    retriever.prepare([SearchRequest("q", "how do I roll back", 10)])
    assert retriever.search("how do I roll back", 1)[0].path == "deploy.md"
    tables = {name for (name,) in index.connection.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    assert "fts_word" in tables
    assert not os.path.exists(os.path.join(index.folder, "trigram.sqlite"))
    with pytest.raises(ValueError):
        index.connection_for("fts_trigram")


def test_auto_ranks_a_cjk_query_by_trigrams_and_fills_from_bigrams_when_trigrams_find_too_little() -> None:
    index = index_of(CORPUS)
    retriever = BuiltinRetriever(index)
    assert [h.path for h in retriever.search("トライグラムで日本語を検索する方法", 1)] == ["ja.md"]
    # The trigram index holds only the CJK chunks, and no three-character run of this query is in
    # zh.md: trigrams alone find nothing, the bigrams fill the list.
    compiled = compile_query("中文检索使用什么索引")
    assert compiled is not None and compiled.trigram is not None
    assert index.search("fts_trigram", compiled.trigram, (2.0, 1.0, 1.0), 10) == []
    assert retriever.search("中文检索使用什么索引", 1)[0].path == "zh.md"
    [(trigram_rows,)] = index.connection_for("fts_trigram").execute("SELECT count(*) FROM fts_trigram_docsize").fetchall()
    assert trigram_rows == 2  # ja.md and zh.md; the three English chunks are not in it


def test_a_mixed_script_query_is_ranked_by_trigrams() -> None:
    index = index_of(CORPUS)
    hits = BuiltinRetriever(index).search("BM25 の全文検索", 1)
    compiled = compile_query("BM25 の全文検索")
    assert compiled is not None and compiled.trigram is not None
    [(first, _)] = index.search("fts_trigram", compiled.trigram, (2.0, 1.0, 1.0), 1)
    assert hits[0].path == index.locate_chunks([first])[first][0] == "ja.md"


def test_the_index_folder_is_removed_when_the_index_is_dropped() -> None:
    import gc

    index = index_of(CORPUS)
    BuiltinRetriever(index).prepare([SearchRequest("q", "全文検索の仕組み and rollback", 10)])
    folder = index.folder
    assert os.path.exists(os.path.join(folder, "trigram.sqlite"))
    del index
    gc.collect()
    assert not os.path.exists(folder)


def test_the_trigram_query_cuts_every_word_into_three_character_windows() -> None:
    compiled = compile_query("BM25 の全文検索 ab")
    assert compiled is not None
    assert compiled.trigram == '"bm2" OR "m25" OR "の全文" OR "全文検" OR "文検索"'
