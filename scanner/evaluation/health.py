"""What a golden set cannot test: reported beside the scores, never fatal.

Three rules, each a function, each decided without I/O from what the evaluation already holds:

- `duplicate_wordings`: queries whose wording is the same after the quote scan's normalisation
  (scanner/scan/quotes.py `normalise`: whitespace collapsed, case folded). The scan folds them into
  one needle silently; for the author they are one test counted twice, often a copy-paste whose
  second copy was meant to be reworded.
- `title_queries`: a query that is (nearly) its answer's page title or one of its headings. Any
  search finds a page by its own title, so such a query passes with or without a good search
  (TITLE_SIMILARITY says what it was measured on).
- `coverage`: the share of indexed documents that are some query's answer, and the documents no
  query retrieves in its top k. Neither is a fault; both say how much of the KB the labels reach.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from difflib import SequenceMatcher

from scanner.foundation.diagnostics import Diagnostic, DiagnosticCode
from scanner.golden.file import STARTER_TAG, GoldenQuery
from scanner.scan.quotes import normalise

TITLE_SIMILARITY = 0.85
"""A query at least this similar to a title or heading of its answer (difflib's ratio over the
words, punctuation dropped, case folded) tests only the title. Chosen on real golden sets
(bench/golden_health.py): of Cranfield's 225 queries, CISI's 76, grooveseek's
30 and the example KB's 8, the one at or above it is Cranfield 172, its answer's title less three
words (0.89); the closest questions asked in their own words score 0.82 and 0.81. Over Cranfield's
1,390 titles of four words or more, a title with one word pluralised scores at least 0.97, with one
word dropped or changed 0.96 and 0.95 at the median (94% and 93% at or above 0.85), a title behind
"how do I find" 0.91 (91% at or above); what kb-eval init writes, a title verbatim, scores 1.0."""
UNREACHED_LISTED = 1000
"""Documents no query retrieves, listed in the JSON (the count is always whole); past this a KB
is mostly unreached and the list stops helping."""
_PUNCTUATION = re.compile(r"[\W_]+")


@dataclass(frozen=True, slots=True)
class DuplicateWording:
    wording: str
    """The normalised wording the queries share."""
    ids: tuple[str, ...]
    """Every query with it, in golden-file order."""
    lines: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class TitleQuery:
    query_id: str
    line: int
    path: str
    """The answer whose title or heading the query is."""
    title: str
    """That title or heading, as the page writes it."""
    similarity: float


@dataclass(frozen=True, slots=True)
class Coverage:
    documents: int
    """Indexed documents."""
    answers: int
    """Indexed documents that are some query's answer (an expected entry of grade 1 or more)."""
    k: int
    """The cut-off of `unreached` (the run's largest k)."""
    unreached_count: int
    """Indexed documents no query retrieves in its top k."""
    unreached: tuple[str, ...]
    """Their paths, sorted, the first UNREACHED_LISTED."""

    @property
    def answer_share(self) -> float:
        return self.answers / self.documents if self.documents else 0.0


@dataclass(frozen=True, slots=True)
class GoldenHealth:
    duplicates: tuple[DuplicateWording, ...]
    title_queries: tuple[TitleQuery, ...]
    coverage: Coverage


def duplicate_wordings(queries: Sequence[GoldenQuery]) -> list[DuplicateWording]:
    groups: dict[str, list[GoldenQuery]] = {}
    for query in queries:
        groups.setdefault(normalise(query.text), []).append(query)
    return [
        DuplicateWording(wording, tuple(q.id for q in group), tuple(q.line for q in group))
        for wording, group in groups.items() if len(group) > 1
    ]


def _words(text: str) -> str:
    return " ".join(_PUNCTUATION.sub(" ", text).split()).lower()


def title_similarity(query: str, title: str) -> float:
    """difflib's ratio of the two texts' words (punctuation dropped, case folded): 1.0 when equal."""
    return _similarity_from(_words(query), _words(title), 0.0)


def _similarity_from(a: str, b: str, cutoff: float) -> float:
    """title_similarity of two texts already cut into words; 0.0 when it is surely below `cutoff`.

    Two upper bounds of difflib's ratio come first, as its get_close_matches does: from the
    lengths, then from the characters the texts share (its quick_ratio, counted in C here), so a
    heading that cannot reach the cutoff is never aligned. The alignment is pure Python, and a
    query's answer has a heading per section: at 10,000 queries it was seconds of the run."""
    if not a or not b:
        return 0.0
    total = len(a) + len(b)
    if cutoff > 0 and (
        2.0 * min(len(a), len(b)) / total < cutoff or 2.0 * (Counter(a) & Counter(b)).total() / total < cutoff
    ):
        return 0.0
    return SequenceMatcher(None, a, b, autojunk=False).ratio()


def title_queries(queries: Sequence[GoldenQuery], titles: Mapping[str, Sequence[str]]) -> list[TitleQuery]:
    """Per query, the most similar title or heading among its answers' (`titles`: path -> the page
    title, then its headings), when it reaches TITLE_SIMILARITY."""
    found = []
    # Each answer's titles cut into words once, however many queries name it (10,000 queries
    # naming a page each cut its every heading again per query).
    words_of: dict[str, list[tuple[str, str]]] = {}
    for query in queries:
        if STARTER_TAG in query.tags:
            continue  # kb-eval init's placeholder: its own warning already says a title measures nothing
        best: TitleQuery | None = None
        words = _words(query.text)
        for path in answer_paths([query]):
            if path not in words_of:
                words_of[path] = [(title, _words(title)) for title in titles.get(path, ())]
            for title, title_words in words_of[path]:
                similarity = _similarity_from(words, title_words, TITLE_SIMILARITY)
                if similarity >= TITLE_SIMILARITY and (best is None or similarity > best.similarity):
                    best = TitleQuery(query.id, query.line, path, title, similarity)
        if best is not None:
            found.append(best)
    return found


def answer_paths(queries: Iterable[GoldenQuery]) -> list[str]:
    """The documents the queries' relevant entries name (members of a group included), in order."""
    paths = (m.path for q in queries for entry in q.expected if entry.grade > 0 for m in entry.members)
    return list(dict.fromkeys(paths))


def coverage(indexed: Collection[str], golden: Sequence[GoldenQuery], top_k: Iterable[Sequence[str]], k: int) -> Coverage:
    """`top_k`: each query's returned paths, in rank order (cut at `k` here)."""
    answers = sum(1 for path in answer_paths(golden) if path in indexed)
    reached = {path for paths in top_k for path in paths[:k]}
    unreached = sorted(path for path in indexed if path not in reached)
    return Coverage(len(indexed), answers, k, len(unreached), tuple(unreached[:UNREACHED_LISTED]))


def golden_health(
    golden: Sequence[GoldenQuery], top_k: Iterable[Sequence[str]], indexed: Collection[str],
    titles: Mapping[str, Sequence[str]], k: int,
) -> GoldenHealth:
    return GoldenHealth(
        tuple(duplicate_wordings(golden)), tuple(title_queries(golden, titles)), coverage(indexed, golden, top_k, k)
    )


def health_diagnostics(health: GoldenHealth, golden_file: str) -> list[Diagnostic]:
    """One warning per duplicated wording (naming every id) and per title query, at its line."""
    warnings = [
        Diagnostic(
            DiagnosticCode.DUPLICATE_WORDING,
            f"queries {', '.join(map(repr, d.ids))} have the same wording ({d.wording!r}, compared "
            "ignoring case and spacing): one test counted "
            f"{len(d.ids)} times; reword or remove all but one (field: queries[{d.ids[-1]}].query)",
            golden_file, d.lines[-1],
        )
        for d in health.duplicates
    ]
    warnings += [
        Diagnostic(
            DiagnosticCode.TITLE_QUERY,
            f"query {t.query_id!r} is (nearly) the title of its answer {t.path!r} ({t.title!r}): any search "
            "finds a page by its own title, so it tests only the title; ask it as a reader would "
            f"(field: queries[{t.query_id}].query)",
            golden_file, t.line,
        )
        for t in health.title_queries
    ]
    return warnings
