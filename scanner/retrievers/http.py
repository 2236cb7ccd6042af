"""Answering golden queries with a search service over HTTP (requests).

Secrets: header values, `${ENV}` values, URL user/password and query-string
values are used on the wire only. `describe()` records the URL with those
removed and header NAMES only, and every message that could echo them
(exception text, response snippets) is scrubbed first.
"""

from __future__ import annotations

import base64
import re
import socket
import threading
import time
import urllib.parse
from collections.abc import Mapping, Sequence
from typing import Any

import requests
import urllib3.connection
import urllib3.response
from requests.adapters import HTTPAdapter
from requests.structures import CaseInsensitiveDict

from scanner.foundation.errors import InputError
from scanner.foundation.retry_after import retry_after_seconds
from scanner.foundation.strict_json import NotJson, loads_strict
from scanner.retrievers.base import AnswerCost, AnswerNote, Hit, RetrieverKind, SearchRequest
from scanner.retrievers.concurrency import map_in_order
from scanner.retrievers.costs import CostLog
from scanner.retrievers.http_settings import (
    SNIPPET_CHARS,
    STREAM_CHUNK_BYTES,
    USER_AGENT,
    HeaderSpec,
    HttpMethod,
    HttpSettings,
)
from scanner.retrievers.mapping import (
    SERVICE_WORDS_CHARS,
    ErrorContext,
    Notes,
    ResponseMapping,
    map_response,
    redact_url,
    scrub_and_cut,
    service_error_words,
)
from scanner.retrievers.templates import (
    SideSlots,
    fill_side,
    fill_side_in_json,
    parse_json_template,
    render_json_template,
    resolve_env,
    resolve_env_in_json,
)


class _Retry(Exception):
    """An attempt failed in a way worth retrying; `wait_s` is the server's wish, if any."""

    def __init__(self, reason: str, wait_s: float | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.wait_s = wait_s


class HttpRetriever:
    """Sends each golden query to a search endpoint and maps the JSON answer to hits."""

    kind = RetrieverKind.HTTP

    @property
    def path_prefixes(self) -> tuple[str, ...]:
        return self._mapping.shown_prefixes()

    def __init__(
        self, settings: HttpSettings, mapping: ResponseMapping, env: Mapping[str, str],
        slots: SideSlots | None = None,
    ) -> None:
        self._settings = settings
        self._mapping = mapping
        self._secrets: list[str] = []
        self._url_basic_auth: str | None = None
        # The side's port and folders, once; the description keeps the template, so both sides
        # of a pull request describe (and fingerprint) the same search.
        url = fill_side(settings.url, slots, "--http-url") if slots is not None else settings.url
        self._url = self._resolve_url(url, env)
        self._public_url = redact_url(settings.url)
        self._headers = self._resolve_headers(settings.headers, env)
        template = parse_json_template(settings.body_template, "--http-body")
        if settings.method is HttpMethod.GET:
            _check_flat_params(template)
        self._template_for_describe = template
        if slots is not None:
            template = fill_side_in_json(template, slots, "--http-body")
        self._template, used = resolve_env_in_json(template, env, "--http-body")
        self._secrets.extend(used)
        self._secrets = sorted({s for s in self._secrets if s}, key=len, reverse=True)
        _check_positive(settings.timeout_s, "--http-timeout")
        if settings.retries < 0:
            raise InputError("--http-retries must be 0 or more", field="--http-retries")
        self._source = f"http {settings.method.value} {self._public_url}"
        self._local = threading.local()
        self._sessions: list[requests.Session] = []
        self._sessions_lock = threading.Lock()
        self._costs = CostLog()
        self._notes = Notes()

    def costs(self) -> tuple[AnswerCost, ...]:
        return self._costs.in_order()

    def close(self) -> None:
        return None

    def notes(self) -> tuple[AnswerNote, ...]:
        return self._notes.items()

    def describe(self) -> dict[str, object]:
        return {
            "name": self.kind.value,
            "url": self._public_url,
            "method": self._settings.method.value,
            "body_template": self._template_for_describe,
            "header_names": sorted({spec.name for spec in self._settings.headers}),
            "mapping": self._mapping.describe(),
        }

    def search_all(self, requests_: Sequence[SearchRequest]) -> list[list[Hit]]:
        self._notes = Notes()
        self._costs.start(requests_)
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
        # The time a client waits for the answer, retries included; the size of the answer's body.
        with self._costs.timing(request) as size:
            hits = self._answer_with_retries(request)
            size.append(getattr(_ATTEMPT, "size", 0))
        return hits

    def _answer_with_retries(self, request: SearchRequest) -> list[Hit]:
        settings = self._settings
        attempts = settings.retries + 1
        waited_for_server = 0.0
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
                wait = self._wait_before_retry(attempt, failure.wait_s, waited_for_server)
                if failure.wait_s is not None:
                    waited_for_server += wait
                time.sleep(wait)
                continue
            return map_response(body, self._mapping, request, self._context())
        raise AssertionError("unreachable: the loop returns or raises")

    def _attempt(self, request: SearchRequest) -> object:
        """One HTTP exchange: the parsed JSON body, or `_Retry`, or InputError for the rest."""
        settings = self._settings
        rendered = render_json_template(self._template, request.text, request.limit)
        watch = _Watch(settings.timeout_s)
        _ATTEMPT.watch = watch
        try:
            return self._exchange(request, rendered, watch)
        finally:
            watch.cancel()
            _ATTEMPT.watch = None

    def _exchange(self, request: SearchRequest, rendered: Any, watch: _Watch) -> object:
        settings = self._settings
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
            raise _Retry(watch.reason() or self._describe_exception(exc)) from None
        except requests.RequestException as exc:
            raise InputError(
                f"{self._source}: query {request.query_id!r}: {self._describe_exception(exc)}",
                hint="check --http-url",
            ) from None

        with response:
            status = response.status_code
            if status == 429 or 500 <= status <= 599:
                wait = retry_after_seconds(response.headers.get("Retry-After")) if status == 429 else None
                # What the server said, shown like a 4xx's once the retries are spent: a 500's
                # body is often the only place the engine's reason is written.
                raise _Retry(f"HTTP {status}{self._said_if_readable(response, request, watch)}", wait)
            if 300 <= status <= 399:
                location = self._scrub(redact_url(response.headers.get("Location", "")))
                raise self._refuse(
                    request,
                    f"HTTP {status} redirect to {location!r}",
                    "redirects are not followed (headers could leak); use the final URL in --http-url",
                )
            payload = self._read_capped(response, request, watch)
            if not 200 <= status <= 299:
                hint = "check --http-url and --http-body"
                if status in (401, 403):
                    hint = "check --http-header and that its ${ENV} variable holds a valid token"
                raise self._refuse(request, f"HTTP {status}: {self._said(payload)}", hint)
        _ATTEMPT.size = len(payload)
        try:
            return loads_strict(payload)
        except NotJson as exc:
            raise self._refuse(
                request,
                f"HTTP {status} answer is not JSON ({exc.reason}): {self._snippet(payload)}",
                "the endpoint must answer with JSON; check --http-url",
            ) from None

    def _read_capped(self, response: requests.Response, request: SearchRequest, watch: _Watch) -> bytes:
        cap = self._settings.max_response_bytes
        declared = response.headers.get("Content-Length", "").strip()
        # ASCII digits only: str.isdigit() accepts '²', which int() refuses (a crash, exit 3).
        if _ASCII_NUMBER.fullmatch(declared) and (len(declared) > 18 or int(declared) > cap):
            raise self._refuse(request, f"answer is {declared[:40]} bytes, over the {cap}-byte cap", _CAP_HINT)
        chunks: list[bytes] = []
        size = 0
        try:
            for chunk in response.iter_content(chunk_size=STREAM_CHUNK_BYTES):
                size += len(chunk)
                if size > cap:
                    raise self._refuse(request, f"answer exceeds the {cap}-byte cap", _CAP_HINT)
                chunks.append(chunk)
        except (requests.ConnectionError, requests.Timeout, requests.exceptions.ChunkedEncodingError) as exc:
            raise _Retry(watch.reason() or self._describe_exception(exc)) from None
        if watch.reason() is not None:
            # Shut down mid-body: what arrived is cut, whatever the decoder made of it.
            raise _Retry(str(watch.reason()))
        return b"".join(chunks)

    def _said(self, payload: bytes) -> str:
        """An error answer's body for a message: the service's own words, else its start."""
        words = self._service_words(payload)
        return f"the service says {words!r}" if words is not None else self._snippet(payload)

    def _said_if_readable(self, response: requests.Response, request: SearchRequest, watch: _Watch) -> str:
        """`: ` and the body of an answer about to be retried, or nothing when it cannot be read
        whole (over the cap, cut off): the status alone is still worth a retry."""
        try:
            payload = self._read_capped(response, request, watch)
        except (_Retry, InputError):
            return ""
        return f": {self._said(payload)}" if payload.strip() else ""

    def _wait_before_retry(self, attempt: int, server_wish_s: float | None, waited_s: float) -> float:
        settings = self._settings
        if server_wish_s is not None:
            return max(0.0, min(server_wish_s, settings.retry_after_cap_s - waited_s))
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

    def _context(self) -> ErrorContext:
        forms = tuple(form for secret in self._secrets
                      for form in {secret, urllib.parse.quote(secret, safe=""), urllib.parse.quote_plus(secret)})
        return ErrorContext(self._source, secrets=forms, notes=self._notes)

    def _service_words(self, payload: bytes) -> str | None:
        """The error the service wrote in its JSON answer (found whole, then scrubbed and cut)."""
        try:
            body = loads_strict(payload)
        except NotJson:
            return None
        words = service_error_words(body)
        return None if words is None else scrub_and_cut(words, self._context().secrets, SERVICE_WORDS_CHARS)

    def _describe_exception(self, exc: BaseException) -> str:
        return self._scrub(f"{type(exc).__name__}: {exc}")

    def _snippet(self, payload: bytes) -> str:
        """The answer's start for a message, scrubbed before it is cut (scrub_and_cut) and before
        repr(), which could otherwise escape a secret out of the shape it is matched in."""
        forms = [form for secret in self._secrets
                 for form in {secret, urllib.parse.quote(secret, safe=""), urllib.parse.quote_plus(secret)}]
        longest = max((len(form) for form in forms), default=0)
        # 4 bytes per character at most: the window holds every secret reaching into the snippet.
        window = payload[: 4 * (SNIPPET_CHARS + longest)].decode("utf-8", errors="replace")
        more = "..." if len(window) > SNIPPET_CHARS or len(payload) > 4 * (SNIPPET_CHARS + longest) else ""
        return repr(scrub_and_cut(window, forms, SNIPPET_CHARS)) + more

    def _refuse(self, request: SearchRequest, message: str, hint: str) -> InputError:
        return InputError(f"{self._source}: query {request.query_id!r}: {message}", hint=hint)

    def _session(self) -> requests.Session:
        session: requests.Session | None = getattr(self._local, "session", None)
        if session is None:
            session = requests.Session()
            adapter = _DeadlineAdapter()
            session.mount("http://", adapter)
            session.mount("https://", adapter)
            self._local.session = session
            with self._sessions_lock:
                self._sessions.append(session)
        return session


_ASCII_NUMBER = re.compile(r"[0-9]+")
_CAP_HINT = "check that --http-url is the search endpoint and --http-body asks for {limit} hits"


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


# -- the deadline that a trickling server cannot stretch ------------------------------------------
#
# requests' read timeout is per socket read: a server sending one byte every few seconds (in the
# headers or the body) never trips it, and a buffered read of 64 KiB waits for all of them. Each
# attempt therefore gets a _Watch: a timer that shuts the connection's socket down at the
# deadline, which ends any read in progress at once. The socket is found through the connection
# class the session's pools use (set by _DeadlineAdapter), at the moment the answer is awaited.

_ATTEMPT = threading.local()
"""`.watch`: the _Watch of the attempt running on this thread, or None."""


class _Watch:
    def __init__(self, timeout_s: float) -> None:
        self._timeout_s = timeout_s
        self._lock = threading.Lock()
        self._sockets: list[socket.socket] = []
        self._expired = False
        self._timer = threading.Timer(timeout_s, self._expire)
        self._timer.daemon = True
        self._timer.start()

    def add(self, sock: socket.socket) -> None:
        with self._lock:
            self._sockets.append(sock)
            if self._expired:
                _shut(sock)

    def reason(self) -> str | None:
        with self._lock:
            return f"answer not complete within {self._timeout_s} s" if self._expired else None

    def cancel(self) -> None:
        self._timer.cancel()

    def _expire(self) -> None:
        with self._lock:
            self._expired = True
            for sock in self._sockets:
                _shut(sock)


def _shut(sock: socket.socket) -> None:
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass  # already closed


def _watch_socket(sock: socket.socket | None) -> None:
    watch: _Watch | None = getattr(_ATTEMPT, "watch", None)
    if watch is not None and sock is not None:
        watch.add(sock)


class _WatchedHTTPConnection(urllib3.connection.HTTPConnection):
    def getresponse(self) -> urllib3.response.HTTPResponse:  # type: ignore[override]
        _watch_socket(self.sock)
        return super().getresponse()


class _WatchedHTTPSConnection(urllib3.connection.HTTPSConnection):
    def getresponse(self) -> urllib3.response.HTTPResponse:  # type: ignore[override]
        _watch_socket(self.sock)
        return super().getresponse()


class _DeadlineAdapter(HTTPAdapter):
    def get_connection_with_tls_context(self, *args: Any, **kwargs: Any) -> Any:
        pool = super().get_connection_with_tls_context(*args, **kwargs)
        pool.ConnectionCls = _WatchedHTTPSConnection if pool.scheme == "https" else _WatchedHTTPConnection  # type: ignore[attr-defined]
        return pool
