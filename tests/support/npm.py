"""An npm package at a pinned version, installed once per version into a cache folder the test runs
share: the real JavaScript libraries the tests compare with (@actions/core, PostGraphile, Mermaid)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path

NPM_CACHE_ROOT = Path(tempfile.gettempdir()) / "kb-eval-npm"
INSTALL_TIMEOUT_S = 600


class NpmUnavailable(Exception):
    """What is missing, in words a skip or failure message can carry."""


def npm_package(
    package: str, version: str, *, env: Mapping[str, str] | None = None, args: Sequence[str] = ()
) -> Path:
    """The folder whose node_modules holds `package` at `version`. Installed into a staging folder
    renamed into place, so a half-finished install is never taken for the cache. `args` go to
    `npm install` (`--ignore-scripts`)."""
    npm, node = shutil.which("npm"), shutil.which("node")
    if npm is None or node is None:
        raise NpmUnavailable("node and npm (Debian's nodejs, npm)")
    target = NPM_CACHE_ROOT / f"{package.lstrip('@').replace('/', '-')}-{version}"
    marker = target / "node_modules" / package / "package.json"
    if marker.is_file() and json.loads(marker.read_text())["version"] == version:
        return target
    NPM_CACHE_ROOT.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(dir=NPM_CACHE_ROOT, prefix="staging-"))
    done = subprocess.run(
        [npm, "install", "--prefix", str(staging), "--no-audit", "--no-fund", "--no-save", *args,
         f"{package}@{version}"],
        capture_output=True, text=True, timeout=INSTALL_TIMEOUT_S, check=False, env={**os.environ, **(env or {})},
    )
    if done.returncode != 0:
        shutil.rmtree(staging, ignore_errors=True)
        raise NpmUnavailable(f"{package}@{version} (npm install failed: {done.stderr[-300:]})")
    shutil.rmtree(target, ignore_errors=True)
    staging.rename(target)
    return target
