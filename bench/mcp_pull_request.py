"""A pull request evaluated with a real MCP server on both sides, its step summary photographed.

    python bench/mcp_pull_request.py --work /tmp/kb-eval-mcp-pr [--transport stdio|http] [--repeat 3]

Builds a git repository from examples/kb (the base) and a pull request that rewrites the note
answering two questions (the head), then runs kb-eval on the head with `--baseline-ref HEAD~1`
and qmd (npm @tobilu/qmd, BM25 over SQLite FTS5, the recipes of docs/retrievers.md) as the search:
its index built per side by `--index-command`, asked over stdio (`--mcp-command`) or over Streamable
HTTP from a server started per side (`--serve-command`). It prints what the base side adds (wall
and CPU time of the whole process tree, head alone against head + base, paired rounds) and writes
the summary as GitHub shows it to docs/screenshots/runs/mcp-pull-request-<transport>.{md,png}.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.screenshots import github_css, page_height, screenshot, stable, to_html
from tests.support.mcp_servers import qmd_path

OUT = ROOT / "docs" / "screenshots" / "runs"
GOLDEN = ROOT / "docs" / "recipes" / "qmd" / "keywords.yml"
ARGUMENTS = '{"searches": [{"type": "lex", "query": "{query}"}], "limit": {limit}, "rerank": false}'
PULL_REQUEST = {
    # The deploy note loses its rollback section to a new page that answers it better.
    "guides/deploy.md": "# Deploying\n\nBuild the container image, tag it and push it.\n",
    "guides/rollbacks.md": "# Rollbacks\n\nTo roll back a database migration, run the down migration, then "
    "redeploy the previous container image tag.\n",
}
GIT = {"GIT_AUTHOR_NAME": "b", "GIT_AUTHOR_EMAIL": "b@example.com", "GIT_COMMITTER_NAME": "b",
       "GIT_COMMITTER_EMAIL": "b@example.com"}


def git(repo: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, env={**os.environ, **GIT})


def repository(work: Path) -> Path:
    repo = work / "repo"
    shutil.rmtree(repo, ignore_errors=True)
    shutil.copytree(ROOT / "examples" / "kb", repo / "kb", ignore=shutil.ignore_patterns(".kb-eval-history.json"))
    git(repo, "init", "-q")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "base")
    for path, text in PULL_REQUEST.items():
        (repo / "kb" / path).write_text(text, encoding="utf-8")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "the pull request")
    return repo


def flags(transport: str) -> list[str]:
    common = ["--golden", str(GOLDEN), "--score-level", "document", "--no-history",
              "--index-command", "qmd --index {work}/qmd collection add {kb} --name kb",
              "--mcp-tool", "query", "--mcp-arguments", ARGUMENTS, "--path-field", "file", "--path-prefix-strip", "kb/"]
    if transport == "stdio":
        return [*common, "--mcp-command", "qmd --index {work}/qmd mcp"]
    return [*common, "--serve-command", "qmd --index {work}/qmd mcp --http --host 127.0.0.1 --port {port}",
            "--mcp-url", "http://127.0.0.1:{port}/mcp"]


def run(repo: Path, argv: list[str], environ: dict[str, str]) -> tuple[float, float, subprocess.CompletedProcess[str]]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run([str(Path(sys.executable).parent / "kb-eval"), *argv], cwd=repo, env=environ,
                          capture_output=True, text=True, check=False)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, done


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--work", type=Path, required=True, help="a folder for the repository and the runs")
    parser.add_argument("--transport", choices=["stdio", "http"], default="stdio")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--no-png", action="store_true")
    args = parser.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    repo = repository(args.work)
    environ = {**os.environ, "PATH": qmd_path(), "PYTHONPATH": str(ROOT)}
    summary = args.work / "summary.md"
    base = [*flags(args.transport), "--kb-path", "kb", "--format", "json"]
    ratios_wall, ratios_cpu = [], []
    for _ in range(args.repeat):
        head_wall, head_cpu, alone = run(repo, base, environ)
        both_wall, both_cpu, both = run(repo, [*base, "--baseline-ref", "HEAD~1", "--summary", str(summary)], environ)
        if alone.returncode != 0 or both.returncode != 0:
            print(alone.stderr[-2000:], both.stderr[-2000:], file=sys.stderr)
            return 1
        ratios_wall.append(both_wall / head_wall)
        ratios_cpu.append(both_cpu / head_cpu)
        print(f"head {head_wall:.2f} s wall {head_cpu:.2f} s CPU; head + base {both_wall:.2f} s wall "
              f"{both_cpu:.2f} s CPU", flush=True)
    report = json.loads(both.stdout)
    print(f"(head + base) / head, median of {args.repeat}: wall {statistics.median(ratios_wall):.2f}, "
          f"CPU {statistics.median(ratios_cpu):.2f}; load average {os.getloadavg()[0]:.1f}; "
          f"MRR head {report['aggregate']['mrr']:.3f}, base {report['previous']['aggregate']['mrr']:.3f}")
    markdown = stable(summary.read_text(encoding="utf-8"))
    OUT.mkdir(parents=True, exist_ok=True)
    name = f"mcp-pull-request-{args.transport}"
    (OUT / f"{name}.md").write_text(markdown, encoding="utf-8")
    if not args.no_png:
        html = args.work / f"{name}.html"
        html.write_text(to_html(markdown, github_css(args.work)), encoding="utf-8")
        screenshot(html, OUT / f"{name}.png", height=page_height(html))
        print(f"{OUT / (name + '.png')}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
