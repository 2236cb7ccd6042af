"""Turning a search service's JSON answer into ranked hits.

Shared by the http and command retrievers (and the JSONL run file), so every
external answer is read by the same rules: where the hit list is, which
fields hold path, heading and score, and how a service's absolute paths or
URLs become the KB-relative paths the golden file uses.
"""

from __future__ import annotations

import json
import math
import re
import threading
import urllib.parse
from collections.abc import Sequence
from dataclasses import dataclass, field

from scanner.foundation.errors import InputError
from scanner.foundation.strict_json import json_type
from scanner.retrievers.base import AnswerNote, Hit, NoteKind, SearchRequest

DEFAULT_HITS_KEY = "results"
"""kb-mcp/grooveseek answer `{"results": [...]}`; a bare JSON list is also accepted by default."""

DEFAULT_PATH_FIELD = "path"
DEFAULT_HEADING_FIELD = "heading"
DEFAULT_SCORE_FIELD = "score"

_ASCII_INDEX = re.compile(r"[0-9]+")
_URL_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")


@dataclass(frozen=True, slots=True)
class ResponseMapping:
    """Where the hits are in an answer and which fields of a hit mean what."""

    hits_path: str | None = None
    """Dotted path to the hit list; None means `results` when the body is an object holding it,
    or the body itself when it is a JSON list."""
    path_field: str = DEFAULT_PATH_FIELD
    """Dotted path, inside one hit, to the document path (required in every hit)."""
    heading_field: str = DEFAULT_HEADING_FIELD
    """Dotted path, inside one hit, to the section heading (missing or null means "")."""
    score_field: str = DEFAULT_SCORE_FIELD
    """Dotted path, inside one hit, to the score (missing or null means no score)."""
    path_prefix_strip: tuple[str, ...] = ()
    """Prefixes (absolute directories or URL prefixes) removed from returned paths, longest first."""

    def describe(self) -> dict[str, object]:
        """The mapping for the run fingerprint: it decides which documents count as returned."""
        return {
            "hits_path": self.hits_path,
            "path_field": self.path_field,
            "heading_field": self.heading_field,
            "score_field": self.score_field,
            "path_prefix_strip": list(self.shown_prefixes()),
        }

    def shown_prefixes(self) -> tuple[str, ...]:
        """`path_prefix_strip` as a report or a message may show it (URLs redacted)."""
        return tuple(redact_url(prefix) for prefix in self.path_prefix_strip)


class Notes:
    """Collects what answers said, from every worker thread; read once the retriever is done."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._items: list[AnswerNote] = []

    def add(self, note: AnswerNote) -> None:
        with self._lock:
            self._items.append(note)

    def items(self) -> tuple[AnswerNote, ...]:
        with self._lock:
            return tuple(self._items)


@dataclass(frozen=True, slots=True)
class ErrorContext:
    """Where an answer came from, so a refusal can name it."""

    source: str
    """Human name of the producer, e.g. `http POST http://host/search` (never with secrets)."""
    file: str | None = None
    line: int | None = None
    secrets: tuple[str, ...] = ()
    """Removed from the service's own words before they are shown."""
    notes: Notes | None = field(default=None, compare=False)
    """Where notes go; None: notes are dropped (a caller that reports none)."""

    def note(self, kind: NoteKind, request: SearchRequest, detail: str) -> None:
        if self.notes is not None:
            self.notes.add(AnswerNote(kind, request.query_id, detail))


_MISSING = object()


def dotted_get(value: object, dotted: str) -> object:
    """Follow `a.b.0.c` through objects (by key) and lists (by index); `_MISSING` when absent."""
    current = value
    for segment in dotted.split("."):
        if isinstance(current, dict):
            if segment not in current:
                return _MISSING
            current = current[segment]
        # ASCII digits only: str.isdigit() accepts '²', which int() then refuses.
        elif isinstance(current, list) and _ASCII_INDEX.fullmatch(segment):
            index = int(segment)
            if index >= len(current):
                return _MISSING
            current = current[index]
        else:
            return _MISSING
    return current


def validate_dotted_path(dotted: str, flag: str) -> str:
    """Refuse an empty path or empty segment (`a..b`), which could never match anything."""
    if not dotted or any(segment == "" for segment in dotted.split(".")):
        raise InputError(
            f"{flag} {dotted!r} is not a dotted path",
            field=flag,
            hint="write field names separated by dots, e.g. hits.hits or _source.path",
        )
    return dotted


def locate_hit_list(
    body: object, mapping: ResponseMapping, request: SearchRequest, where: ErrorContext
) -> list[object]:
    """The hit list inside one answer, by `mapping.hits_path` or the defaults."""
    if mapping.hits_path is None:
        if isinstance(body, list):
            return body
        if isinstance(body, dict) and DEFAULT_HITS_KEY in body:
            found: object = body[DEFAULT_HITS_KEY]
            shown = DEFAULT_HITS_KEY
        else:
            _refuse_with_service_words(body, request, where)
            raise _refuse(
                f"answer to query {request.query_id!r} is neither a JSON list nor an object "
                f"with {DEFAULT_HITS_KEY!r} ({_shape(body, where)})",
                where,
                hint="say where the hit list is with --hits-path (e.g. hits.hits)",
            )
    else:
        found = dotted_get(body, mapping.hits_path)
        shown = mapping.hits_path
        if found is _MISSING or found is None:
            _refuse_with_service_words(body, request, where)
        if found is _MISSING:
            raise _refuse(
                f"answer to query {request.query_id!r} has no {shown!r}",
                where,
                hint="check --hits-path against what the service returns",
            )
    if not isinstance(found, list):
        _refuse_with_service_words(body, request, where)
        raise _refuse(
            f"answer to query {request.query_id!r}: {shown!r} is a {_json_type(found)}, not a list",
            where,
            hint="--hits-path must point at the list of hits",
        )
    return found


def map_hits(
    raw_hits: Sequence[object], mapping: ResponseMapping, request: SearchRequest, where: ErrorContext
) -> list[Hit]:
    """Hits in list order, ranked 1.. and cut to `request.limit`.

    Only the first `limit` entries are read: a service that ignores the limit
    is scored on what a caller asking for `limit` results would see.
    """
    hits: list[Hit] = []
    for index, raw in enumerate(raw_hits[: request.limit]):
        hits.append(_map_one_hit(raw, index, mapping, request, where))
    return hits


def map_response(
    body: object, mapping: ResponseMapping, request: SearchRequest, where: ErrorContext
) -> list[Hit]:
    """A whole parsed answer to ranked hits; what the service says of it (partial results, errors
    beside hits) goes to `where.notes`."""
    raw_hits = locate_hit_list(body, mapping, request, where)
    failed = answered_error(body)
    if failed is not None and not raw_hits:
        # An error sent as a success (MCP servers and small APIs answer `{"results": [], "error":
        # "..."}` with HTTP 200 or exit 0): scored, it would be a query the search missed.
        raise _service_refusal(failed, request, where)
    hits = map_hits(raw_hits, mapping, request, where)
    partial = partial_result(body)
    if partial is not None:
        where.note(NoteKind.PARTIAL, request, scrub_and_cut(partial, where.secrets, SERVICE_WORDS_CHARS))
    if failed is not None:
        where.note(NoteKind.SERVICE_ERRORS, request, scrub_and_cut(failed, where.secrets, SERVICE_WORDS_CHARS))
    return hits


_FAILED_STATUSES = frozenset({"error", "errored", "fail", "failed", "failure"})


def answered_error(body: object) -> str | None:
    """What an answer says went wrong when its own top-level fields say it failed, whatever the
    HTTP status or exit code: `error` holding something (text, an object, true), `errors` a
    non-empty list, `status` one of "error"/"fail"/"failed"/"failure", `ok` or `success` false.
    The service's words where it gave any, else the fields that said so. None for an answer that
    does not say it failed: `error: null`, `errors: []`, a `status` of "ok", and anything inside
    a hit (a hit's own metadata is data) are not failures. Only these signals count: a `message`
    or `code` alone may be data."""
    if not isinstance(body, dict):
        return None
    said: dict[str, object] = {}
    error = body.get("error")
    if _says_something(error):
        said["error"] = error
    errors = body.get("errors")
    if isinstance(errors, list) and errors:
        said["errors"] = errors
    status = body.get("status")
    if isinstance(status, str) and status.strip().casefold() in _FAILED_STATUSES:
        said["status"] = status
    for flag in ("ok", "success"):
        if body.get(flag) is False:
            said[flag] = False
    if not said:
        return None
    # Not cut here: the caller scrubs secrets before it cuts (scrub_and_cut).
    return service_error_words(body) or json.dumps(said, ensure_ascii=False)


def _says_something(value: object) -> bool:
    """An `error` field that reports one: text, an object or a list with something in it, true,
    a non-zero code. Null, false, 0 and empty values are how many services say "no error"."""
    if value is None or isinstance(value, bool):
        return value is True
    if isinstance(value, (int, float)):
        return value != 0
    if isinstance(value, str):
        return bool(value.strip())
    return bool(value)


SERVICE_WORDS_CHARS = 300
"""How much of a service's own error message is shown: one sentence, with its reason."""
_MESSAGE_KEYS = ("reason", "message", "detail", "title", "error_description", "error")
_MAX_WORDS_DEPTH = 4


def service_error_words(body: object) -> str | None:
    """What the service itself said went wrong, from the fields search services use, found before
    any cut (a snippet of the first characters often ends before the reason):

    - GraphQL: `errors[].message` (an answer with HTTP 200);
    - Elasticsearch / OpenSearch: `error.root_cause[].reason`, then `error.reason` and `error.type`;
    - PostgREST, Datasette, most JSON APIs: `error` (text or object), `message`, `detail`, `hint`.

    None when the answer holds none of them. Bounded: a few levels, a few entries."""
    if not isinstance(body, dict):
        return None
    parts: list[str] = []
    errors = body.get("errors")
    if isinstance(errors, list) and errors:
        for item in errors[:3]:
            text = _words_of(item, 0)
            if text:
                parts.append(text)
    error = body.get("error")
    if error is not None and error is not False and error is not True:
        if isinstance(error, dict):
            causes = error.get("root_cause")
            if isinstance(causes, list):
                for cause in causes[:3]:
                    text = _words_of(cause, 0)
                    if text and text not in parts:
                        parts.append(text)
            for key in ("reason", "message", "type"):
                value = error.get(key)
                if isinstance(value, str) and value and value not in parts:
                    parts.append(value)
                    break
        else:
            text = _words_of(error, 0)
            if text:
                parts.append(text)
    if not parts and ("code" in body or "status" in body or body.get("error") is True
                      or body.get("ok") is False or body.get("success") is False):
        # PostgREST `{code, message, details, hint}`; Datasette `{ok: false, error, status}`;
        # `{success: false, message}` from many small services.
        for key in ("message", "detail", "details", "hint"):
            value = body.get(key)
            if isinstance(value, str) and value:
                parts.append(value)
    return "; ".join(parts) if parts else None


def _words_of(value: object, depth: int) -> str | None:
    if isinstance(value, str):
        return value or None
    if isinstance(value, dict) and depth < _MAX_WORDS_DEPTH:
        for key in _MESSAGE_KEYS:
            if key in value:
                found = _words_of(value[key], depth + 1)
                if found:
                    return found
    return None


def partial_result(body: object) -> str | None:
    """What an Elasticsearch / OpenSearch answer says of its own completeness: `timed_out: true`,
    `_shards.failed` > 0 (with the first failure's reason), `_clusters` skipped, failed or partial,
    `terminated_early`. None when complete. (The fields of the search response body in Elastic's
    published specification, elastic/elasticsearch-specification: tests/retrievers/test_elastic_spec.py.)"""
    if not isinstance(body, dict):
        return None
    said: list[str] = []
    if body.get("timed_out") is True:
        said.append("timed_out is true")
    shards = body.get("_shards")
    if isinstance(shards, dict):
        failed = shards.get("failed")
        if isinstance(failed, int) and not isinstance(failed, bool) and failed > 0:
            total = shards.get("total")
            of = f" of {total}" if isinstance(total, int) and not isinstance(total, bool) else ""
            text = f"{failed}{of} shards failed"
            failures = shards.get("failures")
            if isinstance(failures, list) and failures:
                reason = _words_of(failures[0], 0)
                if reason:
                    text += f" ({reason})"
            said.append(text)
    clusters = body.get("_clusters")
    if isinstance(clusters, dict):
        # Cross-cluster search: a cluster skipped or failed left its documents out.
        lost = {key: clusters.get(key) for key in ("skipped", "failed", "partial")}
        counted = {key: value for key, value in lost.items()
                   if isinstance(value, int) and not isinstance(value, bool) and value > 0}
        if counted:
            said.append(", ".join(f"{value} cluster(s) {key}" for key, value in counted.items()))
    if body.get("terminated_early") is True:
        said.append("terminated_early is true")
    return "; ".join(said) if said else None


def _refuse_with_service_words(body: object, request: SearchRequest, where: ErrorContext) -> None:
    """The service's own error, when it said one, instead of kb-eval's guess about --hits-path."""
    words = service_error_words(body)
    if words is None:
        return
    raise _service_refusal(words, request, where)


def _service_refusal(words: str, request: SearchRequest, where: ErrorContext) -> InputError:
    return _refuse(
        f"query {request.query_id!r}: the service answered with an error: "
        f"{scrub_and_cut(words, where.secrets, SERVICE_WORDS_CHARS)!r}",
        where,
        hint="the query was not answered; fix what the service says (a query syntax the engine refuses "
        "is fixed in the request template or the command)",
    )


def strip_path_prefix(path: str, prefixes: Sequence[str]) -> str:
    """Map a returned path to a KB-relative one by removing the longest matching prefix.

    A URL prefix also drops the remainder's query and fragment and percent-decodes
    it (`https://kb.example/docs/a%20b.md#x` -> `a b.md` with prefix `https://kb.example/docs`).
    A leading `/` or `./` left over is removed, so `/srv/kb` and `/srv/kb/` both work.
    """
    for prefix in sorted(prefixes, key=len, reverse=True):
        if prefix and path.startswith(prefix):
            rest = path[len(prefix) :]
            if _URL_SCHEME.match(prefix):
                rest = urllib.parse.unquote(urllib.parse.urldefrag(rest.split("?", 1)[0]).url)
            path = rest.lstrip("/")
            break
    while path.startswith("./"):
        path = path[2:]
    return path


def redact_url(url: str) -> str:
    """A URL safe to record: no user or password, query values replaced, no fragment.

    Query parameter NAMES stay (they say which endpoint variant was used);
    their values may be API keys, so they never reach a report or a message.
    Strings that are not URLs come back unchanged.
    """
    if not _URL_SCHEME.match(url):
        return url
    parts = urllib.parse.urlsplit(url)
    host = parts.hostname or ""
    if ":" in host:  # IPv6 literal lost its brackets in .hostname
        host = f"[{host}]"
    # The port as written: `{port}` (filled per side by --serve-command) is not a number yet.
    port = parts.netloc.rpartition("@")[2].rpartition("]")[2].rpartition(":")
    netloc = f"{host}:{port[2]}" if port[1] and port[2] else host
    query = "&".join(
        f"{name}=REDACTED" if value else name
        for name, value in urllib.parse.parse_qsl(parts.query, keep_blank_values=True)
    )
    return urllib.parse.urlunsplit((parts.scheme, netloc, parts.path, query, ""))


def _map_one_hit(
    raw: object, index: int, mapping: ResponseMapping, request: SearchRequest, where: ErrorContext
) -> Hit:
    position = f"query {request.query_id!r}, hit {index}"
    if not isinstance(raw, dict):
        raise _refuse(f"{position} is a {_json_type(raw)}, not an object", where)

    path_value = _single(dotted_get(raw, mapping.path_field))
    if isinstance(path_value, list):
        raise _refuse(
            f"{position}: path ({mapping.path_field!r}) is a list of {len(path_value)} values, not one",
            where,
            hint="point --path-field at a field holding one document path",
        )
    if path_value is _MISSING or path_value is None or path_value == "":
        failed = answered_error(raw)
        if failed is not None:
            # `[{"error": "Search failed: ..."}]`: the list held the error, not a hit without a path.
            raise _service_refusal(failed, request, where)
        raise _refuse(
            f"{position} has no path ({mapping.path_field!r})",
            where,
            hint="every hit needs a document path; set --path-field to where the service puts it",
        )
    if not isinstance(path_value, str):
        raise _refuse(f"{position}: path is a {_json_type(path_value)}, not a string", where)
    path = strip_path_prefix(path_value, mapping.path_prefix_strip)
    # An absolute path or URL left after stripping is not refused here: the pipeline checks every
    # returned path against the corpus (evaluation/answers.py) and computes the prefix to strip.
    if not path:
        raise _refuse(
            f"{position}: path {redact_url(path_value)!r} is empty once --path-prefix-strip is removed",
            where,
            hint="--path-prefix-strip is the folder or URL the KB lives under, not a document",
        )
    if _URL_SCHEME.match(path):
        path = redact_url(path)  # recorded in the report: a query value may be a key

    heading_value = _single(dotted_get(raw, mapping.heading_field))
    if heading_value is _MISSING or heading_value is None:
        heading = ""
    elif isinstance(heading_value, str):
        heading = heading_value
    elif isinstance(heading_value, list) and not heading_value:
        heading = ""
    else:
        raise _refuse(f"{position}: heading is a {_json_type(heading_value)}, not a string", where)

    score_value = _single(dotted_get(raw, mapping.score_field))
    score: float | None = None
    if score_value is _MISSING or score_value is None:
        pass
    elif isinstance(score_value, (int, float)) and not isinstance(score_value, bool):
        try:
            score = float(score_value)
        except OverflowError:  # an integer too large for a float (loads_strict lets 400 digits through)
            score = math.inf
        if not math.isfinite(score):
            score = None
            where.note(NoteKind.SCORE_NOT_NUMBER, request, f"hit {index}: {_shortened(repr(score_value))}")
    else:
        # Scores rank nothing here (list order does) and change no metric: recorded as missing.
        shown = _shortened(repr(score_value)) if isinstance(score_value, str) else f"a {_json_type(score_value)}"
        where.note(NoteKind.SCORE_NOT_NUMBER, request, f"hit {index}: {scrub_and_cut(shown, where.secrets, 60)}")
    return Hit(rank=index + 1, path=path, heading=heading, score=score)


SHAPE_KEYS_SHOWN = 10
"""Keys of an answer named when no hit list is found in it: enough to spot the list's name."""


def _shape(body: object, where: ErrorContext) -> str:
    """What the answer is, for a refusal that found no hit list: an object's keys, else its type."""
    if not isinstance(body, dict):
        return f"it is a {_json_type(body)}"
    if not body:
        return "it is an empty object"
    keys = [repr(scrub_and_cut(str(key), where.secrets, 40)) for key in list(body)[:SHAPE_KEYS_SHOWN]]
    more = f" and {len(body) - SHAPE_KEYS_SHOWN} more" if len(body) > SHAPE_KEYS_SHOWN else ""
    return "its keys are " + ", ".join(keys) + more


def _single(value: object) -> object:
    """A one-element list read as its element: Elasticsearch's `fields` (and Solr's multi-valued
    fields) hold every value in a list, `{"path": ["a.md"]}`."""
    if isinstance(value, list) and len(value) == 1:
        return value[0]
    return value


def _refuse(message: str, where: ErrorContext, hint: str | None = None) -> InputError:
    return InputError(f"{where.source}: {message}", file=where.file, line=where.line, hint=hint)


def _json_type(value: object) -> str:
    # A service's answer holds a "list" of hits in the words its users read (docs/retrievers.md).
    name = json_type(value)
    return "list" if name == "array" else name


_MASK = "\uffff"
"""A noncharacter: marks scrubbed text while it is cut, then becomes `***`."""


def scrub_and_cut(text: str, secrets: Sequence[str], limit: int, *, keep_end: bool = False) -> str:
    """The first (or last) `limit` characters of `text`, every secret in it replaced by `***`.

    Scrubbed BEFORE cutting, with the secret masked at its own length, so the cut falls where it
    would have in the raw text and a secret straddling it is masked on both sides, never shown in
    part. The caller passes enough text that a secret reaching into the kept part is whole in it."""
    masked = text.replace(_MASK, "?")
    for secret in sorted((s for s in secrets if s), key=len, reverse=True):
        masked = masked.replace(secret, _MASK * len(secret))
    kept = masked[-limit:] if keep_end else masked[:limit]
    if limit <= 0:
        kept = ""
    return re.sub(f"{_MASK}+", "***", kept)


def _shortened(text: str, limit: int = 40) -> str:
    return text if len(text) <= limit else text[:limit] + "..."
