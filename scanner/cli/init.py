"""`kb-eval init`: a starter golden file for an existing KB, and (asked) the workflow that runs it.

What it writes runs: every proposed query points at a document the KB really has, so
`kb-eval --kb-path KB` on the result exits 0 before anyone edits it. The proposed query text is
the document's title, tagged `starter`, because that is the one thing kb-eval can propose without
guessing; the file's comments say why a title is a poor query and what to write instead, and the
report's per-tag line shows how many starters are left.

It never overwrites: an existing golden file (any name kb-eval would read) or workflow file stops
it with exit 2 before anything is written, and files are created with O_EXCL, so a file that
appears meanwhile is not replaced either.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

import yaml

from scanner.cli.parser import Parser
from scanner.corpus.documents import Document
from scanner.corpus.kb_files import check_kb_folder
from scanner.corpus.reader import read_corpus
from scanner.corpus.titles import page_title
from scanner.foundation.diagnostics import Diagnostics
from scanner.foundation.errors import ExitCode, InputError
from scanner.foundation.untrusted_text import shown
from scanner.golden.file import DEFAULT_GOLDEN_NAMES, STARTER_TAG, expected_path_problem
from scanner.report.history import DEFAULT_HISTORY_NAME, lock_path

GOLDEN_NAME = DEFAULT_GOLDEN_NAMES[0]
"""`.kb-eval.yml`: the name kb-eval looks for first, so the written file is found without --golden."""
WORKFLOW_PATH = Path(".github") / "workflows" / "kb-eval.yml"
DEFAULT_STARTERS = 5
"""Enough entries to show the format and give a first score; few enough to rewrite in minutes."""
MAX_STARTERS = 100
ACTION_REFERENCE = "kb-eval/kb-eval@v1"
"""The one `uses:` reference of the documentation and examples (docs/release.md: the moving major tag)."""

_PLAIN_YAML_PATH = re.compile(r"[A-Za-z0-9_.][A-Za-z0-9_./-]*")
"""A path written unquoted in the workflow; anything else is quoted (and globbing characters
would be read as a pattern in `paths:`, so they are refused)."""
_GLOB_CHARACTERS = re.compile(r"[*?\[\]!]")


@dataclass(frozen=True, slots=True)
class Starter:
    """One proposed golden entry."""

    query_id: str
    text: str
    """The document's title: a placeholder the comments ask the user to replace."""
    path: str
    """KB-relative, `/`-separated, as the golden file writes it."""


@dataclass(frozen=True, slots=True)
class Written:
    path: Path
    what: str


GOLDEN_HEADER = """\
# kb-eval golden queries for this knowledge base (written by `kb-eval init`).
#
# Each entry is a question someone would ask the KB's search, and the documents a good answer
# comes from. kb-eval runs every query through the search and scores where the expected documents
# rank: recall@k, MRR and nDCG@k, overall and per tag.
#
# What to fill in, per entry:
#   query     the question, in the words a reader would use. Write a PARAPHRASE, not the
#             document's heading or a sentence copied from it: any search finds a document by its
#             own title, so copied text measures nothing, and a note that quotes two golden queries
#             word for word is reported as `golden-queries-quoted` (the KB is quoting its test).
#   expected  the KB-relative paths of the documents that answer it; add `heading: Section` to an
#             entry to count only that section. Several documents are fine.
#   id        a short stable name, used in reports and to compare runs.
#   tags      optional; the report adds a line per tag.
#
# The entries below were proposed from the KB: each query is a document's TITLE and is tagged
# `starter`. The file runs as it is, but a title is exactly the kind of query to avoid: rewrite
# each one as a question, remove the `starter` tag, and add queries for what people really ask
# (20 to 50 make a useful set). Then run: kb-eval --kb-path {kb_path}
"""

EMPTY_NOTE = "# (kb-eval proposed {count} of the KB's {total} documents; add the rest yourself.)\n"
UNNAMEABLE_NOTE = (
    "# Left out: these files' names read as absolute paths or hold a `..` part on other systems\n"
    "# (a drive letter, a leading or `\\` separator), so a golden file cannot name them; rename them\n"
    "# to use them as expected documents.\n"
)

WORKFLOW_TEMPLATE = """\
# Evaluate the knowledge base on every pull request that touches it.
# `kb-eval init --workflow` writes this file as .github/workflows/kb-eval.yml.
name: kb-eval

on:
  pull_request:
    paths:
      - {paths_glob}

# Declaring permissions sets every unlisted one to none.
permissions:
  contents: read # checkout
  pull-requests: write # the summary comment on the pull request
  issues: write # pull-request comments are issue comments in the REST API

jobs:
  kb-eval:
    runs-on: ubuntu-latest
    steps:
      - uses: actions/checkout@v4
        with:
          # kb-eval also evaluates the pull request's base commit, in this job, with this
          # pull request's golden file: the clone must hold that commit.
          fetch-depth: 0

      - name: kb-eval
        id: kb-eval
        uses: {action}
        with:
          kb-path: {kb_path}
          report: kb-eval-report.json
          # Fail the check when a metric drops by more than 0.05 against the base commit.
          fail-on-regression: true
          comment: true

      - name: Upload the JSON report
        if: ${{{{ !cancelled() && steps.kb-eval.outputs.report != '' }}}}
        uses: actions/upload-artifact@v4
        with:
          name: kb-eval-report
          path: ${{{{ steps.kb-eval.outputs.report }}}}
"""


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(
        prog="kb-eval init",
        description=(
            f"Write a starter golden file ({GOLDEN_NAME}) into an existing knowledge base, and with\n"
            "--workflow the GitHub workflow that runs kb-eval on pull requests. Never overwrites a file."
        ),
        epilog=(
            "exit codes: 0 written, 2 bad input or a file already there (nothing written).\n"
            "examples:\n"
            "  kb-eval init --kb-path docs/kb\n"
            "  kb-eval init --kb-path docs/kb --workflow     # run from the repository root"
        ),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--kb-path", type=Path, default=Path("."),
        help="the knowledge base folder; the golden file goes in it (default: .)",
    )
    parser.add_argument(
        "--queries", type=_starter_count, default=DEFAULT_STARTERS, metavar="N",
        help=f"how many starter entries to propose, one per document (default: {DEFAULT_STARTERS})",
    )
    parser.add_argument(
        "--workflow", action="store_true",
        help=f"also write {WORKFLOW_PATH.as_posix()} under the current folder, the repository root (default: off)",
    )
    return parser


def main(argv: Sequence[str], stdout: TextIO | None = None, stderr: TextIO | None = None) -> int:
    out, err = stdout or sys.stdout, stderr or sys.stderr
    args = build_parser().parse_args(list(argv))
    try:
        written = initialise(args.kb_path, args.queries, args.workflow, Path("."), err)
    except InputError as error:
        err.write(f"kb-eval: error: {error}\n")
        return ExitCode.BAD_INPUT
    for item in written:
        out.write(f"wrote {item.path.as_posix()}: {item.what}\n")
    out.write(f"next: rewrite the starter queries as questions, then run: kb-eval --kb-path {args.kb_path.as_posix()}\n")
    return ExitCode.OK


def initialise(kb_path: Path, count: int, workflow: bool, repository: Path, stderr: TextIO) -> list[Written]:
    """Check everything, then write: a refusal leaves the file system as it was."""
    check_kb_folder(kb_path, "give --kb-path the folder holding the Markdown notes")
    refuse_existing_golden(kb_path)
    workflow_file = repository / WORKFLOW_PATH
    if workflow:
        refuse_existing(workflow_file, "workflow file")
        workflow_text = render_workflow(kb_path_in_repository(kb_path, repository))
    diagnostics = Diagnostics()
    documents = read_corpus(kb_path, (), diagnostics).documents
    stderr.writelines(item.render() + "\n" for item in diagnostics.items)
    starters = propose(documents, count)
    # Names legal on Linux that a golden file cannot hold (`..\\up.md`, `C:\\notes.md` read as
    # paths of other systems): never proposed, and named in the file so the user knows why.
    unnameable = [d.path for d in documents if expected_path_problem(d.path) is not None]
    if not starters:
        raise InputError(
            "no document to propose a query for",
            file=str(kb_path), hint="kb-eval indexes .md, .markdown and .txt files; add notes first",
        )
    golden_file = kb_path / GOLDEN_NAME
    written = [
        create_exclusively(
            golden_file,
            render_golden(starters, len(documents), kb_path.as_posix(), unnameable),
            f"{len(starters)} starter queries (tagged {STARTER_TAG}) to rewrite",
        )
    ]
    ignored = ignore_run_files(kb_path)
    if ignored is not None:
        written.append(ignored)
    if workflow:
        workflow_file.parent.mkdir(parents=True, exist_ok=True)
        written.append(create_exclusively(workflow_file, workflow_text, f"runs kb-eval on pull requests ({ACTION_REFERENCE})"))
    return written


RUN_FILES = (DEFAULT_HISTORY_NAME, lock_path(Path(DEFAULT_HISTORY_NAME)).name)
"""What a local run leaves in the KB folder: the history, and the lock file kept beside it (a lock
file must outlive the run: see `history_lock`). Neither belongs in the repository."""


def ignore_run_files(kb_path: Path) -> Written | None:
    """Add RUN_FILES to the KB folder's .gitignore (created when there is none; lines already there
    are kept and not repeated), so `git add -A` after a local run commits neither file."""
    path = kb_path / ".gitignore"
    try:
        if os.path.islink(path):
            return None  # not followed: the lines are in the README for whoever keeps that file
        present = path.read_text(encoding="utf-8").splitlines() if path.exists() else None
    except (OSError, UnicodeDecodeError):
        return None
    names = {line.strip().lstrip("/") for line in present or ()}
    missing = [name for name in RUN_FILES if name not in names]
    if not missing:
        return None
    lead = "" if not present or (path.read_bytes().endswith(b"\n")) else "\n"
    text = lead + "# kb-eval's run history and its lock file (kb-eval init)\n" + "".join(f"/{n}\n" for n in missing)
    try:
        with open(path, "a", encoding="utf-8", newline="\n") as handle:
            handle.write(text)
    except OSError as error:
        raise InputError(f"cannot write the file ({error.strerror})", file=str(path)) from error
    return Written(path, "ignores " + " and ".join(missing) + (" (created)" if present is None else " (appended)"))


def refuse_existing_golden(kb_path: Path) -> None:
    # Any of the names kb-eval reads counts: a new .kb-eval.yml would silently take the place of a
    # kb-mcp or grooveseek golden set the KB already has (it is looked up first).
    for name in DEFAULT_GOLDEN_NAMES:
        refuse_existing(kb_path / name, "golden file")


def refuse_existing(path: Path, what: str, command: str = "kb-eval init") -> None:
    if os.path.lexists(path):
        raise InputError(
            f"{what} already exists; {command} never overwrites",
            file=str(path), hint=f"edit that file, or move it away and run {command} again",
        )


def kb_path_in_repository(kb_path: Path, repository: Path) -> str:
    """The KB folder as the workflow's `kb-path` input: relative to the repository root."""
    try:
        relative = Path(os.path.relpath(kb_path.resolve(), repository.resolve()))
    except ValueError:  # another drive on Windows
        relative = Path("..")
    if relative.parts[:1] == ("..",):
        raise InputError(
            "the knowledge base is outside the current folder",
            file=str(kb_path),
            hint="run kb-eval init --workflow from the repository root, with --kb-path relative to it",
        )
    text = relative.as_posix()
    if _GLOB_CHARACTERS.search(text):
        raise InputError(
            "the folder name holds glob characters, which a workflow's `paths:` filter would read as a pattern",
            file=str(kb_path), hint="write the workflow by hand from examples/workflows/kb-eval-pull-request.yml",
        )
    return text


def propose(documents: Sequence[Document], count: int) -> list[Starter]:
    """One entry per document, spread evenly over the (path-sorted) KB so several folders show up.

    The title is the one search scores (a frontmatter `title`, else a `# Title` that encloses the
    page, else the file name). A document qualifies when it has a chunk (something to find) and its
    title has a letter or digit (a query without one cannot be searched and is refused by the
    golden loader)."""
    titled = [(d, page_title(d)) for d in documents]
    usable = [
        (d, title) for d, title in titled
        if d.chunks and any(c.isalnum() for c in title) and expected_path_problem(d.path) is None
    ]
    if len(usable) > count:
        step = len(usable) / count
        usable = [usable[int(n * step)] for n in range(count)]
    starters: list[Starter] = []
    taken: set[str] = set()
    for document, title in usable:
        base = _slug(document.path)
        query_id, n = base, 2
        while query_id in taken:
            query_id, n = f"{base}-{n}", n + 1
        taken.add(query_id)
        starters.append(Starter(query_id, " ".join(title.split()), document.path))
    return starters


def render_golden(
    starters: Sequence[Starter], total_documents: int, kb_path: str, unnameable: Sequence[str] = ()
) -> str:
    entries = []
    for starter in starters:
        entry = {"id": starter.query_id, "query": starter.text, "expected": [{"path": starter.path}], "tags": [STARTER_TAG]}
        # PyYAML quotes and escapes whatever a title holds (a colon, `#`, `yes`, a leading `-`).
        dumped = yaml.safe_dump([entry], allow_unicode=True, sort_keys=False, width=1_000_000)
        comment = "  # TODO: the document's title; rewrite it as a question a reader would ask\n"
        entries.append(comment + "".join("  " + line + "\n" for line in dumped.splitlines()))
    note = EMPTY_NOTE.format(count=len(starters), total=total_documents) if total_documents > len(starters) else ""
    if unnameable:
        # One line per name, spelled so that no name can end the comment (a line break in it is escaped).
        note += UNNAMEABLE_NOTE + "".join(f"#   {shown(path)}\n" for path in unnameable)
    return GOLDEN_HEADER.format(kb_path=kb_path) + "\n" + note + "queries:\n" + "\n".join(entries)


def render_workflow(kb_path: str) -> str:
    glob = "**" if kb_path in ("", ".") else f"{kb_path.rstrip('/')}/**"
    return WORKFLOW_TEMPLATE.format(
        paths_glob=json.dumps(glob, ensure_ascii=False),
        kb_path=kb_path if _PLAIN_YAML_PATH.fullmatch(kb_path) else json.dumps(kb_path, ensure_ascii=False),
        action=ACTION_REFERENCE,
    )


def create_exclusively(path: Path, text: str, what: str, command: str = "kb-eval init") -> Written:
    try:
        with open(path, "x", encoding="utf-8", newline="\n") as handle:
            handle.write(text)
    except FileExistsError:
        refuse_existing(path, "file", command)
        raise  # unreachable: refuse_existing raised
    except OSError as error:
        raise InputError(f"cannot write the file ({error.strerror})", file=str(path)) from error
    return Written(path, what)


def _slug(path: str) -> str:
    stem = path.rsplit("/", 1)[-1].rsplit(".", 1)[0]
    slug = re.sub(r"[^\w]+", "-", stem.lower()).strip("-")
    return slug or "doc"


def _starter_count(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
    if not 1 <= value <= MAX_STARTERS:
        raise argparse.ArgumentTypeError(f"{value} is not between 1 and {MAX_STARTERS}")
    return value
