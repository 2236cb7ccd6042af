"""A search with its own index on both sides of a pull request: built (`--index-command`) and
served (`--serve-command`) once per side from that side's tree, on real git repositories."""

from __future__ import annotations

import io
import json
import os
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path
from typing import Any

import pytest

from scanner.foundation.errors import ExitCode, InputError
from scanner.git.repository import GitFailed
from scanner.pipeline.base import write_out
from scanner.retrievers.command import withheld_hint
from tests.git.test_git_base import BASE_KB, REGRESSING_CHANGE, commit, git, new_repo, run, run_pull_request
from tests.support import engines

pytestmark = pytest.mark.skipif(shutil.which("git") is None or not hasattr(os, "killpg"), reason="needs git, POSIX")

RUN = "deploy Q0 deploy.md 1 1.0 x\nonboard Q0 onboarding.md 1 1.0 x\nrollback Q0 rollback.md 1 1.0 x\n"
SUPPORT = Path(__file__).parents[1] / "support"
SERVER = SUPPORT / "folder_search_server.py"
SQLITE = engines.RECIPES / "sqlite-fts5"


def sqlite_flags() -> list[str]:
    """The SQLite FTS5 recipe with its index built per side: {work} holds the side's database,
    {kb} is the side's KB folder."""
    if shutil.which("sqlite3") is None:
        engines.missing("the sqlite3 command (Debian's sqlite3)")
    return [
        "--score-level=document",
        "--index-command",
        (
            f"sqlite3 {{work}}/kb.db \".read {SQLITE}/schema.sql\" \"INSERT INTO docs (path, body) SELECT "
            "substr(name, length('{kb}') + 2), CAST(readfile(name) AS TEXT) FROM fsdir('{kb}') WHERE name LIKE '%.md'\""
        ),
        "--command",
        (
            "sqlite3 -json {work}/kb.db \"CREATE TEMP TABLE q AS SELECT {query_sql} AS text, {limit} AS lim\" "
            f"\".read {SQLITE}/search.sql\""
        ),
    ]


def server_flags(*extra: str) -> list[str]:
    return [
        "--serve-command", f"{sys.executable} {SERVER} {{kb}} {{port}} {' '.join(extra)}".strip(),
        "--http-url", "http://127.0.0.1:{port}/search", "--score-level=document",
    ]


def run_file_flags(golden: Path) -> list[str]:
    """A run file built per side by the index command into {work}, from that side's {kb}."""
    return [
        "--score-level=document",
        "--index-command", f"{sys.executable} {SUPPORT / 'folder_run.py'} {{kb}} {golden} {{work}}/run.jsonl",
        "--run-file", "{work}/run.jsonl",
    ]


def pull_request(tmp_path: Path) -> Path:
    repo = new_repo(tmp_path / "repo")
    commit(repo, BASE_KB, "base")
    commit(repo, REGRESSING_CHANGE, "the pull request")
    return repo


def archived(repo: Path, revision: str, into: Path) -> Path:
    """The KB folder as `git archive` writes it at `revision`: the independent copy of the base."""
    data = subprocess.run(["git", "-C", str(repo), "archive", revision, "kb"], capture_output=True, check=True).stdout
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        tar.extractall(into, filter="data")
    return into / "kb"


def aggregates(report: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in report["aggregate"].items() if key != "intervals"}


@pytest.mark.parametrize(
    "flags", [lambda _: sqlite_flags(), lambda _: server_flags(), run_file_flags],
    ids=["index-command", "serve-command", "run-file"],
)
def test_the_base_answered_by_its_own_index_equals_a_run_on_git_archive_of_the_base(
    tmp_path: Path, flags: Any
) -> None:
    repo = pull_request(tmp_path)
    chosen = flags(repo / "kb" / ".kb-eval.yml")
    result, report = run(repo / "kb", "--baseline-ref=HEAD~1", *chosen)
    assert result.exit_code == ExitCode.OK, result.stderr_text
    assert report["comparison"]["status"] == "compared", report["comparison"]
    _, base_alone = run(archived(repo, "HEAD~1", tmp_path / "archive"), *chosen)
    _, head_alone = run(repo / "kb", *chosen)
    assert report["previous"]["aggregate"]["mrr"] == base_alone["aggregate"]["mrr"]
    assert {q["id"]: q["top_k"] for q in report["previous"]["per_query"]} == {
        q["id"]: q["top_k"] for q in base_alone["per_query"]
    }
    assert aggregates(report) == aggregates(head_alone)
    # The pull request made onboarding.md lose its words: the base answered from its own tree.
    assert report["diff"]["mrr"] < 0
    # Both sides describe the same search (the templates, not the folders they were filled with).
    assert report["previous"]["fingerprint"] == report["fingerprint"]
    assert "{kb}" in json.dumps(report["fingerprint"])


def test_a_search_answering_from_one_index_cannot_be_the_base_and_says_how_to_fix_it(tmp_path: Path) -> None:
    repo = pull_request(tmp_path)
    run_file = tmp_path / "run.txt"
    run_file.write_text(RUN)
    result, _ = run(repo / "kb", "--baseline-ref=HEAD~1", f"--run-file={run_file}")
    assert result.exit_code == ExitCode.BAD_INPUT
    error = result.input_error
    assert error is not None and "answers from one index" in str(error)
    assert "--index-command" in (error.hint or "") and "{kb}" in (error.hint or "")


def test_a_pull_requests_default_base_with_one_index_is_a_reason_and_a_gate_asked_for_is_exit_2(
    tmp_path: Path,
) -> None:
    repo = pull_request(tmp_path)
    run_file = tmp_path / "run.txt"
    run_file.write_text(RUN)
    base = git(repo, "rev-parse", "HEAD~1")
    summary = tmp_path / "summary.md"
    result, report = run_pull_request(repo / "kb", base, f"--run-file={run_file}", f"--summary={summary}")
    assert result.exit_code == ExitCode.OK
    assert report["comparison"]["cause"] == "revision-unavailable"
    assert "answers from one index" in summary.read_text()
    gated, _ = run_pull_request(repo / "kb", base, f"--run-file={run_file}", "--fail-on-regression")
    assert gated.exit_code == ExitCode.BAD_INPUT
    assert gated.input_error is not None and "--index-command" in (gated.input_error.hint or "")
    # The near miss: the same search told the side's folder is evaluated on the base.
    answered, report = run_pull_request(repo / "kb", base, *server_flags())
    assert answered.exit_code == ExitCode.OK and report["comparison"]["status"] == "compared"


def test_a_server_is_started_per_side_on_a_free_port_and_stopped_after_it(tmp_path: Path) -> None:
    repo = pull_request(tmp_path)
    pids = tmp_path / "pid"
    result, report = run(repo / "kb", "--baseline-ref=HEAD~1", *server_flags("--pid-file", str(pids)))
    assert result.exit_code == ExitCode.OK, result.stderr_text
    assert report["comparison"]["status"] == "compared"
    pid = int(pids.read_text())
    with pytest.raises(ProcessLookupError):  # the last side's server is gone, not left running
        os.kill(pid, 0)


def test_a_server_that_exits_before_it_answers_is_exit_2_in_its_own_words(tmp_path: Path) -> None:
    repo = pull_request(tmp_path)
    result, _ = run(repo / "kb", *server_flags("--exit-at-once"))
    assert result.exit_code == ExitCode.BAD_INPUT
    error = str(result.input_error)
    assert "exit status 3" in error and "\n  | error: SEARCH_API_KEY is not set\n  | fatal: cannot start" in error


def test_a_server_that_never_listens_is_stopped_at_its_deadline(tmp_path: Path) -> None:
    repo = pull_request(tmp_path)
    result, _ = run(repo / "kb", *server_flags("--never-listen"), "--serve-timeout=0.5")
    assert result.exit_code == ExitCode.BAD_INPUT
    assert "did not answer on 127.0.0.1:" in str(result.input_error)


def test_an_index_command_that_fails_is_exit_2_with_its_stderr_as_lines(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = pull_request(tmp_path)
    monkeypatch.setenv("JAVA_HOME", "/opt/java")
    failing = f"{sys.executable} -c \"import sys; sys.stderr.write('indexing {{kb}}\\nJAVA_HOME is not set\\n'); sys.exit(2)\""
    result, _ = run(repo / "kb", "--index-command", failing, "--command", "echo {query}")
    assert result.exit_code == ExitCode.BAD_INPUT
    error = result.input_error
    assert error is not None
    assert error.said == (f"indexing {(repo / 'kb').resolve()}", "JAVA_HOME is not set")
    assert f"\n  | indexing {(repo / 'kb').resolve()}\n  | JAVA_HOME is not set" in str(error)
    assert "--command-env JAVA_HOME" in (error.hint or "")


def test_the_hint_names_a_withheld_variable_the_program_complains_of() -> None:
    withheld = ("JAVA_HOME", "TERM")
    hint = withheld_hint(b"Error: JAVA_HOME is not set", withheld)
    assert hint is not None and "--command-env JAVA_HOME" in hint
    # The near miss: a name inside another word (SIGTERM) is not a variable the program asked for.
    assert withheld_hint(b"stopped by SIGTERM", withheld) is None


def test_port_without_a_server_is_refused_naming_the_flag(tmp_path: Path) -> None:
    repo = pull_request(tmp_path)
    result, _ = run(repo / "kb", "--http-url", "http://127.0.0.1:{port}/search")
    assert result.exit_code == ExitCode.BAD_INPUT
    assert "{port}" in str(result.input_error) and "--serve-command" in str(result.input_error)


def test_the_base_written_out_refuses_a_path_outside_its_folder(tmp_path: Path) -> None:
    with pytest.raises(GitFailed):
        write_out(tmp_path / "a", [("../escape.md", b"x")])
    assert not (tmp_path / "escape.md").exists()
    write_out(tmp_path / "b", [("notes/ok.md", b"x")])  # the near miss: a nested path is written
    assert (tmp_path / "b" / "notes" / "ok.md").read_bytes() == b"x"


def test_a_kb_folder_with_a_brace_is_refused_before_a_template_misreads_it(tmp_path: Path) -> None:
    from scanner.retrievers.sides import Side, SidePrograms

    with pytest.raises(InputError, match="brace"):
        Side(tmp_path / "{query}", SidePrograms(), {}, {})



def test_a_value_passed_by_name_is_scrubbed_from_what_an_index_command_prints(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The index command gets --command-env values like the command retriever: a token it echoes
    # never reaches the log or the summary.
    repo = pull_request(tmp_path)
    monkeypatch.setenv("SEARCH_TOKEN", "tok-5e3c7a91")
    failing = f"{sys.executable} -c \"import os, sys; sys.stderr.write('bad token ' + os.environ['SEARCH_TOKEN']); sys.exit(1)\""
    result, _ = run(repo / "kb", "--index-command", failing, "--command", "echo {query}", "--command-env", "SEARCH_TOKEN")
    assert result.exit_code == ExitCode.BAD_INPUT
    assert result.input_error is not None and result.input_error.said == ("bad token ***",)
    assert "tok-5e3c7a91" not in result.stderr_text
