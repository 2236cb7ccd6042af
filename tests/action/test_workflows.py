"""The repository's workflows: valid for GitHub, building the image the tests build, and run here.

- every workflow (.github/workflows and examples/workflows) against GitHub's workflow schema;
- the release builds the image from the same Dockerfile, context and (no) build arguments as the
  tests and the runner, and pushes it only after the tests and the self-test passed;
- the self-test job's steps run here, in order, against a copy of the repository: `uses: ./` as
  entrypoint.py in Action mode with the step's `with:` values, `run:` steps with bash, then its check;
- the release's steps up to the push run here with podman (container tests): build, push to a local
  OCI layout, pin action.yml to the digest, and that digest names the image the tests built.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.action.test_metadata import check_jsonschema_command, validate
from tests.action.test_release import load_script
from tests.conftest import Launch
from tests.support.action_cases import run_entrypoint
from tests.support.action_docs import ROOT, load_action
from tests.support.container import (
    BuiltImage,
    RunnerLayout,
    action_inputs,
    build_arguments,
    build_image,
    podman,
)
from tests.support.runner_log import parse_env_file

WORKFLOWS = ROOT / ".github" / "workflows"
ALL_WORKFLOWS = sorted([*WORKFLOWS.glob("*.yml"), *(ROOT / "examples" / "workflows").glob("*.yml")])


def load(path: Path) -> dict[Any, Any]:
    loaded = yaml.safe_load(path.read_text(encoding="utf-8"))
    assert isinstance(loaded, dict)
    return loaded


def triggers(workflow: dict[Any, Any]) -> dict[str, Any]:
    on = workflow[True]  # PyYAML reads the key `on` as a boolean
    assert isinstance(on, dict)
    return on


def check_workflows(*paths: Path) -> subprocess.CompletedProcess[str]:
    # The vendor.github-workflows schema ships inside check-jsonschema: no network.
    return subprocess.run(
        [*check_jsonschema_command(), "--builtin-schema", "vendor.github-workflows", *map(str, paths)],
        check=False, capture_output=True, text=True, timeout=120,
    )


def release_build_step() -> dict[str, Any]:
    [step] = [s for s in load(WORKFLOWS / "release.yml")["jobs"]["release"]["steps"]
              if str(s.get("uses", "")).startswith("docker/build-push-action@")]  # fmt: skip
    return step


# --- valid for GitHub ----------------------------------------------------------------------------


def test_the_expected_workflows_exist() -> None:
    assert [p.relative_to(ROOT).as_posix() for p in ALL_WORKFLOWS] == [
        ".github/workflows/ci.yml",
        ".github/workflows/release.yml",
        ".github/workflows/self-test.yml",
        "examples/workflows/kb-eval-pull-request.yml",
    ]


def test_every_workflow_is_valid_against_githubs_workflow_schema() -> None:
    result = check_workflows(*ALL_WORKFLOWS)
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_schema_check_rejects_a_broken_workflow(tmp_path: Path) -> None:
    # Guard against a vacuous pass: a job without runs-on or steps must be refused.
    broken = tmp_path / "broken.yml"
    broken.write_text((WORKFLOWS / "self-test.yml").read_text(encoding="utf-8").replace("runs-on:", "runs_on:"))
    assert check_workflows(broken).returncode != 0


# --- the release ----------------------------------------------------------------------------------


def test_the_release_runs_on_semver_tags_only_and_after_the_tests_and_the_self_test() -> None:
    workflow = load(WORKFLOWS / "release.yml")
    assert triggers(workflow) == {"push": {"tags": ["v*.*.*"]}}
    jobs = workflow["jobs"]
    assert jobs["tests"] == {"uses": "./.github/workflows/ci.yml"}
    assert jobs["self-test"] == {"uses": "./.github/workflows/self-test.yml"}
    assert jobs["release"]["needs"] == ["tests", "self-test"]
    for called in ("ci.yml", "self-test.yml"):
        assert "workflow_call" in triggers(load(WORKFLOWS / called)), called


def test_only_the_release_job_may_write_and_only_contents_and_packages() -> None:
    workflow = load(WORKFLOWS / "release.yml")
    assert workflow["permissions"] == {"contents": "read"}
    assert workflow["jobs"]["release"]["permissions"] == {"contents": "write", "packages": "write"}
    for name in ("ci.yml", "self-test.yml"):
        assert load(WORKFLOWS / name)["permissions"] == {"contents": "read"}, name


def test_the_release_pushes_the_image_the_tests_build() -> None:
    step = release_build_step()["with"]
    # Same Dockerfile, same context, no build arguments, no target (the last stage), as the runner
    # builds `image: Dockerfile` (docs/runner-contract.md#build-and-run) and as the tests do.
    assert (step["context"], step["file"]) == (".", "Dockerfile")
    assert not {"build-args", "target", "build-contexts", "secrets", "secret-files"} & set(step)
    assert step["push"] is True and step["platforms"] == "linux/amd64,linux/arm64"
    tests_build = build_arguments(ROOT, "localhost/x")
    assert tests_build[-3:] == ["-f", str(ROOT / "Dockerfile"), str(ROOT)]
    assert not any(a.startswith(("--build-arg", "--target", "--pull")) for a in tests_build)
    assert load_action()["runs"] == {"using": "docker", "image": "Dockerfile"}
    # And nothing a build argument could change: the Dockerfile declares none.
    assert not re.search(r"(?mi)^\s*ARG\b", (ROOT / "Dockerfile").read_text(encoding="utf-8"))


def test_the_release_pins_action_yml_with_the_build_steps_digest() -> None:
    steps = load(WORKFLOWS / "release.yml")["jobs"]["release"]["steps"]
    build_id = release_build_step()["id"]
    [pin] = [s for s in steps if "release.py pin action.yml" in str(s.get("run", ""))]
    assert pin["env"]["DIGEST"] == f"${{{{ steps.{build_id}.outputs.digest }}}}"
    order = [steps.index(s) for s in (release_build_step(), pin)]
    assert order == sorted(order)
    [major] = [s for s in steps if "move-major" in str(s.get("run", ""))]
    assert steps.index(major) > steps.index(pin) and major["if"] == "${{ steps.tag.outputs.prerelease == 'false' }}"


def test_ci_runs_the_same_script_as_ci_here_and_that_script_runs_the_readmes_test_command() -> None:
    [job] = load(WORKFLOWS / "ci.yml")["jobs"].values()
    assert [s.get("run") for s in job["steps"] if "run" in s] == [".ci/run"]
    script = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert script.rstrip().splitlines()[-1] == "python -m pytest"
    assert "python -m pytest" in (ROOT / "README.md").read_text(encoding="utf-8")


# --- the self-test job, run here ---------------------------------------------------------------------

EXPRESSION = re.compile(r"\$\{\{\s*(.*?)\s*\}\}")


def evaluate(text: str, outputs: dict[str, dict[str, str]], outcomes: dict[str, str]) -> str:
    """The two expression forms the self-test uses; any other form fails the test (so it is added here)."""

    def one(match: re.Match[str]) -> str:
        expression = match[1]
        if found := re.fullmatch(r"toJSON\(steps\.([\w-]+)\.outputs\)", expression):
            return json.dumps(outputs[found[1]], indent=2)
        if found := re.fullmatch(r"steps\.([\w-]+)\.outcome", expression):
            return outcomes[found[1]]
        raise AssertionError(f"expression not simulated: {expression}")

    return EXPRESSION.sub(one, text)


def checkout(workspace: Path) -> None:
    """What actions/checkout gives the self-test: the files it reads (the action itself runs from ROOT)."""
    shutil.copytree(ROOT / "examples", workspace / "examples")
    shutil.copytree(ROOT / ".github", workspace / ".github", ignore=shutil.ignore_patterns("__pycache__"))


def test_the_self_test_job_passes_when_run_step_by_step_here(launch: Launch, tmp_path: Path) -> None:
    [job] = load(WORKFLOWS / "self-test.yml")["jobs"].values()
    outputs: dict[str, dict[str, str]] = {}
    outcomes: dict[str, str] = {}
    ran: list[str] = []
    workspace = RunnerLayout(tmp_path).workspace
    for step in job["steps"]:
        uses, name = str(step.get("uses", "")), step.get("id", step.get("name", ""))
        if uses.startswith("actions/checkout@"):
            checkout(workspace)
        elif uses == "./":
            layout = RunnerLayout(tmp_path)  # the same workspace, fresh file-command files per step
            run = run_entrypoint(launch, layout, action_inputs({k: str(v) for k, v in step["with"].items()}))
            outputs[name] = dict(parse_env_file(run.outputs_text))
            outcomes[name] = "success" if run.returncode == 0 else "failure"
            assert run.returncode == 0 or step.get("continue-on-error") is True, run.stderr
        elif "run" in step:
            env = {"PATH": os.environ["PATH"]}
            env.update({k: evaluate(str(v), outputs, outcomes) for k, v in step.get("env", {}).items()})
            result = subprocess.run(
                ["bash", "-e", "-c", step["run"]], cwd=workspace, env=env,
                check=False, capture_output=True, text=True, timeout=120,
            )  # fmt: skip
            assert result.returncode == 0, f"{step.get('name')}:\n{result.stdout}\n{result.stderr}"
        elif uses.startswith("actions/upload-artifact@"):
            assert list(workspace.glob(step["with"]["path"]))
        else:
            raise AssertionError(f"step not simulated: {step}")
        ran.append(str(name or uses))
    assert outcomes == {"clean": "success", "leak": "success", "typo": "failure"}
    assert outputs["leak"]["findings-count"] == "1" and outputs["clean"]["findings-count"] == "0"
    assert len(ran) == len(job["steps"])


def test_the_self_test_check_fails_on_a_wrong_output(tmp_path: Path) -> None:
    # Guard against a vacuous pass: the check script must notice a wrong number and a green typo step.
    check = load_script("check_self_test")
    report = {"per_query": [{}] * 8, "aggregate": {"mrr": 0.5}, "findings": []}
    (tmp_path / "r.json").write_text(json.dumps(report), encoding="utf-8")
    good = {"report": "r.json", "query-count": "8", "mrr": "0.5", "recall": "1.0", "ndcg": "1.0",
            "findings-count": "0", "regressed": "false"}  # fmt: skip
    assert check.check_run("clean", good, tmp_path, []) == []
    assert check.check_run("clean", {**good, "findings-count": "1"}, tmp_path, []) != []
    assert check.check_run("clean", {**good, "mrr": "0.25"}, tmp_path, []) != []
    environ = {"CLEAN_OUTPUTS": json.dumps(good), "LEAK_OUTPUTS": json.dumps(good), "TYPO_OUTCOME": "success"}
    problems = check.check(environ, tmp_path)
    assert any("typo" in p for p in problems) and any(p.startswith("leak: findings") for p in problems)


# --- the release up to the push, with podman ----------------------------------------------------------


@pytest.fixture(scope="module")
def image() -> Iterator[BuiltImage]:
    # A tag of this checkout's own, as in tests/action/test_container.py.
    yield build_image(tag="localhost/kb-eval-release-" + hashlib.sha256(str(ROOT).encode()).hexdigest()[:12])


@pytest.mark.container
def test_the_release_steps_up_to_the_push_pin_the_image_the_tests_built(image: BuiltImage, tmp_path: Path) -> None:
    release = load_script("release")
    executable = podman()
    version = release.parse_tag("v" + re.findall(r'(?m)^version = "(.+)"', (ROOT / "pyproject.toml").read_text())[0])
    # The push, to a local OCI layout instead of ghcr.io; podman reports the manifest digest it wrote.
    layout, digest_file = tmp_path / "oci", tmp_path / "digest"
    pushed = subprocess.run(
        [executable, "push", "--digestfile", str(digest_file), image.tag, f"oci:{layout}:{version.text}"],
        check=False, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert pushed.returncode == 0, pushed.stderr
    digest = digest_file.read_text(encoding="utf-8").strip()
    index = json.loads((layout / "index.json").read_text(encoding="utf-8"))
    assert [m["digest"] for m in index["manifests"]] == [digest]
    # The release commit's action.yml: valid, and naming exactly that manifest.
    pinned = tmp_path / "action.yml"
    pinned.write_text(
        release.pin_image((ROOT / "action.yml").read_text(encoding="utf-8"), release.image_name("kb-eval"), version, digest),
        encoding="utf-8",
    )
    assert validate(pinned).returncode == 0
    reference = load(pinned)["runs"]["image"]
    assert reference == f"docker://ghcr.io/kb-eval/kb-eval:{version.text}@{digest}"
    # What the runner would pull is the image the tests built: the same configuration (image id).
    manifest = json.loads((layout / "blobs" / "sha256" / digest.removeprefix("sha256:")).read_text(encoding="utf-8"))
    built_id = subprocess.run(
        [executable, "image", "inspect", image.tag, "--format", "{{.Id}}"],
        check=True, capture_output=True, text=True, timeout=60,
    ).stdout.strip()  # fmt: skip
    assert manifest["config"]["digest"] == f"sha256:{built_id}"
