"""Action mode on a pull request: the base commit is compared by default, run as the runner runs
entrypoint.py (same variables, a real git checkout as the workspace)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import Launch
from tests.git.test_git_base import BASE_KB, GIT_ENV, REGRESSING_CHANGE, commit, new_repo
from tests.support.action_cases import next_step, observe, run_entrypoint
from tests.support.container import RunnerLayout, action_inputs, pull_request_event

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="needs git")


def pull_request_checkout(tmp_path: Path, *, shallow: bool = False) -> tuple[RunnerLayout, str]:
    """A repository with a base and a regressing head commit, checked out into the workspace."""
    origin = new_repo(tmp_path / "origin")
    base = commit(origin, BASE_KB, "base")
    head = commit(origin, REGRESSING_CHANGE, "head")
    layout = RunnerLayout(tmp_path / "runner")
    depth = ["--depth", "1"] if shallow else []
    subprocess.run(
        ["git", "clone", "-q", *depth, f"file://{origin}", str(layout.workspace)], env=GIT_ENV, check=True
    )
    layout.write_event(pull_request_event(head_sha=head, base_sha=base))
    return layout, base


def report_of(layout: RunnerLayout) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((layout.workspace / "kb-eval-report.json").read_text())
    return data


def test_a_pull_request_is_compared_with_its_base_commit_by_default(launch: Launch, tmp_path: Path) -> None:
    layout, base = pull_request_checkout(tmp_path)
    # The threshold alone (`alpha: off`): the fixture's few queries cannot be told from chance.
    gated = {"kb-path": "kb", "fail-on-regression": "true", "alpha": "off"}
    observed = observe(run_entrypoint(launch, layout, action_inputs(gated)))
    assert observed.returncode == 1  # the gate, against the base commit
    report = report_of(layout)
    assert report["comparison"]["source"] == "git"
    assert report["previous"]["commit"] == base and report["previous"]["ref"] == "main"
    assert observed.outputs["regressed"] == "true"


def test_a_gate_on_a_shallow_pull_request_checkout_fails_the_step_and_says_to_fetch_the_history(
    launch: Launch, tmp_path: Path
) -> None:
    # A team that turned the gate on must not get a green step that compared nothing.
    layout, _ = pull_request_checkout(tmp_path, shallow=True)
    run = run_entrypoint(launch, layout, action_inputs({"kb-path": "kb", "fail-on-regression": "true"}))
    observed = observe(run)
    assert observed.returncode == 2
    report = report_of(layout)  # the run itself is still reported
    assert report["comparison"]["cause"] == "shallow-clone"
    assert "fetch-depth: 0" in report["comparison"]["hint"]
    [error] = [a for a in observed.annotations if a[0] == "error"]
    assert "regression gate cannot run" in error[5] and "fetch-depth: 0" in error[5]
    assert "fail-on-regression" in run.stdout and "--fail-on-regression" not in run.stdout  # the input, as written


def test_a_gate_on_a_pull_request_that_adds_the_kb_stays_a_warning(launch: Launch, tmp_path: Path) -> None:
    # The near miss: the base was read and had no KB folder; nothing could be compared and nothing
    # in the workflow is wrong, so the gate's silence is a warning, as outside pull requests.
    origin = new_repo(tmp_path / "origin")
    base = commit(origin, {"README.md": "# Project\n"}, "base", kb="")
    head = commit(origin, BASE_KB, "add the KB")
    layout = RunnerLayout(tmp_path / "runner")
    subprocess.run(["git", "clone", "-q", f"file://{origin}", str(layout.workspace)], env=GIT_ENV, check=True)
    layout.write_event(pull_request_event(head_sha=head, base_sha=base))
    run = run_entrypoint(launch, layout, action_inputs({"kb-path": "kb", "fail-on-regression": "true"}))
    observed = observe(run)
    assert observed.returncode == 0
    assert report_of(layout)["comparison"]["cause"] == "kb-absent-at-base"
    assert not [a for a in observed.annotations if a[0] == "error"]
    assert "The regression gate could not run" in run.stdout


def test_a_baseline_input_wins_over_the_pull_request_base(launch: Launch, tmp_path: Path) -> None:
    layout, _ = pull_request_checkout(tmp_path)
    first = run_entrypoint(launch, layout, action_inputs({"kb-path": "kb", "save-baseline": "saved.json"}))
    assert first.returncode == 0
    next_step(layout)
    observe(run_entrypoint(launch, layout, action_inputs({"kb-path": "kb", "baseline": "saved.json"})))
    assert report_of(layout)["comparison"]["source"] == "baseline"


def test_a_baseline_ref_input_is_used_as_given(launch: Launch, tmp_path: Path) -> None:
    layout, base = pull_request_checkout(tmp_path)
    observe(run_entrypoint(launch, layout, action_inputs({"kb-path": "kb", "baseline-ref": "HEAD~1"})))
    report = report_of(layout)
    assert report["previous"]["ref"] == "HEAD~1" and report["previous"]["commit"] == base


def test_a_baseline_ref_naming_nothing_is_exit_2_naming_it(launch: Launch, tmp_path: Path) -> None:
    layout, _ = pull_request_checkout(tmp_path)
    run = run_entrypoint(launch, layout, action_inputs({"kb-path": "kb", "baseline-ref": "no-such-branch"}))
    assert run.returncode == 2
    assert "baseline-ref" in run.stdout and "--baseline-ref" not in run.stdout  # the input, as written


def test_a_push_event_compares_with_no_base_commit(launch: Launch, tmp_path: Path) -> None:
    layout, _ = pull_request_checkout(tmp_path)
    run = run_entrypoint(launch, layout, action_inputs({"kb-path": "kb"}), extra_env={"GITHUB_EVENT_NAME": "push"})
    assert run.returncode == 0
    assert report_of(layout)["comparison"]["source"] is None


def test_a_shallow_checkout_without_a_gate_is_still_a_warning_and_a_summary_line(
    launch: Launch, tmp_path: Path
) -> None:
    layout, _ = pull_request_checkout(tmp_path, shallow=True)
    observed = observe(run_entrypoint(launch, layout, action_inputs({"kb-path": "kb"})))
    assert observed.returncode == 0
    [missed] = [a for a in observed.annotations if a[4] == "kb-eval: nothing compared"]
    assert missed[0] == "warning" and "fetch-depth: 0" in missed[5]
    assert "fetch-depth: 0" in observed.summary and "could not run" not in observed.summary
    # The near miss: a full clone compares, and says nothing of the kind.
    full, _ = pull_request_checkout(tmp_path / "full")
    observed = observe(run_entrypoint(launch, full, action_inputs({"kb-path": "kb"})))
    assert not [a for a in observed.annotations if a[4] == "kb-eval: nothing compared"]
    assert "Compared with the base revision" in observed.summary


def test_a_search_served_per_side_is_compared_with_the_base_in_action_mode(launch: Launch, tmp_path: Path) -> None:
    # The team's own search, started on each side's tree: the base is answered by its own server.
    server = Path(__file__).parents[1] / "support" / "folder_search_server.py"
    layout, base = pull_request_checkout(tmp_path)
    inputs = {
        "kb-path": "kb", "fail-on-regression": "true", "alpha": "off", "score-level": "document",
        "serve-command": f"{sys.executable} {server} {{kb}} {{port}}", "http-url": "http://127.0.0.1:{port}/search",
    }
    run = run_entrypoint(launch, layout, action_inputs(inputs))
    observed = observe(run)
    assert observed.returncode == 1, run.stderr  # the pull request lost onboarding.md's words
    report = report_of(layout)
    assert report["comparison"]["status"] == "compared" and report["previous"]["commit"] == base
    assert report["answers"] is not None and report["previous"]["answers"] is not None
    assert "Answer time p50" in run.summary_text and "p95 before" in run.summary_text
