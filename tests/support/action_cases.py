"""Workspaces for the Action-mode tests, and what the runner makes of a step's log.

Shared by tests/action/test_mode.py (entrypoint.py as a subprocess) and
tests/action/test_container.py (the image under podman), so both run the
same cases and can be compared field by field.
"""

from __future__ import annotations

import io
import os
import runpy
import subprocess
import sys
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager, redirect_stderr, redirect_stdout
from dataclasses import dataclass
from pathlib import Path

from tests.conftest import REPO, Launch, golden_yaml, write_tree
from tests.support.container import ActionRun, RunnerLayout, input_environment
from tests.support.runner_log import RunnerLog, parse_env_file, parse_log

HEAD_SHA = "a" * 40
"""The pull request's head commit in `pull_request_event()`; GITHUB_SHA (the merge commit) is c*40."""
KB = "docs/kb"
"""The KB sits in a subfolder, so annotation paths must be joined onto it."""
OUTPUT_NAMES = ["report", "query-count", "mrr", "recall", "ndcg", "findings-count", "regressed"]

Q_ROLLBACK = "how do I roll back a database migration"
Q_TAGS = "which tag do container images get"
Q_SPLIT = "where are documents split into sections"

GUIDES = {
    "guides/deploy.md": (
        "# Deploy\n\n## Database\nTo roll back a database migration, run the down script of the release.\n\n"
        "## Images\nContainer images get the commit sha as their tag when the build passes.\n"
    ),
    "guides/search.md": "# Search\n\n## Chunking\nDocuments are split into sections at every heading.\n",
}
GOLDEN = golden_yaml(
    ("rollback", Q_ROLLBACK, ["guides/deploy.md"]),
    ("image-tags", Q_TAGS, ["guides/deploy.md"]),
    ("chunking", Q_SPLIT, ["guides/search.md"]),
)
LEAK_NOTE = f"# Eval notes\n\nQuestions we test with:\n- {Q_ROLLBACK}\n- {Q_TAGS}\n"
"""Quotes two golden queries: the first quotation is on line 4, column 3."""


def clean_workspace(workspace: Path) -> None:
    write_tree(workspace / KB, {**GUIDES, ".kb-eval.yml": GOLDEN})
    write_tree(workspace, {"README.md": "# repo\n"})


def finding_workspace(workspace: Path, leaks: int = 1) -> None:
    clean_workspace(workspace)
    write_tree(workspace / KB, {f"notes/leak-{n}.md": LEAK_NOTE for n in range(leaks)})


def run_entrypoint(
    launch: Launch,
    layout: RunnerLayout,
    inputs: Mapping[str, str],
    extra_env: Mapping[str, str] | None = None,
    timeout: float = 120,
    args: Sequence[str] = (),
) -> ActionRun:
    """entrypoint.py as the runner would start it, minus the container: same variables, host paths.

    No argument, cwd = the workspace (the runner's --workdir), and nothing of
    this test process's environment but PATH. `timeout` bounds a subprocess only.
    """
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), **layout.host_environment()}
    env.update(input_environment(inputs))
    env.update(extra_env or {})
    returncode, stdout, stderr = run_entrypoint_script(launch, layout.workspace, env, args, timeout)
    return ActionRun(
        returncode=returncode,
        stdout=stdout.decode("utf-8"),
        stderr=stderr.decode("utf-8"),
        outputs_text=layout.output_file.read_bytes().decode("utf-8"),
        summary_text=layout.summary_file.read_bytes().decode("utf-8"),
    )


def run_entrypoint_script(
    launch: Launch, cwd: Path, env: Mapping[str, str], args: Sequence[str] = (), timeout: float = 120
) -> tuple[int, bytes, bytes]:
    """`python entrypoint.py ARGS` in `cwd` with exactly `env`: exit status, stdout, stderr."""
    if launch is Launch.IN_PROCESS:
        return _run_in_process(cwd, env, args)
    result = subprocess.run(
        [sys.executable, str(REPO / "entrypoint.py"), *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        timeout=timeout,
        check=False,
    )
    return result.returncode, result.stdout, result.stderr


def _run_in_process(cwd: Path, env: Mapping[str, str], args: Sequence[str]) -> tuple[int, bytes, bytes]:
    """`python entrypoint.py ARGS` in this interpreter: the script run as __main__ with this argv,
    environment and working folder, its output caught as bytes.

    The streams are what a child with only PATH gets (the C locale, so UTF-8 mode): UTF-8 with
    surrogateescape on stdout and backslashreplace on stderr, so a name that is not valid UTF-8
    prints as it would there. An exception escaping the script fails the test with its traceback,
    where a process would exit 1 with it."""
    out, err = io.BytesIO(), io.BytesIO()
    stdout = io.TextIOWrapper(out, encoding="utf-8", errors="surrogateescape", write_through=True)
    stderr = io.TextIOWrapper(err, encoding="utf-8", errors="backslashreplace", write_through=True)
    script = str(REPO / "entrypoint.py")
    with _process_state(cwd, env, [script, *args]), redirect_stdout(stdout), redirect_stderr(stderr):
        try:
            runpy.run_path(script, run_name="__main__")
            code = 0
        except SystemExit as stop:
            code = _exit_status(stop.code, stderr)
    return code, out.getvalue(), err.getvalue()


def _exit_status(code: object, stderr: io.TextIOWrapper) -> int:
    """The status `raise SystemExit(code)` gives a process: None is 0, an int itself, anything
    else is printed to stderr and is 1."""
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    stderr.write(f"{code}\n")
    return 1


@contextmanager
def _process_state(cwd: Path, env: Mapping[str, str], argv: list[str]) -> Iterator[None]:
    """This process's environment, working folder, argv and import path set as a child's would be,
    and put back afterwards, whatever the run did to them (Action mode changes the working folder;
    entrypoint.py prepends the repository to sys.path)."""
    saved_env, saved_cwd, saved_argv, saved_path = dict(os.environ), os.getcwd(), sys.argv, list(sys.path)
    os.environ.clear()
    os.environ.update(env)
    os.chdir(cwd)
    sys.argv = argv
    try:
        yield
    finally:
        os.chdir(saved_cwd)
        os.environ.clear()
        os.environ.update(saved_env)
        sys.argv = saved_argv
        sys.path[:] = saved_path


def next_step(layout: RunnerLayout) -> None:
    """Empty the file-command files, as the runner gives every step new ones."""
    for name in layout.file_names.values():
        (layout.file_commands / name).write_bytes(b"")


@dataclass(frozen=True)
class Observed:
    """What the runner makes of a step: exit status, annotations, outputs, summary."""

    returncode: int
    annotations: list[tuple[str, str | None, str | None, str | None, str | None, str]]
    """(kind, file, line, col, title, message), in log order."""
    outputs: dict[str, str]
    summary: str
    log: RunnerLog
    stderr_log: RunnerLog


def observe(run: ActionRun) -> Observed:
    log = parse_log(run.stdout)
    pairs = parse_env_file(run.outputs_text)
    names = [name for name, _ in pairs]
    assert len(names) == len(set(names)), f"an output was written twice: {names}"
    return Observed(
        returncode=run.returncode,
        annotations=[
            (
                command.name,
                command.properties.get("file"),
                command.properties.get("line"),
                command.properties.get("col"),
                command.properties.get("title"),
                command.data,
            )
            for command in log.annotations()
        ],
        outputs=dict(pairs),
        summary=run.summary_text,
        log=log,
        stderr_log=parse_log(run.stderr),
    )


def assert_only_our_commands(observed: Observed) -> None:
    """The log holds annotations, our folds and stop/resume only; commands are on when it ends;
    every fold is ours, by title, and closed."""
    for log in (observed.log, observed.stderr_log):
        assert log.step_failed is None
        assert not log.still_stopped
        names = [command.name for command in log.commands]
        assert set(names) <= {"warning", "error", "notice", "group", "endgroup"}, log.commands
        groups = [c.data for c in log.commands if c.name == "group"]
        assert all(title.startswith("kb-eval: ") for title in groups), groups
        assert names.count("group") == names.count("endgroup")
    assert observed.stderr_log.commands == []
