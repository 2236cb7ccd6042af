"""action.yml against GitHub's published metadata schema, and the promises it makes."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from scanner.settings.declaration import SETTINGS
from tests.support.action_docs import (
    ACTION_YML,
    ROOT,
    action_inputs,
    load_action,
    outputs_table,
    settings_table,
    with_inputs,
)

RELEASED_INPUTS = {
    "kb-path": ".",
    "golden": "",
    "k": "1,5,10",
    "limit": "",
    "report": "kb-eval-report.json",
    "exclude": "",
    "history": "",
    "baseline": "",
    "baseline-ref": "",
    "save-baseline": "",
    "cache-dir": "",
    "fail-on-regression": "false",
    "regression-threshold": "0.05",
    "alpha": "0.05",
    "annotations": "true",
    "max-annotations": "10",
    "summary": "true",
    "comment": "false",
    "github-token": "${{ github.token }}",
    "retriever": "builtin",
    "http-url": "",
    "http-method": "POST",
    "http-body": "",
    "http-headers": "",
    "command": "",
    "run-file": "",
    "format": "text",
}
"""The inputs workflows already use, with their defaults: none may go or change its default
(`http-headers` stays as another spelling of `http-header`)."""
REQUIRED_OUTPUTS = {
    "report",
    "query-count",
    "mrr",
    "recall",
    "ndcg",
    "findings-count",
    "regressed",
}


def check_jsonschema_command() -> list[str]:
    executable = Path(sys.executable).parent / "check-jsonschema"
    if executable.exists():
        return [str(executable)]
    found = shutil.which("check-jsonschema")
    return [found] if found else [sys.executable, "-m", "check_jsonschema"]


def validate(path: Path) -> subprocess.CompletedProcess[str]:
    # The vendor.github-actions schema ships inside check-jsonschema: no network.
    return subprocess.run(
        [
            *check_jsonschema_command(),
            "--builtin-schema",
            "vendor.github-actions",
            str(path),
        ],
        check=False,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_action_yml_is_valid_against_githubs_action_metadata_schema() -> None:
    result = validate(ACTION_YML)
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_schema_check_rejects_a_broken_action(tmp_path: Path) -> None:
    # Guard against a vacuous pass: the same check on a wrong `runs` must fail.
    broken = tmp_path / "action.yml"
    broken.write_text(ACTION_YML.read_text(encoding="utf-8").replace("using: docker", "using: dockr"))
    assert validate(broken).returncode != 0


def test_it_is_a_docker_action_built_from_the_repositorys_dockerfile() -> None:
    action = load_action()
    assert action["name"] == "kb-eval"
    assert action["runs"] == {"using": "docker", "image": "Dockerfile"}
    assert (ROOT / "Dockerfile").is_file()
    assert action["branding"]["icon"] and action["branding"]["color"]


def test_action_yml_inputs_are_exactly_the_ones_derived_from_the_settings() -> None:
    text = ACTION_YML.read_text(encoding="utf-8")
    assert with_inputs(text) == text, "action.yml inputs are stale: run `python -m tests.support.action_docs --write`"
    assert load_action()["inputs"] == {name: {**spec, "required": False} for name, spec in action_inputs().items()}


def test_the_derived_inputs_check_fails_on_a_hand_edit(tmp_path: Path) -> None:
    # Guard against a vacuous pass: an edited description or a dropped input is caught.
    text = ACTION_YML.read_text(encoding="utf-8")
    edited = text.replace("Runs kept in the history.", "Runs kept.")
    assert edited != text and with_inputs(edited) != edited


def test_every_action_setting_and_each_old_spelling_is_an_input_and_nothing_else() -> None:
    names = {spec.name for spec in SETTINGS if spec.action}
    aliases = {alias for spec in SETTINGS if spec.action for alias in spec.aliases}
    assert set(load_action()["inputs"]) == names | aliases
    assert {"version", "no-history"}.isdisjoint(load_action()["inputs"])


def test_released_inputs_keep_their_names_and_defaults() -> None:
    inputs = load_action()["inputs"]
    for name, default in RELEASED_INPUTS.items():
        assert name in inputs, name
        # Every input has a default, so the runner sets every INPUT_* variable
        # and nothing depends on `required:` (which the runner does not enforce).
        assert str(inputs[name]["default"]) == default, name
        assert inputs[name]["description"].strip(), name
        assert inputs[name].get("required", False) is False, name


def test_boolean_defaults_are_spellings_getbooleaninput_accepts() -> None:
    inputs = load_action()["inputs"]
    for name in ("fail-on-regression", "annotations", "summary", "comment"):
        assert inputs[name]["default"] in ("true", "false"), name


def test_outputs_are_the_agreed_ones_each_described() -> None:
    outputs = load_action()["outputs"]
    assert set(outputs) == REQUIRED_OUTPUTS
    for name, spec in outputs.items():
        assert spec["description"].strip(), name
        assert "value" not in spec  # docker actions set outputs through GITHUB_OUTPUT


def test_readme_tables_match_the_settings_and_action_yml() -> None:
    readme = ROOT / "README.md"
    if not readme.is_file():
        pytest.skip("README.md not written yet: nothing to compare the tables with")
    text = readme.read_text(encoding="utf-8")
    stale = "README {} table is stale: run `python -m tests.support.action_docs --write`"
    assert settings_table() in text, stale.format("settings")
    assert outputs_table(load_action()) in text, stale.format("outputs")
