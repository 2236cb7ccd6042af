#!/usr/bin/env python3
"""The release workflow's decisions, as small functions the tests run (.github/workflows/release.yml).

    release.py check-tag TAG                     version, major tag, pre-release, image name -> $GITHUB_OUTPUT
    release.py pin ACTION_YML IMAGE TAG DIGEST   point runs.image at docker://IMAGE:VERSION@DIGEST
    release.py move-major VERSION [TAG ...]      prints "true" when the major tag should follow VERSION
    release.py notes VERSION [CHANGELOG]         the CHANGELOG section of VERSION (the release notes)

Standard library only: it runs on the runner's own Python before anything is installed, and
nothing here imports kb-eval (a release must not depend on the code it is releasing). Every
refusal exits 2 with the reason on stderr, so the workflow stops before it pushes anything.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

SEMVER_TAG = re.compile(
    r"v(?P<major>0|[1-9]\d*)\.(?P<minor>0|[1-9]\d*)\.(?P<patch>0|[1-9]\d*)"
    r"(?:-(?P<pre>[0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*))?"
)
"""`v` + SemVer 2.0.0 without build metadata (a `+` cannot be part of an image tag)."""
DIGEST = re.compile(r"sha256:[0-9a-f]{64}")
IMAGE_NAME = re.compile(r"[a-z0-9]+(?:[._-][a-z0-9]+)*(?:/[a-z0-9]+(?:[._-][a-z0-9]+)*)*")
"""A registry path in the lower case the registry requires (GitHub owners may have capitals)."""
REGISTRY = "ghcr.io"
IMAGE_BASENAME = "kb-eval"
SOURCE_IMAGE_LINE = re.compile(r"^(?P<indent>[ \t]+)image:[ \t]*(?P<value>\S.*?)[ \t]*$", re.MULTILINE)
SOURCE_IMAGE = "Dockerfile"
"""What the repository's action.yml says between releases: the runner builds the image."""


class ReleaseError(Exception):
    """A reason not to release; exit 2."""


@dataclass(frozen=True, slots=True)
class Version:
    major: int
    minor: int
    patch: int
    prerelease: str | None

    @property
    def text(self) -> str:
        """Without the `v`: the image tag and pyproject's version."""
        core = f"{self.major}.{self.minor}.{self.patch}"
        return core if self.prerelease is None else f"{core}-{self.prerelease}"

    @property
    def major_tag(self) -> str:
        return f"v{self.major}"


def parse_tag(tag: str) -> Version:
    match = SEMVER_TAG.fullmatch(tag)
    if match is None:
        raise ReleaseError(f"tag {tag!r} is not vMAJOR.MINOR.PATCH[-PRERELEASE] (docs/release.md: tags)")
    return Version(int(match["major"]), int(match["minor"]), int(match["patch"]), match["pre"])


def image_name(owner: str) -> str:
    name = f"{REGISTRY}/{owner.lower()}/{IMAGE_BASENAME}"
    if IMAGE_NAME.fullmatch(name.removeprefix(REGISTRY + "/")) is None:
        raise ReleaseError(f"{owner!r} does not make a valid image name ({name})")
    return name


def check_version_matches(version: Version, pyproject: str, package_init: str) -> None:
    # One version everywhere: the package's metadata, the CLI's --version and the report's tool
    # version (scanner/__init__.py), and the image tag.
    for name, text, pattern in (
        ("pyproject.toml", pyproject, r'(?m)^version\s*=\s*"([^"]+)"'),
        ("scanner/__init__.py", package_init, r'(?m)^__version__\s*=\s*"([^"]+)"'),
    ):
        match = re.search(pattern, text)
        if match is None or match[1] != version.text:
            found = match[1] if match else "none"
            raise ReleaseError(f"tag says {version.text}, {name} says {found}: bump the version first")


def pin_image(action_yml: str, image: str, version: Version, digest: str) -> str:
    """action.yml with `runs.image` set to the published image, by tag and digest; nothing else changes.

    The tag is for people reading the file, the digest is what the runner pulls: a tag can be moved,
    the digest names exactly the image that was tested and pushed. Refused: a malformed digest, an
    action.yml without exactly one `image: Dockerfile` line, or one already pinned."""
    if DIGEST.fullmatch(digest) is None:
        raise ReleaseError(f"digest {digest!r} is not sha256:<64 hex digits>")
    if IMAGE_NAME.fullmatch(image.removeprefix(REGISTRY + "/")) is None or not image.startswith(REGISTRY + "/"):
        raise ReleaseError(f"image {image!r} is not a lower-case {REGISTRY} name")
    lines = list(SOURCE_IMAGE_LINE.finditer(action_yml))
    if len(lines) != 1:
        raise ReleaseError(f"expected one `image:` line in action.yml, found {len(lines)}")
    [line] = lines
    value = line["value"].strip("'\"")
    if value != SOURCE_IMAGE:
        raise ReleaseError(f"action.yml's image is {value!r}, not {SOURCE_IMAGE!r}: is this already a release commit?")
    reference = f"docker://{image}:{version.text}@{digest}"
    return action_yml[: line.start()] + f"{line['indent']}image: {reference}" + action_yml[line.end() :]


def should_move_major(version: Version, existing_tags: Iterable[str]) -> bool:
    """The major tag follows the highest final release of its major version.

    A pre-release never moves it (people on `v1` asked for stable), nor does a patch to an older
    minor line released after a newer one (v1.2.4 after v1.3.0 leaves v1 on v1.3.0)."""
    if version.prerelease is not None:
        return False
    finals = []
    for tag in existing_tags:
        match = SEMVER_TAG.fullmatch(tag.strip())
        if match is not None and match["pre"] is None and int(match["major"]) == version.major:
            finals.append((int(match["minor"]), int(match["patch"])))
    return all((version.minor, version.patch) >= other for other in finals)


def release_notes(version: Version, changelog: str) -> str:
    """The body of `## [VERSION]` (up to the next `## `); a release without notes is refused."""
    heading = re.compile(rf"(?m)^## \[?{re.escape(version.text)}\]?(?:\s|$).*$")
    match = heading.search(changelog)
    if match is None:
        raise ReleaseError(f"CHANGELOG.md has no `## [{version.text}]` section: write the release notes first")
    following = re.compile(r"(?m)^## ").search(changelog, match.end())
    body = changelog[match.end() : following.start() if following else len(changelog)].strip()
    if not body:
        raise ReleaseError(f"CHANGELOG.md's `## [{version.text}]` section is empty")
    return body + "\n"


def _write_outputs(values: dict[str, str]) -> None:
    text = "".join(f"{key}={value}\n" for key, value in values.items())
    sys.stdout.write(text)
    target = os.environ.get("GITHUB_OUTPUT")
    if target:
        with open(target, "a", encoding="utf-8") as handle:
            handle.write(text)


def main(argv: Sequence[str]) -> int:
    root = Path(__file__).resolve().parents[2]
    try:
        match list(argv):
            case ["check-tag", tag]:
                version = parse_tag(tag)
                check_version_matches(
                    version,
                    (root / "pyproject.toml").read_text(encoding="utf-8"),
                    (root / "scanner" / "__init__.py").read_text(encoding="utf-8"),
                )
                release_notes(version, (root / "CHANGELOG.md").read_text(encoding="utf-8"))
                owner = os.environ.get("GITHUB_REPOSITORY_OWNER", "kb-eval")
                _write_outputs(
                    {
                        "version": version.text,
                        "major-tag": version.major_tag,
                        "prerelease": "true" if version.prerelease else "false",
                        "image": image_name(owner),
                    }
                )
            case ["pin", action_path, image, tag, digest]:
                path = Path(action_path)
                path.write_text(pin_image(path.read_text(encoding="utf-8"), image, parse_tag(tag), digest), encoding="utf-8")
            case ["move-major", tag, *tags]:
                sys.stdout.write("true\n" if should_move_major(parse_tag(tag), tags) else "false\n")
            case ["notes", tag, *rest] if len(rest) <= 1:
                changelog = Path(rest[0]) if rest else root / "CHANGELOG.md"
                sys.stdout.write(release_notes(parse_tag(tag), changelog.read_text(encoding="utf-8")))
            case _:
                sys.stderr.write(__doc__ or "")
                return 2
    except ReleaseError as error:
        sys.stderr.write(f"release: {error}\n")
        return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
