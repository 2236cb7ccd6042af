"""One pull-request comment holding the summary, created once and then updated in place.

GitHub's REST API, through `requests`: the comment is found again by a hidden
HTML marker that STARTS its body and by its author, which must be the token's
own identity (`find_own_comment`, which reads every page of the pull request's
comments), then `PATCH`ed, or `POST`ed when there is none. The marker alone
proves nothing: it is computable from the public workflow, and anyone can post
a comment starting with it to have kb-eval overwrite their text.

Transient failures (5xx, connection errors) are retried with backoff, except
that a POST is retried only when it certainly never reached GitHub (connection
refused or not established, or a rate limit): a retried POST after a 502 could post
the comment twice. A rate limit (403 or 429 with `x-ratelimit-remaining: 0`, a
`retry-after`, or GitHub's secondary-limit message; a 429 without either) is waited
for as GitHub's REST documentation asks (`retry-after` seconds, else until
`x-ratelimit-reset`, else at least a minute) while the waits fit in
RATE_LIMIT_BUDGET_S; past it, `CommentRefused(rate_limited=True)`, which Action mode
words as "rate limited", never as missing permissions. A refusal (403 on a fork's
read-only token, 404, 422) raises `CommentRefused`, which Action mode turns into a
warning: a comment is a convenience and never decides the step's result.

Who the token writes as: `GET /user` answers for a personal token; a GitHub App's
installation token and the workflow's GITHUB_TOKEN are refused there (403). Then
the token reacts to the pull request itself (`POST .../issues/{n}/reactions`, whose
answer names the reaction's `user`: the token's own identity, whatever kind of token
it is) and takes the reaction back at once. Paths, parameters, status codes and
headers as github/rest-api-description describes them (tests/github/test_pr_comment.py).
"""

from __future__ import annotations

import enum
import re
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from scanner.foundation.retry_after import retry_after_seconds
from scanner.github.workflow import bound_summary

if TYPE_CHECKING:
    import requests

COMMENT_BODY_LIMIT_BYTES = 60_000
"""GitHub refuses a comment body over 65,536 characters; bytes are >= characters, and the
margin leaves room for the marker and the truncation note."""
CONNECT_TIMEOUT_S = 10.0
READ_TIMEOUT_S = 30.0
RETRIES = 3
"""Tries after the first one for a transient failure: 4 requests at most, waits 1 + 2 + 4 s."""
BACKOFF_BASE_S = 1.0
RATE_LIMIT_BUDGET_S = 150.0
"""Longest a comment waits for GitHub's rate limits, all its requests together: two of the one-minute
waits GitHub asks for after a secondary limit. A longer wait is not made: the step should not
hang on a comment, which is then a "rate limited" warning."""
SECONDARY_LIMIT_WAIT_S = 60.0
"""GitHub: with neither `retry-after` nor `x-ratelimit-remaining: 0`, wait at least one minute."""
RESET_MARGIN_S = 1.0
"""Added to the wait until `x-ratelimit-reset`, a whole second that may already have begun."""
PER_PAGE = 100
MAX_PAGES = 50
"""5,000 comments; a pull request with more is not worth walking for one marker."""
API_VERSION = "2022-11-28"

_NEXT_LINK = re.compile(r'<([^>]+)>\s*;\s*rel="next"')

ACTIONS_BOT = ("github-actions[bot]", "Bot")
"""Who the workflow's GITHUB_TOKEN writes as: assumed only when GET /user is refused AND the token
may not react to the pull request either, so that its identity cannot be asked for at all."""
PROBE_REACTION = "eyes"
"""The reaction that asks GitHub who the token is; taken back at once."""


@dataclass(frozen=True, slots=True)
class Identity:
    """Who the token writes comments as: a comment is ours only when its `user` matches both."""

    login: str
    type: str
    """`Bot` for the GITHUB_TOKEN or an app's token, `User` for a personal token."""


@dataclass(frozen=True, slots=True)
class PullRequest:
    api_url: str
    """GITHUB_API_URL, e.g. https://api.github.com (GHES: https://host/api/v3)."""
    repository: str
    """owner/name."""
    number: int


class CommentMode(enum.Enum):
    """When the Action comments on the pull request (input `comment`)."""

    OFF = "off"
    ALWAYS = "always"
    """Create the comment, then update it in place on every run."""
    ON_CHANGE = "on-change"
    """Create or update only when what the comment reports changed: a re-run that finds the same
    metrics, changed queries and findings notifies nobody."""


@dataclass(frozen=True, slots=True)
class CommentPosted:
    created: bool
    """True for a new comment, False when an existing one was updated (or left as it was)."""
    url: str
    """The comment's html_url (or its API url when GitHub gave none)."""
    unchanged: bool = False
    """on-change mode found kb-eval's comment already saying the same: nothing was sent."""


class CommentRefused(Exception):
    """The API refused or could not be reached after the retries; the message says which and why."""

    def __init__(self, message: str, status: int | None = None, *, rate_limited: bool = False) -> None:
        super().__init__(message)
        self.status = status
        self.rate_limited = rate_limited
        """GitHub's rate limit, not the token's permissions, stopped the comment."""


def marker_for(key: str) -> str:
    """The hidden marker: an HTML comment, invisible in the rendered comment.

    `key` tells apart several kb-eval steps in one workflow (different KBs);
    it is made of safe characters by the caller.
    """
    return f"<!-- kb-eval:pr-comment:{key} -->"


def state_marker(state: str) -> str:
    """A second hidden line: a digest of what the comment reports, for on-change mode."""
    return f"<!-- kb-eval:state:{state} -->"


def comment_body(marker: str, markdown: str, state: str | None = None) -> str:
    head = marker + "\n" + (state_marker(state) + "\n" if state else "")
    return head + bound_summary(markdown, COMMENT_BODY_LIMIT_BYTES)


class GitHubApi:
    """Just the calls the comment needs, with timeouts, retries and one error type."""

    def __init__(
        self,
        api_url: str,
        token: str,
        session: requests.Session | None = None,
        sleep: Callable[[float], None] = time.sleep,
        clock: Callable[[], float] = time.time,
    ) -> None:
        # requests is imported by the runs that post a comment, not by every run that reads the
        # comment setting (about 15 MiB of memory, and most of the import time).
        import requests

        self.api_url = api_url.rstrip("/")
        self.session = session or requests.Session()
        self.session.headers.update(
            {
                "Authorization": f"Bearer {token}",
                "Accept": "application/vnd.github+json",
                "X-GitHub-Api-Version": API_VERSION,
                "User-Agent": "kb-eval",
            }
        )
        self.sleep = sleep
        self.clock = clock
        self.waited_s = 0.0
        """Rate-limit waits so far, against RATE_LIMIT_BUDGET_S."""
        self._identity: Identity | None = None

    def request(self, method: str, url: str, json_body: Mapping[str, Any] | None = None) -> requests.Response:
        import requests

        if not url.startswith(self.api_url + "/"):
            # The token goes only to the API it was issued for, whatever a Link header says.
            raise CommentRefused(f"refusing to send the token to {url!r}, outside {self.api_url}")
        where = f"{method} {_path(url, self.api_url)}"
        # GET and PATCH (same body) are idempotent; a POST is retried only when it never arrived.
        repeatable = method != "POST"
        last_problem = ""
        for attempt in range(RETRIES + 1):
            try:
                response = self.session.request(
                    method, url, json=json_body, timeout=(CONNECT_TIMEOUT_S, READ_TIMEOUT_S), allow_redirects=False
                )
            except requests.RequestException as error:
                last_problem = f"{type(error).__name__}: {error}"
                if not (repeatable or _never_sent(error)):
                    raise CommentRefused(f"{where} failed ({last_problem}); not retried: {_MAYBE_POSTED}") from None
                wait = float(BACKOFF_BASE_S * 2**attempt)
            else:
                if response.status_code < 300:
                    return response
                limited = rate_limit_wait(response, self.clock())
                if limited is not None:
                    # A rate-limited request was refused before it was acted on: a POST too may be sent again.
                    last_problem = f"rate limited ({response.status_code} {_api_message(response)})"
                    if self.waited_s + limited > RATE_LIMIT_BUDGET_S or attempt == RETRIES:
                        why = (
                            f"still after {RETRIES + 1} tries" if attempt == RETRIES else
                            f"it asks for a wait of {limited:.0f} s, more than the {RATE_LIMIT_BUDGET_S:.0f} s "
                            f"a comment waits in all ({self.waited_s:.0f} s waited already)"
                        )
                        raise CommentRefused(
                            f"{where} was rate limited by GitHub ({response.status_code} {_api_message(response)}); "
                            + why,
                            response.status_code, rate_limited=True,
                        )
                    self.waited_s += limited
                    self.sleep(limited)
                    continue
                if response.status_code < 500:
                    raise CommentRefused(
                        f"{where} was refused: {response.status_code} {_api_message(response)}",
                        response.status_code,
                    )
                last_problem = f"{response.status_code} {_api_message(response)}"
                # A 5xx may come after the request was acted on.
                if not repeatable:
                    raise CommentRefused(f"{where} failed ({last_problem}); not retried: {_MAYBE_POSTED}",
                                         response.status_code)
                wait = float(BACKOFF_BASE_S * 2**attempt)
            if attempt < RETRIES:
                self.sleep(wait)
        raise CommentRefused(f"{where} failed after {RETRIES + 1} tries: {last_problem}")

    def identity(self, pull: PullRequest) -> Identity:
        """The token's own identity, asked once per run: GET /user, else a reaction on the pull request."""
        if self._identity is None:
            self._identity = self._ask_identity(pull)
        return self._identity

    def _ask_identity(self, pull: PullRequest) -> Identity:
        try:
            response = self.request("GET", f"{self.api_url}/user")
        except CommentRefused as refused:
            if refused.rate_limited or refused.status not in (401, 403):
                raise
            return self._identity_by_reaction(pull)
        return _identity_of(_json(response), "GET /user")

    def _identity_by_reaction(self, pull: PullRequest) -> Identity:
        """An installation token (a GitHub App's, or the workflow's GITHUB_TOKEN) cannot read /user,
        but the reaction it creates names its author. A reaction that was already there (200) is left
        as it was; the one made here (201) is deleted again."""
        reactions = f"{self.api_url}/repos/{pull.repository}/issues/{pull.number}/reactions"
        try:
            response = self.request("POST", reactions, {"content": PROBE_REACTION})
        except CommentRefused as refused:
            if refused.rate_limited or refused.status not in (401, 403, 404, 422):
                raise
            return Identity(*ACTIONS_BOT)
        answer = _json(response)
        me = _identity_of(answer.get("user") if isinstance(answer, Mapping) else None, "the reaction's user")
        reaction_id = answer.get("id") if isinstance(answer, Mapping) else None
        if response.status_code == 201 and isinstance(reaction_id, int) and not isinstance(reaction_id, bool):
            try:
                self.request("DELETE", f"{reactions}/{reaction_id}")
            except CommentRefused:
                pass  # a reaction left behind is harmless; the comment matters more
        return me


def rate_limit_wait(response: requests.Response, now: float) -> float | None:
    """Seconds GitHub asks to wait before the next request, when `response` is a rate limit (403 or
    429); None for any other answer (a 403 that is about permissions)."""
    if response.status_code not in (403, 429):
        return None
    headers = response.headers
    wish = retry_after_seconds(headers.get("retry-after"), now)
    if wish is not None:
        return wish
    if headers.get("x-ratelimit-remaining", "").strip() == "0":
        reset = headers.get("x-ratelimit-reset", "").strip()
        if _ASCII_NUMBER.fullmatch(reset) and len(reset) <= 12:
            return max(0.0, float(reset) - now) + RESET_MARGIN_S
        return SECONDARY_LIMIT_WAIT_S
    if response.status_code == 429 or "rate limit" in _api_message(response).lower():
        return SECONDARY_LIMIT_WAIT_S
    return None


def _json(response: requests.Response) -> object:
    try:
        answer: object = response.json()
    except ValueError:
        return None
    return answer


def _identity_of(user: object, what: str) -> Identity:
    if not (isinstance(user, Mapping) and isinstance(user.get("login"), str) and isinstance(user.get("type"), str)):
        raise CommentRefused(f"{what} did not name a user with a login and a type")
    return Identity(str(user["login"]), str(user["type"]))


_ASCII_NUMBER = re.compile(r"[0-9]+")
_MAYBE_POSTED = "the comment may have been posted, and posting again could duplicate it"


def _never_sent(error: requests.RequestException) -> bool:
    """True only when the request cannot have reached the server: no connection was made."""
    import requests
    import urllib3.exceptions

    if isinstance(error, requests.exceptions.ConnectTimeout):
        return True
    reason = getattr(error.args[0], "reason", None) if error.args else None
    return isinstance(reason, urllib3.exceptions.NewConnectionError)


def is_own_comment(comment: Mapping[str, Any], marker: str, me: Identity) -> bool:
    """kb-eval's own comment: its body STARTS with the marker (a quote of it further down is someone
    else's text) and its author is the token's identity, login and type alike."""
    user = comment.get("user")
    return (
        str(comment.get("body") or "").startswith(marker)
        and isinstance(comment.get("id"), int)
        and isinstance(user, Mapping)
        and user.get("login") == me.login
        and user.get("type") == me.type
    )


def find_own_comment(api: GitHubApi, pull: PullRequest, marker: str) -> Mapping[str, Any] | None:
    """The first comment on the pull request that is kb-eval's own (`is_own_comment`), on any page.

    The identity is asked for only when some comment starts with the marker, so the first run on a
    pull request costs no extra request."""
    url: str | None = f"{api.api_url}/repos/{pull.repository}/issues/{pull.number}/comments?per_page={PER_PAGE}"
    me: Identity | None = None
    pages = 0
    while url is not None and pages < MAX_PAGES:
        response = api.request("GET", url)
        pages += 1
        try:
            comments = response.json()
        except ValueError:
            comments = None
        if not isinstance(comments, list):
            raise CommentRefused("listing the pull request's comments did not return a JSON list")
        for comment in comments:
            if isinstance(comment, Mapping) and str(comment.get("body") or "").startswith(marker):
                me = me or api.identity(pull)
                if is_own_comment(comment, marker, me):
                    return comment
        match = _NEXT_LINK.search(response.headers.get("Link", ""))
        url = match.group(1) if match else None
    return None


def upsert_comment(
    api: GitHubApi,
    pull: PullRequest,
    marker: str,
    markdown: str,
    *,
    state: str | None = None,
    only_on_change: bool = False,
) -> CommentPosted:
    """Update kb-eval's own comment, or create it. Raises CommentRefused.

    With `only_on_change`, an own comment whose body already carries `state` is left as it is."""
    body = {"body": comment_body(marker, markdown, state)}
    existing = find_own_comment(api, pull, marker)
    if existing is not None and only_on_change and state and _carries_state(existing, marker, state):
        url = existing.get("html_url") or existing.get("url") or ""
        return CommentPosted(False, str(url), unchanged=True)
    if existing is not None:
        response = api.request("PATCH", f"{api.api_url}/repos/{pull.repository}/issues/comments/{existing['id']}", body)
        created = False
    else:
        response = api.request("POST", f"{api.api_url}/repos/{pull.repository}/issues/{pull.number}/comments", body)
        created = True
    try:
        answer = response.json()
    except ValueError:
        answer = {}
    url = (answer.get("html_url") or answer.get("url") or "") if isinstance(answer, Mapping) else ""
    return CommentPosted(created, str(url))


def _carries_state(comment: Mapping[str, Any], marker: str, state: str) -> bool:
    # Only the line right after the marker counts: the rest of the body is pull-request text.
    return str(comment.get("body") or "").startswith(marker + "\n" + state_marker(state) + "\n")


def _api_message(response: requests.Response) -> str:
    try:
        answer = response.json()
    except ValueError:
        return response.reason or ""
    if isinstance(answer, Mapping) and isinstance(answer.get("message"), str):
        return str(answer["message"])[:300]
    return response.reason or ""


def _path(url: str, api_url: str) -> str:
    return url[len(api_url) :].split("?", 1)[0]
