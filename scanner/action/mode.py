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

import hashlib
import json
import os
import posixpath
import sys
import traceback
from collections.abc import Mapping
from pathlib import Path
from typing import IO

from scanner.action.event import EventInfo, read_event, source_links, with_pull_request_base
from scanner.action.inputs import ActionInputs, read_inputs
from scanner.action.workspace import hand_to_workspace_owner, make_parent_folders
from scanner.cli.main import RunResult, execute
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
    log_group,
    read_bool_input,
    write_annotations,
)
from scanner.render import console, phrases
from scanner.render.annotations import (
    base_not_compared_annotation,
    gate_not_run_annotation,
    input_error_annotation,
    report_annotations,
)
from scanner.render.markdown import SourceLinks, SummaryContext, comment_state, render_input_error, render_summary
from scanner.report.history import lock_path

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
        if error.rate_limited:
            return _warning(
                "kb-eval: pull-request comment not posted (rate limited)",
                f"{error}. GitHub's rate limit for this token is spent for now; the next run comments again. "
                "The step summary has the same text; the step's result is unaffected.",
            )
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


def _refused(error: InputError, environ: Mapping[str, str], stdout: IO[str]) -> int:
    """An input refused before the run: said in the log, the summary and an annotation; exit 2."""
    echo_untrusted(stdout, f"kb-eval: error: {error}\n")
    if _bool_or(environ, "summary", True) and environ.get("GITHUB_STEP_SUMMARY"):
        append_summary(environ["GITHUB_STEP_SUMMARY"], render_input_error(str(error)))
    write_annotations(stdout, [input_error_annotation(error)])
    return ExitCode.BAD_INPUT


def run_action(environ: Mapping[str, str], stdout: IO[str], stderr: IO[str]) -> int:
    """Action mode from start to finish; returns the exit code (the CLI's)."""
    workspace = Path(environ.get("GITHUB_WORKSPACE") or os.getcwd())
    try:
        inputs = read_inputs(environ, workspace)
    except InputError as error:
        return _refused(error, environ, stdout)

    # Paths are workspace-relative, as under the runner's --workdir /github/workspace.
    os.chdir(workspace)
    notes: list[Annotation] = []
    named = [(p, name) for p, name in ((inputs.report, "report"), (inputs.save_baseline, "save-baseline"),
                                        (inputs.history, "history")) if p is not None]
    if inputs.history is not None:
        named.append((str(lock_path(Path(inputs.history))), "history"))  # write_history's lock file
    if inputs.settings.cache_dir is not None:
        # The cache folder and file are written as root too; the next job restores and rewrites them.
        named.append((posixpath.join(inputs.settings.cache_dir.as_posix(), CACHE_FILE), "cache-dir"))
    written_paths = [path for path, _ in named]
    try:
        created = [folder for path, name in named for folder in make_parent_folders(workspace, path, name)]
    except InputError as error:
        return _refused(error, environ, stdout)
    event = read_event(environ)
    result = execute(with_pull_request_base(inputs.settings, event, environ))
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
        report = result.outcome.report
        if report.gate.tripped:
            echo_untrusted(stdout, console.regression_line(report.gate))
        if report.floors.failed:
            echo_untrusted(stdout, f"kb-eval: {phrases.floors_failed(report.floors)}\n")
        if report.costs.failed:
            echo_untrusted(stdout, f"kb-eval: {phrases.costs_failed(report.costs)}\n")


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
        # One error per reason the step fails: a tripped gate, a mean below its floor, an answer
        # over its budget (any of them, together).
        report = result.report
        failures = []
        if report.gate.tripped and report.gate.enforced:
            sentence = (
                f"{report.gate.reason}. fail-on-regression is true, so the step fails; "
                "the step summary and the JSON report have the deltas."
            )
            failures.append((sentence, "kb-eval: regression"))
        if report.floors.failed:
            failures.append((phrases.floors_failed(report.floors) + ".", "kb-eval: below the fail-under floor"))
        if report.costs.failed:
            failures.append((phrases.costs_failed(report.costs) + ".", "kb-eval: an answer over its budget"))
        always += [
            Annotation(AnnotationKind.ERROR, message, AnnotationProperties(title=title)) for message, title in failures
        ]
    elif result.report is not None and inputs.fail_on_regression and not result.report.gate.evaluated:
        always.append(gate_not_run_annotation(result.report))
    elif result.report is not None and (missed := base_not_compared_annotation(result.report)) is not None:
        always.append(missed)
    elif result.exit_code == ExitCode.INTERNAL:
        always.append(internal_error_annotation())
    content = report_annotations(result.report, inputs.kb_path) if inputs.annotations and result.report else []
    if not content or inputs.max_annotations == 0:
        return always
    # The operational ones first, so the budget never cuts them.
    return budget_annotations(always + content, inputs.max_annotations)


def internal_error_annotation() -> Annotation:
    """The one annotation of exit 3, whether the run caught its bug (the CLI printed it) or this
    process did (its traceback is printed just before)."""
    return Annotation(
        AnnotationKind.ERROR,
        "kb-eval stopped on an internal error (a bug, not your input); the log above has the details.",
        AnnotationProperties(title=phrases.INTERNAL_ERROR),
    )


def main(environ: Mapping[str, str] | None = None) -> int:
    """entrypoint.py's Action mode: any unexpected failure is exit 3 with its traceback in the log."""
    environ = os.environ if environ is None else environ
    try:
        return run_action(environ, sys.stdout, sys.stderr)
    except Exception:  # noqa: BLE001 - a bug must not pass for bad input or for success
        echo_untrusted(sys.stdout, phrases.internal_error_log(traceback.format_exc()))
        write_annotations(sys.stdout, [internal_error_annotation()])
        return ExitCode.INTERNAL
