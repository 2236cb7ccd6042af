"""The README's pull-request workflow (examples/workflows/kb-eval-pull-request.yml) is what runs here.

The file is validated against GitHub's workflow schema, and its kb-eval step is
run in Action mode with exactly its `with:` values, in a pull_request event,
against a loopback REST API for the comment; the upload step's path must name
the report the action wrote.
"""

from __future__ import annotations

import json
import re
import stat
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from scanner.foundation.errors import ExitCode
from tests.action.test_metadata import check_jsonschema_command
from tests.conftest import Launch
from tests.git.test_git_base import commit, git
from tests.support.action_cases import clean_workspace, finding_workspace, observe, run_entrypoint
from tests.support.action_docs import ROOT, load_action
from tests.support.container import RunnerLayout, action_inputs, pull_request_event
from tests.support.loopback_server import LoopbackServer, Received, Reply, running

WORKFLOW = ROOT / "examples" / "workflows" / "kb-eval-pull-request.yml"


def load_workflow() -> dict[Any, Any]:
    loaded = yaml.safe_load(WORKFLOW.read_text(encoding="utf-8"))
    assert isinstance(loaded, dict)
    return loaded


def steps() -> list[dict[str, Any]]:
    [job] = load_workflow()["jobs"].values()
    return list(job["steps"])


def kb_eval_step() -> dict[str, Any]:
    [step] = [s for s in steps() if str(s.get("uses", "")).split("@")[0].endswith("/kb-eval")]
    return step


def as_runner_sets_it(value: object) -> str:
    """A `with:` value as the runner puts it in INPUT_*: YAML booleans become true/false."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def test_the_workflow_is_valid_against_githubs_workflow_schema() -> None:
    result = subprocess.run(
        [*check_jsonschema_command(), "--builtin-schema", "vendor.github-workflows", str(WORKFLOW)],
        check=False,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_workflow_asks_for_the_permissions_the_comment_needs_and_no_more() -> None:
    workflow = load_workflow()
    assert workflow["permissions"] == {"contents": "read", "pull-requests": "write", "issues": "write"}
    assert "pull_request" in workflow[True]  # PyYAML reads the key `on` as a boolean
    assert [str(s.get("uses", "")).split("@")[0] for s in steps()] == [
        "actions/checkout",
        "kb-eval/kb-eval",
        "actions/upload-artifact",
    ]


def test_every_with_key_of_the_kb_eval_step_is_a_declared_input() -> None:
    assert set(kb_eval_step()["with"]) <= set(load_action()["inputs"])


@pytest.fixture
def api() -> Iterator[tuple[list[Received], LoopbackServer]]:
    received: list[Received] = []

    def respond(request: Received) -> Reply:
        received.append(request)
        if request.method == "GET":
            return Reply(body=[])
        return Reply(status=201, body={"id": 1, "html_url": "https://github.com/octo/kb/pull/7#issuecomment-1"})

    with running(respond) as server:
        yield received, server


def test_the_kb_eval_step_runs_as_written_and_the_upload_step_finds_the_report(
    tmp_path: Path, api: tuple[list[Received], LoopbackServer], launch: Launch
) -> None:
    received, server = api
    layout = RunnerLayout(tmp_path)
    # A real checkout with the base commit in it (fetch-depth: 0): the base is the clean KB,
    # the pull request adds a note quoting two golden queries. The KB lives in docs/kb.
    git(layout.workspace, "init", "-q")
    clean_workspace(layout.workspace)
    base = commit(layout.workspace, {}, "base", kb="")
    finding_workspace(layout.workspace)
    head = commit(layout.workspace, {}, "the pull request", kb="")
    layout.write_event(pull_request_event(head_sha=head, base_sha=base))
    step = kb_eval_step()
    inputs = action_inputs({name: as_runner_sets_it(value) for name, value in step["with"].items()})
    observed = observe(run_entrypoint(launch, layout, inputs, extra_env={"GITHUB_API_URL": server.url}))
    assert observed.returncode == ExitCode.OK
    # Against the base commit the corpus change is what is measured: no notice about it (one with
    # an empty message was once on every pull request).
    assert [(a[0], a[1], a[4]) for a in observed.annotations] == [
        ("warning", "docs/kb/notes/leak-0.md", "golden-queries-quoted"),
    ]
    report = json.loads((layout.workspace / "kb-eval-report.json").read_text(encoding="utf-8"))
    assert report["comparison"]["source"] == "git" and report["previous"]["commit"] == base
    assert report["gate"]["evaluated"] is True
    assert [(r.method, r.path) for r in received] == [
        ("GET", "/repos/octo/kb/issues/7/comments"),
        ("POST", "/repos/octo/kb/issues/7/comments"),
    ]
    [upload] = [s for s in steps() if str(s.get("uses", "")).startswith("actions/upload-artifact")]
    expression = re.fullmatch(r"\$\{\{ steps\.([\w-]+)\.outputs\.([\w-]+) \}\}", upload["with"]["path"])
    assert expression is not None and expression.group(1) == step["id"]
    path = layout.workspace / observed.outputs[expression.group(2)]
    assert path.is_file() and stat.S_IMODE(path.stat().st_mode) == 0o644


def test_the_readme_holds_the_tested_workflow_verbatim() -> None:
    assert WORKFLOW.read_text(encoding="utf-8") in (ROOT / "README.md").read_text(encoding="utf-8")
