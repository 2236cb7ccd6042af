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
from array import array
from collections.abc import Iterator, Sequence
from operator import add

import numpy as np
import numpy.typing as npt
import Stemmer

_HAN_RANGES = ((0x3400, 0x4DBF), (0x4E00, 0x9FFF), (0xF900, 0xFAFF))
"""Han characters (CJK ideographs and extension A, compatibility ideographs): the unigrams kept."""
_CJK_RANGES = ((0x3040, 0x30FF), *_HAN_RANGES, (0xAC00, 0xD7AF), (0xFF66, 0xFF9F))
"""Kana, Han, hangul syllables and half-width katakana: the characters cut into bigrams."""
CJK_CHARACTERS = "".join(f"{chr(first)}-{chr(last)}" for first, last in _CJK_RANGES)
_CJK_RUN = re.compile(f"[{CJK_CHARACTERS}]+")
_HAN = re.compile("[" + "".join(f"{chr(first)}-{chr(last)}" for first, last in _HAN_RANGES) + "]")
WORD = re.compile(r"[^\W_]+")
"""A word: letters and digits; underscore and punctuation separate words."""
_CJK_OR_WORD = re.compile(f"([{CJK_CHARACTERS}]+)|([^\\W_{CJK_CHARACTERS}]+)")
"""In text with CJK characters: a CJK run, or a word without CJK characters (`BM25の` -> `BM25`, `の`)."""
_WORD_NOT_CJK = re.compile(f"[^\\W_{CJK_CHARACTERS}]+")
"""_CJK_OR_WORD's words alone: CJK characters end a word, so it finds the same words in any text."""
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


BATCH_CHARACTERS = 1 << 16
"""Characters of text past ASCII cut together (Analyzer.index_ids_of): hundreds of texts, so that
numpy's cost per call is spread thin (at 2**14 to 2**18 the bench KB's CJK texts took the same time),
and at most 8.6 MiB of arrays at once, measured when every character is Han (two tokens each)."""

_CJK_IDS_KEPT = 1 << 17
"""Entries of an analyzer's cache of CJK token ids by key before it starts again: with a batch's
new ones, at most about 27 MiB (104 bytes an entry), whatever `max-terms` lets _tokens hold. The
bench KB's 20,000 documents have 14,423 distinct CJK tokens."""

_UNSEEN = -2
"""A CJK token's id before the analyzer has seen it (a CJK token is never a stopword: never DROPPED)."""

_OTHER, _CJK, _UNIGRAM = 0, 1, 2


def _classes() -> npt.NDArray[np.uint8]:
    """Each code point's class: _CJK (in bigrams), _UNIGRAM (a Han character: in bigrams and alone), _OTHER."""
    classes = np.zeros(0x110000, dtype=np.uint8)
    for first, last in _CJK_RANGES:
        classes[first : last + 1] = _CJK
    for first, last in _HAN_RANGES:
        classes[first : last + 1] = _UNIGRAM
    return classes


_CLASSES = _classes()
_UNIGRAM_KEY = np.uint64(1 << 32)
"""A CJK token as an integer: a bigram `ab` is a << 16 | b (every CJK character is below 2**16),
one character a is a | _UNIGRAM_KEY. Exact, so no two tokens share a key whatever the text."""


def _cjk_keys(lowered: list[str]) -> tuple[npt.NDArray[np.uint64], npt.NDArray[np.intp]]:
    """The CJK tokens of each text as keys, the texts' one after the other, and where each text's
    start (len(lowered) + 1 offsets): tokens() less the words, in another order within a text."""
    points = np.frombuffer("\n".join(lowered).encode("utf-32-le", "surrogatepass"), dtype=np.uint32)
    classes = _CLASSES[points]
    cjk = classes != _OTHER
    # A bigram starts at each CJK character followed by another; a character stands alone when
    # it is Han, or when it is a run of one.
    pairs = np.zeros(len(points), dtype=bool)
    np.logical_and(cjk[:-1], cjk[1:], out=pairs[:-1])
    alone = cjk.copy()
    alone[1:] &= ~cjk[:-1]
    alone[:-1] &= ~cjk[1:]
    alone |= classes == _UNIGRAM
    # Slot 2i: the bigram at character i; slot 2i + 1: character i alone.
    slots = np.flatnonzero(np.stack((pairs, alone), axis=1).ravel())
    position = slots >> 1
    character = points[position].astype(np.uint64)
    following = points[np.minimum(position + 1, len(points) - 1)].astype(np.uint64)
    keys = np.where(slots & 1, character | _UNIGRAM_KEY, (character << np.uint64(16)) | following)
    starts = np.zeros(len(lowered) + 1, dtype=np.intp)
    np.cumsum([len(text) + 1 for text in lowered], out=starts[1:])
    return keys, np.searchsorted(slots, 2 * starts)


_POSITION_BITS = (2 * BATCH_CHARACTERS).bit_length()
"""Bits for a token's position in its batch: at most two tokens a character."""


def _distinct(keys: npt.NDArray[np.uint64]) -> tuple[npt.NDArray[np.uint64], npt.NDArray[np.intp], npt.NDArray[np.intp]]:
    """The distinct keys in increasing order, the position of each one's first token, and each
    token's distinct key (np.unique's, with its index and inverse). The position rides below
    the key (33 bits) in one sort: numpy sorts integers several times faster than it argsorts."""
    packed = (keys << np.uint64(_POSITION_BITS)) | np.arange(len(keys), dtype=np.uint64)
    packed.sort()
    ordered = packed >> np.uint64(_POSITION_BITS)
    positions = (packed & np.uint64((1 << _POSITION_BITS) - 1)).astype(np.intp)
    new = np.empty(len(ordered), dtype=bool)
    new[:1] = True
    np.not_equal(ordered[1:], ordered[:-1], out=new[1:])
    inverse = np.empty(len(keys), dtype=np.intp)
    inverse[positions] = np.cumsum(new) - 1
    return ordered[new], positions[new], inverse


def _key_text(key: int) -> str:
    """The token a _cjk_keys key stands for."""
    if key >> 32:
        return chr(key & 0xFFFF)
    return chr(key >> 16) + chr(key & 0xFFFF)


class Analyzer:
    """Text -> term ids in a growing vocabulary (term -> id), one entry per distinct token cached.

    The cache is what makes analysis affordable: a corpus repeats its words, so stemming runs
    once per distinct word, and the per-token work is one dict look-up inside `map`, which runs
    in C. A token maps to one term id, or to DROPPED (a stopword)."""

    def __init__(self) -> None:
        self.vocabulary: dict[str, int] = {}
        self._tokens = _TokenIds(self)
        self._cjk_ids: dict[int, int] = {}
        """A CJK token's key (_cjk_keys) -> its id, for each one _tokens holds that a batch has met."""
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

    def index_ids_of(self, texts: Sequence[str]) -> Iterator[array[int]]:
        """index_ids of each text in turn, as an array: the same ids in each (in another order
        within a text: bigrams and Han characters first, then the words), the same vocabulary in
        the same order, the same refusal at the same text.

        Texts with CJK characters are cut together, up to BATCH_CHARACTERS at a time: two thirds
        of analysis was theirs, one Python string made and looked up per bigram. Here a batch's
        CJK tokens are integers computed by numpy over all its texts at once (per text, numpy's
        cost per call was more than the text's own), each distinct one looked up once. A text
        holding a CJK token not seen before is analysed as index_ids does it, which gives the
        token its id in the order index_ids would have."""
        waiting: list[tuple[str, str | None]] = []
        """Each text of the batch so far, and what is cut with numpy: its lower-cased form, or None."""
        batch: list[str] = []
        held = 0
        for text in texts:
            lowered = None if text.isascii() else text.lower()
            if lowered is not None and len(lowered) >= BATCH_CHARACTERS:
                lowered = None  # one text as large as a batch: analysed alone, as index_ids does
            if lowered is not None:
                if held + len(lowered) + 1 > BATCH_CHARACTERS:
                    yield from self._batch_ids(waiting, batch)
                    waiting, batch, held = [], [], 0
                batch.append(lowered)
                held += len(lowered) + 1
            waiting.append((text, lowered))
        yield from self._batch_ids(waiting, batch)

    def _batch_ids(self, waiting: list[tuple[str, str | None]], batch: list[str]) -> Iterator[array[int]]:
        look_up = self._tokens.__getitem__
        if not batch:
            for text, _ in waiting:
                yield array("i", map(look_up, tokens(text)))
            return
        keys, offsets = _cjk_keys(batch)
        distinct, first, inverse = _distinct(keys)
        known = self._cjk_ids
        if len(known) > _CJK_IDS_KEPT:
            known.clear()  # a cache of _tokens: what it forgets is found there again
        keys_list = distinct.tolist()
        ids = [known.get(key, _UNSEEN) for key in keys_list]
        for at, key in enumerate(keys_list):
            if ids[at] == _UNSEEN:
                # A token analysed before this batch (by index_ids, or by the analyzer copied).
                ids[at] = self._tokens.get(_key_text(key), _UNSEEN)
                if ids[at] != _UNSEEN:
                    known[key] = ids[at]
        id_array = np.array(ids, dtype=np.int32)
        unseen = np.flatnonzero(id_array == _UNSEEN)
        # Each token not seen before is given its id by the first text that holds it, analysed as
        # index_ids does it; a later text holding one reads it after that.
        firsts: dict[int, list[int]] = {}
        later: set[int] = set()
        if len(unseen):
            for key_at, text_at in zip(unseen.tolist(), (np.searchsorted(offsets, first[unseen], "right") - 1).tolist()):
                firsts.setdefault(text_at, []).append(key_at)
            counts = np.zeros(len(inverse) + 1, dtype=np.int64)
            np.cumsum(id_array[inverse] == _UNSEEN, out=counts[1:])
            later = set(np.flatnonzero(np.diff(counts[offsets])).tolist())
        flat = id_array[inverse].tobytes()
        bounds = (offsets * 4).tolist()
        at = 0
        for text, lowered in waiting:
            if lowered is None:
                yield array("i", map(look_up, tokens(text)))
                continue
            if at in firsts:
                ids_of = array("i", map(look_up, tokens(text)))
                for key_at in firsts[at]:
                    known[keys_list[key_at]] = id_array[key_at] = self._tokens[_key_text(keys_list[key_at])]
            else:
                ids_of = array("i")
                if at in later:
                    ids_of.frombytes(id_array[inverse[offsets[at] : offsets[at + 1]]].tobytes())
                else:
                    ids_of.frombytes(flat[bounds[at] : bounds[at + 1]])
                ids_of.extend(map(look_up, _WORD_NOT_CJK.findall(lowered)))
            at += 1
            yield ids_of

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
