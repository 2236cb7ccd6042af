"""Action mode: the `INPUT_*` variables become a CLI call, the run becomes annotations, a
summary, outputs and optionally a pull-request comment.

Thin on purpose. The eval is `scanner.cli.main.execute`, the very code of the
`kb-eval` command; the workflow protocol (escaping, commands, file commands)
is scanner/github/workflow.py; the annotations, the summary and the comment are their
own modules. What lives here is the translation and the order of events:

1. read and check the inputs, walking the settings' declarations
   (scanner/settings/declaration.py; every declared input is set by the runner,
   defaults included; names keep their hyphens), refusing paths that leave
   the workspace; a refusal names the input as the workflow spells it;
2. run the CLI in-process on the settings read (checked once, here);
3. echo its text to the log with commands stopped (a pull request controls
   file names, headings and query ids, and `::add-mask::` in one of them
   would otherwise be obeyed);
4. write the report's ownership back to the workspace owner, the step
   summary, the PR comment, then the annotations and the outputs.

The exit status is the CLI's, unchanged: a finding never fails the step.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import posixpath
import re
import sys
import traceback
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from scanner.cli.main import RunResult, execute
from scanner.compare.comparison import BaseRequest, Origin
from scanner.compare.report import Report
from scanner.corpus.parse_cache import CACHE_FILE
from scanner.evaluation.records import RunRecord
from scanner.foundation.errors import ExitCode, InputError
from scanner.github.comment import CommentMode, CommentRefused, GitHubApi, PullRequest, marker_for, upsert_comment
from scanner.github.workflow import (
    Annotation,
    AnnotationKind,
    AnnotationProperties,
    append_output,
    append_summary,
    budget_annotations,
    commands_stopped,
    input_variable,
    log_group,
    read_bool_input,
    read_input,
    write_annotations,
)
from scanner.render import console
from scanner.render.annotations import (
    base_not_compared_annotation,
    gate_not_run_annotation,
    input_error_annotation,
    report_annotations,
)
from scanner.render.markdown import SourceLinks, SummaryContext, comment_state, render_input_error, render_summary
from scanner.report.history import lock_path
from scanner.settings.declaration import SETTINGS, Form, Interface, RunSettings, Setting, convert, run_settings
from scanner.settings.retriever import choose_kind

PULL_REQUEST_EVENTS = frozenset({"pull_request", "pull_request_target"})
MAX_EVENT_BYTES = 25 * 1024 * 1024
"""GitHub caps webhook payloads at 25 MB; a larger event file is not a payload."""
_SHA = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")


# --- inputs ------------------------------------------------------------------------


def _outside_a_runner(default: str) -> str:
    # An expression default (`${{ github.token }}`) is evaluated by the runner only; outside a
    # runner the input is simply not set.
    return "" if "${{" in default else default


INPUT_DEFAULTS: Mapping[str, str] = {
    spec.name: _outside_a_runner(spec.action_default_text) for spec in SETTINGS if spec.action
}
"""action.yml's defaults, derived from the same declarations (scanner/settings/declaration.py). The runner
always sets every input; these only fill in for a run outside a runner."""


@dataclass(frozen=True, slots=True)
class ActionInputs:
    """The inputs, checked: the run's settings and the Action's own.

    Paths are relative to the workspace, `/`-separated, normalised.
    """

    settings: RunSettings
    """What `kb-eval` runs with, read from the inputs (`interface` is ACTION)."""
    annotations: bool
    max_annotations: int
    summary: bool
    comment: CommentMode
    github_token: str

    @property
    def kb_path(self) -> str:
        return self.settings.kb_path.as_posix()

    @property
    def golden(self) -> str | None:
        return _posix(self.settings.golden)

    @property
    def report(self) -> str:
        # The report input has a non-empty default and an empty value means that default.
        assert self.settings.output is not None
        return self.settings.output.as_posix()

    @property
    def history(self) -> str | None:
        return _posix(self.settings.history)

    @property
    def save_baseline(self) -> str | None:
        return _posix(self.settings.save_baseline)

    @property
    def fail_on_regression(self) -> bool:
        return self.settings.fail_on_regression


def _posix(path: Path | None) -> str | None:
    return None if path is None else path.as_posix()


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
        try:
            resolved = (root / str(relative)).resolve()
        except (RuntimeError, OSError) as error:  # RuntimeError: a symbolic link loop (Python 3.11)
            raise InputError(
                f"input {name} is {raw!r}, which cannot be followed ({_why_unresolvable(error)})",
                field=name,
                hint="give a path inside the repository checkout that is not a loop of symbolic links",
            ) from None
        leaves = resolved != root and root not in resolved.parents
    if leaves or relative is None:
        raise InputError(
            f"input {name} is {raw!r}, which points outside the workspace ({workspace})",
            field=name,
            hint="give a path inside the repository checkout, relative to its root (symbolic links included)",
        )
    return relative


def _why_unresolvable(error: BaseException) -> str:
    if isinstance(error, OSError) and error.strerror:
        return error.strerror
    return "a loop of symbolic links"


def _spelling(environ: Mapping[str, str], spec: Setting) -> tuple[str, str]:
    """The input's text and the spelling it was given under (an alias such as `output`, or the name).

    The runner sets every declared input, aliases to "" by default; an alias set
    to something else stands in for the name, unless both say different things.
    """
    name = spec.name
    text = read_input(environ, name) if input_variable(name) in environ else INPUT_DEFAULTS[name]
    for alias in spec.aliases:
        other = read_input(environ, alias)
        if not other or other == text:
            continue
        if text not in ("", INPUT_DEFAULTS[name]):
            raise InputError(
                f"inputs {name} and {alias} are both set, to different values",
                field=name,
                hint=f"{alias} is another spelling of {name}: keep one",
            )
        return other, alias
    return text, name


def _value(environ: Mapping[str, str], workspace: Path, spec: Setting) -> tuple[Any, bool]:
    """One input's value and whether it was given (set to other than its default)."""
    if spec.form is Form.SWITCH:
        value = read_bool_input(environ, spec.name, default=bool(spec.default))
        return value, value != spec.default
    text, spelling = _spelling(environ, spec)
    if spec.form is Form.LIST:
        items = tuple(line.strip() for line in text.splitlines() if line.strip())
        return tuple(convert(spec, item, Interface.ACTION) for item in items), bool(items)
    # An empty input means its default: `with: limit: ${{ inputs.limit }}` passes "" when unset.
    default_text = INPUT_DEFAULTS[spec.name]
    if text in ("", default_text):
        if spec.action_default is None or not default_text:
            return spec.default, False
        text = default_text
    if spec.path:
        text = workspace_path(workspace, text, spelling)
    return convert(spec, text, Interface.ACTION), text != default_text


def _no_history_unless_named(values: dict[str, Any], given: list[str]) -> None:
    """An empty history input keeps no history: a workflow's files are gone after the job, so a
    default history file in the KB folder would be written for nothing (the CLI's default)."""
    if values.get("history") is None:
        values["no_history"] = True
        given.append("no-history")


def read_inputs(environ: Mapping[str, str], workspace: Path) -> ActionInputs:
    """Every input, checked once, in declaration order; the first bad one raises an InputError naming it."""
    values: dict[str, Any] = {}
    given: list[str] = []
    for spec in SETTINGS:
        if not spec.action:
            continue
        values[spec.attribute], is_given = _value(environ, workspace, spec)
        if is_given and spec.cli:
            given.append(spec.name)
    _no_history_unless_named(values, given)
    run = run_settings(values, given, Interface.ACTION)
    choose_kind(run)  # a setting of another retriever, named as an input
    return ActionInputs(
        settings=run,
        annotations=values["annotations"],
        max_annotations=values["max_annotations"],
        summary=values["summary"],
        comment=values["comment"],
        github_token=values["github_token"],
    )


# --- the event, and where files can be linked ---------------------------------------------


@dataclass(frozen=True, slots=True)
class EventInfo:
    pull_number: int | None
    """The pull request's number, when the event is a pull request."""
    head_sha: str | None
    """The pull request's head commit (GITHUB_SHA is the merge commit on a pull request)."""
    problem: str | None
    """Why the payload could not be used, else None."""
    base_sha: str | None = None
    """The pull request's base commit (`pull_request.base.sha`)."""
    base_ref: str | None = None
    """The pull request's base branch (`pull_request.base.ref`), for the "compared with" line."""


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
    base = pull.get("base")
    base_sha = base.get("sha") if isinstance(base, dict) else None
    base_ref = base.get("ref") if isinstance(base, dict) else None
    return EventInfo(
        number if isinstance(number, int) and not isinstance(number, bool) and number > 0 else None,
        sha if isinstance(sha, str) and _SHA.fullmatch(sha) else None,
        None if isinstance(number, int) else "the pull_request payload has no number",
        base_sha if isinstance(base_sha, str) and _SHA.fullmatch(base_sha) else None,
        base_ref if isinstance(base_ref, str) and 0 < len(base_ref) <= 255 and base_ref.isprintable() else None,
    )


def with_pull_request_base(settings: RunSettings, event: EventInfo, environ: Mapping[str, str]) -> RunSettings:
    """Issue 17: on a pull request with neither `baseline` nor `baseline-ref`, compare with the pull
    request's base commit, evaluated in this job. Origin.PULL_REQUEST: the user named nothing, so a
    shallow checkout without that commit is a warning, never exit 2."""
    if settings.baseline is not None or settings.baseline_ref is not None or event.base_sha is None:
        return settings
    if environ.get("GITHUB_EVENT_NAME") not in PULL_REQUEST_EVENTS:
        return settings
    return dataclasses.replace(settings, baseline_ref=BaseRequest(event.base_sha, Origin.PULL_REQUEST, event.base_ref))


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
    environ: Mapping[str, str], inputs: ActionInputs, event: EventInfo, markdown: str, state: str, stderr: IO[str]
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
            f"comment is {inputs.comment.value} but "
            + ("the github-token input is empty" if not inputs.github_token else "GITHUB_REPOSITORY is not set")
            + "; the step summary has the same text.",
        )
    api = GitHubApi(environ.get("GITHUB_API_URL") or "https://api.github.com", inputs.github_token)
    pull = PullRequest(api.api_url, repository, event.pull_number)
    try:
        posted = upsert_comment(
            api, pull, marker_for(comment_key(inputs)), markdown,
            state=state, only_on_change=inputs.comment is CommentMode.ON_CHANGE,
        )
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
    done = "left as it was (nothing changed)" if posted.unchanged else "created" if posted.created else "updated"
    stderr.write(f"kb-eval: pull-request comment {done} on #{pull.number}\n")
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
    notes: list[Annotation] = []
    written_paths = [p for p in (inputs.report, inputs.save_baseline, inputs.history) if p is not None]
    if inputs.history is not None:
        written_paths.append(str(lock_path(Path(inputs.history))))  # write_history's lock file
    if inputs.settings.cache_dir is not None:
        # The cache folder and file are written as root too; the next job restores and rewrites them.
        written_paths.append(posixpath.join(inputs.settings.cache_dir.as_posix(), CACHE_FILE))
    created = [folder for path in written_paths for folder in make_parent_folders(workspace, path)]
    event = read_event(environ)
    result = execute(with_pull_request_base(inputs.settings, event, environ))  # issue 17
    echo_log(stdout, result)
    hand_to_workspace_owner(workspace, [*created, *(workspace / path for path in written_paths)])

    commenting = inputs.comment is not CommentMode.OFF
    if event.problem is not None and (commenting or "GITHUB_EVENT_PATH" in environ):
        consequence = "no pull-request comment" if commenting else "summary links point at GITHUB_SHA"
        notes.append(_warning("kb-eval: event payload not usable", f"{event.problem}; {consequence}."))
    markdown = _summary_markdown(result, inputs, source_links(environ, event))
    if inputs.summary and markdown is not None and environ.get("GITHUB_STEP_SUMMARY"):
        append_summary(environ["GITHUB_STEP_SUMMARY"], markdown)
    if commenting and result.report is not None and markdown is not None:
        refused = post_comment(environ, inputs, event, markdown, comment_state(result.report), stderr)
        if refused is not None:
            notes.append(refused)

    write_annotations(stdout, _annotations(result, inputs, notes))
    if result.report is not None and environ.get("GITHUB_OUTPUT"):
        write_outputs(environ["GITHUB_OUTPUT"], result.report, inputs.report)
    return result.exit_code


def echo_log(stdout: IO[str], result: RunResult) -> None:
    """The run's text in folds a reader opens as needed: settings, warnings, results.

    Findings are printed once, in the results (the report lists them, displacing ones first);
    the stderr warning that repeats them is for a terminal, not a log with annotations.
    A run that stopped (exit 2 or 3) prints everything unfolded: the error is what matters."""
    if result.outcome is None:
        echo_untrusted(stdout, result.stderr_text + result.stdout_text)
        return
    run = result.outcome.report.run
    with log_group(stdout, "kb-eval: settings"):
        echo_untrusted(stdout, settings_text(run))
    if result.diagnostics:
        with log_group(stdout, f"kb-eval: {len(result.diagnostics)} warning(s)"):
            echo_untrusted(stdout, "".join(console.diagnostic_line(d) + "\n" for d in result.diagnostics))
    with log_group(stdout, "kb-eval: results"):
        echo_untrusted(stdout, result.stdout_text)
    if result.exit_code == ExitCode.REGRESSION:
        echo_untrusted(stdout, console.regression_line(result.outcome.report.gate))


def settings_text(run: RunRecord) -> str:
    """What the numbers depend on: the fingerprint, which never holds a secret (Retriever.describe)."""
    return "".join(f"{key}: {json.dumps(value, sort_keys=True)}\n" for key, value in run.fingerprint.items())


def _bool_or(environ: Mapping[str, str], name: str, fallback: bool) -> bool:
    try:
        return read_bool_input(environ, name, default=fallback)
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
    elif result.report is not None and (missed := base_not_compared_annotation(result.report)) is not None:
        always.append(missed)
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
