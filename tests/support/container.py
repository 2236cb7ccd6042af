"""Build the action's image and run it the way the GitHub runner runs a Docker action.

What the runner does (actions/runner ContainerActionHandler.cs, DockerCommandManager.cs;
see docs/runner-contract.md#build-and-run):
  docker build -t <tag> -f <dir>/Dockerfile <dir>
  docker run --rm --workdir /github/workspace -e NAME ... -e GITHUB_ACTIONS=true -e CI=true
             -v <runner_temp>:/github/runner_temp -v <home>:/github/home
             -v <workflow>:/github/workflow -v <file_commands>:/github/file_commands
             -v <workspace>:/github/workspace <image>
Values travel in the docker CLI's environment (`-e NAME` without a value), with
host paths rewritten to the container paths above. Here podman stands in for
docker, with the flags ../shared/tools/container-base.sh prints for this machine.

`RunnerLayout` is also usable without a container: `host_environment()` gives
the same variables with host paths, for running entrypoint.py as a subprocess.

Missing podman (or the base image) skips with the reason, unless
KB_EVAL_REQUIRE_CONTAINER=1, where it fails: CI sets that so the container
test can never be skipped there unnoticed.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NoReturn

import pytest

from tests.support.action_docs import ROOT, load_action

REQUIRE_CONTAINER_ENV = "KB_EVAL_REQUIRE_CONTAINER"
BASE_IMAGE = "docker.io/library/debian:bookworm-slim"
IMAGE_TAG = "localhost/kb-eval-test"
# From `bash ../shared/tools/container-base.sh`: crun fails on this kernel's
# hybrid cgroups, raising ulimits is not permitted (lowering is), no network.
PODMAN_RUN_FLAGS = (
    "--runtime", "runc",
    "--ulimit", "nofile=4096:4096",
    "--ulimit", "nproc=4096:4096",
    "--network", "none",
)  # fmt: skip
PODMAN_BUILD_FLAGS = ("--isolation=chroot",)
BUILD_TIMEOUT_SECONDS = 900
RUN_TIMEOUT_SECONDS = 300
PODMAN_OWN_ENV = (
    "PATH",
    "XDG_RUNTIME_DIR",
    "CONTAINERS_CONF",
    "CONTAINERS_STORAGE_CONF",
    "CONTAINERS_REGISTRIES_CONF",
)
"""The only variables of this process that reach podman itself (not the container)."""
# What the Dockerfile COPYs; a build without them fails at COPY.
CONTEXT_FILES = (
    "Dockerfile",
    "requirements.lock",
    "entrypoint.py",
    "scanner",
    "schema",
)
FAKE_TOKEN = "ghs_kbevaltesttoken000000000000000000"
"""Stands in for `${{ github.token }}`; it authorises nothing anywhere."""


def unavailable(reason: str) -> NoReturn:
    """Skip the test with `reason`, or fail it when the container is required."""
    if os.environ.get(REQUIRE_CONTAINER_ENV) == "1":
        pytest.fail(f"{reason} ({REQUIRE_CONTAINER_ENV}=1, so this is a failure)")
    pytest.skip(reason)


def podman() -> str:
    path = shutil.which("podman")
    if path is None:
        unavailable("podman is not installed: run `bash ../shared/tools/container-base.sh`")
    return path


@dataclass(frozen=True, slots=True)
class BuiltImage:
    tag: str
    build_seconds: float
    """Wall time of this build, layer cache included (a warm rebuild is much faster)."""
    size_bytes: int


def build_arguments(context: Path, tag: str) -> list[str]:
    """`podman build ...` as the runner's `docker build -t TAG -f DIR/Dockerfile DIR`: the Dockerfile
    of the context folder, no build arguments, no target (the last stage), no --pull.
    tests/action/test_workflows.py holds the release workflow's build to the same."""
    return ["build", *PODMAN_BUILD_FLAGS, "-t", tag, "-f", str(context / "Dockerfile"), str(context)]


def build_image(context: Path = ROOT, tag: str = IMAGE_TAG) -> BuiltImage:
    """Build the project's Dockerfile from `context`, as the runner would.

    Meant for a session-scoped fixture: podman's layer cache makes a rebuild
    with unchanged requirements take seconds.
    """
    executable = podman()
    missing = [name for name in CONTEXT_FILES if not (context / name).exists()]
    if missing:
        unavailable(f"cannot build the image yet, missing in {context}: {', '.join(missing)}")
    exists = subprocess.run(
        [executable, "image", "exists", BASE_IMAGE],
        check=False,
        capture_output=True,
        timeout=60,
    )
    if exists.returncode != 0:
        unavailable(f"{BASE_IMAGE} is not available: run `bash ../shared/tools/container-base.sh`")
    started = time.monotonic()
    result = subprocess.run(
        [executable, *build_arguments(context, tag)],
        check=False,
        capture_output=True,
        text=True,
        timeout=BUILD_TIMEOUT_SECONDS,
    )
    elapsed = time.monotonic() - started
    if result.returncode != 0:
        # A build that fails is a real failure, never a skip.
        pytest.fail(f"podman build failed ({result.returncode}):\n{result.stdout[-4000:]}\n{result.stderr[-4000:]}")
    size = subprocess.run(
        [executable, "image", "inspect", tag, "--format", "{{.Size}}"],
        check=True,
        capture_output=True,
        text=True,
        timeout=60,
    )
    return BuiltImage(tag, elapsed, int(size.stdout.strip()))


def action_inputs(overrides: Mapping[str, str] | None = None, token: str = FAKE_TOKEN) -> dict[str, str]:
    """Every input declared in action.yml, as the runner sets them: `with:` value, else default, else "".

    The runner evaluates `${{ github.token }}` before setting the variable;
    here it becomes `token`.
    """
    action = load_action()
    values: dict[str, str] = {}
    for name, spec in action["inputs"].items():
        default = str(spec.get("default", ""))
        values[name] = default.replace("${{ github.token }}", token)
    for name, value in (overrides or {}).items():
        if name not in values:
            raise KeyError(f"{name!r} is not an input of action.yml (the runner would warn 'Unexpected input')")
        values[name] = value
    return values


def input_environment(inputs: Mapping[str, str]) -> dict[str, str]:
    """`INPUT_<NAME>` variables: spaces to `_`, upper-cased, hyphens kept (Handler.cs AddInputsToEnvironment)."""
    return {"INPUT_" + name.replace(" ", "_").upper(): value for name, value in inputs.items()}


def pull_request_event(number: int = 7, head_sha: str = "a" * 40, base_sha: str = "b" * 40) -> dict[str, Any]:
    """The fields of a `pull_request` webhook payload the action may read."""
    return {
        "action": "synchronize",
        "number": number,
        "pull_request": {
            "number": number,
            "head": {"sha": head_sha, "ref": "feature"},
            "base": {"sha": base_sha, "ref": "main"},
        },
        "repository": {
            "full_name": "octo/kb",
            "name": "kb",
            "owner": {"login": "octo"},
        },
    }


@dataclass
class RunnerLayout:
    """The folders the runner mounts into the container, on the host, under `root`."""

    root: Path
    workspace: Path = field(init=False)
    file_commands: Path = field(init=False)
    workflow: Path = field(init=False)
    home: Path = field(init=False)
    runner_temp: Path = field(init=False)
    file_names: dict[str, str] = field(init=False)
    """GITHUB_OUTPUT etc. -> the per-step file name inside file_commands (`<prefix>_<guid>`)."""

    def __post_init__(self) -> None:
        self.workspace = self.root / "workspace"
        self.file_commands = self.root / "_runner_file_commands"
        self.workflow = self.root / "_github_workflow"
        self.home = self.root / "_github_home"
        self.runner_temp = self.root / "_temp"
        for folder in (
            self.workspace,
            self.file_commands,
            self.workflow,
            self.home,
            self.runner_temp,
        ):
            folder.mkdir(parents=True, exist_ok=True)
        step = uuid.uuid4()
        self.file_names = {
            "GITHUB_OUTPUT": f"set_output_{step}",
            "GITHUB_STEP_SUMMARY": f"step_summary_{step}",
            "GITHUB_ENV": f"set_env_{step}",
            "GITHUB_STATE": f"save_state_{step}",
            "GITHUB_PATH": f"add_path_{step}",
        }
        for name in self.file_names.values():
            (self.file_commands / name).touch()  # the runner creates them empty for each step
        self.write_event({})

    def write_event(self, payload: Mapping[str, Any]) -> None:
        (self.workflow / "event.json").write_text(json.dumps(payload), encoding="utf-8")

    @property
    def output_file(self) -> Path:
        return self.file_commands / self.file_names["GITHUB_OUTPUT"]

    @property
    def summary_file(self) -> Path:
        return self.file_commands / self.file_names["GITHUB_STEP_SUMMARY"]

    def _environment(self, workspace: str, file_commands: str, workflow: str, home: str, temp: str) -> dict[str, str]:
        env = {
            "GITHUB_ACTIONS": "true",
            "CI": "true",
            "GITHUB_WORKSPACE": workspace,
            "HOME": home,
            "RUNNER_TEMP": temp,
            "RUNNER_OS": "Linux",
            "GITHUB_EVENT_PATH": f"{workflow}/event.json",
            "GITHUB_EVENT_NAME": "pull_request",
            "GITHUB_REPOSITORY": "octo/kb",
            "GITHUB_REF": "refs/pull/7/merge",
            "GITHUB_SHA": "c" * 40,
            "GITHUB_SERVER_URL": "https://github.com",
            "GITHUB_API_URL": "https://api.github.com",
            "GITHUB_RUN_ID": "1",
        }
        for variable, name in self.file_names.items():
            env[variable] = f"{file_commands}/{name}"
        return env

    def container_environment(self) -> dict[str, str]:
        """The runner's variables with the container-side paths."""
        return self._environment(
            "/github/workspace",
            "/github/file_commands",
            "/github/workflow",
            "/github/home",
            "/github/runner_temp",
        )

    def host_environment(self) -> dict[str, str]:
        """The same variables with host paths, for running entrypoint.py as a plain subprocess."""
        return self._environment(
            str(self.workspace),
            str(self.file_commands),
            str(self.workflow),
            str(self.home),
            str(self.runner_temp),
        )

    def mounts(self) -> list[str]:
        pairs = [
            (self.runner_temp, "/github/runner_temp"),
            (self.home, "/github/home"),
            (self.workflow, "/github/workflow"),
            (self.file_commands, "/github/file_commands"),
            (self.workspace, "/github/workspace"),
        ]
        flags: list[str] = []
        for host, container in pairs:
            flags += ["-v", f"{host}:{container}"]
        return flags


@dataclass(frozen=True, slots=True)
class ActionRun:
    returncode: int
    stdout: str
    stderr: str
    outputs_text: str
    """GITHUB_OUTPUT after the step; parse with tests.support.runner_log.parse_env_file."""
    summary_text: str


def run_action(
    image: str,
    layout: RunnerLayout,
    inputs: Mapping[str, str],
    *,
    extra_env: Mapping[str, str] | None = None,
    entrypoint: str | None = None,
    args: Sequence[str] = (),
    timeout: float = RUN_TIMEOUT_SECONDS,
) -> ActionRun:
    """`podman run` the image as the runner runs a Docker action step.

    `inputs` should come from `action_inputs()` so every declared input is set.
    Like the runner, names go on the command line as `-e NAME` and values
    through the process environment.
    """
    executable = podman()
    variables = {
        **layout.container_environment(),
        **input_environment(inputs),
        **(extra_env or {}),
    }
    command = [
        executable, "run", "--rm", *PODMAN_RUN_FLAGS,
        "--name", f"kb-eval-test-{uuid.uuid4().hex[:12]}",
        "--workdir", "/github/workspace",
    ]  # fmt: skip
    for name in variables:
        command += ["-e", name]
    command += layout.mounts()
    if entrypoint is not None:
        command += ["--entrypoint", entrypoint]
    command += [image, *args]
    # Only PATH from this process: nothing of the test machine's own
    # environment may leak into the container by a matching name.
    process_env = {name: os.environ[name] for name in PODMAN_OWN_ENV if name in os.environ}
    process_env.update(variables)
    result = subprocess.run(command, check=False, capture_output=True, timeout=timeout, env=process_env)
    return ActionRun(
        returncode=result.returncode,
        stdout=result.stdout.decode("utf-8", errors="replace"),
        stderr=result.stderr.decode("utf-8", errors="replace"),
        outputs_text=layout.output_file.read_bytes().decode("utf-8"),
        summary_text=layout.summary_file.read_bytes().decode("utf-8"),
    )
