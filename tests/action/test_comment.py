"""The pull-request comment, against a real HTTP server on 127.0.0.1 playing GitHub's REST API.

entrypoint.py runs in Action mode as a subprocess with GITHUB_API_URL pointing
at the server; the tests assert the requests it made (method, path, token,
body) and that the step still exits as the eval says.
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from scanner.foundation.errors import ExitCode
from scanner.github import comment as comment_module
from tests.conftest import Launch
from tests.support.action_cases import (
    KB,
    assert_only_our_commands,
    finding_workspace,
    next_step,
    observe,
    run_entrypoint,
)
from tests.support.container import FAKE_TOKEN, RunnerLayout, action_inputs, pull_request_event
from tests.support.loopback_server import LoopbackServer, Received, Reply, running

REPO_PATH = "/repos/octo/kb"
PR = 7
MARKER_PREFIX = "<!-- kb-eval:pr-comment:"
ACTIONS_BOT = {"login": "github-actions[bot]", "type": "Bot"}
APP_BOT = {"login": "kb-eval-app[bot]", "type": "Bot"}
PERSON = {"login": "octocat", "type": "User"}
TOKENS = {"workflow": ACTIONS_BOT, "app": APP_BOT, "personal": PERSON}
"""Who each kind of token writes as: the workflow's GITHUB_TOKEN, a GitHub App's installation
token, a personal token. Only the personal one may read GET /user."""
THIS_MARKER = MARKER_PREFIX + hashlib.sha256(f"{KB}\0".encode()).hexdigest()[:12] + " -->"
"""The marker of the step these tests run (mode.comment_key: the kb-path and an empty golden)."""
REACTION_CONTENT = {"+1", "-1", "laugh", "confused", "heart", "hooray", "rocket", "eyes"}
"""reactions/create-for-issue's `content` enum in github/rest-api-description."""


@dataclass
class FakeIssueComments:
    """The comments of one pull request, served 100 per page with GitHub's Link header."""

    comments: list[dict[str, Any]] = field(default_factory=list)
    next_id: int = 1000
    failures: list[Reply] = field(default_factory=list)
    """Replies given, in order, before any real answer (a 502, a 403...)."""
    refuse_writes: Reply | None = None
    base_url: str = ""
    token: str = "workflow"
    """Which kind of token the requests carry (TOKENS)."""
    reactions: dict[int, dict[str, Any]] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def respond(self, request: Received) -> Reply:
        with self.lock:
            if self.failures:
                return self.failures.pop(0)
            list_path = f"{REPO_PATH}/issues/{PR}/comments"
            me = TOKENS[self.token]
            if request.method == "GET" and request.path == "/user":
                if self.token == "personal":
                    return Reply(body={**PERSON, "id": 1})
                # What GitHub answers an installation token (an app's, or the workflow's GITHUB_TOKEN).
                return Reply(status=403, body={"message": "Resource not accessible by integration"})
            reactions_path = f"{REPO_PATH}/issues/{PR}/reactions"
            if request.method == "POST" and request.path == reactions_path:
                content = json.loads(request.body).get("content")
                if content not in REACTION_CONTENT:
                    return Reply(status=422, body={"message": "Validation Failed"})
                for reaction in self.reactions.values():
                    if reaction["user"] == me and reaction["content"] == content:
                        return Reply(status=200, body=reaction)  # "Reaction exists"
                reaction = {"id": 500 + len(self.reactions), "content": content, "user": me}
                self.reactions[reaction["id"]] = reaction
                return Reply(status=201, body=reaction)
            if request.method == "DELETE" and request.path.startswith(reactions_path + "/"):
                self.reactions.pop(int(request.path.rsplit("/", 1)[1]), None)
                return Reply(status=204, body=b"")
            if request.method == "GET" and request.path == list_path:
                page = int(request.params.get("page", ["1"])[0])
                per_page = int(request.params["per_page"][0])
                if per_page > 100:
                    return Reply(status=422, body={"message": "per_page is at most 100"})
                chunk = self.comments[(page - 1) * per_page : page * per_page]
                headers = {}
                if page * per_page < len(self.comments):
                    headers["Link"] = f'<{self.base_url}{list_path}?per_page={per_page}&page={page + 1}>; rel="next"'
                return Reply(body=chunk, headers=headers)
            if request.method in ("POST", "PATCH") and self.refuse_writes is not None:
                return self.refuse_writes
            if request.method == "POST" and request.path == list_path:
                comment = {"id": self.next_id, "body": json.loads(request.body)["body"], "user": me}
                comment["html_url"] = f"https://github.com/octo/kb/pull/{PR}#issuecomment-{self.next_id}"
                self.next_id += 1
                self.comments.append(comment)
                return Reply(status=201, body=comment)
            if request.method == "PATCH" and request.path.startswith(f"{REPO_PATH}/issues/comments/"):
                comment_id = int(request.path.rsplit("/", 1)[1])
                for comment in self.comments:
                    if comment["id"] == comment_id:
                        comment["body"] = json.loads(request.body)["body"]
                        return Reply(body=comment)
            return Reply(status=404, body={"message": "Not Found"})


@pytest.fixture
def api() -> Iterator[tuple[FakeIssueComments, LoopbackServer]]:
    fake = FakeIssueComments()
    with running(fake.respond) as server:
        fake.base_url = server.url
        yield fake, server


@pytest.fixture
def layout(tmp_path: Path) -> RunnerLayout:
    layout = RunnerLayout(tmp_path)
    layout.write_event(pull_request_event(number=PR))
    finding_workspace(layout.workspace)
    return layout


def run_with_comment(launch: Launch, layout: RunnerLayout, server: LoopbackServer, **env: str) -> Any:
    inputs = action_inputs({"kb-path": KB, "comment": "true"})
    next_step(layout)
    return run_entrypoint(launch, layout, inputs, extra_env={"GITHUB_API_URL": server.url, **env})


def calls(server: LoopbackServer) -> list[tuple[str, str]]:
    """The requests about comments (the identity probe's reaction aside, tested on its own)."""
    return [(r.method, r.path) for r in server.received if "/reactions" not in r.path]


def test_the_first_run_creates_the_comment_and_the_second_updates_the_same_one(
    layout: RunnerLayout, api: tuple[FakeIssueComments, LoopbackServer], launch: Launch
) -> None:
    fake, server = api
    first = observe(run_with_comment(launch, layout, server))
    assert first.returncode == ExitCode.OK
    assert calls(server) == [
        ("GET", f"{REPO_PATH}/issues/{PR}/comments"),
        ("POST", f"{REPO_PATH}/issues/{PR}/comments"),
    ]
    for request in server.received:
        assert request.headers["Authorization"] == f"Bearer {FAKE_TOKEN}"
        assert request.headers["Accept"] == "application/vnd.github+json"
    [comment] = fake.comments
    assert comment["body"].startswith(MARKER_PREFIX)
    assert "(golden-queries-quoted)" in comment["body"]
    assert "| metric |" in comment["body"]
    # Only annotations of the eval itself: the comment went through without a warning.
    assert [a[4] for a in first.annotations] == ["golden-queries-quoted"]

    server.received.clear()
    (layout.workspace / KB / "notes" / "leak-0.md").unlink()  # the second run has no finding
    second = observe(run_with_comment(launch, layout, server))
    assert second.returncode == ExitCode.OK
    assert calls(server) == [
        ("GET", f"{REPO_PATH}/issues/{PR}/comments"),
        ("GET", "/user"),
        ("PATCH", f"{REPO_PATH}/issues/comments/{comment['id']}"),
    ]
    [updated] = fake.comments  # still one comment, now with the new summary
    assert updated["id"] == comment["id"] and updated["body"].startswith(MARKER_PREFIX)
    assert "No document quotes" in updated["body"]
    assert "comment updated" in run_with_comment(launch, layout, server).stderr


@pytest.mark.parametrize("token", sorted(TOKENS))
def test_with_every_kind_of_token_the_second_run_updates_the_first_runs_comment(
    layout: RunnerLayout, api: tuple[FakeIssueComments, LoopbackServer], launch: Launch, token: str
) -> None:
    fake, server = api
    fake.token = token
    # Comments that start with the marker but are not this token's: another bot's, a person's, the
    # workflow bot's when an app comments (two kb-eval setups on one pull request).
    planted = [
        {"id": 1, "body": THIS_MARKER + "\nplanted", "user": user}
        for user in ({"login": "mallory", "type": "User"}, {"login": "other-app[bot]", "type": "Bot"},
                     *(identity for kind, identity in TOKENS.items() if kind != token))
    ]
    for number, comment in enumerate(planted):
        comment["id"] = 10 + number
    fake.comments.extend(json.loads(json.dumps(planted)))
    for _ in range(2):
        assert observe(run_with_comment(launch, layout, server)).returncode == ExitCode.OK
    mine = [comment for comment in fake.comments if comment["user"] == TOKENS[token]]
    assert len(mine) == 1, "the second run posted another comment"
    assert mine[0]["body"].startswith(MARKER_PREFIX) and "| metric |" in mine[0]["body"]
    assert [c for c in fake.comments if c["user"] != TOKENS[token]] == planted, "a comment it did not write changed"
    writes = [(m, p) for m, p in calls(server) if m != "GET"]
    assert writes == [("POST", f"{REPO_PATH}/issues/{PR}/comments"),
                      ("PATCH", f"{REPO_PATH}/issues/comments/{mine[0]['id']}")]
    assert fake.reactions == {}, "the identity probe's reaction was left on the pull request"


def test_an_installation_token_asks_its_identity_with_a_reaction_it_takes_back(
    layout: RunnerLayout, api: tuple[FakeIssueComments, LoopbackServer], launch: Launch
) -> None:
    fake, server = api
    fake.token = "app"
    fake.comments.append({"id": 3, "body": THIS_MARKER + "\nold", "user": APP_BOT})
    assert observe(run_with_comment(launch, layout, server)).returncode == ExitCode.OK
    probe = [(r.method, r.path) for r in server.received if "/reactions" in r.path]
    assert probe == [("POST", f"{REPO_PATH}/issues/{PR}/reactions"), ("DELETE", f"{REPO_PATH}/issues/{PR}/reactions/500")]
    assert fake.reactions == {}


def test_the_marked_comment_is_found_on_a_later_page(
    layout: RunnerLayout, api: tuple[FakeIssueComments, LoopbackServer], launch: Launch
) -> None:
    fake, server = api
    fake.comments = [{"id": n, "body": f"review comment {n}"} for n in range(1, 131)]
    observe(run_with_comment(launch, layout, server))  # creates comment 1000 as the 131st
    server.received.clear()
    run = observe(run_with_comment(launch, layout, server))
    assert run.returncode == ExitCode.OK
    assert calls(server) == [
        ("GET", f"{REPO_PATH}/issues/{PR}/comments"),
        ("GET", f"{REPO_PATH}/issues/{PR}/comments"),
        ("GET", "/user"),
        ("PATCH", f"{REPO_PATH}/issues/comments/1000"),
    ]
    assert server.received[1].params["page"] == ["2"]
    assert len(fake.comments) == 131


def test_a_403_is_a_warning_and_the_step_exits_as_the_eval_says(
    layout: RunnerLayout, api: tuple[FakeIssueComments, LoopbackServer], launch: Launch
) -> None:
    fake, server = api
    fake.refuse_writes = Reply(status=403, body={"message": "Resource not accessible by integration"})
    observed = observe(run_with_comment(launch, layout, server))
    assert observed.returncode == ExitCode.OK
    assert calls(server) == [
        ("GET", f"{REPO_PATH}/issues/{PR}/comments"),
        ("POST", f"{REPO_PATH}/issues/{PR}/comments"),
    ]
    [refused] = [a for a in observed.annotations if a[4] == "kb-eval: pull-request comment not posted"]
    assert refused[0] == "warning"
    assert "403 Resource not accessible by integration" in refused[5]
    assert "fork" in refused[5] and "pull-requests: write" in refused[5]
    assert observed.outputs["findings-count"] == "1"  # the rest of the step went on
    assert_only_our_commands(observed)


def test_a_rate_limit_past_the_budget_is_one_warning_that_says_rate_limited(
    layout: RunnerLayout, api: tuple[FakeIssueComments, LoopbackServer], launch: Launch
) -> None:
    fake, server = api
    reset = str(int(time.time()) + 3600)  # an hour away: far past what a comment waits
    fake.refuse_writes = Reply(status=403, body={"message": "API rate limit exceeded for installation ID 1."},
                               headers={"x-ratelimit-remaining": "0", "x-ratelimit-reset": reset})
    observed = observe(run_with_comment(launch, layout, server))
    assert observed.returncode == ExitCode.OK
    warnings = [a for a in observed.annotations if a[4].startswith("kb-eval: pull-request comment")]
    assert [(a[0], a[4]) for a in warnings] == [("warning", "kb-eval: pull-request comment not posted (rate limited)")]
    assert "rate limited" in warnings[0][5] and "permission" not in warnings[0][5] and "fork" not in warnings[0][5]
    assert [m for m, _ in calls(server) if m == "POST"] == ["POST"]  # not sent again: the wait was not made


def test_a_502_is_retried_and_then_the_comment_is_posted(
    layout: RunnerLayout, api: tuple[FakeIssueComments, LoopbackServer], launch: Launch
) -> None:
    fake, server = api
    fake.failures = [Reply(status=502, body={"message": "Bad Gateway"})]
    observed = observe(run_with_comment(launch, layout, server))
    assert observed.returncode == ExitCode.OK
    assert calls(server) == [
        ("GET", f"{REPO_PATH}/issues/{PR}/comments"),
        ("GET", f"{REPO_PATH}/issues/{PR}/comments"),
        ("POST", f"{REPO_PATH}/issues/{PR}/comments"),
    ]
    assert len(fake.comments) == 1
    assert not [a for a in observed.annotations if a[4] == "kb-eval: pull-request comment not posted"]


def test_a_server_that_keeps_failing_is_a_warning_after_the_retries(
    layout: RunnerLayout, api: tuple[FakeIssueComments, LoopbackServer], launch: Launch,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # In process, the backoff's 7 s of sleep are skipped (tests/github/test_pr_comment.py checks
    # the waits themselves); the real process, in the full suite, waits them.
    monkeypatch.setattr(comment_module, "BACKOFF_BASE_S", 0.0)
    fake, server = api
    fake.failures = [Reply(status=503, body={"message": "down"}, headers={"Retry-After": "0"})] * 4
    observed = observe(run_with_comment(launch, layout, server))
    assert observed.returncode == ExitCode.OK
    assert calls(server) == [("GET", f"{REPO_PATH}/issues/{PR}/comments")] * 4
    [refused] = [a for a in observed.annotations if a[4] == "kb-eval: pull-request comment not posted"]
    assert "failed after 4 tries: 503 down" in refused[5]


def test_no_comment_and_no_request_when_the_event_is_not_a_pull_request(
    layout: RunnerLayout, api: tuple[FakeIssueComments, LoopbackServer], launch: Launch
) -> None:
    _, server = api
    layout.write_event({"ref": "refs/heads/main", "after": "d" * 40})
    run = run_with_comment(launch, layout, server, GITHUB_EVENT_NAME="push")
    observed = observe(run)
    assert observed.returncode == ExitCode.OK and server.received == []
    assert "no pull-request comment: the event is push, not a pull request" in run.stderr
    assert [a[4] for a in observed.annotations] == ["golden-queries-quoted"]


@pytest.mark.parametrize("payload", [b"{not json", b"[1, 2]", None])
def test_a_missing_or_malformed_event_payload_is_a_warning_and_the_run_goes_on(
    layout: RunnerLayout, api: tuple[FakeIssueComments, LoopbackServer], payload: bytes | None, launch: Launch
) -> None:
    _, server = api
    event = layout.workflow / "event.json"
    if payload is None:
        event.unlink()
    else:
        event.write_bytes(payload)
    observed = observe(run_with_comment(launch, layout, server))
    assert observed.returncode == ExitCode.OK and server.received == []
    [warning] = [a for a in observed.annotations if a[4] == "kb-eval: event payload not usable"]
    assert "no pull-request comment" in warning[5]
    assert observed.outputs["findings-count"] == "1" and "| metric |" in observed.summary
    # Without the payload's head commit, links fall back to GITHUB_SHA.
    assert f"/blob/{'c' * 40}/" in observed.summary


def test_the_token_is_never_sent_to_a_host_named_by_a_link_header(
    layout: RunnerLayout, api: tuple[FakeIssueComments, LoopbackServer], launch: Launch
) -> None:
    fake, server = api
    other: list[Received] = []

    def elsewhere_respond(request: Received) -> Reply:
        other.append(request)
        return Reply(body=[])

    with running(elsewhere_respond) as elsewhere:
        fake.failures = [
            Reply(body=[], headers={"Link": f'<{elsewhere.url}{REPO_PATH}/issues/{PR}/comments?page=2>; rel="next"'})
        ]
        observed = observe(run_with_comment(launch, layout, server))
    assert other == []
    assert observed.returncode == ExitCode.OK
    [refused] = [a for a in observed.annotations if a[4] == "kb-eval: pull-request comment not posted"]
    assert "refusing to send the token" in refused[5]


def test_an_answer_that_is_not_json_is_a_warning_not_a_crash(
    layout: RunnerLayout, api: tuple[FakeIssueComments, LoopbackServer], launch: Launch
) -> None:
    fake, server = api
    fake.failures = [Reply(body=b"<html>proxy login</html>")]
    observed = observe(run_with_comment(launch, layout, server))
    assert observed.returncode == ExitCode.OK
    [refused] = [a for a in observed.annotations if a[4] == "kb-eval: pull-request comment not posted"]
    assert "did not return a JSON list" in refused[5]


def run_with_mode(launch: Launch, layout: RunnerLayout, server: LoopbackServer, mode: str) -> Any:
    next_step(layout)
    inputs = action_inputs({"kb-path": KB, "comment": mode})
    return run_entrypoint(launch, layout, inputs, extra_env={"GITHUB_API_URL": server.url})


def test_on_change_leaves_the_comment_alone_when_nothing_changed_and_updates_it_when_something_did(
    layout: RunnerLayout, api: tuple[FakeIssueComments, LoopbackServer], launch: Launch
) -> None:
    fake, server = api
    assert observe(run_with_mode(launch, layout, server, "on-change")).returncode == ExitCode.OK
    [comment] = fake.comments
    assert comment["body"].startswith(MARKER_PREFIX) and "<!-- kb-eval:state:" in comment["body"]

    server.received.clear()
    rerun = run_with_mode(launch, layout, server, "on-change")  # the same KB: the same report
    assert [method for method, _ in calls(server)] == ["GET", "GET"]  # the list and /user, no PATCH
    assert "left as it was (nothing changed)" in rerun.stderr

    server.received.clear()
    (layout.workspace / KB / "notes" / "leak-0.md").unlink()  # the finding goes away
    run_with_mode(launch, layout, server, "on-change")
    assert calls(server)[-1] == ("PATCH", f"{REPO_PATH}/issues/comments/{comment['id']}")
    assert "No document quotes" in fake.comments[0]["body"]


def test_always_updates_even_when_nothing_changed_and_true_still_means_always(
    layout: RunnerLayout, api: tuple[FakeIssueComments, LoopbackServer], launch: Launch
) -> None:
    fake, server = api
    run_with_mode(launch, layout, server, "always")
    server.received.clear()
    run_with_mode(launch, layout, server, "true")
    assert calls(server)[-1][0] == "PATCH" and len(fake.comments) == 1


def test_off_and_false_post_nothing_and_a_misspelled_mode_is_refused_naming_the_input(
    layout: RunnerLayout, api: tuple[FakeIssueComments, LoopbackServer], launch: Launch
) -> None:
    fake, server = api
    for mode in ("off", "false"):
        assert observe(run_with_mode(launch, layout, server, mode)).returncode == ExitCode.OK
    assert server.received == [] and fake.comments == []
    refused = observe(run_with_mode(launch, layout, server, "sometimes"))
    assert refused.returncode == ExitCode.BAD_INPUT
    assert any("comment" in a[5] and "on-change" in a[5] for a in refused.annotations)
