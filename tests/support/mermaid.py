"""The real Mermaid library, rendering in Debian's headless Chromium: @mermaid-js/mermaid-cli from npm
(its own browser download skipped: only registries are reachable), installed once per version."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

from tests.support.engines import missing
from tests.support.npm import NpmUnavailable, npm_package

MERMAID_CLI_VERSION = "11.12.0"
"""@mermaid-js/mermaid-cli; it brings mermaid 11 (11.17.2 when installed on 2026-12-04)."""
CHROMIUM_NAMES = ("chromium", "chromium-browser")
RENDER_TIMEOUT_S = 120.0


def mermaid_cli() -> Path:
    try:
        # Its own browser download skipped: only registries are reachable, and Debian's Chromium renders.
        folder = npm_package("@mermaid-js/mermaid-cli", MERMAID_CLI_VERSION, env={"PUPPETEER_SKIP_DOWNLOAD": "1"})
    except NpmUnavailable as missing_part:
        missing(str(missing_part))
    return folder / "node_modules" / ".bin" / "mmdc"


def chromium() -> str:
    for name in CHROMIUM_NAMES:
        found = shutil.which(name)
        if found:
            return found
    missing("Chromium (Debian's chromium)")


def render(diagrams: list[str], folder: Path, kind: str = "svg") -> list[Path]:
    """Each of `diagrams` rendered by Mermaid in headless Chromium, as .svg or .png in `folder`, in
    their order: one browser for all of them (Markdown input: a chart per mermaid block), as
    a browser's start is most of a render's seconds."""
    source = folder / "charts.md"
    source.write_text("".join(f"```mermaid\n{diagram}```\n\n" for diagram in diagrams), encoding="utf-8")
    config = folder / "puppeteer.json"
    # No sandbox: CI runs as root, where Chromium refuses its sandbox.
    config.write_text(json.dumps({"executablePath": chromium(), "args": ["--no-sandbox", "--disable-gpu"]}))
    output = folder / "charts-out.md"
    done = subprocess.run(
        [str(mermaid_cli()), "-p", str(config), "-i", str(source), "-o", str(output), "-e", kind, "-b", "white", "-q"],
        capture_output=True, text=True, timeout=RENDER_TIMEOUT_S, check=False,
    )
    images = [folder / f"charts-out-{n}.{kind}" for n in range(1, len(diagrams) + 1)]
    if done.returncode != 0 or not all(image.is_file() for image in images):
        raise AssertionError(f"mermaid did not render the charts ({done.returncode}): {done.stderr[-2000:]}")
    return images
