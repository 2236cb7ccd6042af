"""How text is cut into search terms; the index and the query compiler share one Analyzer so both agree.

- Words are runs of letters and digits (underscore and punctuation separate them), lower-cased.
- Latin-script words are stemmed with the Snowball English stemmer (`indexing` finds `indexed`),
  and common English function words are left out (see ENGLISH_STOPWORDS).
- Japanese and Chinese have no spaces between words, so a whole clause is one 'word'. Each run of
  CJK characters becomes its overlapping two-character windows (`中文检索` -> `中文 文检 检索`),
  the scheme of Lucene's CJKAnalyzer: most CJK words are one or two characters, so a paraphrased
  question shares bigrams with its answer even when it shares no longer substring. A run of one
  character is kept as it is. Measured on real Japanese and Chinese questions (docs/search-quality.md),
  bigrams rank better than trigrams, which the previous default routed CJK queries to.
- A run's Han characters (kanji, hanzi) are also terms on their own: a one-character word
  (Chinese has many, and a kanji is often one) is otherwise found only through the bigrams it
  forms with its neighbours, which differ between question and answer. Kana and hangul are not:
  a kana alone is mostly a particle or part of an inflection, frequent everywhere.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from operator import add

import Stemmer

CJK_CHARACTERS = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af\uff66-\uff9f"
_CJK_RUN = re.compile(f"[{CJK_CHARACTERS}]+")
_HAN = re.compile("[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
"""Han characters (CJK ideographs and extension A, compatibility ideographs): the unigrams kept."""
WORD = re.compile(r"[^\W_]+")
"""A word: letters and digits; underscore and punctuation separate words."""
_CJK_OR_WORD = re.compile(f"([{CJK_CHARACTERS}]+)|([^\\W_{CJK_CHARACTERS}]+)")
"""In text with CJK characters: a CJK run, or a word without CJK characters (`BM25の` -> `BM25`, `の`)."""
_ASCII_WORDS = str.maketrans({c: chr(c).lower() if chr(c).isalnum() else " " for c in range(128)})
"""ASCII text lower-cased with every character WORD does not keep made a space: its split() is
WORD's findall (in ASCII, WORD is [A-Za-z0-9]). str.translate with an ASCII-only table has a fast
path in C, and split() is not the regular-expression engine: about 40% less time a token than
lower() and findall() on the bench KB's text, where analysis is most of a run."""

STEMMER = "english"
"""Snowball (Porter2) English, the stemmer bm25s is measured with; PyStemmer's C implementation."""

ENGLISH_STOPWORDS = frozenset(
    ["a", "about", "above", "after", "again", "against", "all", "am", "an", "and", "any", "are", "as", "at", "be", "because", "been", "before", "being", "below", "between", "both", "but", "by", "can", "could", "did", "do", "does", "doing", "down", "during", "each", "few", "for", "from", "further", "had", "has", "have", "having", "he", "her", "here", "hers", "herself", "him", "himself", "his", "how", "i", "if", "in", "into", "is", "it", "its", "itself", "just", "me", "more", "most", "my", "myself", "no", "nor", "not", "of", "off", "on", "once", "only", "or", "other", "our", "ours", "ourselves", "out", "over", "own", "same", "she", "should", "so", "some", "such", "than", "that", "the", "their", "theirs", "them", "themselves", "then", "there", "these", "they", "this", "those", "through", "to", "too", "under", "until", "up", "very", "was", "we", "were", "what", "when", "where", "which", "while", "who", "whom", "why", "will", "with", "would", "you", "your", "yours", "yourself", "yourselves"]
)
"""Common English function words (a question's scaffolding: 'how do I ...'). Left out of the index
and of queries: their idf is near zero, so they barely move BM25, but their postings are the
longest, and they are most of a query's scoring time and of the index's memory."""


DROPPED = -1
"""The id of a token that is not a term (a stopword)."""


class IndexCapExceeded(Exception):
    """Analysis stopped at a corpus cap (`max-terms`, `max-postings`): the pipeline turns it into the
    refusal naming the KB file and the setting. A plain exception with plain arguments, so that
    it crosses from an analysis worker to its parent intact."""

    def __init__(self, setting: str, cap: int, chunk_id: int = 0) -> None:
        super().__init__(setting, cap, chunk_id)
        self.setting = setting
        self.cap = cap
        self.chunk_id = chunk_id
        """The chunk being analysed when the count crossed the cap (ids start at 1; 0: not known)."""


def has_cjk(text: str) -> bool:
    return _CJK_RUN.search(text) is not None


def tokens(text: str) -> list[str]:
    """Lower-cased words, with every CJK run replaced by its bigrams and its Han characters (a
    one-character run kept once)."""
    if text.isascii():
        return text.translate(_ASCII_WORDS).split()
    lowered = text.lower()
    if _CJK_RUN.search(lowered) is None:
        return WORD.findall(lowered)
    found: list[str] = []
    for run, word in _CJK_OR_WORD.findall(lowered):
        if word:
            found.append(word)
        elif len(run) == 1:
            found.append(run)
        else:
            # map(add, run, run[1:]) pairs each character with the next, in C.
            found.extend(map(add, run, run[1:]))
            found.extend(_HAN.findall(run))
    return found


class Analyzer:
    """Text -> term ids in a growing vocabulary (term -> id), one entry per distinct token cached.

    The cache is what makes analysis affordable: a corpus repeats its words, so stemming runs
    once per distinct word, and the per-token work is one dict look-up inside `map`, which runs
    in C. A token maps to one term id, or to DROPPED (a stopword)."""

    def __init__(self) -> None:
        self.vocabulary: dict[str, int] = {}
        self._tokens = _TokenIds(self)
        self._stemmer = Stemmer.Stemmer(STEMMER)
        self.max_words: int | None = None
        """Refuse (IndexCapExceeded, `max-terms`) rather than cache more distinct words than this:
        the cache holds every distinct word and the vocabulary at most one term for each, so this
        bounds both as they grow. None: no cap (the query side, copies)."""

    def copy(self) -> Analyzer:
        """An analyzer that starts with this one's vocabulary (the same term ids) and grows apart."""
        twin = Analyzer()
        twin.vocabulary = dict(self.vocabulary)
        twin._tokens.update(self._tokens)
        return twin

    def terms(self, token: str) -> list[str]:
        """The terms one token contributes: none for a stopword, a CJK bigram as it is."""
        if token in ENGLISH_STOPWORDS:
            return []
        if has_cjk(token):
            return [token]
        return [self._stemmer.stemWord(token)]

    def term_id(self, token: str) -> int:
        """The id of the term `token` contributes (added to the vocabulary if new), DROPPED for a stopword."""
        term_id = DROPPED
        for term in self.terms(token):
            term_id = self.vocabulary.get(term, DROPPED)
            if term_id == DROPPED:
                term_id = self.vocabulary[term] = len(self.vocabulary)
        return term_id

    def index_ids(self, text: str) -> Iterator[int]:
        """Term id of each token of `text` in order, DROPPED for a stopword, adding new terms to the
        vocabulary (index side; PostingsBuilder leaves DROPPED out)."""
        return map(self._tokens.__getitem__, tokens(text))

    @property
    def words(self) -> int:
        """Distinct words analysed so far (what `max_words` caps)."""
        return len(self._tokens)

    def query_terms(self, text: str) -> list[str]:
        """Terms of `text` in order, repeats kept (query side; the vocabulary is not touched)."""
        return [term for token in tokens(text) for term in self.terms(token)]


class _TokenIds(dict[str, int]):
    """token -> term id, a token seen for the first time analysed on its look-up (`__missing__`).

    A known token, nearly every one in a corpus, is then one look-up in C; finding the unknown
    ones first (a set of each text's tokens, less the cache) cost a third of the look-ups' time again."""

    def __init__(self, analyzer: Analyzer) -> None:
        super().__init__()
        self._analyzer = analyzer

    def __missing__(self, token: str) -> int:
        cap = self._analyzer.max_words
        if cap is not None and len(self) >= cap:
            # Checked before the word is added: the dictionaries never grow past the cap.
            raise IndexCapExceeded("max-terms", cap)
        term_id = self[token] = self._analyzer.term_id(token)
        return term_id
