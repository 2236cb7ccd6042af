"""Action mode in the image, run the way GitHub's runner runs a Docker action.

The image is built from the project's Dockerfile and started with the
runner's layout (tests/support/container.py): --workdir /github/workspace,
the workspace, file-command, workflow and home folders mounted, every INPUT_*
set, GITHUB_* with container paths, no arguments. The same cases as
tests/action/test_mode.py run both ways, and the runner-visible results
(exit status, annotations, outputs, summary) must be identical.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from scanner.foundation.errors import ExitCode
from tests.conftest import Launch
from tests.support.action_cases import (
    KB,
    OUTPUT_NAMES,
    Observed,
    assert_only_our_commands,
    clean_workspace,
    finding_workspace,
    observe,
    run_entrypoint,
)
from tests.support.action_docs import ROOT
from tests.support.container import BuiltImage, RunnerLayout, action_inputs, build_image, pull_request_event, run_action

pytestmark = pytest.mark.container

RUNNER_UID, RUNNER_GID = 1001, 127
"""The runner user on GitHub's hosted runners owns the checkout; the container runs as root."""


# A tag of this checkout's own: on a machine where several checkouts run their tests, a shared tag
# can be rebuilt from another tree between this build and this run.
IMAGE_TAG = "localhost/kb-eval-action-" + hashlib.sha256(str(ROOT).encode()).hexdigest()[:12]


@pytest.fixture(scope="module")
def image() -> Iterator[BuiltImage]:
    yield build_image(tag=IMAGE_TAG)


def both_ways(
    image: BuiltImage, tmp_path: Path, prepare: Callable[[Path], None], inputs: dict[str, str]
) -> tuple[Observed, Observed, RunnerLayout]:
    """The same case as a subprocess and in the container, each in a fresh runner layout."""
    results = []
    layouts = []
    for where in ("subprocess", "container"):
        layout = RunnerLayout(tmp_path / where)
        layout.write_event(pull_request_event())
        prepare(layout.workspace)
        if os.geteuid() == 0:
            os.chown(layout.workspace, RUNNER_UID, RUNNER_GID)
        values = action_inputs(inputs)
        run = run_entrypoint(Launch.SUBPROCESS, layout, values) if where == "subprocess" else run_action(image.tag, layout, values)
        results.append(observe(run))
        layouts.append(layout)
    return results[0], results[1], layouts[1]


def assert_same_for_the_runner(host: Observed, container: Observed) -> None:
    assert container.returncode == host.returncode
    assert container.annotations == host.annotations
    assert container.outputs == host.outputs
    assert container.summary == host.summary


def test_a_finding_in_the_container_gives_what_the_subprocess_gives_and_a_readable_report(
    image: BuiltImage, tmp_path: Path
) -> None:
    host, container, layout = both_ways(image, tmp_path, finding_workspace, {"kb-path": KB})
    assert_same_for_the_runner(host, container)
    assert_only_our_commands(container)
    assert container.returncode == ExitCode.OK
    [(kind, file, line, col, title, _)] = container.annotations
    assert (kind, file, line, col, title) == ("warning", f"{KB}/notes/leak-0.md", "4", "3", "golden-queries-quoted")
    assert list(container.outputs) == OUTPUT_NAMES and container.outputs["findings-count"] == "1"
    assert "golden-queries-quoted" in container.summary and "| metric |" in container.summary

    report = layout.workspace / "kb-eval-report.json"
    status = report.stat()
    assert stat.S_IMODE(status.st_mode) == 0o644  # later steps (upload-artifact) run as another user
    workspace = layout.workspace.stat()
    assert (status.st_uid, status.st_gid) == (workspace.st_uid, workspace.st_gid)
    if os.geteuid() == 0:
        assert (status.st_uid, status.st_gid) == (RUNNER_UID, RUNNER_GID)  # chowned, not root's
    assert json.loads(report.read_text(encoding="utf-8"))["findings"][0]["path"] == "notes/leak-0.md"


def test_a_missing_golden_file_in_the_container_is_exit_2_with_the_same_error_annotation(
    image: BuiltImage, tmp_path: Path
) -> None:
    inputs = {"kb-path": KB, "golden": f"{KB}/missing.yml"}
    host, container, layout = both_ways(image, tmp_path, clean_workspace, inputs)
    assert_same_for_the_runner(host, container)
    assert container.returncode == ExitCode.BAD_INPUT
    [(kind, file, _, _, title, message)] = container.annotations
    assert (kind, file, title) == ("error", f"{KB}/missing.yml", "kb-eval: input error")
    assert message.startswith("golden file not found")
    assert container.outputs == {} and not (layout.workspace / "kb-eval-report.json").exists()
