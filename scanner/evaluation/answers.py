"""A retriever's answers checked against what they refer to, before they are scored.

An answer that names no document of the corpus can never match a golden entry: scored as it is,
a wrong path mapping (a `--path-prefix-strip` one folder short, an engine that indexes the
golden file) reads as a search that found nothing. Here every returned path is looked up in the
corpus: the ones outside it are a warning with the prefix that would map them, computed from
the answers themselves, and when no hit of any query is in the corpus the run stops (exit 2).
"""

from __future__ import annotations

import dataclasses
import enum
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass

from scanner.foundation.diagnostics import Diagnostic, DiagnosticCode, Diagnostics
from scanner.foundation.errors import InputError
from scanner.golden.file import DEFAULT_GOLDEN_NAMES, ExpectedEntry, GoldenSet
from scanner.golden.headings import closest_shown, heading_forms
from scanner.golden.labels import quoted_heading
from scanner.golden.similarity import Guesses
from scanner.retrievers.base import AnswerNote, Hit, NoteKind, RetrieverKind
from scanner.retrievers.mapping import redact_url

EXAMPLES_SHOWN = 3
"""Returned paths quoted in a warning: enough to recognise the pattern, short for a log."""
MAX_SEGMENTS_TRIED = 64
"""A returned path's `/`-separated tails looked up in the corpus: bounded whatever its length."""

OWN_FILE_NAMES: Mapping[str, str] = {
    **{name: "golden file" for name in DEFAULT_GOLDEN_NAMES},
    ".kb-eval-history.json": "run history",
    "kb-eval-report.json": "JSON report",
}
"""kb-eval's own files by their default names: an engine that indexes the repository finds them
(the golden file holds every query verbatim, so it outranks the real answers)."""


class ScoreLevel(enum.Enum):
    """What a golden entry's heading means for scoring."""

    SECTION = "section"
    """An entry with a heading is found only by a hit of that section (the default)."""
    DOCUMENT = "document"
    """Headings are ignored: a hit of the document finds the entry. For retrievers that answer
    with documents, not sections (their hits carry no heading)."""


@dataclass(frozen=True, slots=True)
class AnswerSource:
    """What the checks need to know of the retriever, to word the fix."""

    kind: RetrieverKind
    """Which retriever answered."""
    prefixes: tuple[str, ...] = ()
    """The `path-prefix-strip` values given (redacted), to say what to extend."""
    file: str | None = None
    """The file the answers were read from (a run file), for a refusal to name."""


def check_answers(
    golden: GoldenSet,
    lists: Sequence[Sequence[Hit]],
    corpus_paths: AbstractSet[str],
    source: AnswerSource,
    score_level: ScoreLevel,
    diagnostics: Diagnostics,
    golden_name: str | None = None,
    words: Callable[[str], str] = str,
    headings: Mapping[str, Sequence[str]] | None = None,
    notes: Sequence[AnswerNote] = (),
) -> None:
    """Warn about (or refuse) answers that cannot be scored as they are. `lists` follows
    `golden.queries`; `golden_name` is the golden file's name when it is not a default one; `words`
    names each `--flag` as the interface the settings came from does (the refusal is reworded by the
    CLI, like every other); `headings` holds, for the returned documents whose hits name a heading,
    every heading the document has (returned_heading_paths says which; None: not checked); `notes`
    are the retriever's (what a program said when it answered nothing)."""
    warnings = Diagnostics()
    try:
        check_empty_answers(golden, lists, source, notes, warnings)
        _check_answers(golden, lists, corpus_paths, source, score_level, warnings, golden_name)
        if headings is not None and score_level is ScoreLevel.SECTION:
            _warn_headings_not_in_documents(lists, headings, source, warnings)
    finally:
        diagnostics.items.extend(
            Diagnostic(item.code, words(item.message), item.file, item.line) for item in warnings.items
        )


ANSWERS_OWN_SEARCH = frozenset({RetrieverKind.BUILTIN, RetrieverKind.RUN})
"""Retrievers whose empty answer is an answer: the built-in search finds nothing for words the
corpus lacks, and a run file is what it is. Any other is a program or a service, whose empty
answer may be a failure it did not report (an index not built, a crash it printed and exited 0)."""


_RETRIEVER_FLAG = {RetrieverKind.COMMAND: "--command", RetrieverKind.HTTP: "--http-url"}
"""The setting that names a program or service, for a refusal of what it answered."""


def check_empty_answers(
    golden: GoldenSet, lists: Sequence[Sequence[Hit]], source: AnswerSource, notes: Sequence[AnswerNote],
    diagnostics: Diagnostics,
) -> None:
    """A program or service that answered no query with a hit is refused (exit 2), with what it said
    on stderr; one that left some queries without a hit is a warning counting them. Scored as they
    are, empty answers are zeros that say nothing of the search: a command printing nothing (and
    300 MB on stderr) for every query gave all-zero metrics and exit 0."""
    if source.kind in ANSWERS_OWN_SEARCH or not lists:
        return
    empty = [query.id for query, hits in zip(golden.queries, lists, strict=True) if not hits]
    if not empty:
        return
    if len(empty) == len(lists):
        said = next((note.detail for note in reversed(notes) if note.kind is NoteKind.EMPTY), None)
        raise InputError(
            f"the {source.kind.value} retriever answered none of the {len(lists)} queries with a hit"
            + ("; its stderr ends with:" if said is not None else ""),
            field=_RETRIEVER_FLAG.get(source.kind, "--retriever"),
            said=tuple(said.splitlines()) if said is not None else (),
            hint="run the search by hand for one golden query: an index not built, a wrong database "
            "path or an error the program prints but does not exit with all look like this",
        )
    shown = ", ".join(repr(query_id) for query_id in empty[:EXAMPLES_SHOWN])
    more = f" and {len(empty) - EXAMPLES_SHOWN} more" if len(empty) > EXAMPLES_SHOWN else ""
    diagnostics.warn(
        DiagnosticCode.EMPTY_ANSWERS,
        f"{len(empty)} of {len(lists)} queries came back from the {source.kind.value} retriever with no hit "
        f"({shown}{more}): they score 0 on every metric; a search that needs every word (AND) answers "
        "few natural-language questions",
    )


def _check_answers(
    golden: GoldenSet,
    lists: Sequence[Sequence[Hit]],
    corpus_paths: AbstractSet[str],
    source: AnswerSource,
    score_level: ScoreLevel,
    diagnostics: Diagnostics,
    golden_name: str | None,
) -> None:
    own_names = dict(OWN_FILE_NAMES)
    if golden_name:
        own_names[golden_name] = "golden file"
    outside: Counter[str] = Counter()
    own: Counter[str] = Counter()
    inside = 0
    for hits in lists:
        for hit in hits:
            if hit.path in corpus_paths:
                inside += 1
            elif hit.path.rsplit("/", 1)[-1] in own_names:
                own[hit.path] += 1
            else:
                outside[hit.path] += 1
    if own:
        shown = ", ".join(
            f"{own_names[path.rsplit('/', 1)[-1]]} {path!r} ({count} time{'s' if count > 1 else ''})"
            for path, count in sorted(own.items())[:EXAMPLES_SHOWN]
        )
        more = f" and {len(own) - EXAMPLES_SHOWN} more" if len(own) > EXAMPLES_SHOWN else ""
        diagnostics.warn(
            DiagnosticCode.OWN_FILE_RETURNED,
            f"the retriever returned kb-eval's own files as hits: {shown}{more}; they are not part of the corpus "
            "and only take places in the ranking: leave them out of the engine's index",
        )
    if outside:
        fix = prefix_fix(outside, corpus_paths, source)
        total = sum(outside.values())
        examples = ", ".join(repr(redact_url(path)) for path, _ in outside.most_common(EXAMPLES_SHOWN))
        if inside == 0 and not own:
            raise InputError(
                f"no hit of any query is a document of the corpus: {total} returned path(s) such as {examples}",
                file=source.file,
                field=_flag_for(source),
                hint=fix or _no_fix_hint(source),
            )
        diagnostics.warn(
            DiagnosticCode.HITS_OUTSIDE_CORPUS,
            f"{total} returned path(s) are not documents of the corpus and can never match a golden entry "
            f"(e.g. {examples}); {fix or _no_fix_hint(source)}",
        )
    elif inside == 0 and own:
        raise InputError(
            "no hit of any query is a document of the corpus: the retriever returned only kb-eval's own files",
            file=source.file,
            field=_flag_for(source),
            hint="leave the golden file, the history and the report out of the engine's index",
        )
    if score_level is ScoreLevel.SECTION:
        _warn_headings_never_returned(golden, lists, diagnostics)


def prefix_fix(outside: Counter[str], corpus_paths: AbstractSet[str], source: AnswerSource) -> str | None:
    """The `path-prefix-strip` that maps the most returned paths onto corpus paths, as advice;
    None when no returned path ends with a corpus path."""
    found: Counter[str] = Counter()
    for path, count in outside.items():
        extra = _extra_prefix(path, corpus_paths)
        if extra is not None:
            found[extra] += count
    if not found:
        return None
    extra, mapped = found.most_common(1)[0]
    flag = _flag_for(source)
    share = f"{mapped} of {sum(outside.values())}"
    if source.kind is RetrieverKind.RUN:
        return f"{share} would be corpus paths without the leading {extra!r}: write the run's docids relative to the KB"
    if len(source.prefixes) == 1 and not _is_absolute(extra):
        longer = source.prefixes[0].rstrip("/") + "/" + extra.rstrip("/")
        return f"{share} would be corpus paths with {flag} {longer!r} (in place of {source.prefixes[0]!r})"
    return f"{share} would be corpus paths with {flag} {extra.rstrip('/') or extra!r}"


def _extra_prefix(path: str, corpus_paths: AbstractSet[str]) -> str | None:
    """What stands before the longest corpus path `path` ends with (at a `/`), e.g. `kb/` for
    `kb/guide/a.md` when the corpus holds `guide/a.md`."""
    start = 0
    for _ in range(MAX_SEGMENTS_TRIED):
        cut = path.find("/", start)
        if cut < 0:
            return None
        tail = path[cut + 1 :]
        if tail in corpus_paths:
            return path[: cut + 1]
        start = cut + 1
    return None


def _is_absolute(prefix: str) -> bool:
    return prefix.startswith(("/", "\\")) or "://" in prefix


def _flag_for(source: AnswerSource) -> str:
    return "--run-file" if source.kind is RetrieverKind.RUN else "--path-prefix-strip"


def _no_fix_hint(source: AnswerSource) -> str:
    if source.kind is RetrieverKind.RUN:
        return "the run's docids must be paths relative to --kb-path, as the golden file writes them"
    return (
        "returned paths must be relative to --kb-path, as the golden file writes them: check --path-field, "
        "--path-prefix-strip and that the engine indexed this knowledge base"
    )


def _warn_headings_never_returned(
    golden: GoldenSet, lists: Sequence[Sequence[Hit]], diagnostics: Diagnostics
) -> None:
    pinned = sum(
        1 for query in golden.queries for entry in query.expected for member in entry.members if member.heading is not None
    )
    returned = [hit for hits in lists for hit in hits]
    if not pinned or not returned or any(hit.heading for hit in returned):
        return
    diagnostics.warn(
        DiagnosticCode.ANSWERS_WITHOUT_HEADINGS,
        f"no hit of the retriever names a heading, but {pinned} golden entr{'y' if pinned == 1 else 'ies'} "
        "pin one and can never be found: score documents with --score-level document, or point "
        "--heading-field at the hits' section heading",
    )


def returned_heading_paths(golden: GoldenSet, lists: Sequence[Sequence[Hit]], corpus_paths: AbstractSet[str]) -> set[str]:
    """The corpus documents whose headings the returned-heading check needs: those a hit names
    with a heading. None is needed when no golden entry pins a heading: a hit's heading then
    decides nothing."""
    if not any(member.heading is not None for query in golden.queries for entry in query.expected
               for member in entry.members):
        return set()
    return {hit.path for hits in lists for hit in hits if hit.heading and hit.path in corpus_paths}


def _warn_headings_not_in_documents(
    lists: Sequence[Sequence[Hit]], headings: Mapping[str, Sequence[str]], source: AnswerSource,
    diagnostics: Diagnostics,
) -> None:
    """One warning naming the returned headings that no section of their document has, as the
    reader sees headings (the rule scoring uses), each (path, heading) once, with the closest
    headings the document has for the few shown. Such a hit can never find an entry that pins a
    heading: a --heading-field pointing at the page title, or an engine's own breadcrumb, reads
    as a search that missed."""
    returned: Counter[tuple[str, str]] = Counter()
    for hits in lists:
        for hit in hits:
            if hit.heading and hit.path in headings:
                returned[hit.path, hit.heading] += 1
    documents: dict[str, dict[str, str]] = {}
    missing: list[tuple[str, str, int]] = []
    for (path, heading), count in returned.items():
        shown = documents.get(path)
        if shown is None:
            shown = documents[path] = _forms_of(headings[path])
        # The scoring rule (metrics.measures): a form of the hit's heading is a form of a section's.
        if not any(form in shown for form in heading_forms(heading)):
            missing.append((path, heading, count))
    if not missing:
        return
    missing.sort(key=lambda item: (-item[2], item[0], item[1]))
    guesses = Guesses()
    examples = []
    for path, heading, count in missing[:EXAMPLES_SHOWN]:
        shown = documents[path]
        near = list(dict.fromkeys(closest_shown(heading, shown, guesses=guesses) or ())) if shown else []
        there = (
            f"closest headings there: {', '.join(map(quoted_heading, near))}" if near
            else "it has no heading" if not shown
            else f"it has {len(shown)} headings"
        )
        times = f"{count} hits, " if count > 1 else ""
        examples.append(f"{quoted_heading(heading)} in {path!r} ({times}{there})")
    more = f" and {len(missing) - EXAMPLES_SHOWN} more" if len(missing) > EXAMPLES_SHOWN else ""
    fix = (
        "write each hit's heading as its section's heading (a TREC docid is path#heading)" if source.kind is RetrieverKind.RUN
        else "point --heading-field at the hit's section heading as the page shows it"
    )
    diagnostics.warn(
        DiagnosticCode.RETURNED_HEADING_NOT_IN_DOCUMENT,
        f"{len(missing)} returned heading(s) are no section of their document and can never match an entry's "
        f"`heading:`: {'; '.join(examples)}{more}; {fix}, or score documents with --score-level document",
    )


def _forms_of(headings: Sequence[str]) -> dict[str, str]:
    """Every form a reader may write a document's headings in -> the heading as first written."""
    forms: dict[str, str] = {}
    for heading in headings:
        if heading:
            for form in heading_forms(heading):
                forms.setdefault(form, heading)
    return forms


def expected_for_scoring(expected: Sequence[ExpectedEntry], score_level: ScoreLevel) -> tuple[ExpectedEntry, ...]:
    """The entries as scored: at document level each document once, without a heading; a group
    (`any:`) stays one entry, of its distinct documents (one document alone is a plain entry)."""
    if score_level is ScoreLevel.SECTION:
        return tuple(expected)
    seen: dict[str | tuple[str, ...], ExpectedEntry] = {}
    for entry in expected:
        paths = tuple(dict.fromkeys(member.path for member in entry.members))
        key: str | tuple[str, ...] = paths[0] if len(paths) == 1 else paths
        members = () if len(paths) == 1 else tuple(ExpectedEntry(p, None, entry.line) for p in paths)
        first = seen.get(key)
        if first is None:
            seen[key] = ExpectedEntry(path=paths[0], heading=None, line=entry.line, grade=entry.grade, any_of=members)
        elif entry.grade > first.grade:
            # A document labelled twice (two of its sections) counts once, with its higher grade.
            seen[key] = dataclasses.replace(first, grade=entry.grade)
    return tuple(seen.values())


def warn_answer_notes(notes: Sequence[AnswerNote], diagnostics: Diagnostics, words: Callable[[str], str] = str) -> None:
    """One warning per kind of note, naming the queries (a few of them) and how many."""
    warnings = Diagnostics()
    _warn_answer_notes(notes, warnings)
    diagnostics.items.extend(Diagnostic(item.code, words(item.message)) for item in warnings.items)


def _warn_answer_notes(notes: Sequence[AnswerNote], diagnostics: Diagnostics) -> None:
    by_kind: dict[NoteKind, list[AnswerNote]] = {}
    for note in notes:
        if note.kind is not NoteKind.EMPTY:  # counted from the answers by check_empty_answers
            by_kind.setdefault(note.kind, []).append(note)
    for kind, items in by_kind.items():
        queries = sorted({note.query_id for note in items})
        shown = "; ".join(f"{note.query_id!r}: {note.detail}" for note in items[:EXAMPLES_SHOWN])
        more = f" and {len(items) - EXAMPLES_SHOWN} more" if len(items) > EXAMPLES_SHOWN else ""
        if kind is NoteKind.PARTIAL:
            diagnostics.warn(
                DiagnosticCode.PARTIAL_RESULTS,
                f"the service answered {len(queries)} quer{'y' if len(queries) == 1 else 'ies'} with partial "
                f"results, scored as they came ({shown}{more}): their metrics may be too low; give the "
                "service more time or fix its failing shards",
            )
        elif kind is NoteKind.SCORE_NOT_NUMBER:
            diagnostics.warn(
                DiagnosticCode.SCORE_NOT_NUMBER,
                f"{len(items)} hit score(s) in {len(queries)} quer{'y' if len(queries) == 1 else 'ies'} are not "
                f"numbers and are recorded as missing ({shown}{more}); the ranking is the list order, so no "
                "metric changes: point --score-field at a numeric field to keep them",
            )
        else:
            diagnostics.warn(
                DiagnosticCode.SERVICE_ERRORS,
                f"the service reported errors beside its hits for {len(queries)} "
                f"quer{'y' if len(queries) == 1 else 'ies'} ({shown}{more}): those hits may be incomplete",
            )
