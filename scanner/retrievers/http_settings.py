"""The HTTP retriever's settings, as the flags and Action inputs give them: no network code here.

Kept apart from `http.py` so that reading the settings (every run does) does not import requests and
urllib3, which only a run that calls a search service needs (about 15 MiB of a run's memory).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field

from scanner.foundation.errors import InputError

DEFAULT_BODY_TEMPLATE = '{"query": "{query}", "limit": {limit}}'
DEFAULT_TIMEOUT_S = 30.0
DEFAULT_RETRIES = 3
DEFAULT_BACKOFF_S = 0.5
"""First retry waits this long, then twice as long each time (0.5, 1, 2 s for three retries)."""
DEFAULT_BACKOFF_CAP_S = 8.0
DEFAULT_RETRY_AFTER_CAP_S = 30.0
"""A 429's Retry-After is honoured up to this IN ALL for one query (not per retry), so a server
repeating the request cannot stretch a query past (retries + 1) x timeout + this."""
DEFAULT_MAX_RESPONSE_BYTES = 8 * 1024 * 1024
"""A search answer of `limit` hits is kilobytes; megabytes mean a wrong endpoint or whole documents."""
STREAM_CHUNK_BYTES = 64 * 1024
SNIPPET_CHARS = 200
USER_AGENT = "kb-eval"


class HttpMethod(enum.Enum):
    GET = "GET"
    """The template's fields are sent as query-string parameters."""
    POST = "POST"
    """The template is sent as the JSON body."""


@dataclass(frozen=True, slots=True)
class HeaderSpec:
    """One `--http-header 'Name: value'`; the value may hold `${ENV_NAME}`."""

    name: str
    value_template: str = field(repr=False)


@dataclass(frozen=True, slots=True)
class HttpSettings:
    """Everything `--http-*` says, before environment variables are resolved."""

    url: str
    """May hold `${ENV_NAME}` (e.g. an API key in the query string)."""
    method: HttpMethod = HttpMethod.POST
    body_template: str = DEFAULT_BODY_TEMPLATE
    """JSON; `{query}`/`{limit}` as values (bare or quoted) or inside strings; `${ENV}` in strings."""
    headers: tuple[HeaderSpec, ...] = ()
    timeout_s: float = DEFAULT_TIMEOUT_S
    """Per attempt, wall clock: connecting, then receiving the whole answer. A server trickling
    bytes cannot stretch it: the socket is shut down at the deadline."""
    retries: int = DEFAULT_RETRIES
    """Extra attempts after a connection error, timeout, 429 or 5xx."""
    backoff_s: float = DEFAULT_BACKOFF_S
    backoff_cap_s: float = DEFAULT_BACKOFF_CAP_S
    retry_after_cap_s: float = DEFAULT_RETRY_AFTER_CAP_S
    max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES
    concurrency: int = 1


def parse_header(text: str, number: int | None = None) -> HeaderSpec:
    """`'Name: value'` -> HeaderSpec. The refusal echoes nothing of the line, only its number:
    a line without a colon may be a bare token pasted on a line of its own."""
    name, separator, value = text.partition(":")
    name = name.strip()
    if not separator or not name or any(char.isspace() for char in name):
        which = f"header line {number}" if number is not None else "a header"
        raise InputError(
            f"--http-header: {which} does not look like 'Name: value' (its text is not shown: it may hold a secret)",
            field="--http-header",
            line=number,
            hint="e.g. --http-header 'Authorization: Bearer ${KB_TOKEN}'",
        )
    return HeaderSpec(name=name, value_template=value.strip())


def parse_method(text: str) -> HttpMethod:
    try:
        return HttpMethod(text.upper())
    except ValueError:
        raise InputError(
            f"--http-method must be GET or POST, got {text!r}", field="--http-method"
        ) from None
