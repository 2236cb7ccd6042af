"""One pull-request comment holding the summary, created once and then updated in place.

GitHub's REST API, through `requests`: the comment is found again by a hidden
HTML marker in its body (`find_marked_comment`, which reads every page of the
pull request's comments), then `PATCH`ed, or `POST`ed when there is none.
Transient failures (5xx, 429, connection errors) are retried with backoff;
a refusal (403 on a fork's read-only token, 404, 422) raises `CommentRefused`,
which Action mode turns into a warning: a comment is a convenience and never
decides the step's result.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import requests

from .github import bound_summary

COMMENT_BODY_LIMIT_BYTES = 60_000
"""GitHub refuses a comment body over 65,536 characters; bytes are >= characters, and the
margin leaves room for the marker and the truncation note."""
CONNECT_TIMEOUT_S = 10.0
READ_TIMEOUT_S = 30.0
RETRIES = 3
"""Tries after the first one for a transient failure: 4 requests at most, waits 1 + 2 + 4 s."""
BACKOFF_BASE_S = 1.0
MAX_RETRY_AFTER_S = 30.0
"""A Retry-After longer than this is not waited for: the step should not hang on a comment."""
PER_PAGE = 100
MAX_PAGES = 50
"""5,000 comments; a pull request with more is not worth walking for one marker."""
API_VERSION = "2022-11-28"

_NEXT_LINK = re.compile(r'<([^>]+)>\s*;\s*rel="next"')


@dataclass(frozen=True, slots=True)
class PullRequest:
    api_url: str
    """GITHUB_API_URL, e.g. https://api.github.com (GHES: https://host/api/v3)."""
    repository: str
    """owner/name."""
    number: int


@dataclass(frozen=True, slots=True)
class CommentPosted:
    created: bool
    """True for a new comment, False when an existing one was updated."""
    url: str
    """The comment's html_url (or its API url when GitHub gave none)."""


class CommentRefused(Exception):
    """The API refused or could not be reached after the retries; the message says which and why."""

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


def marker_for(key: str) -> str:
    """The hidden marker: an HTML comment, invisible in the rendered comment.

    `key` tells apart several kb-eval steps in one workflow (different KBs);
    it is made of safe characters by the caller.
    """
    return f"<!-- kb-eval:pr-comment:{key} -->"


def comment_body(marker: str, markdown: str) -> str:
    return marker + "\n" + bound_summary(markdown, COMMENT_BODY_LIMIT_BYTES)


class GitHubApi:
    """Just the calls the comment needs, with timeouts, retries and one error type."""

    def __init__(
        self,
        api_url: str,
        token: str,
        session: requests.Session | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
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

    def request(self, method: str, url: str, json_body: Mapping[str, Any] | None = None) -> requests.Response:
        if not url.startswith(self.api_url + "/"):
            # The token goes only to the API it was issued for, whatever a Link header says.
            raise CommentRefused(f"refusing to send the token to {url!r}, outside {self.api_url}")
        last_problem = ""
        for attempt in range(RETRIES + 1):
            try:
                response = self.session.request(
                    method, url, json=json_body, timeout=(CONNECT_TIMEOUT_S, READ_TIMEOUT_S), allow_redirects=False
                )
            except requests.RequestException as error:
                last_problem = f"{type(error).__name__}: {error}"
            else:
                if response.status_code < 300:
                    return response
                if response.status_code != 429 and response.status_code < 500:
                    raise CommentRefused(
                        f"{method} {_path(url, self.api_url)} was refused: {response.status_code} {_api_message(response)}",
                        response.status_code,
                    )
                last_problem = f"{response.status_code} {_api_message(response)}"
                if attempt < RETRIES:
                    self.sleep(_wait_seconds(response, attempt))
                continue
            if attempt < RETRIES:
                self.sleep(float(BACKOFF_BASE_S * 2**attempt))
        raise CommentRefused(f"{method} {_path(url, self.api_url)} failed after {RETRIES + 1} tries: {last_problem}")


def find_marked_comment(api: GitHubApi, pull: PullRequest, marker: str) -> Mapping[str, Any] | None:
    """The first comment on the pull request whose body holds `marker`, on any page."""
    url: str | None = f"{api.api_url}/repos/{pull.repository}/issues/{pull.number}/comments?per_page={PER_PAGE}"
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
            if isinstance(comment, Mapping) and marker in str(comment.get("body") or ""):
                return comment
        match = _NEXT_LINK.search(response.headers.get("Link", ""))
        url = match.group(1) if match else None
    return None


def upsert_comment(api: GitHubApi, pull: PullRequest, marker: str, markdown: str) -> CommentPosted:
    """Update the marked comment, or create it. Raises CommentRefused."""
    body = {"body": comment_body(marker, markdown)}
    existing = find_marked_comment(api, pull, marker)
    if existing is not None and isinstance(existing.get("id"), int):
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


def _wait_seconds(response: requests.Response, attempt: int) -> float:
    retry_after = response.headers.get("Retry-After", "")
    if retry_after.isdigit():
        return min(float(int(retry_after)), MAX_RETRY_AFTER_S)
    return float(BACKOFF_BASE_S * 2**attempt)


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
