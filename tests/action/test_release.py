"""The release script's decisions (.github/scripts/release.py) and the Marketplace metadata."""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
import tomllib
from pathlib import Path
from types import ModuleType

import pytest
import yaml
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from tests.action.test_metadata import validate
from tests.support.action_docs import ACTION_YML, ROOT, load_action

DIGEST = "sha256:" + "0123456789abcdef" * 4
IMAGE = "ghcr.io/kb-eval/kb-eval"
USES = "kb-eval/kb-eval@v1"


def load_script(name: str) -> ModuleType:
    path = ROOT / ".github" / "scripts" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(f"release_scripts_{name}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while the class is built
    spec.loader.exec_module(module)
    return module


release = load_script("release")


def script(*argv: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(ROOT / ".github" / "scripts" / "release.py"), *argv],
        check=False, capture_output=True, text=True, timeout=60, env=env,
    )


# --- tags -----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("tag", "text", "major_tag", "prerelease"),
    [("v1.2.3", "1.2.3", "v1", None), ("v0.1.0", "0.1.0", "v0", None), ("v2.0.0-rc.1", "2.0.0-rc.1", "v2", "rc.1")],
)
def test_a_semver_tag_gives_the_version_and_its_major_tag(tag: str, text: str, major_tag: str, prerelease: str) -> None:
    version = release.parse_tag(tag)
    assert (version.text, version.major_tag, version.prerelease) == (text, major_tag, prerelease)


@pytest.mark.parametrize("tag", ["1.2.3", "v1.2", "v01.2.3", "v1.2.3+build.5", "v1.2.3-", "v1", "release-1.2.3"])
def test_near_miss_tags_are_refused(tag: str) -> None:
    with pytest.raises(release.ReleaseError, match="is not vMAJOR.MINOR.PATCH"):
        release.parse_tag(tag)


def test_the_tag_must_match_the_version_in_pyproject_and_in_the_package() -> None:
    pyproject = 'name = "kb-eval"\nversion = "1.2.3"\n'
    package = '"""kb-eval."""\n\n__version__ = "1.2.3"\n'
    release.check_version_matches(release.parse_tag("v1.2.3"), pyproject, package)
    with pytest.raises(release.ReleaseError, match="tag says 1.2.4, pyproject.toml says 1.2.3"):
        release.check_version_matches(release.parse_tag("v1.2.4"), pyproject, package)
    with pytest.raises(release.ReleaseError, match="scanner/__init__.py says 1.2.2"):
        release.check_version_matches(release.parse_tag("v1.2.3"), pyproject, package.replace("1.2.3", "1.2.2"))


def test_the_image_name_is_lower_case_under_the_owner() -> None:
    assert release.image_name("Kb-Eval") == IMAGE
    with pytest.raises(release.ReleaseError):
        release.image_name("bad owner")


# --- action.yml rewrite ---------------------------------------------------------------------------


def test_pin_points_runs_image_at_the_pushed_image_and_changes_nothing_else() -> None:
    source = ACTION_YML.read_text(encoding="utf-8")
    pinned = release.pin_image(source, IMAGE, release.parse_tag("v1.2.3"), DIGEST)
    assert yaml.safe_load(pinned)["runs"] == {"using": "docker", "image": f"docker://{IMAGE}:1.2.3@{DIGEST}"}
    changed = [(a, b) for a, b in zip(source.splitlines(), pinned.splitlines(), strict=True) if a != b]
    assert changed == [("  image: Dockerfile", f"  image: docker://{IMAGE}:1.2.3@{DIGEST}")]


def test_the_pinned_action_yml_is_valid_against_githubs_action_schema(tmp_path: Path) -> None:
    pinned = tmp_path / "action.yml"
    pinned.write_text(
        release.pin_image(ACTION_YML.read_text(encoding="utf-8"), IMAGE, release.parse_tag("v1.2.3"), DIGEST),
        encoding="utf-8",
    )
    result = validate(pinned)
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.parametrize(
    ("digest", "image", "reason"),
    [
        ("sha256:abc", IMAGE, "is not sha256:<64 hex digits>"),
        ("sha256:" + "A" * 64, IMAGE, "is not sha256:<64 hex digits>"),
        (DIGEST, "ghcr.io/KB-EVAL/kb-eval", "is not a lower-case ghcr.io name"),
        (DIGEST, "docker.io/kb-eval/kb-eval", "is not a lower-case ghcr.io name"),
    ],
)
def test_pin_refuses_a_malformed_digest_or_image(digest: str, image: str, reason: str) -> None:
    with pytest.raises(release.ReleaseError, match=re.escape(reason)):
        release.pin_image(ACTION_YML.read_text(encoding="utf-8"), image, release.parse_tag("v1.2.3"), digest)


def test_pin_refuses_an_action_yml_that_is_already_pinned() -> None:
    once = release.pin_image(ACTION_YML.read_text(encoding="utf-8"), IMAGE, release.parse_tag("v1.2.3"), DIGEST)
    with pytest.raises(release.ReleaseError, match="already a release commit"):
        release.pin_image(once, IMAGE, release.parse_tag("v1.2.4"), DIGEST)


def test_pin_through_the_command_line_rewrites_the_file(tmp_path: Path) -> None:
    target = tmp_path / "action.yml"
    target.write_text(ACTION_YML.read_text(encoding="utf-8"), encoding="utf-8")
    assert script("pin", str(target), IMAGE, "v1.2.3", DIGEST).returncode == 0
    assert load_action_at(target)["runs"]["image"] == f"docker://{IMAGE}:1.2.3@{DIGEST}"
    refused = script("pin", str(target), IMAGE, "v1.2.3", DIGEST)
    assert refused.returncode == 2 and "already a release commit" in refused.stderr


def load_action_at(path: Path) -> dict[str, object]:
    loaded = yaml.safe_load(path.read_text(encoding="utf-8"))
    assert isinstance(loaded, dict)
    return loaded


# --- the major tag ------------------------------------------------------------------------------


def test_the_major_tag_follows_the_newest_final_release_of_its_major_version() -> None:
    tags = ["v1.0.0", "v1.2.0", "v1.2.1", "v2.0.0", "v1.3.0-rc.1"]
    assert release.should_move_major(release.parse_tag("v1.2.2"), [*tags, "v1.2.2"]) is True
    assert release.should_move_major(release.parse_tag("v1.3.0"), [*tags, "v1.3.0"]) is True


def test_an_older_line_or_a_prerelease_leaves_the_major_tag_where_it_is() -> None:
    tags = ["v1.0.0", "v1.3.0", "v1.2.4"]
    assert release.should_move_major(release.parse_tag("v1.2.4"), tags) is False
    assert release.should_move_major(release.parse_tag("v1.4.0-rc.1"), [*tags, "v1.4.0-rc.1"]) is False


def test_move_major_on_the_command_line_prints_true_or_false() -> None:
    assert script("move-major", "v1.4.0", "v1.3.0", "v1.4.0", "v2.0.0").stdout == "true\n"
    assert script("move-major", "v1.2.9", "v1.3.0", "v1.2.9").stdout == "false\n"


# --- release notes ---------------------------------------------------------------------------------


CHANGELOG = """# Changelog

## [Unreleased]
- next

## [1.2.3] - 2026-12-03
### Fixed
- a thing

## [1.2.2] - 2026-11-01
- older
"""


def test_the_release_notes_are_the_versions_changelog_section() -> None:
    assert release.release_notes(release.parse_tag("v1.2.3"), CHANGELOG) == "### Fixed\n- a thing\n"
    assert release.release_notes(release.parse_tag("v1.2.2"), CHANGELOG) == "- older\n"


def test_a_version_without_notes_is_refused() -> None:
    with pytest.raises(release.ReleaseError, match=r"no `## \[1.2.4\]` section"):
        release.release_notes(release.parse_tag("v1.2.4"), CHANGELOG)
    with pytest.raises(release.ReleaseError, match="is empty"):
        release.release_notes(release.parse_tag("v1.0.0"), "## [1.0.0]\n\n## [0.9.0]\n- x\n")
    # 1.2.3's heading must not be found as a prefix of 1.2.30's.
    with pytest.raises(release.ReleaseError):
        release.release_notes(release.parse_tag("v1.2.3"), "## [1.2.30]\n- x\n")


def test_check_tag_for_this_repositorys_version_passes_and_sets_the_outputs(tmp_path: Path) -> None:
    version = re.search(r'(?m)^version = "(.+)"', (ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert version is not None
    output = tmp_path / "output"
    output.touch()
    result = script(
        "check-tag", f"v{version[1]}", env={"GITHUB_OUTPUT": str(output), "GITHUB_REPOSITORY_OWNER": "Kb-Eval"}
    )
    assert result.returncode == 0, result.stderr
    lines = output.read_text(encoding="utf-8").splitlines()
    assert lines == [f"version={version[1]}", f"major-tag=v{version[1].split('.')[0]}", "prerelease=false", f"image={IMAGE}"]
    wrong = script("check-tag", "v99.0.0", env={"GITHUB_OUTPUT": str(tmp_path / "other")})
    assert wrong.returncode == 2 and "bump the version first" in wrong.stderr


# --- Marketplace ---------------------------------------------------------------------------------


def test_the_description_fits_the_marketplace_and_branding_is_set() -> None:
    action = load_action()
    assert 0 < len(action["description"]) < 125  # the Marketplace refuses 125 characters or more
    assert action["author"]
    assert action["branding"] == {"icon": "search", "color": "blue"}


def test_the_license_file_is_the_license_pyproject_declares() -> None:
    assert 'license = { text = "MIT" }' in (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    assert (ROOT / "LICENSE").read_text(encoding="utf-8").startswith("MIT License\n")


def test_the_changelog_has_an_unreleased_section_and_notes_for_the_current_version() -> None:
    changelog = (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
    assert re.search(r"(?m)^## \[Unreleased\]$", changelog)
    version = re.search(r'(?m)^version = "(.+)"', (ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert version is not None
    assert release.release_notes(release.parse_tag(f"v{version[1]}"), changelog).strip()


def documentation_files() -> list[Path]:
    files = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md")), *sorted((ROOT / "examples").rglob("*.yml"))]
    return [path for path in files if path.is_file()]


def test_every_uses_reference_to_kb_eval_is_the_same_one() -> None:
    found: dict[str, list[str]] = {}
    pattern = re.compile(r"uses:\s*([\w.-]+/kb-eval)(@[\w.-]+)?")
    for path in documentation_files():
        for match in pattern.finditer(path.read_text(encoding="utf-8")):
            found.setdefault(match[1] + (match[2] or ""), []).append(str(path.relative_to(ROOT)))
    assert set(found) == {USES}, found
    assert "examples/workflows/kb-eval-pull-request.yml" in found[USES]


def test_the_reference_check_would_see_a_stray_reference(tmp_path: Path) -> None:
    # Guard against a vacuous pass: the pattern above does match the spellings the README once had.
    pattern = re.compile(r"uses:\s*([\w.-]+/kb-eval)(@[\w.-]+)?")
    assert [m[0] for m in pattern.finditer("uses: OWNER/kb-eval@v1\n  uses: kb-eval/kb-eval@main")] == [
        "uses: OWNER/kb-eval@v1",
        "uses: kb-eval/kb-eval@main",
    ]


def test_requirements_in_points_only_at_files_in_the_repository() -> None:
    text = (ROOT / "requirements.in").read_text(encoding="utf-8")
    mentioned = re.findall(r"\b((?:[\w.-]+/)+[\w.-]+\.(?:md|txt|toml|lock|in))\b", text)
    assert mentioned, "requirements.in should say where its compile command is documented"
    for path in mentioned:
        assert (ROOT / path).is_file(), path


def test_the_lock_file_names_no_path_of_the_machine_that_compiled_it() -> None:
    lock = (ROOT / "requirements.lock").read_text(encoding="utf-8")
    assert not re.search(r"(?m)^--(find-links|extra-index-url|index-url)\b", lock)
    assert "--hash=sha256:" in lock


def _names(lines: list[str]) -> dict[str, Requirement]:
    requirements = [Requirement(line) for line in lines if line.strip() and not line.lstrip().startswith("#")]
    return {canonicalize_name(requirement.name): requirement for requirement in requirements}


def test_pyproject_gives_ranges_and_the_lock_pins_a_version_inside_each() -> None:
    declared = _names(tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["dependencies"])
    pins = dict(re.findall(r"(?m)^([A-Za-z0-9._-]+)==([^ \\\n]+)", (ROOT / "requirements.lock").read_text(encoding="utf-8")))
    locked = {canonicalize_name(name): version for name, version in pins.items()}
    for name, requirement in declared.items():
        assert not any(spec.operator == "==" for spec in requirement.specifier), f"{name}: a pin belongs in the lock"
        assert requirement.specifier.contains(locked[name]), (name, str(requirement.specifier), locked[name])
    # The lock is compiled from requirements.in: the same packages, no version there either.
    compiled_from = _names((ROOT / "requirements.in").read_text(encoding="utf-8").splitlines())
    assert set(compiled_from) == set(declared) and not any(str(r.specifier) for r in compiled_from.values())
