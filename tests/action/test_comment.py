"""The pull-request comment, against a real HTTP server on 127.0.0.1 playing GitHub's REST API.

entrypoint.py runs in Action mode as a subprocess with GITHUB_API_URL pointing
at the server; the tests assert the requests it made (method, path, token,
body) and that the step still exits as the eval says.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from scanner.foundation.errors import ExitCode
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


@dataclass
class FakeIssueComments:
    """The comments of one pull request, served 100 per page with GitHub's Link header."""

    comments: list[dict[str, Any]] = field(default_factory=list)
    next_id: int = 1000
    failures: list[Reply] = field(default_factory=list)
    """Replies given, in order, before any real answer (a 502, a 403...)."""
    refuse_writes: Reply | None = None
    base_url: str = ""
    lock: threading.Lock = field(default_factory=threading.Lock)

    def respond(self, request: Received) -> Reply:
        with self.lock:
            if self.failures:
                return self.failures.pop(0)
            list_path = f"{REPO_PATH}/issues/{PR}/comments"
            if request.method == "GET" and request.path == "/user":
                # What GitHub answers the workflow's GITHUB_TOKEN.
                return Reply(status=403, body={"message": "Resource not accessible by integration"})
            if request.method == "GET" and request.path == list_path:
                page = int(request.params.get("page", ["1"])[0])
                per_page = int(request.params["per_page"][0])
                chunk = self.comments[(page - 1) * per_page : page * per_page]
                headers = {}
                if page * per_page < len(self.comments):
                    headers["Link"] = f'<{self.base_url}{list_path}?per_page={per_page}&page={page + 1}>; rel="next"'
                return Reply(body=chunk, headers=headers)
            if request.method in ("POST", "PATCH") and self.refuse_writes is not None:
                return self.refuse_writes
            if request.method == "POST" and request.path == list_path:
                comment = {"id": self.next_id, "body": json.loads(request.body)["body"], "user": ACTIONS_BOT}
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
    return [(r.method, r.path) for r in server.received]


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
    layout: RunnerLayout, api: tuple[FakeIssueComments, LoopbackServer], launch: Launch
) -> None:
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
