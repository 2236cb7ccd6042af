"""golden-queries-quoted: documents that quote two or more golden queries verbatim.

The specification is docs/decisions/0006-report-a-corpus-that-quotes-the-golden-set.md. Each of
its rules is one function or constant below, with the reason beside it, and `scan` applies them in
the order the original implementation does (grooveseek, formerly kb-mcp: `grooveseek/src/eval.rs`,
`quote_needles` then `detect_quoted_queries`).
The scan decides with no I/O: it is given the indexed chunks (read inside the
same snapshot the searches used) and each query's returned list, and returns
findings. Rendering the warning is separate (scanner/render/console.py), so is locating
the quote in the source file (`locate`).

The finding reports an observation, never a cause: a note about the test and
the source a query was written from look identical, and only the person who
wrote the golden set can tell them apart. It never changes the exit status.
"""

from __future__ import annotations

import itertools
import re
from bisect import bisect_right
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import ahocorasick
import ahocorasick_rs

from scanner.corpus.documents import Chunk
from scanner.corpus.markdown import BREADCRUMB_SEPARATOR
from scanner.golden.file import STARTER_TAG, GoldenQuery
from scanner.metrics.measures import Judgments
from scanner.retrievers.base import Hit
from scanner.search.index import INDEXED_FIELDS, IndexedChunk

CHECK_NAME = "golden-queries-quoted"

MIN_QUOTE_CHARS = 12
"""Queries shorter than this (in characters, after normalisation) are not matched: short queries
appear in many documents by chance and only add noise to the count the rule depends on. Measured
on the reference corpus (662 documents, 26 queries): 8 and 12 give identical results, 16 loses the
one true finding, because golden queries skew short. Not configurable, by decision."""

MIN_QUOTED_QUERIES = 2
"""A document is a finding only when it quotes at least this many distinct queries. One verbatim
match is what a document about a topic looks like (a one-quote rule gave 8 findings, all false,
on the reference corpus); quoting several is what a note about the test looks like (exactly the
one true finding). Not configurable, by decision: no threshold option, no allow-list."""

# Fields are joined with NUL for one pass per document. It is not whitespace (normalisation keeps
# it), corpus text never holds it (files with NUL bytes are skipped), and needles holding it are
# not searched, so no match can span two fields or two chunks: the seam rule holds by construction.
_SEAM = "\x00"
_SEAM_PATTERN = re.compile(_SEAM)
_NEWLINE = re.compile("\n")


def normalise(text: str) -> str:
    """Runs of any Unicode whitespace become one space, ends are trimmed, text is lower-cased.
    Applied identically to queries and to field text."""
    return " ".join(text.split()).lower()


@dataclass(frozen=True, slots=True)
class Needle:
    """One distinct normalised query wording, standing for every golden entry that has it."""

    text: str
    representative: GoldenQuery
    """The first golden entry with this wording: its id and its ranks are reported."""
    order: int
    """Golden-file position of the representative, for reporting in golden order."""
    exempt_paths: frozenset[str]
    """Documents that are a labelled answer for this wording (in any folded entry's `expected`)."""


@dataclass(frozen=True, slots=True)
class QuoteLocation:
    field: str
    """`heading`, `breadcrumb` or `body`."""
    line: int
    column: int | None
    """1-based column in the source line, when the quote maps onto one line's text."""


@dataclass(frozen=True, slots=True)
class QuotedQuery:
    query_id: str
    rank_in_top_k: int | None
    """Best rank of any chunk of this document in the query's returned list; None when the
    document is not in it (a measured fact, not missing data)."""
    first_quote_chunk: int
    """Index-chunk id holding the first quotation (resolved to a source line by `locate`)."""
    first_quote_field: str
    best_expected_rank: int | None
    """Best rank of any hit in the query's returned list that matches one of its expected entries
    (`metrics.measures.Judgments`, so a pinned heading must match); None when none reached the list."""
    displaces_expected: bool | None
    """True when this document ranked above every expected document of the query in this run
    (also when no expected document reached the list), False when an expected document ranked
    above it, None when this document is not in the list. Reported beside the rank, never part of
    the rule: the finding set, the exit status and the fingerprint do not depend on it."""


@dataclass(frozen=True, slots=True)
class Finding:
    path: str
    quoted: tuple[QuotedQuery, ...]
    """In golden order."""


def fold_needles(queries: Sequence[GoldenQuery]) -> list[Needle]:
    """Entries whose wording normalises to the same text become one needle before counting.

    The golden loader accepts duplicate wording, and counting near-duplicates separately would let
    one quotation satisfy the two-query threshold on its own. The needle is exempt for a document if
    any folded entry expects it: same wording, same 'this is a labelled answer'."""
    by_text: dict[str, tuple[GoldenQuery, int, set[str]]] = {}
    for order, query in enumerate(queries):
        text = normalise(query.text)
        if not is_long_enough(text):
            continue
        _, _, exempt = by_text.setdefault(text, (query, order, set()))
        exempt.update(member.path for entry in query.expected for member in entry.members)
    return [
        Needle(text, representative, first, frozenset(exempt))
        for text, (representative, first, exempt) in by_text.items()
    ]


def is_long_enough(normalised_query: str) -> bool:
    return len(normalised_query) >= MIN_QUOTE_CHARS


def is_exempt(needle: Needle, path: str) -> bool:
    """A document listed in the query's `expected` contains the wording because it is the answer.
    The exemption covers the whole document even when the entry pins a heading: narrowing it to
    the section would start counting 'a topic name appears in another section of the document
    about that topic', the population that made the one-quote rule useless."""
    return path in needle.exempt_paths


def drop_explained_matches(matched: Sequence[Needle]) -> list[Needle]:
    """A match whose text is a substring of another match in the same document is dropped: one
    quotation of 'how does cross-encoder reranking work?' also matches 'cross-encoder reranking',
    and is still one piece of evidence. Without occurrence positions this also drops a shorter
    query quoted elsewhere, erring toward under-counting, the same trade the threshold makes.

    `matched` must be every match in the document, exempt ones included: a longer match that is
    exempt (the document answers it) still explains the shorter one inside it (see `scan`)."""
    # One pass over the matched wordings, longest first and joined by the seam: a wording found
    # before its own place is inside a longer one (distinct wordings of one length cannot hold
    # each other). Pairwise `in` tests were the number of matches squared per document.
    ordered = sorted(range(len(matched)), key=lambda n: -len(matched[n].text))
    starts, offset = {}, 0
    for n in ordered:
        starts[n] = offset
        offset += len(matched[n].text) + len(_SEAM)
    first = first_occurrences({n: matched[n].text for n in ordered}, _SEAM.join(matched[n].text for n in ordered))
    return [needle for n, needle in enumerate(matched) if first.get(n, starts[n]) >= starts[n]]


def is_finding(independent: Sequence[Needle]) -> bool:
    return len(independent) >= MIN_QUOTED_QUERIES


def _automaton(words: Mapping[int, str]) -> ahocorasick.Automaton:
    automaton = ahocorasick.Automaton(ahocorasick.STORE_INTS)
    for key, word in words.items():
        automaton.add_word(word, key)
    if len(automaton):
        automaton.make_automaton()
    return automaton


PRE_CHECK_PREFIX_CHARS = 64
"""The pre-check looks for each needle's first this many characters: a needle cannot occur where
its beginning does not, so a document the pre-check passes over holds no needle. Golden queries
are rarely longer (the bench's 225 average 41 characters), and the automaton stays at most this
many states a query whatever the golden file holds: a golden file at its 16 MiB cap of random
2,000-character queries makes a 24 MiB automaton of beginnings, 687 MiB of whole queries (and
pyahocorasick's, 734 MiB, is built only once a document passes the pre-check)."""

PRE_CHECK_DFA_CHARS = 20_000
"""Up to this many bytes (UTF-8) of beginnings the pre-check is a DFA, beyond it a contiguous NFA.
Over the 74 M normalised characters of the bench corpus (20,000 documents): 217 needles (9,000
characters) 0.47 s as a DFA, 0.74 s as an NFA; 9,518 needles 1.7-2.5 s as a DFA, 1.0 s as an NFA.
A DFA's table grows with the bytes times the byte classes."""


def pre_check(
    words: Mapping[int, str], dfa_up_to: int = PRE_CHECK_DFA_CHARS, prefix: int = PRE_CHECK_PREFIX_CHARS
) -> ahocorasick_rs.BytesAhoCorasick:
    """The automaton quotes_any searches with: each word's first `prefix` characters in UTF-8, once
    each; a DFA up to `dfa_up_to` bytes of them, else a contiguous NFA."""
    beginnings = list(dict.fromkeys(_utf8(word[:prefix]) for word in words.values()))
    big = sum(len(beginning) for beginning in beginnings) > dfa_up_to
    implementation = ahocorasick_rs.Implementation.ContiguousNFA if big else ahocorasick_rs.Implementation.DFA
    return ahocorasick_rs.BytesAhoCorasick(beginnings, implementation=implementation)


def _utf8(text: str) -> bytes:
    # Bytes, not str: ahocorasick-rs makes a str UTF-8 anyway and maps offsets back, and text.encode
    # then a bytes search took 0.55-0.57 s against 0.66 at 225 queries, 1.13-1.22 against 1.35-1.40
    # at 10,000, over the bench corpus. UTF-8 is self-synchronising, so a byte match is a character
    # match; no text here holds a lone surrogate (golden and chunk table refuse them), and
    # surrogatepass keeps the function total if one did.
    return text.encode("utf-8", "surrogatepass")


def quotes_any(automaton: ahocorasick_rs.BytesAhoCorasick, text: str) -> bool:
    """False when no needle occurs in `text` (no needle's beginning does); True when one may.

    Most documents quote nothing, and pyahocorasick walks about 17 ns a character to show it
    (it scans a node's children one by one); ahocorasick-rs, a DFA or a contiguous NFA, 6-13 ns.
    Its standard search without overlaps reports a match whenever one occurs, and each match it
    reports covers at least MIN_QUOTE_CHARS characters, so its list is at most the text's length
    over that, whatever the needles. It returns whole lists, so it cannot stop a pass whose
    reports outgrow their budget: first_occurrences, which must, stays on pyahocorasick's iterator."""
    return bool(automaton.find_matches_as_indexes(_utf8(text)))


def word_sizes(words: Mapping[int, str]) -> tuple[int, int]:
    """(longest word, total length of the words): what first_occurrences' report budget is made of."""
    lengths = [len(word) for word in words.values()]
    return max(lengths, default=0), sum(lengths)


def first_occurrences(
    words: Mapping[int, str], text: str, automaton: ahocorasick.Automaton | None = None,
    sizes: tuple[int, int] | None = None,
) -> dict[int, int]:
    """key -> start of the first occurrence in `text` of each word that occurs in it (distinct words).

    Aho-Corasick reports, at each position, every word that ends there: with words that are
    suffixes of one another (`aaaaaaaaaaaa`, `aaaaaaaaaaaaa`, ... from a golden file), that is
    hundreds of reports per character, and 1 MiB of `a` took 355 s. Only a word's first
    occurrence matters, so when the reports outgrow the text scanned plus the words' own size,
    the words already found are dropped and the automaton is rebuilt, continuing where it was.
    Each rebuild follows reports that found new words (a found word is never reported again),
    so the cost is linear in the text plus the words, and the scan stops once every word is found.
    `automaton` is `words` already built and `sizes` their word_sizes (the caller's, made once for
    every document: measured over the words for each document, they cost the number of words per
    document, 41 s of a 10,000-query scan of 20,000 documents); both are used until the first rebuild."""
    first: dict[int, int] = {}
    remaining: Mapping[int, str] = words  # a copy without the found words is made at a rebuild
    position = 0  # matches ending before this were seen by an earlier automaton
    current = automaton if automaton is not None else _automaton(remaining)
    longest, total = sizes if sizes is not None else word_sizes(remaining)
    while remaining and len(current):
        budget = total + len(remaining)
        started = position
        reports = 0
        stopped_at: int | None = None
        for end, key in current.iter(text, max(0, position - longest + 1)):
            if end < position:
                continue
            if key in remaining and key not in first:
                first[key] = end - len(words[key]) + 1
                if len(first) == len(words):
                    return first
            reports += 1
            if reports > budget + 2 * (end - started):
                stopped_at = end
                break
        if stopped_at is None:
            break
        remaining = {key: word for key, word in remaining.items() if key not in first}
        longest, total = word_sizes(remaining)
        position = stopped_at  # the reports at this position are made again by the new automaton
        current = _automaton(remaining)
    return first


class QuoteScanner:
    """Multi-pattern search over every field of every indexed chunk in one pass per document.

    Aho-Corasick makes the cost linear in the corpus text plus the matches, whatever the number of
    golden queries; a loop of `needle in text` grows with queries x corpus (the reference in tests)."""

    def __init__(self, queries: Sequence[GoldenQuery]) -> None:
        self.needles = fold_needles(queries)
        self.by_order = {needle.order: needle for needle in self.needles}
        # A needle holding the seam character could match across two fields; corpus text
        # never holds it (files with NUL bytes are skipped), so such a needle can't be quoted.
        self.words = {needle.order: needle.text for needle in self.needles if _SEAM not in needle.text}
        self.sizes = word_sizes(self.words)
        self.pre_check = pre_check(self.words)
        self._exact: ahocorasick.Automaton | None = None  # built for the first document that needs it

    @property
    def automaton(self) -> ahocorasick.Automaton:
        """The exact pass's automaton of every word: built once, and only when a document passes
        the pre-check (a run whose documents quote nothing never holds it)."""
        if self._exact is None:
            self._exact = _automaton(self.words)
        return self._exact

    def matches_in_document(self, chunks: Sequence[IndexedChunk]) -> dict[int, tuple[int, str]]:
        """needle order -> (chunk id, field) of its first occurrence in this document."""
        if not self.words:
            return {}
        # One normalisation and one automaton pass per document, over its fields joined by the
        # seam. Normalising the joined text equals normalising each field: the seam is not
        # whitespace, so it survives, and no needle holds it, so no match crosses it.
        # chunk[2:5] is (heading, breadcrumb, body): INDEXED_FIELDS, in IndexedChunk's order.
        text = normalise(_SEAM.join([field for chunk in chunks for field in chunk[2:5]]))
        if not quotes_any(self.pre_check, text):
            return {}
        first = first_occurrences(self.words, text, self.automaton, self.sizes)
        if not first:
            return {}
        seams = [m.start() for m in _SEAM_PATTERN.finditer(text)]
        where = [(chunk[0], field) for chunk in chunks for field in INDEXED_FIELDS]
        return {order: where[bisect_right(seams, start)] for order, start in first.items()}


def not_placeholders(queries: Sequence[GoldenQuery]) -> list[GoldenQuery]:
    """The queries a document can leak: not those still tagged `starter`. `kb-eval init` writes
    each page's title as a placeholder query, and a page naming two other pages' titles is a table
    of contents or a list of links, not a note about the test: on a first run it was a false alarm,
    the newcomer's first sight of this check. Once the query is rewritten and the tag removed, it
    is scanned."""
    return [query for query in queries if STARTER_TAG not in query.tags]


def scan(
    chunks_by_document: Iterable[tuple[str, Sequence[IndexedChunk]]],
    queries: Sequence[GoldenQuery],
    returned: Mapping[str, Sequence[Hit]],
) -> list[Finding]:
    """Scan every indexed document once. `returned` maps query id to the list that query got.

    The rules apply in grooveseek's order (`grooveseek/src/eval.rs`: `quote_needles` folds and
    floors, `scan_quoted_documents` matches per field, `detect_quoted_queries` drops explained
    matches first and exempts second, then counts). Explained matches go first because a
    quotation is evidence whatever the document is: a labelled answer for 'how does cross-encoder
    reranking work?' that mentions one other golden query holds one quotation of the long query,
    and exempting first would let its 'cross-encoder reranking' count as a second one."""
    queries = not_placeholders(queries)
    scanner = QuoteScanner(queries)  # fold_needles: the length floor, then folded wording
    findings = []
    # One per query, however many documents quote it: matching a list against a query's labels
    # costs the number of labels, which must not be paid again per quoting document.
    # The same for each document's best rank in a query's list.
    expected_ranks: dict[str, int | None] = {}
    ranks: dict[str, dict[str, int]] = {}

    def expected_rank(query: GoldenQuery) -> int | None:
        if query.id not in expected_ranks:
            expected_ranks[query.id] = best_expected_rank(returned.get(query.id, ()), query)
        return expected_ranks[query.id]

    def rank_of(query: GoldenQuery, path: str) -> int | None:
        if query.id not in ranks:
            best: dict[str, int] = {}
            for hit in returned.get(query.id, ()):
                best[hit.path] = min(hit.rank, best.get(hit.path, hit.rank))
            ranks[query.id] = best
        return ranks[query.id].get(path)

    for path, chunks in chunks_by_document:
        matches = scanner.matches_in_document(chunks)  # per field, never across a seam
        if len(matches) < MIN_QUOTED_QUERIES:
            # Dropping explained matches and exempting answers only remove: most documents quote
            # nothing, and each built an automaton for nothing here.
            continue
        independent = drop_explained_matches([scanner.by_order[order] for order in matches])
        counted = [needle for needle in independent if not is_exempt(needle, path)]
        if not is_finding(counted):
            continue
        quoted = tuple(
            quoted_query(
                needle, matches[needle.order], rank_of(needle.representative, path), expected_rank(needle.representative)
            )
            for needle in sorted(counted, key=lambda n: n.order)
        )
        findings.append(Finding(path, quoted))
    findings.sort(key=lambda f: f.path)
    return findings


def quoted_query(
    needle: Needle, first_quote: tuple[int, str], rank: int | None, expected_rank: int | None
) -> QuotedQuery:
    """The report line for one counted needle, with the representative entry's id: `rank` is the
    quoting document's best rank in that entry's list, `expected_rank` the best rank of
    its expected entries there (best_expected_rank), the entry `rank_in_top_k` has always been read
    from."""
    return QuotedQuery(
        query_id=needle.representative.id,
        rank_in_top_k=rank,
        first_quote_chunk=first_quote[0],
        first_quote_field=first_quote[1],
        best_expected_rank=expected_rank,
        displaces_expected=displaces_expected(rank, expected_rank),
    )


def best_expected_rank(hits: Sequence[Hit], query: GoldenQuery) -> int | None:
    """Best rank of a hit that the metrics would credit to this query (same matching rule), so
    'the labelled answer ranked above it' means what recall and MRR mean by a labelled answer."""
    positions = Judgments(query.expected).first_positions(hits)
    return min((hits[p - 1].rank for p in positions if p is not None), default=None)


def displaces_expected(rank: int | None, expected_rank: int | None) -> bool | None:
    """Whether the quoting document took a place above every labelled answer: the harm decision
    0006 exists to reveal. Unknown (None) when the document is not in the list at all; True when
    no labelled answer reached the list, since the document then ranks above all of them."""
    if rank is None:
        return None
    return expected_rank is None or rank < expected_rank


def is_displacing(finding: Finding) -> bool:
    """A finding that displaced a labelled answer for at least one of the queries it quotes."""
    return any(quoted.displaces_expected is True for quoted in finding.quoted)


def locate_in_text(raw: str, needles: Sequence[str]) -> list[tuple[int, int] | None]:
    """(line offset, 0-based column) of the first occurrence of each normalised needle in raw text.

    Normalisation is rebuilt here with a map back to raw offsets, once for all the needles quoted
    in this text (once per needle was a 1 MiB section re-read for each of 200 queries: 25 s); this
    runs only for findings."""
    normalised: list[str] = []
    origin: list[int] = []
    pending_space = False
    for position, char in enumerate(raw):
        if char.isspace():
            pending_space = bool(normalised)
            continue
        if pending_space:
            normalised.append(" ")
            origin.append(position)
            pending_space = False
        for lowered in char.lower():
            normalised.append(lowered)
            origin.append(position)
    words = {n: needle for n, needle in enumerate(needles) if needle}
    found = first_occurrences(words, "".join(normalised))
    line_starts = [0, *(m.end() for m in _NEWLINE.finditer(raw))]
    located: list[tuple[int, int] | None] = []
    for n in range(len(needles)):
        if n not in found:
            located.append(None)
            continue
        raw_offset = origin[found[n]]
        line_offset = bisect_right(line_starts, raw_offset) - 1
        located.append((line_offset, raw_offset - line_starts[line_offset]))
    return located


def locate(chunk: Chunk, field: str, needle_texts: Sequence[str]) -> list[QuoteLocation]:
    """Where in the source file the first quotation in `field` of `chunk` of each needle is.

    Body text is the source lines unchanged, so line and column are exact. A heading gives its
    line. A breadcrumb match points at the part it starts in: an enclosing heading's line, the
    frontmatter `title:` line, or line 1 when the title is the file name."""
    if field == "body":
        return [
            QuoteLocation(field, chunk.body_start_line + found[0], found[1] + 1) if found is not None
            else QuoteLocation(field, chunk.body_start_line, None)
            for found in locate_in_text(chunk.body, needle_texts)
        ]
    if field == "heading":
        line = chunk.heading_line if chunk.heading_line is not None else chunk.start_line
        return [
            QuoteLocation(field, line + (found[0] if found else 0), None)
            for found in locate_in_text(chunk.heading, needle_texts)
        ]
    ends = list(itertools.accumulate(len(text) + len(BREADCRUMB_SEPARATOR) for text in chunk.breadcrumb_parts))
    located = []
    for found in locate_in_text(chunk.breadcrumb, needle_texts):
        # the breadcrumb is one line: the column says which part the quotation starts in
        part = 0 if found is None else min(bisect_right(ends, found[1]), len(ends) - 1)
        located.append(QuoteLocation(field, chunk.breadcrumb_lines[part], None))
    return located
