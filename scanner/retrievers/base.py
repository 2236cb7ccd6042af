"""The retriever interface: query text and a limit in, ranked hits out.

Scoring never looks past this interface, so a new way of answering queries
(HTTP service, external command, precomputed run file) plugs in without
touching metrics, the quote scan or the report.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol


class RetrieverKind(enum.Enum):
    """The retrievers there are; one module each in this package."""

    BUILTIN = "builtin"
    """The built-in BM25F search over the KB, embedded in kb-eval (the default)."""
    HTTP = "http"
    """A search service over HTTP."""
    COMMAND = "command"
    """A program run once per query, printing JSON."""
    RUN = "run"
    """Precomputed rankings from a TREC or JSONL run file."""
    MCP = "mcp"
    """A search tool of an MCP server, over stdio or Streamable HTTP."""


@dataclass(frozen=True, slots=True)
class Hit:
    """One ranked result, as the retriever returned it."""

    rank: int
    """1-based position in the returned list."""
    path: str
    """KB-relative path with `/` separators, the form the golden file uses."""
    heading: str
    """Heading of the returned section; empty for text before the first heading or when unknown."""
    score: float | None
    """The retriever's own score (higher is better), or None when it gives none."""
    parents: tuple[str, ...] | None = None
    """The headings enclosing the returned section, outermost first (the document title not
    included); None when unknown. The built-in search knows them; for another retriever's hit they
    are looked up from the indexed corpus when the heading is unique in its document (evaluate.py).
    Used only by `parent:` and `subsections:` labels."""


@dataclass(frozen=True, slots=True)
class SearchRequest:
    """One golden query as a retriever sees it."""

    query_id: str
    text: str
    limit: int


class NoteKind(enum.Enum):
    """What an answer said that does not stop the run but must not pass unseen."""

    PARTIAL = "partial"
    """The service says the answer is incomplete (`timed_out`, failed shards)."""
    SCORE_NOT_NUMBER = "score"
    """A score that is not a JSON number (`"0.204"`, `"83%"`): recorded as missing. An external
    retriever's scores change no metric (the list order ranks), so this never stops a run."""
    SERVICE_ERRORS = "errors"
    """Hits came back beside error words (a GraphQL `errors` list next to `data`)."""
    EMPTY = "empty"
    """No hit came back; the detail is what the program said on stderr meanwhile (its last lines),
    for the refusal when no query got a hit (scanner/evaluation/answers.py)."""


@dataclass(frozen=True, slots=True)
class AnswerNote:
    kind: NoteKind
    query_id: str
    detail: str
    """Already cut and scrubbed: ready for a warning."""


@dataclass(frozen=True, slots=True)
class AnswerCost:
    """What one answer cost: the retriever's wall time for it, and its size as received."""

    seconds: float
    bytes: int | None
    """The answer's bytes as they came back (a body, a program's stdout, a tool result); None when
    nothing crossed a process boundary (the built-in search, a run file)."""


class Retriever(Protocol):
    """Answers golden queries. Implementations live one per module in this package."""

    @property
    def kind(self) -> RetrieverKind:
        """Which retriever this is: what the pipeline reads to word a check of the answers. Its
        `value` is the `name` that `describe()` records."""
        ...

    @property
    def path_prefixes(self) -> tuple[str, ...]:
        """The `path-prefix-strip` values it was given, URLs redacted, for advice on the paths it
        returns; () for a retriever that maps no answers."""
        ...

    def describe(self) -> dict[str, object]:
        """What identifies this retriever and its settings, for the run fingerprint.

        Must never contain secrets (tokens, header values, credentials in URLs).
        """
        ...

    def search_all(self, requests: Sequence[SearchRequest]) -> list[list[Hit]]:
        """Answer every request; the result list is in the order of `requests`.

        Raises `scanner.foundation.errors.InputError` when a query cannot be answered, so a
        failure is never scored as a silent miss.
        """
        ...

    def notes(self) -> tuple[AnswerNote, ...]:
        """What the answers of the last `search_all` said that does not stop a run (partial
        results, scores that are not numbers); the pipeline turns them into warnings."""
        ...

    def costs(self) -> tuple[AnswerCost, ...]:
        """Per request of the last `search_all`, in its order, what the answer cost; () when the
        retriever does not measure it."""
        ...

    def close(self) -> None:
        """Release what answering held (a session, a server); called once, after the last answer."""
        ...
