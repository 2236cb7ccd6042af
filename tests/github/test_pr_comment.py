"""The pull-request comment API: only kb-eval's own comment is updated, and a POST is never sent twice.

A real HTTP server on 127.0.0.1 plays GitHub's REST API; GitHubApi talks to it directly.
"""

from __future__ import annotations

import json
import re
import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from scanner.github.comment import (
    RATE_LIMIT_BUDGET_S,
    CommentRefused,
    GitHubApi,
    PullRequest,
    marker_for,
    rate_limit_wait,
    upsert_comment,
)
from tests.support.loopback_server import LoopbackServer, Received, Reply, running

REPO = "octo/kb"
PR = 7
MARKER = marker_for("kb")
LIST = f"/repos/{REPO}/issues/{PR}/comments"
REACTIONS = f"/repos/{REPO}/issues/{PR}/reactions"
BOT = {"login": "github-actions[bot]", "type": "Bot"}
GITHUB_TOKEN_USER = Reply(status=403, body={"message": "Resource not accessible by integration"})


class FakeGitHub:
    """Comments of one pull request, a /user answer, and replies forced onto writes."""

    def __init__(self, comments: list[dict[str, Any]], user: Reply = GITHUB_TOKEN_USER,
                 reactor: dict[str, str] = BOT) -> None:
        self.comments = comments
        self.user = user
        self.reactor = reactor
        """Who the token is, as a reaction it creates names it (an installation token's only way)."""
        self.write_replies: list[Reply] = []
        self.lock = threading.Lock()

    def respond(self, request: Received) -> Reply:
        with self.lock:
            if request.method == "GET" and request.path == "/user":
                return self.user
            if request.method == "GET" and request.path == LIST:
                return Reply(body=self.comments)
            if request.method == "POST" and request.path == REACTIONS:
                return Reply(status=201, body={"id": 77, "content": "eyes", "user": self.reactor})
            if request.method == "DELETE" and request.path == f"{REACTIONS}/77":
                return Reply(status=204, body=b"")
            if self.write_replies:
                return self.write_replies.pop(0)
            if request.method == "POST" and request.path == LIST:
                comment = {"id": 9000 + len(self.comments), "body": json.loads(request.body)["body"], "user": BOT}
                self.comments.append(comment)
                return Reply(status=201, body=comment)
            if request.method == "PATCH":
                comment_id = int(request.path.rsplit("/", 1)[1])
                [comment] = [c for c in self.comments if c["id"] == comment_id]
                comment["body"] = json.loads(request.body)["body"]
                return Reply(body=comment)
            return Reply(status=404, body={"message": "Not Found"})


@contextmanager
def github(fake: FakeGitHub) -> Iterator[tuple[GitHubApi, LoopbackServer]]:
    with running(fake.respond) as server:
        yield GitHubApi(server.url, "ghs_token", sleep=lambda _: None), server


def post(api: GitHubApi) -> bool:
    return upsert_comment(api, PullRequest(api.api_url, REPO, PR), MARKER, "| metric |").created


def writes(server: LoopbackServer) -> list[tuple[str, str]]:
    """The comment writes (the identity probe's reaction aside: tests/action/test_comment.py)."""
    return [(r.method, r.path) for r in server.received if r.method != "GET" and not r.path.startswith(REACTIONS)]


def comment(comment_id: int, body: str, login: str, kind: str) -> dict[str, Any]:
    return {"id": comment_id, "body": body, "user": {"login": login, "type": kind}}


def test_the_actions_bots_marked_comment_is_updated() -> None:
    fake = FakeGitHub([comment(1, MARKER + "\nold", "github-actions[bot]", "Bot")])
    with github(fake) as (api, server):
        assert post(api) is False
    assert writes(server) == [("PATCH", f"/repos/{REPO}/issues/comments/1")]


@pytest.mark.parametrize(
    "planted",
    [
        comment(1, MARKER + "\nmy text, overwrite me", "mallory", "User"),
        comment(1, MARKER + "\nfrom another app", "evil-app[bot]", "Bot"),
        comment(1, MARKER + "\nsame login, not a bot", "github-actions[bot]", "User"),
        comment(1, "> quoting kb-eval:\n" + MARKER, "github-actions[bot]", "Bot"),
    ],
    ids=["a user", "another bot", "a user named like the bot", "the marker not first"],
)
def test_a_marked_comment_that_is_not_kb_evals_own_is_left_alone(planted: dict[str, Any]) -> None:
    fake = FakeGitHub([planted])
    with github(fake) as (api, server):
        assert post(api) is True
    assert writes(server) == [("POST", LIST)]
    assert fake.comments[0] == planted


def test_with_a_personal_token_the_comment_of_that_user_is_ours() -> None:
    fake = FakeGitHub(
        [comment(1, MARKER + "\nbot", "github-actions[bot]", "Bot"), comment(2, MARKER + "\nmine", "octocat", "User")],
        user=Reply(body={"login": "octocat", "type": "User"}),
    )
    with github(fake) as (api, server):
        assert post(api) is False
    assert writes(server) == [("PATCH", f"/repos/{REPO}/issues/comments/2")]


def test_the_identity_is_not_asked_for_when_no_comment_holds_the_marker() -> None:
    fake = FakeGitHub([comment(1, "LGTM", "octocat", "User")])
    with github(fake) as (api, server):
        assert post(api) is True
    assert [(r.method, r.path) for r in server.received] == [("GET", LIST), ("POST", LIST)]


def test_a_post_answered_with_a_502_is_not_sent_again() -> None:
    fake = FakeGitHub([])
    fake.write_replies = [Reply(status=502, body={"message": "Bad Gateway"})]
    with github(fake) as (api, server), pytest.raises(CommentRefused, match="may have been posted"):
        post(api)
    assert writes(server) == [("POST", LIST)]


def test_a_post_answered_with_a_429_is_sent_again() -> None:
    fake = FakeGitHub([])
    fake.write_replies = [Reply(status=429, body={"message": "slow down"}, headers={"Retry-After": "1"})]
    with github(fake) as (api, server):
        assert post(api) is True
    assert writes(server) == [("POST", LIST), ("POST", LIST)]
    assert len(fake.comments) == 1


def test_a_patch_answered_with_a_502_is_sent_again() -> None:
    fake = FakeGitHub([comment(1, MARKER, "github-actions[bot]", "Bot")])
    fake.write_replies = [Reply(status=502, body={"message": "Bad Gateway"})]
    with github(fake) as (api, server):
        assert post(api) is False
    assert writes(server) == [("PATCH", f"/repos/{REPO}/issues/comments/1")] * 2


def test_a_request_that_keeps_failing_backs_off_doubling_from_one_second() -> None:
    fake = FakeGitHub([comment(1, MARKER, "github-actions[bot]", "Bot")])
    fake.write_replies = [Reply(status=503, body={"message": "down"})] * 3
    waits = Waits()
    with running(fake.respond) as server:
        api = GitHubApi(server.url, "ghs_token", sleep=waits.sleep, clock=waits.clock)
        upsert_comment(api, PullRequest(api.api_url, REPO, PR), MARKER, "| metric |")
    assert waits.slept == [1.0, 2.0, 4.0]
    assert writes(server) == [("PATCH", f"/repos/{REPO}/issues/comments/1")] * 4


def test_a_post_whose_connection_drops_before_an_answer_is_not_sent_again() -> None:
    # The server reads the whole request (it may have acted on it), then hangs up.
    listener = socket.create_server(("127.0.0.1", 0))
    seen: list[bytes] = []

    def serve() -> None:
        listener.settimeout(5)
        try:
            while True:
                connection, _ = listener.accept()
                with connection:
                    connection.settimeout(5)
                    data = connection.recv(65536)
                    seen.append(data)
                    if data.startswith(b"GET"):
                        connection.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\n[]")
        except OSError:
            return

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    url = f"http://127.0.0.1:{listener.getsockname()[1]}"
    try:
        api = GitHubApi(url, "ghs_token", sleep=lambda _: None)
        with pytest.raises(CommentRefused, match="not retried"):
            upsert_comment(api, PullRequest(url, REPO, PR), MARKER, "text")
    finally:
        # The client is done (a second POST would have come before upsert_comment returned):
        # shutdown wakes the accept the server is blocked in, where close alone would not.
        listener.shutdown(socket.SHUT_RDWR)
        listener.close()
        thread.join(timeout=10)
    assert not thread.is_alive()
    assert [data.split(b" ", 1)[0] for data in seen] == [b"GET", b"POST"]


def test_a_post_to_a_closed_port_is_retried_and_then_refused() -> None:
    listener = socket.create_server(("127.0.0.1", 0))
    url = f"http://127.0.0.1:{listener.getsockname()[1]}"
    listener.close()  # nothing listens: every attempt is refused before anything is sent
    api = GitHubApi(url, "ghs_token", sleep=lambda _: None)
    with pytest.raises(CommentRefused, match="failed after 4 tries"):
        api.request("POST", f"{url}{LIST}", {"body": "x"})


# --- rate limits (docs.github.com, "Rate limits for the REST API": 403 or 429 with
# x-ratelimit-remaining: 0 -> until x-ratelimit-reset; retry-after -> that many seconds;
# otherwise at least one minute) --------------------------------------------------------------------

NOW = 1_800_000_000.0


class Waits:
    """A clock that moves only when kb-eval sleeps: the waits are recorded, never spent."""

    def __init__(self) -> None:
        self.now = NOW
        self.slept: list[float] = []

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds

    def clock(self) -> float:
        return self.now


def limited_then_ok(*limits: Reply) -> tuple[FakeGitHub, Waits]:
    fake = FakeGitHub([])
    fake.write_replies = list(limits)
    return fake, Waits()


def post_with(fake: FakeGitHub, waits: Waits) -> tuple[bool, LoopbackServer]:
    with running(fake.respond) as server:
        api = GitHubApi(server.url, "ghs_token", sleep=waits.sleep, clock=waits.clock)
        created = upsert_comment(api, PullRequest(api.api_url, REPO, PR), MARKER, "| metric |").created
    return created, server


PRIMARY = {"message": "API rate limit exceeded for installation ID 1."}


def test_a_403_with_no_requests_remaining_waits_until_the_reset_then_posts_once() -> None:
    fake, waits = limited_then_ok(Reply(403, PRIMARY, {"x-ratelimit-remaining": "0", "x-ratelimit-reset": str(int(NOW) + 20)}))
    created, server = post_with(fake, waits)
    assert created and waits.slept == [21.0]
    assert writes(server) == [("POST", LIST), ("POST", LIST)] and len(fake.comments) == 1


def test_a_429_without_retry_after_waits_a_minute_not_a_second() -> None:
    fake, waits = limited_then_ok(Reply(429, {"message": "Too Many Requests"}))
    assert post_with(fake, waits)[0] and waits.slept == [60.0]


def test_retry_after_is_waited_as_given() -> None:
    fake, waits = limited_then_ok(Reply(403, {"message": "You have exceeded a secondary rate limit."}, {"retry-after": "7"}))
    assert post_with(fake, waits)[0] and waits.slept == [7.0]


def test_a_secondary_limit_without_headers_waits_a_minute() -> None:
    fake, waits = limited_then_ok(Reply(403, {"message": "You have exceeded a secondary rate limit. Please wait."}))
    assert post_with(fake, waits)[0] and waits.slept == [60.0]


def test_a_wait_past_the_budget_is_not_made_and_says_rate_limited() -> None:
    reset = str(int(NOW) + 3600)
    fake, waits = limited_then_ok(Reply(403, PRIMARY, {"x-ratelimit-remaining": "0", "x-ratelimit-reset": reset}))
    with pytest.raises(CommentRefused) as caught:
        post_with(fake, waits)
    assert caught.value.rate_limited and caught.value.status == 403
    assert "rate limited" in str(caught.value) and "permission" not in str(caught.value)
    assert waits.slept == [] and fake.comments == []


def test_waits_that_add_up_past_the_budget_stop_at_the_budget() -> None:
    fake, waits = limited_then_ok(*[Reply(429, {"message": "Too Many Requests"})] * 3)
    with pytest.raises(CommentRefused) as caught:
        post_with(fake, waits)
    assert caught.value.rate_limited and sum(waits.slept) <= RATE_LIMIT_BUDGET_S


def test_a_403_about_permissions_is_not_a_rate_limit() -> None:
    fake, waits = limited_then_ok(Reply(403, {"message": "Resource not accessible by integration"},
                                        {"x-ratelimit-remaining": "4999", "x-ratelimit-reset": str(int(NOW) + 20)}))
    with pytest.raises(CommentRefused) as caught:
        post_with(fake, waits)
    assert not caught.value.rate_limited and caught.value.status == 403 and waits.slept == []


def test_a_rate_limited_get_user_is_not_taken_for_an_installation_token() -> None:
    user = Reply(403, PRIMARY, {"x-ratelimit-remaining": "0", "x-ratelimit-reset": str(int(NOW) + 9000)})
    fake = FakeGitHub([comment(1, MARKER + "\nold", "github-actions[bot]", "Bot")], user=user)
    with pytest.raises(CommentRefused) as caught:
        post_with(fake, Waits())
    assert caught.value.rate_limited and fake.comments[0]["body"] == MARKER + "\nold"


# --- every request as GitHub's REST description has it ------------------------------------------------

OPERATIONS = json.loads((Path(__file__).parents[1] / "fixtures" / "github-rest" / "operations.json").read_text())


def described(request: Received) -> dict[str, Any]:
    """The documented operation `request` is, checked: method, path, query parameters, body, headers."""
    for operation in OPERATIONS["operations"]:
        pattern = "/".join("[^/]+" if part.startswith("{") else re.escape(part) for part in operation["path"].split("/"))
        if request.method == operation["method"] and re.fullmatch(pattern, request.path):
            break
    else:
        raise AssertionError(f"{request.method} {request.path} is no operation kb-eval should call")
    assert set(request.params) <= set(operation["query"]), (operation["id"], request.params)
    if "per_page" in request.params:
        assert int(request.params["per_page"][0]) <= operation["per_page_max"]
    if operation["body"] is None:
        assert not request.body
    else:
        body = json.loads(request.body)
        assert set(operation["body"]["required"]) <= set(body) <= set(operation["body"]["allowed"])
        if "content" in operation["body"]:
            assert body["content"] in operation["body"]["content"]
    for name, value in OPERATIONS["request_headers"].items():
        assert request.headers[name] == value
    return operation


@pytest.mark.parametrize("existing", [[], [comment(1, MARKER + "\nold", "kb-eval-app[bot]", "Bot")]], ids=["first run", "second run"])
def test_every_request_is_an_operation_of_the_rest_description(existing: list[dict[str, Any]]) -> None:
    fake = FakeGitHub(list(existing), reactor={"login": "kb-eval-app[bot]", "type": "Bot"})
    with github(fake) as (api, server):
        post(api)
    ids = [described(request)["id"] for request in server.received]
    assert ids[0] == "issues/list-comments" and ids[-1] in ("issues/create-comment", "issues/update-comment")
    if not existing:
        assert ids == ["issues/list-comments", "issues/create-comment"]
    else:
        assert ids == ["issues/list-comments", "users/get-authenticated", "reactions/create-for-issue",
                       "reactions/delete-for-issue", "issues/update-comment"]


def test_the_statuses_kb_eval_reads_as_rate_limits_are_the_documented_ones() -> None:
    assert set(OPERATIONS["rate_limit"]["statuses"]) == {403, 429}
    for status in (400, 401, 404, 409, 422, 500):
        response = requests_response(status, {"x-ratelimit-remaining": "0", "retry-after": "5"})
        assert rate_limit_wait(response, NOW) is None
    for status in (403, 429):
        assert rate_limit_wait(requests_response(status, {"retry-after": "5"}), NOW) == 5.0


def requests_response(status: int, headers: dict[str, str]) -> Any:
    import requests

    response = requests.Response()
    response.status_code = status
    response.headers.update(headers)
    response._content = b'{"message": "x"}'
    return response
