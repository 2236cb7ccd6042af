"""Render the step summary of every state a reviewer meets, as GitHub would show it.

    python bench/screenshots.py            # writes docs/screenshots/<state>.md, .html and .png
    python bench/screenshots.py worse      # only the states named

Each state is a real run (tests/render/states.py). The Markdown is rendered with cmark-gfm
(the renderer GitHub uses, with its table, autolink, strikethrough and tagfilter extensions),
styled with github-markdown-css (npm), and photographed with headless Chromium. Mermaid
charts render client-side on GitHub and appear here as their source. The `.md` files are
pinned by tests/render/test_summary_states.py, so a change to what people see shows in review.
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from scanner.render.markdown import render_summary
from tests.render.states import STATES, context

OUT = ROOT / "docs" / "screenshots"
CHROMIUM_FLAGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync", "--hide-scrollbars",
]
_TIME = re.compile(r"20[0-9]{2}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z")
_TREND_LABEL = re.compile(r'"[0-9]{2}-[0-9]{2} [0-9]{2}:[0-9]{2}(?::[0-9]{2})?(?: #[0-9]+)?"')
"""A trend label in every form (seconds and `#n` appear only when runs share a minute or a second)."""


def stable(markdown: str) -> str:
    """The summary with the run's own times replaced, so the pinned file does not move every run."""
    return _TREND_LABEL.sub('"MM-DD hh:mm"', _TIME.sub("2026-12-03T12:00:00Z", markdown))


def state_markdown(name: str, folder: Path) -> str:
    outcome = STATES[name](folder)
    return stable(render_summary(outcome.report, context(outcome)))


def to_html(markdown: str, css: str) -> str:
    import cmarkgfm
    from cmarkgfm.cmark import Options

    body = cmarkgfm.github_flavored_markdown_to_html(markdown, options=Options.CMARK_OPT_UNSAFE)
    return (
        "<!doctype html><meta charset=utf-8><style>" + css
        # The border sets the summary apart from the page it is shown in (the README).
        + "body{margin:0}.markdown-body{box-sizing:border-box;max-width:900px;padding:24px;"
        + "border:1px solid #d0d7de;border-radius:6px}</style>"
        + f'<article class="markdown-body">{body}</article>'
        # The rendered height, read back by page_height(): the photograph ends where the summary does.
        + "<script>document.body.dataset.height ="
        + " Math.ceil(document.querySelector('article').getBoundingClientRect().bottom) + 1</script>"
    )


def github_css(work: Path) -> str:
    subprocess.run(
        ["npm", "install", "--silent", "--no-audit", "--no-fund", "--prefix", str(work), "github-markdown-css@5.8.1"],
        check=True,
    )
    return (work / "node_modules" / "github-markdown-css" / "github-markdown-light.css").read_text(encoding="utf-8")


def chromium() -> str:
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found is None:
        raise SystemExit("chromium is not installed (apt-get install chromium)")
    return found


def page_height(html: Path) -> int:
    """The rendered summary's height in pixels, from the DOM after to_html()'s script ran."""
    with tempfile.TemporaryDirectory() as profile:
        done = subprocess.run(
            [chromium(), *CHROMIUM_FLAGS, f"--user-data-dir={profile}", "--window-size=940,700", "--dump-dom",
             html.as_uri()],
            check=True, capture_output=True, text=True, timeout=60,
        )
    match = re.search(r'data-height="([0-9]+)"', done.stdout)
    if match is None:
        raise SystemExit(f"chromium did not report the height of {html}")
    return int(match[1])


def screenshot(html: Path, png: Path, height: int) -> None:
    with tempfile.TemporaryDirectory() as profile:
        subprocess.run(
            [chromium(), *CHROMIUM_FLAGS, f"--user-data-dir={profile}", f"--screenshot={png}",
             f"--window-size=940,{height}", html.as_uri()],
            check=True, capture_output=True, timeout=60,
        )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--no-png", action="store_true", help="write the Markdown and HTML only")
    parser.add_argument("states", nargs="*", metavar="STATE", help=f"the states to render (default: all): {', '.join(STATES)}")
    args = parser.parse_args()
    unknown = sorted(set(args.states) - set(STATES))
    if unknown:
        parser.error(f"no such state: {', '.join(unknown)}")
    OUT.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as work:
        css = "" if args.no_png else github_css(Path(work))
        for name in args.states or STATES:
            markdown = state_markdown(name, Path(tempfile.mkdtemp(dir=work)))
            (OUT / f"{name}.md").write_text(markdown, encoding="utf-8")
            if args.no_png:
                continue
            html = OUT / f"{name}.html"
            html.write_text(to_html(markdown, css), encoding="utf-8")
            screenshot(html, OUT / f"{name}.png", height=page_height(html))
            html.unlink()
            print(f"{name}: {OUT / (name + '.png')}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
