"""Action mode: the `INPUT_*` variables become a CLI call, the run becomes annotations, a
summary, outputs and optionally a pull-request comment.

Thin on purpose. The eval is `scanner.cli.execute`, the very code of the
`kb-eval` command; the workflow protocol (escaping, commands, file commands)
is scanner/github.py; the annotations, the summary and the comment are their
own modules. What lives here is the translation and the order of events:

1. read and check the inputs (every declared input is set by the runner,
   defaults included; names keep their hyphens), refusing paths that leave
   the workspace;
2. run the CLI in-process on the translated arguments;
3. echo its text to the log with commands stopped (a pull request controls
   file names, headings and query ids, and `::add-mask::` in one of them
   would otherwise be obeyed);
4. write the report's ownership back to the workspace owner, the step
   summary, the PR comment, then the annotations and the outputs.

The exit status is the CLI's, unchanged: a finding never fails the step.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import posixpath
import re
import sys
import traceback
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from .cli import RunResult, build_parser, execute
from .errors import ExitCode, InputError
from .github import (
    GITHUB_ANNOTATIONS_PER_KIND_PER_STEP,
    Annotation,
    AnnotationKind,
    AnnotationProperties,
    append_output,
    append_summary,
    budget_annotations,
    commands_stopped,
    input_variable,
    read_bool_input,
    read_input,
    write_annotations,
)
from .pr_comment import CommentRefused, GitHubApi, PullRequest, marker_for, upsert_comment
from .render.annotations import gate_not_run_annotation, input_error_annotation, report_annotations
from .render.markdown import SourceLinks, SummaryContext, render_input_error, render_summary
from .run import Report

INPUT_DEFAULTS: Mapping[str, str] = {
    "kb-path": ".",
    "golden": "",
    "k": "1,5,10",
    "limit": "",
    "report": "kb-eval-report.json",
    "exclude": "",
    "history": "",
    "baseline": "",
    "save-baseline": "",
    "cache-dir": "",
    "fail-on-regression": "false",
    "regression-threshold": "0.05",
    "alpha": "",
    "annotations": "true",
    "max-annotations": str(GITHUB_ANNOTATIONS_PER_KIND_PER_STEP),
    "summary": "true",
    "comment": "false",
    "github-token": "",
    "retriever": "builtin",
    "http-url": "",
    "http-method": "POST",
    "http-body": "",
    "http-headers": "",
    "command": "",
    "run-file": "",
    "format": "text",
}
"""action.yml's defaults (tests/test_action_mode.py keeps them equal). The runner always sets
every input; these only fill in for a run outside a runner. `github-token`'s default is an
expression the runner evaluates, so outside a runner it is empty."""

RETRIEVERS = ("builtin", "http", "command", "run")
FORMATS = ("text", "json")
MAX_CUTOFF = 1000
MAX_ANNOTATIONS_INPUT = 1000
PULL_REQUEST_EVENTS = frozenset({"pull_request", "pull_request_target"})
MAX_EVENT_BYTES = 25 * 1024 * 1024
"""GitHub caps webhook payloads at 25 MB; a larger event file is not a payload."""
_SHA = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")


# --- inputs ------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ActionInputs:
    """The inputs, checked. Paths are relative to the workspace, `/`-separated, normalised."""

    kb_path: str
    golden: str | None
    k: tuple[int, ...]
    limit: int | None
    report: str
    exclude: tuple[str, ...]
    history: str | None
    baseline: str | None
    save_baseline: str | None
    cache_dir: str | None
    fail_on_regression: bool
    regression_threshold: float
    alpha: float | None
    annotations: bool
    max_annotations: int
    summary: bool
    comment: bool
    github_token: str
    retriever: str
    http_url: str | None
    http_method: str
    http_body: str | None
    http_headers: tuple[str, ...]
    command: str | None
    run_file: str | None
    format: str


def _raw(environ: Mapping[str, str], name: str) -> str:
    if input_variable(name) not in environ:
        return INPUT_DEFAULTS[name]
    return read_input(environ, name)


def _bool(environ: Mapping[str, str], name: str) -> bool:
    return read_bool_input(environ, name, default=INPUT_DEFAULTS[name] == "true")


def _int(environ: Mapping[str, str], name: str, low: int, high: int, text: str | None = None) -> int:
    text = _raw(environ, name) if text is None else text
    try:
        value = int(text)
    except ValueError:
        value = None
    if value is None or not low <= value <= high:
        raise InputError(
            f"input {name} is {text!r}, not a whole number from {low} to {high}",
            field=name,
            hint=f"set `{name}:` to a number such as {INPUT_DEFAULTS[name] or high // 100}",
        )
    return value


def _float(environ: Mapping[str, str], name: str, low: float, high: float, *, low_open: bool, high_open: bool) -> float:
    text = _raw(environ, name)
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    above = value > low if low_open else value >= low
    below = value < high if high_open else value <= high
    if not (math.isfinite(value) and above and below):
        interval = f"{'(' if low_open else '['}{low:g}, {high:g}{')' if high_open else ']'}"
        raise InputError(
            f"input {name} is {text!r}, not a number in {interval}",
            field=name,
            hint=f"set `{name}:` to a number such as 0.05",
        )
    return value


def _choice(environ: Mapping[str, str], name: str, choices: Sequence[str]) -> str:
    value = _raw(environ, name)
    if value not in choices:
        raise InputError(f"input {name} is {value!r}", field=name, hint=f"use one of: {', '.join(choices)}")
    return value


def _lines(environ: Mapping[str, str], name: str) -> tuple[str, ...]:
    """A multi-line input: one item per non-blank line, each trimmed."""
    return tuple(line.strip() for line in _raw(environ, name).splitlines() if line.strip())


def workspace_path(workspace: Path, raw: str, name: str) -> str:
    """`raw` (relative to the workspace, or absolute inside it) as a normalised relative path.

    Refused with an InputError (exit 2): a path that leaves the workspace,
    by `..`, by being absolute elsewhere, or through a symbolic link that
    resolves outside it. The action must read only the checked-out
    repository, and write only there (its files are handed to the
    workspace owner afterwards). A line break is refused too: one path per
    input, and a `|` block in YAML is the usual way to get one by mistake.
    """
    if "\n" in raw or "\r" in raw or "\0" in raw:
        raise InputError(
            f"input {name} holds a line break or NUL; give one path",
            field=name,
            hint="write the path on one line (a `|` block in the workflow adds a line break)",
        )
    root = workspace.resolve()
    relative: str | None
    if os.path.isabs(raw):
        # /github/workspace/x names the workspace by its own path, or by the resolved one.
        absolute = posixpath.normpath(raw)
        relative = None
        for base in (posixpath.normpath(workspace.as_posix()), root.as_posix()):
            if absolute == base or absolute.startswith(base.rstrip("/") + "/"):
                relative = posixpath.relpath(absolute, base)
                break
    else:
        relative = posixpath.normpath(raw)
    # The lexical form is what the CLI is given; the resolved form is where it really leads.
    leaves = relative is None or relative == ".." or relative.startswith("../")
    if not leaves:
        resolved = (root / str(relative)).resolve()
        leaves = resolved != root and root not in resolved.parents
    if leaves or relative is None:
        raise InputError(
            f"input {name} is {raw!r}, which points outside the workspace ({workspace})",
            field=name,
            hint="give a path inside the repository checkout, relative to its root (symbolic links included)",
        )
    return relative


def _optional_path(environ: Mapping[str, str], workspace: Path, name: str) -> str | None:
    raw = _raw(environ, name)
    return workspace_path(workspace, raw, name) if raw else None


def read_inputs(environ: Mapping[str, str], workspace: Path) -> ActionInputs:
    """Every input, checked; the first bad one raises an InputError naming it."""
    k_text = _raw(environ, "k")
    k = tuple(_int(environ, "k", 1, MAX_CUTOFF, part.strip()) for part in k_text.split(",") if part.strip())
    if not k:
        raise InputError("input k is empty", field="k", hint="give cut-offs such as 1,5,10")
    limit_text = _raw(environ, "limit")
    report = _raw(environ, "report")
    if not report:
        raise InputError(
            "input report is empty", field="report", hint="name the JSON report file, e.g. kb-eval-report.json"
        )
    alpha_text = _raw(environ, "alpha")
    return ActionInputs(
        kb_path=workspace_path(workspace, _raw(environ, "kb-path") or ".", "kb-path"),
        golden=_optional_path(environ, workspace, "golden"),
        k=k,
        limit=_int(environ, "limit", 1, MAX_CUTOFF) if limit_text else None,
        report=workspace_path(workspace, report, "report"),
        exclude=_lines(environ, "exclude"),
        history=_optional_path(environ, workspace, "history"),
        baseline=_optional_path(environ, workspace, "baseline"),
        save_baseline=_optional_path(environ, workspace, "save-baseline"),
        cache_dir=_optional_path(environ, workspace, "cache-dir"),
        fail_on_regression=_bool(environ, "fail-on-regression"),
        regression_threshold=_float(environ, "regression-threshold", 0.0, 1.0, low_open=False, high_open=True),
        alpha=_float(environ, "alpha", 0.0, 1.0, low_open=True, high_open=False) if alpha_text else None,
        annotations=_bool(environ, "annotations"),
        max_annotations=_int(environ, "max-annotations", 0, MAX_ANNOTATIONS_INPUT),
        summary=_bool(environ, "summary"),
        comment=_bool(environ, "comment"),
        github_token=_raw(environ, "github-token"),
        retriever=_choice(environ, "retriever", RETRIEVERS),
        http_url=_raw(environ, "http-url") or None,
        http_method=_raw(environ, "http-method") or INPUT_DEFAULTS["http-method"],
        http_body=_raw(environ, "http-body") or None,
        http_headers=_lines(environ, "http-headers"),
        command=_raw(environ, "command") or None,
        run_file=_optional_path(environ, workspace, "run-file"),
        format=_choice(environ, "format", FORMATS),
    )


# --- inputs -> CLI arguments -----------------------------------------------------------


def option_strings(parser: argparse.ArgumentParser) -> frozenset[str]:
    """Every flag the CLI's parser knows (argparse has no public accessor for this)."""
    return frozenset(parser._option_string_actions)


def cli_arguments(inputs: ActionInputs, flags: frozenset[str]) -> tuple[list[str], list[str]]:
    """The CLI argument list for `inputs`, and the inputs that were set but have no flag yet.

    `--flag=value` throughout, so a value starting with `-` is never taken for
    a flag. The history and gate flags are passed only when this CLI has them.
    """
    argv = [f"--kb-path={inputs.kb_path}", "--k=" + ",".join(map(str, inputs.k)), f"--format={inputs.format}"]
    argv.append(f"--output={inputs.report}")
    if inputs.golden is not None:
        argv.append(f"--golden={inputs.golden}")
    if inputs.limit is not None:
        argv.append(f"--limit={inputs.limit}")
    argv += [f"--exclude={pattern}" for pattern in inputs.exclude]
    if inputs.cache_dir is not None:
        argv.append(f"--cache-dir={inputs.cache_dir}")

    argv.append(f"--retriever={inputs.retriever}")
    if inputs.http_url is not None:
        argv.append(f"--http-url={inputs.http_url}")
    # http-method has a non-empty default, so it is passed only where it applies (or was changed,
    # so that the CLI can refuse it for another retriever).
    if inputs.retriever == "http" or inputs.http_method != INPUT_DEFAULTS["http-method"]:
        argv.append(f"--http-method={inputs.http_method}")
    if inputs.http_body is not None:
        argv.append(f"--http-body={inputs.http_body}")
    argv += [f"--http-header={header}" for header in inputs.http_headers]
    if inputs.command is not None:
        argv.append(f"--command={inputs.command}")
    if inputs.run_file is not None:
        argv.append(f"--run={inputs.run_file}")

    ignored: list[str] = []

    def pass_if_known(input_name: str, flag: str, value: str | None, is_set: bool) -> None:
        if flag in flags:
            if is_set:
                argv.append(flag if value is None else f"{flag}={value}")
        elif is_set:
            ignored.append(input_name)

    pass_if_known("history", "--history", inputs.history, inputs.history is not None)
    if inputs.history is None and "--no-history" in flags:
        argv.append("--no-history")  # action.yml: an empty history input keeps no history
    pass_if_known("baseline", "--baseline", inputs.baseline, inputs.baseline is not None)
    pass_if_known("save-baseline", "--save-baseline", inputs.save_baseline, inputs.save_baseline is not None)
    pass_if_known("fail-on-regression", "--fail-on-regression", None, inputs.fail_on_regression)
    threshold_changed = inputs.regression_threshold != float(INPUT_DEFAULTS["regression-threshold"])
    if "--regression-threshold" in flags:
        argv.append(f"--regression-threshold={inputs.regression_threshold!r}")
    elif threshold_changed:
        ignored.append("regression-threshold")
    pass_if_known("alpha", "--alpha", repr(inputs.alpha), inputs.alpha is not None)
    return argv, ignored


# --- the event, and where files can be linked ---------------------------------------------


@dataclass(frozen=True, slots=True)
class EventInfo:
    pull_number: int | None
    """The pull request's number, when the event is a pull request."""
    head_sha: str | None
    """The pull request's head commit (GITHUB_SHA is the merge commit on a pull request)."""
    problem: str | None
    """Why the payload could not be used, else None."""


def read_event(environ: Mapping[str, str]) -> EventInfo:
    path = environ.get("GITHUB_EVENT_PATH")
    if not path:
        return EventInfo(None, None, "GITHUB_EVENT_PATH is not set")
    try:
        with open(path, "rb") as file:
            data = file.read(MAX_EVENT_BYTES + 1)
        if len(data) > MAX_EVENT_BYTES:
            raise ValueError("larger than a webhook payload can be")
        payload = json.loads(data)
    except (OSError, ValueError) as error:
        return EventInfo(None, None, f"the event payload {path} cannot be read ({error})")
    if not isinstance(payload, dict):
        return EventInfo(None, None, f"the event payload {path} is not a JSON object")
    pull = payload.get("pull_request")
    if not isinstance(pull, dict):
        if environ.get("GITHUB_EVENT_NAME") in PULL_REQUEST_EVENTS:
            return EventInfo(None, None, f"the {environ.get('GITHUB_EVENT_NAME')} payload has no pull_request")
        return EventInfo(None, None, None)
    number = pull.get("number", payload.get("number"))
    head = pull.get("head")
    sha = head.get("sha") if isinstance(head, dict) else None
    return EventInfo(
        number if isinstance(number, int) and not isinstance(number, bool) and number > 0 else None,
        sha if isinstance(sha, str) and _SHA.fullmatch(sha) else None,
        None if isinstance(number, int) else "the pull_request payload has no number",
    )


def source_links(environ: Mapping[str, str], event: EventInfo) -> SourceLinks | None:
    server = environ.get("GITHUB_SERVER_URL", "")
    repository = environ.get("GITHUB_REPOSITORY", "")
    sha = event.head_sha or environ.get("GITHUB_SHA", "")
    if not server.startswith(("https://", "http://")) or repository.count("/") != 1 or not _SHA.fullmatch(sha):
        return None
    run_id = environ.get("GITHUB_RUN_ID", "")
    return SourceLinks(server, repository, sha, run_id if run_id.isascii() and run_id.isdigit() else None)


# --- files handed back to the workspace owner ----------------------------------------------------


def make_parent_folders(workspace: Path, relative: str) -> list[Path]:
    """Create the missing folders above `relative`; returns those created (outermost first)."""
    created: list[Path] = []
    parent = (workspace / relative).parent
    missing = []
    while not parent.exists() and parent != workspace:
        missing.append(parent)
        parent = parent.parent
    for folder in reversed(missing):
        folder.mkdir()
        created.append(folder)
    return created


def hand_to_workspace_owner(workspace: Path, paths: Sequence[Path]) -> None:
    """chown what this run wrote to the owner of the workspace.

    The container runs as root while the runner's later steps (and the next
    checkout) run as the runner user, who could then neither delete nor
    replace a root-owned file in the workspace (docs/runner-contract.md#user-and-file-ownership). Outside a
    container the files already belong to whoever runs this.
    """
    owner = os.stat(workspace)
    for path in paths:
        try:
            status = os.lstat(path)
        except FileNotFoundError:
            continue
        if (status.st_uid, status.st_gid) != (owner.st_uid, owner.st_gid):
            try:
                os.lchown(path, owner.st_uid, owner.st_gid)
            except PermissionError:
                pass  # not root: the file is ours, and ours is what the next step will be too


# --- the run -------------------------------------------------------------------------


def _warning(title: str, message: str) -> Annotation:
    return Annotation(AnnotationKind.WARNING, message, AnnotationProperties(title=title))


def comment_key(inputs: ActionInputs) -> str:
    """Tells apart the comments of several kb-eval steps (different KBs) on one pull request."""
    return hashlib.sha256(f"{inputs.kb_path}\0{inputs.golden or ''}".encode()).hexdigest()[:12]


def post_comment(
    environ: Mapping[str, str], inputs: ActionInputs, event: EventInfo, markdown: str, stderr: IO[str]
) -> Annotation | None:
    """Create or update the pull-request comment; a warning annotation when that was not possible."""
    if event.problem is not None:
        stderr.write("kb-eval: no pull-request comment: the event payload cannot be used\n")
        return None  # the payload warning already says why
    if event.pull_number is None:
        stderr.write(
            f"kb-eval: no pull-request comment: the event is {environ.get('GITHUB_EVENT_NAME') or 'unknown'}, "
            "not a pull request\n"
        )
        return None
    repository = environ.get("GITHUB_REPOSITORY", "")
    if not inputs.github_token or repository.count("/") != 1:
        return _warning(
            "kb-eval: pull-request comment not posted",
            "comment is true but "
            + ("the github-token input is empty" if not inputs.github_token else "GITHUB_REPOSITORY is not set")
            + "; the step summary has the same text.",
        )
    api = GitHubApi(environ.get("GITHUB_API_URL") or "https://api.github.com", inputs.github_token)
    pull = PullRequest(api.api_url, repository, event.pull_number)
    try:
        posted = upsert_comment(api, pull, marker_for(comment_key(inputs)), markdown)
    except CommentRefused as error:
        hint = ""
        if error.status in (401, 403, 404):
            hint = (
                " The token may lack `pull-requests: write` and `issues: write` (declare both under "
                "`permissions:`), or the pull request comes from a fork, whose token is read-only."
            )
        return _warning(
            "kb-eval: pull-request comment not posted",
            f"{error}.{hint} The step summary has the same text; the step's result is unaffected.",
        )
    stderr.write(f"kb-eval: pull-request comment {'created' if posted.created else 'updated'} on #{pull.number}\n")
    return None


def write_outputs(path: str, report: Report, report_path: str) -> None:
    run = report.run
    values = {
        "report": report_path,
        "query-count": str(run.aggregate.query_count),
        "mrr": repr(float(run.aggregate.mrr)),
        "recall": repr(float(run.aggregate.recall_at_k[run.largest_k])),
        "ndcg": repr(float(run.aggregate.ndcg_at_k[run.largest_k])),
        "findings-count": str(len(run.findings)),
        "regressed": "true" if report.gate.tripped else "false",
    }
    for name, value in values.items():
        append_output(path, name, value)


def echo_untrusted(stdout: IO[str], text: str) -> None:
    """The CLI's own text (diagnostics, the finding warning, the report) with commands stopped.

    One stream on purpose: the runner reads stdout and stderr concurrently, so
    text on stderr could be processed after the resume line on stdout.
    """
    if text:
        with commands_stopped(stdout) as writer:
            writer.write(text)


def run_action(environ: Mapping[str, str], stdout: IO[str], stderr: IO[str]) -> int:
    """Action mode from start to finish; returns the exit code (the CLI's)."""
    workspace = Path(environ.get("GITHUB_WORKSPACE") or os.getcwd())
    try:
        inputs = read_inputs(environ, workspace)
    except InputError as error:
        echo_untrusted(stdout, f"kb-eval: error: {error}\n")
        if _bool_or(environ, "summary", True) and environ.get("GITHUB_STEP_SUMMARY"):
            append_summary(environ["GITHUB_STEP_SUMMARY"], render_input_error(str(error)))
        write_annotations(stdout, [input_error_annotation(error)])
        return ExitCode.BAD_INPUT

    # Paths are workspace-relative, as under the runner's --workdir /github/workspace.
    os.chdir(workspace)
    argv, ignored = cli_arguments(inputs, option_strings(build_parser()))
    notes: list[Annotation] = []
    if ignored:
        notes.append(
            _warning(
                "kb-eval: inputs ignored",
                f"This version of kb-eval has no support yet for the input(s) {', '.join(ignored)}; they were ignored.",
            )
        )
    written_paths = [p for p in (inputs.report, inputs.save_baseline, inputs.history) if p is not None]
    created = [folder for path in written_paths for folder in make_parent_folders(workspace, path)]
    result = execute(argv)
    echo_untrusted(stdout, result.stderr_text + result.stdout_text)
    hand_to_workspace_owner(workspace, [*created, *(workspace / path for path in written_paths)])

    event = read_event(environ)
    if event.problem is not None and (inputs.comment or "GITHUB_EVENT_PATH" in environ):
        consequence = "no pull-request comment" if inputs.comment else "summary links point at GITHUB_SHA"
        notes.append(_warning("kb-eval: event payload not usable", f"{event.problem}; {consequence}."))
    markdown = _summary_markdown(result, inputs, source_links(environ, event))
    if inputs.summary and markdown is not None and environ.get("GITHUB_STEP_SUMMARY"):
        append_summary(environ["GITHUB_STEP_SUMMARY"], markdown)
    if inputs.comment and result.report is not None and markdown is not None:
        refused = post_comment(environ, inputs, event, markdown, stderr)
        if refused is not None:
            notes.append(refused)

    write_annotations(stdout, _annotations(result, inputs, notes))
    if result.report is not None and environ.get("GITHUB_OUTPUT"):
        write_outputs(environ["GITHUB_OUTPUT"], result.report, inputs.report)
    return result.exit_code


def _bool_or(environ: Mapping[str, str], name: str, fallback: bool) -> bool:
    try:
        return _bool(environ, name)
    except InputError:
        return fallback


def _summary_markdown(result: RunResult, inputs: ActionInputs, links: SourceLinks | None) -> str | None:
    if result.outcome is not None:
        context = SummaryContext(
            kb_path=inputs.kb_path,
            report_path=inputs.report,
            links=links,
            history=result.outcome.history,
            gate_requested=inputs.fail_on_regression,
        )
        return render_summary(result.outcome.report, context)
    if result.input_error is not None:
        return render_input_error(str(result.input_error))
    return None


def _annotations(result: RunResult, inputs: ActionInputs, notes: list[Annotation]) -> list[Annotation]:
    always = list(notes)
    if result.input_error is not None:
        always.append(input_error_annotation(result.input_error))
    elif result.exit_code == ExitCode.REGRESSION and result.report is not None:
        always.append(
            Annotation(
                AnnotationKind.ERROR,
                f"{result.report.gate.reason}. fail-on-regression is true, so the step fails; "
                "the step summary and the JSON report have the deltas.",
                AnnotationProperties(title="kb-eval: regression"),
            )
        )
    elif result.report is not None and inputs.fail_on_regression and not result.report.gate.evaluated:
        always.append(gate_not_run_annotation(result.report))
    elif result.exit_code == ExitCode.INTERNAL:
        always.append(
            Annotation(
                AnnotationKind.ERROR,
                "kb-eval stopped on an internal error (a bug, not your input); the log above has the details.",
                AnnotationProperties(title="kb-eval: internal error"),
            )
        )
    content = report_annotations(result.report, inputs.kb_path) if inputs.annotations and result.report else []
    if not content or inputs.max_annotations == 0:
        return always
    # The operational ones first, so the budget never cuts them.
    return budget_annotations(always + content, inputs.max_annotations)


def main(environ: Mapping[str, str] | None = None) -> int:
    """entrypoint.py's Action mode: any unexpected failure is exit 3 with its traceback in the log."""
    environ = os.environ if environ is None else environ
    try:
        return run_action(environ, sys.stdout, sys.stderr)
    except Exception:  # noqa: BLE001 - a bug must not pass for bad input or for success
        echo_untrusted(sys.stdout, "kb-eval: internal error (please report this):\n" + traceback.format_exc())
        write_annotations(
            sys.stdout,
            [
                Annotation(
                    AnnotationKind.ERROR,
                    "kb-eval stopped on an internal error (a bug, not your input); the log above has the traceback.",
                    AnnotationProperties(title="kb-eval: internal error"),
                )
            ],
        )
        return ExitCode.INTERNAL
