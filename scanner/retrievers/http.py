"""Answering golden queries with a search service over HTTP (requests).

Secrets: header values, `${ENV}` values, URL user/password and query-string
values are used on the wire only. `describe()` records the URL with those
removed and header NAMES only, and every message that could echo them
(exception text, response snippets) is scrubbed first.
"""

from __future__ import annotations

import base64
import email.utils
import enum
import json
import threading
import time
import urllib.parse
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import requests
from requests.structures import CaseInsensitiveDict

from scanner.errors import InputError
from scanner.retrievers.base import Hit, SearchRequest
from scanner.retrievers.concurrency import map_in_order, validate_concurrency
from scanner.retrievers.mapping import (
    ErrorContext,
    ResponseMapping,
    map_response,
    redact_url,
)
from scanner.retrievers.templates import (
    parse_json_template,
    render_json_template,
    resolve_env,
    resolve_env_in_json,
)

DEFAULT_BODY_TEMPLATE = '{"query": "{query}", "limit": {limit}}'
DEFAULT_TIMEOUT_S = 30.0
DEFAULT_RETRIES = 3
DEFAULT_BACKOFF_S = 0.5
"""First retry waits this long, then twice as long each time (0.5, 1, 2 s for three retries)."""
DEFAULT_BACKOFF_CAP_S = 8.0
DEFAULT_RETRY_AFTER_CAP_S = 30.0
"""A 429's Retry-After is honoured up to this; a server asking for an hour would stall CI silently."""
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
    """Per attempt: connecting, and then receiving the whole answer."""
    retries: int = DEFAULT_RETRIES
    """Extra attempts after a connection error, timeout, 429 or 5xx."""
    backoff_s: float = DEFAULT_BACKOFF_S
    backoff_cap_s: float = DEFAULT_BACKOFF_CAP_S
    retry_after_cap_s: float = DEFAULT_RETRY_AFTER_CAP_S
    max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES
    concurrency: int = 1


def parse_header(text: str) -> HeaderSpec:
    """`'Name: value'` -> HeaderSpec. The value is never echoed in the refusal."""
    name, separator, value = text.partition(":")
    name = name.strip()
    if not separator or not name or any(char.isspace() for char in name):
        raise InputError(
            f"--http-header must look like 'Name: value' (got a header named {name!r})",
            field="--http-header",
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


class _Retry(Exception):
    """An attempt failed in a way worth retrying; `wait_s` is the server's wish, if any."""

    def __init__(self, reason: str, wait_s: float | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.wait_s = wait_s


class HttpRetriever:
    """Sends each golden query to a search endpoint and maps the JSON answer to hits."""

    def __init__(
        self, settings: HttpSettings, mapping: ResponseMapping, env: Mapping[str, str]
    ) -> None:
        self._settings = settings
        self._mapping = mapping
        self._secrets: list[str] = []
        self._url_basic_auth: str | None = None
        self._url = self._resolve_url(settings.url, env)
        self._public_url = redact_url(settings.url)
        self._headers = self._resolve_headers(settings.headers, env)
        template = parse_json_template(settings.body_template, "--http-body")
        if settings.method is HttpMethod.GET:
            _check_flat_params(template)
        self._template_for_describe = template
        self._template, used = resolve_env_in_json(template, env, "--http-body")
        self._secrets.extend(used)
        self._secrets = sorted({s for s in self._secrets if s}, key=len, reverse=True)
        _check_positive(settings.timeout_s, "--http-timeout")
        if settings.retries < 0:
            raise InputError("--http-retries must be 0 or more", field="--http-retries")
        validate_concurrency(settings.concurrency)
        self._source = f"http {settings.method.value} {self._public_url}"
        self._local = threading.local()
        self._sessions: list[requests.Session] = []
        self._sessions_lock = threading.Lock()

    def describe(self) -> dict[str, object]:
        return {
            "name": "http",
            "url": self._public_url,
            "method": self._settings.method.value,
            "body_template": self._template_for_describe,
            "header_names": sorted({spec.name for spec in self._settings.headers}),
            "mapping": self._mapping.describe(),
        }

    def search_all(self, requests_: Sequence[SearchRequest]) -> list[list[Hit]]:
        try:
            return map_in_order(self._answer, requests_, self._settings.concurrency)
        finally:
            with self._sessions_lock:
                for session in self._sessions:
                    session.close()
                self._sessions.clear()
            self._local = threading.local()

    # -- one query -------------------------------------------------------------

    def _answer(self, request: SearchRequest) -> list[Hit]:
        settings = self._settings
        attempts = settings.retries + 1
        for attempt in range(attempts):
            try:
                body = self._attempt(request)
            except _Retry as failure:
                if attempt + 1 == attempts:
                    raise InputError(
                        f"{self._source}: query {request.query_id!r} failed after "
                        f"{attempts} attempt(s): {failure.reason}",
                        hint="the run stops rather than score an unanswered query as a miss; "
                        "check the service, or raise --http-timeout / --http-retries",
                    ) from None
                time.sleep(self._wait_before_retry(attempt, failure.wait_s))
                continue
            return map_response(body, self._mapping, request, ErrorContext(self._source))
        raise AssertionError("unreachable: the loop returns or raises")

    def _attempt(self, request: SearchRequest) -> object:
        """One HTTP exchange: the parsed JSON body, or `_Retry`, or InputError for the rest."""
        settings = self._settings
        rendered = render_json_template(self._template, request.text, request.limit)
        started = time.monotonic()
        try:
            response = self._session().request(
                settings.method.value,
                self._url,
                params=_as_params(rendered) if settings.method is HttpMethod.GET else None,
                json=rendered if settings.method is HttpMethod.POST else None,
                headers=self._headers,
                timeout=settings.timeout_s,
                stream=True,
                # A redirect to another host would carry custom token headers
                # (requests only drops Authorization), so none are followed.
                allow_redirects=False,
            )
        except (requests.ConnectionError, requests.Timeout) as exc:
            raise _Retry(self._describe_exception(exc)) from None
        except requests.RequestException as exc:
            raise InputError(
                f"{self._source}: query {request.query_id!r}: {self._describe_exception(exc)}",
                hint="check --http-url",
            ) from None

        with response:
            status = response.status_code
            if status == 429 or 500 <= status <= 599:
                wait = _retry_after_s(response.headers.get("Retry-After")) if status == 429 else None
                raise _Retry(f"HTTP {status}", wait)
            if 300 <= status <= 399:
                location = self._scrub(redact_url(response.headers.get("Location", "")))
                raise self._refuse(
                    request,
                    f"HTTP {status} redirect to {location!r}",
                    "redirects are not followed (headers could leak); use the final URL in --http-url",
                )
            payload = self._read_capped(response, request, started)
            if not 200 <= status <= 299:
                hint = "check --http-url and --http-body"
                if status in (401, 403):
                    hint = "check --http-header and that its ${ENV} variable holds a valid token"
                raise self._refuse(request, f"HTTP {status}: {self._snippet(payload)}", hint)
        try:
            return json.loads(payload)
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise self._refuse(
                request,
                f"HTTP {status} answer is not JSON ({exc}): {self._snippet(payload)}",
                "the endpoint must answer with JSON; check --http-url",
            ) from None

    def _read_capped(
        self, response: requests.Response, request: SearchRequest, started: float
    ) -> bytes:
        cap = self._settings.max_response_bytes
        declared = response.headers.get("Content-Length", "")
        if declared.isdigit() and int(declared) > cap:
            raise self._refuse(request, f"answer is {declared} bytes, over the {cap}-byte cap", _CAP_HINT)
        chunks: list[bytes] = []
        size = 0
        try:
            for chunk in response.iter_content(chunk_size=STREAM_CHUNK_BYTES):
                size += len(chunk)
                if size > cap:
                    raise self._refuse(request, f"answer exceeds the {cap}-byte cap", _CAP_HINT)
                chunks.append(chunk)
                # The read timeout is per socket read; a server trickling bytes
                # would otherwise never time out.
                if time.monotonic() - started > self._settings.timeout_s:
                    raise _Retry(f"answer not complete within {self._settings.timeout_s} s")
        except (requests.ConnectionError, requests.Timeout, requests.exceptions.ChunkedEncodingError) as exc:
            raise _Retry(self._describe_exception(exc)) from None
        return b"".join(chunks)

    def _wait_before_retry(self, attempt: int, server_wish_s: float | None) -> float:
        settings = self._settings
        if server_wish_s is not None:
            return min(server_wish_s, settings.retry_after_cap_s)
        return min(settings.backoff_s * float(2**attempt), settings.backoff_cap_s)

    # -- secrets ---------------------------------------------------------------

    def _resolve_url(self, template: str, env: Mapping[str, str]) -> str:
        url, used = resolve_env(template, env, "--http-url")
        self._secrets.extend(used)
        parts = urllib.parse.urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise InputError(
                f"--http-url must be an http:// or https:// URL, got {redact_url(template)!r}",
                field="--http-url",
            )
        for _name, value in urllib.parse.parse_qsl(parts.query, keep_blank_values=True):
            self._secrets.append(value)
        if parts.username is None and parts.password is None:
            return url
        # requests would quietly let URL credentials replace an Authorization
        # header; they are taken out here and sent as Basic auth explicitly.
        user = urllib.parse.unquote(parts.username or "")
        password = urllib.parse.unquote(parts.password or "")
        basic = base64.b64encode(f"{user}:{password}".encode()).decode("ascii")
        self._secrets.extend(s for s in (parts.username, parts.password, user, password, basic) if s)
        self._url_basic_auth = f"Basic {basic}"
        netloc = parts.netloc.rpartition("@")[2]
        return urllib.parse.urlunsplit(parts._replace(netloc=netloc))

    def _resolve_headers(
        self, specs: Sequence[HeaderSpec], env: Mapping[str, str]
    ) -> CaseInsensitiveDict[str]:
        headers: CaseInsensitiveDict[str] = CaseInsensitiveDict()
        headers["User-Agent"] = USER_AGENT
        headers["Accept"] = "application/json"
        if self._url_basic_auth is not None:
            if any(spec.name.lower() == "authorization" for spec in specs):
                raise InputError(
                    "--http-url carries a user/password and --http-header sets Authorization too",
                    field="--http-url",
                    hint="give the credentials one way only (prefer a header with ${ENV_NAME})",
                )
            headers["Authorization"] = self._url_basic_auth
        for spec in specs:
            value, used = resolve_env(spec.value_template, env, f"--http-header {spec.name}")
            self._secrets.extend(used)
            self._secrets.append(value)
            headers[spec.name] = value
        return headers

    def _scrub(self, text: str) -> str:
        """Text with every secret (as is, and URL-encoded) replaced by `***`."""
        for secret in self._secrets:
            for form in {secret, urllib.parse.quote(secret, safe=""), urllib.parse.quote_plus(secret)}:
                text = text.replace(form, "***")
        return text

    def _describe_exception(self, exc: BaseException) -> str:
        return self._scrub(f"{type(exc).__name__}: {exc}")

    def _snippet(self, payload: bytes) -> str:
        text = payload[:SNIPPET_CHARS].decode("utf-8", errors="replace")
        more = "..." if len(payload) > SNIPPET_CHARS else ""
        return self._scrub(repr(text) + more)

    def _refuse(self, request: SearchRequest, message: str, hint: str) -> InputError:
        return InputError(f"{self._source}: query {request.query_id!r}: {message}", hint=hint)

    def _session(self) -> requests.Session:
        session: requests.Session | None = getattr(self._local, "session", None)
        if session is None:
            session = requests.Session()
            self._local.session = session
            with self._sessions_lock:
                self._sessions.append(session)
        return session


_CAP_HINT = "check that --http-url is the search endpoint and --http-body asks for {limit} hits"


def _retry_after_s(value: str | None) -> float | None:
    """Seconds from a Retry-After header (delta-seconds or HTTP-date); None when unusable."""
    if value is None:
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


def _as_params(rendered: object) -> list[tuple[str, str]]:
    """A flat rendered template as query parameters; a list value repeats its name, null drops it."""
    if not isinstance(rendered, dict):
        raise TypeError("GET templates are checked to be objects at construction")
    params: list[tuple[str, str]] = []
    for key, value in rendered.items():
        for item in value if isinstance(value, list) else [value]:
            if item is not None:
                params.append((key, _param_text(item)))
    return params


def _param_text(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _check_flat_params(template: object) -> None:
    def scalar(value: object) -> bool:
        return value is None or isinstance(value, (str, int, float, bool))

    ok = isinstance(template, dict) and all(
        scalar(value) or (isinstance(value, list) and all(scalar(item) for item in value))
        for value in template.values()
    )
    if not ok:
        raise InputError(
            "with --http-method GET, --http-body must be a flat JSON object (its fields become "
            "query-string parameters)",
            field="--http-body",
            hint='e.g. {"q": "{query}", "size": {limit}}',
        )


def _check_positive(value: float, flag: str) -> None:
    if not value > 0:
        raise InputError(f"{flag} must be more than 0, got {value}", field=flag)
