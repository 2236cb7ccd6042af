"""The event that started the workflow: whether it is a pull request, its base commit (compared
with by default), and where the summary can link a file of the head commit."""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass

from scanner.compare.comparison import BaseRequest, Origin
from scanner.render.markdown import SourceLinks
from scanner.settings.declaration import RunSettings

PULL_REQUEST_EVENTS = frozenset({"pull_request", "pull_request_target"})
MAX_EVENT_BYTES = 25 * 1024 * 1024
"""GitHub caps webhook payloads at 25 MB; a larger event file is not a payload."""
_SHA = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")



@dataclass(frozen=True, slots=True)
class EventInfo:
    pull_number: int | None
    """The pull request's number, when the event is a pull request."""
    head_sha: str | None
    """The pull request's head commit (GITHUB_SHA is the merge commit on a pull request)."""
    problem: str | None
    """Why the payload could not be used, else None."""
    base_sha: str | None = None
    """The pull request's base commit (`pull_request.base.sha`)."""
    base_ref: str | None = None
    """The pull request's base branch (`pull_request.base.ref`), for the "compared with" line."""


def read_event(environ: Mapping[str, str]) -> EventInfo:
    path = environ.get("GITHUB_EVENT_PATH")
    if not path:
        return EventInfo(None, None, "GITHUB_EVENT_PATH is not set")
    try:
        with open(path, "rb") as file:
            data = file.read(MAX_EVENT_BYTES + 1)
        if len(data) > MAX_EVENT_BYTES:
            raise ValueError("larger than a webhook payload can be")
        payload = json.loads(data)
    except (OSError, ValueError) as error:
        return EventInfo(None, None, f"the event payload {path} cannot be read ({error})")
    if not isinstance(payload, dict):
        return EventInfo(None, None, f"the event payload {path} is not a JSON object")
    pull = payload.get("pull_request")
    if not isinstance(pull, dict):
        if environ.get("GITHUB_EVENT_NAME") in PULL_REQUEST_EVENTS:
            return EventInfo(None, None, f"the {environ.get('GITHUB_EVENT_NAME')} payload has no pull_request")
        return EventInfo(None, None, None)
    number = pull.get("number", payload.get("number"))
    head = pull.get("head")
    sha = head.get("sha") if isinstance(head, dict) else None
    base = pull.get("base")
    base_sha = base.get("sha") if isinstance(base, dict) else None
    base_ref = base.get("ref") if isinstance(base, dict) else None
    return EventInfo(
        number if isinstance(number, int) and not isinstance(number, bool) and number > 0 else None,
        sha if isinstance(sha, str) and _SHA.fullmatch(sha) else None,
        None if isinstance(number, int) else "the pull_request payload has no number",
        base_sha if isinstance(base_sha, str) and _SHA.fullmatch(base_sha) else None,
        base_ref if isinstance(base_ref, str) and 0 < len(base_ref) <= 255 and base_ref.isprintable() else None,
    )


def with_pull_request_base(settings: RunSettings, event: EventInfo, environ: Mapping[str, str]) -> RunSettings:
    """On a pull request with neither `baseline` nor `baseline-ref`, compare with the pull
    request's base commit, evaluated in this job. Origin.PULL_REQUEST: the user named nothing, so a
    shallow checkout without that commit is a warning, never exit 2."""
    if settings.baseline is not None or settings.baseline_ref is not None or event.base_sha is None:
        return settings
    if environ.get("GITHUB_EVENT_NAME") not in PULL_REQUEST_EVENTS:
        return settings
    return dataclasses.replace(settings, baseline_ref=BaseRequest(event.base_sha, Origin.PULL_REQUEST, event.base_ref))


def source_links(environ: Mapping[str, str], event: EventInfo) -> SourceLinks | None:
    server = environ.get("GITHUB_SERVER_URL", "")
    repository = environ.get("GITHUB_REPOSITORY", "")
    sha = event.head_sha or environ.get("GITHUB_SHA", "")
    if not server.startswith(("https://", "http://")) or repository.count("/") != 1 or not _SHA.fullmatch(sha):
        return None
    run_id = environ.get("GITHUB_RUN_ID", "")
    return SourceLinks(server, repository, sha, run_id if run_id.isascii() and run_id.isdigit() else None)
