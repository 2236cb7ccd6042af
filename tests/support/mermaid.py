"""The real Mermaid library, rendering in Debian's headless Chromium: @mermaid-js/mermaid-cli from npm
(its own browser download skipped: only registries are reachable), installed once per version."""

from __future__ import annotations

import json
import shutil
import subprocess
import tempfile
from pathlib import Path

from tests.support.engines import NPM_CACHE_ROOT, missing

MERMAID_CLI_VERSION = "11.12.0"
"""@mermaid-js/mermaid-cli; it brings mermaid 11 (11.17.2 when installed on 2026-12-04)."""
CHROMIUM_NAMES = ("chromium", "chromium-browser")
RENDER_TIMEOUT_S = 120.0


def mermaid_cli() -> Path:
    npm, node = shutil.which("npm"), shutil.which("node")
    if npm is None or node is None:
        missing("node and npm (Debian's nodejs, npm)")
    target = NPM_CACHE_ROOT / f"mermaid-cli-{MERMAID_CLI_VERSION}"
    marker = target / "node_modules" / "@mermaid-js" / "mermaid-cli" / "package.json"
    if not (marker.is_file() and json.loads(marker.read_text())["version"] == MERMAID_CLI_VERSION):
        NPM_CACHE_ROOT.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(dir=NPM_CACHE_ROOT, prefix="staging-"))
        done = subprocess.run(
            [npm, "install", "--prefix", str(staging), "--no-audit", "--no-fund", "--no-save",
             f"@mermaid-js/mermaid-cli@{MERMAID_CLI_VERSION}"],
            capture_output=True, text=True, timeout=600, check=False,
            env={**__import__("os").environ, "PUPPETEER_SKIP_DOWNLOAD": "1"},
        )
        if done.returncode != 0:
            shutil.rmtree(staging, ignore_errors=True)
            missing(f"@mermaid-js/mermaid-cli@{MERMAID_CLI_VERSION} (npm install failed: {done.stderr[-300:]})")
        shutil.rmtree(target, ignore_errors=True)
        staging.rename(target)
    return target / "node_modules" / ".bin" / "mmdc"


def chromium() -> str:
    for name in CHROMIUM_NAMES:
        found = shutil.which(name)
        if found:
            return found
    missing("Chromium (Debian's chromium)")


def render(diagram: str, output: Path) -> Path:
    """`diagram` rendered by Mermaid to `output` (.svg or .png) in headless Chromium."""
    folder = output.parent
    source = folder / "chart.mmd"
    source.write_text(diagram, encoding="utf-8")
    config = folder / "puppeteer.json"
    # No sandbox: CI runs as root, where Chromium refuses its sandbox.
    config.write_text(json.dumps({"executablePath": chromium(), "args": ["--no-sandbox", "--disable-gpu"]}))
    done = subprocess.run(
        [str(mermaid_cli()), "-p", str(config), "-i", str(source), "-o", str(output), "-b", "white", "-q"],
        capture_output=True, text=True, timeout=RENDER_TIMEOUT_S, check=False,
    )
    if done.returncode != 0 or not output.is_file():
        raise AssertionError(f"mermaid did not render the chart ({done.returncode}): {done.stderr[-2000:]}")
    return output
