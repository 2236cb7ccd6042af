"""Action mode against the runner's contract, without a container.

entrypoint.py runs as a subprocess with the environment a Docker action gets
(workspace, file-command files, every INPUT_* with its default, a
pull_request event), and its stdout is read the way the runner reads it
(tests/support/runner_log.py): annotations, outputs, summary and exit status are
asserted as GitHub would see them.
"""

from __future__ import annotations

import json
import os
import re
import stat
from pathlib import Path
from typing import Any

import pytest

from scanner.action.inputs import INPUT_DEFAULTS, ActionInputs, read_inputs, workspace_path
from scanner.cli.main import execute
from scanner.foundation.errors import ExitCode, InputError
from scanner.render.phrases import displaced_phrase
from tests.conftest import Launch, golden_yaml, write_tree
from tests.support.action_cases import (
    GOLDEN,
    GUIDES,
    HEAD_SHA,
    KB,
    LEAK_NOTE,
    OUTPUT_NAMES,
    Q_ROLLBACK,
    Q_TAGS,
    assert_only_our_commands,
    clean_workspace,
    finding_workspace,
    next_step,
    observe,
    run_entrypoint,
)
from tests.support.action_docs import load_action
from tests.support.container import RunnerLayout, action_inputs, pull_request_event

BOTH_CAUSES = ("notes about the test", "looks worse than search is", "belong in `expected`")


@pytest.fixture
def layout(tmp_path: Path) -> RunnerLayout:
    layout = RunnerLayout(tmp_path)
    layout.write_event(pull_request_event())
    return layout


def report_of(layout: RunnerLayout, name: str = "kb-eval-report.json") -> Any:
    return json.loads((layout.workspace / name).read_text(encoding="utf-8"))


# --- the two launches ----------------------------------------------------------------------


def test_a_real_process_observes_what_the_in_process_run_observes(tmp_path: Path) -> None:
    # The quick subset runs every case below in process; this one runs on every change too, so a
    # difference between that and the runner's way (a new interpreter: its stdio, flags, fresh
    # modules) shows without the slow twins. A finding, a skipped undecodable file and a hostile
    # name cover the encodings.
    runs = {}
    for launch in Launch:
        layout = RunnerLayout(tmp_path / launch.value)
        layout.write_event(pull_request_event())
        finding_workspace(layout.workspace)
        write_tree(layout.workspace / KB, {"notes/bad.md": b"# B\n\xff\xfe\n", "notes/%0A::x.md": "# x\nalpha\n"})
        runs[launch] = observe(run_entrypoint(launch, layout, action_inputs({"kb-path": KB})))
    in_process, subprocess = runs[Launch.IN_PROCESS], runs[Launch.SUBPROCESS]
    assert in_process.returncode == subprocess.returncode == ExitCode.OK
    assert sorted(a[4] for a in in_process.annotations) == ["golden-queries-quoted", "kb-eval: file skipped"]
    assert in_process.annotations == subprocess.annotations
    assert in_process.outputs == subprocess.outputs
    assert in_process.summary == subprocess.summary
    assert in_process.log.commands == subprocess.log.commands


# --- the finding case --------------------------------------------------------------------


def test_a_finding_is_one_warning_on_the_first_quoting_line_with_a_repository_relative_path(
    layout: RunnerLayout, launch: Launch
) -> None:
    finding_workspace(layout.workspace)
    observed = observe(run_entrypoint(launch, layout, action_inputs({"kb-path": KB})))
    assert observed.returncode == ExitCode.OK  # a finding never fails the step
    assert_only_our_commands(observed)
    [finding] = report_of(layout)["findings"]
    ranks = {q["query_id"]: (q["rank_in_top_k"], q["displaces_expected"]) for q in finding["quoted"]}
    [(kind, file, line, col, title, message)] = observed.annotations
    assert (kind, file, line, col, title) == ("warning", f"{KB}/notes/leak-0.md", "4", "3", "golden-queries-quoted")
    for query_id, (rank, displaces) in ranks.items():
        assert f"{query_id} ({displaced_phrase(rank, displaces)})" in message
    assert all(cause in message for cause in BOTH_CAUSES)
    assert "never fails the step" in message


def test_a_kb_at_the_repository_root_gives_plain_relative_paths(launch: Launch, layout: RunnerLayout) -> None:
    write_tree(layout.workspace, {**GUIDES, ".kb-eval.yml": GOLDEN, "notes/leak.md": LEAK_NOTE})
    observed = observe(run_entrypoint(launch, layout, action_inputs()))  # kb-path: its default "."
    assert observed.returncode == ExitCode.OK
    assert [(a[1], a[2]) for a in observed.annotations] == [("notes/leak.md", "4")]  # no "./"


def test_the_finding_run_writes_every_output_and_a_readable_report(launch: Launch, layout: RunnerLayout) -> None:
    finding_workspace(layout.workspace)
    observed = observe(run_entrypoint(launch, layout, action_inputs({"kb-path": KB})))
    report = report_of(layout)
    assert list(observed.outputs) == OUTPUT_NAMES
    assert observed.outputs == {
        "report": "kb-eval-report.json",
        "query-count": "3",
        "mrr": repr(report["aggregate"]["mrr"]),
        "recall": repr(report["aggregate"]["recall_at_k"]["10"]),
        "ndcg": repr(report["aggregate"]["ndcg_at_k"]["10"]),
        "findings-count": "1",
        "regressed": "false",
    }
    mode = (layout.workspace / "kb-eval-report.json").stat().st_mode
    assert stat.S_IMODE(mode) == 0o644


def test_the_summary_has_the_table_the_finding_linked_at_the_head_commit_and_the_misses(
    layout: RunnerLayout, launch: Launch
) -> None:
    finding_workspace(layout.workspace)
    # A miss: the expected document of a fourth query does not exist.
    golden = layout.workspace / KB / ".kb-eval.yml"
    golden.write_text(golden.read_text() + golden_yaml(("ghost", "where is the ghost manual", ["gone.md"]))[9:])
    observed = observe(run_entrypoint(launch, layout, action_inputs({"kb-path": KB})))
    summary = observed.summary
    assert "| metric | value |" in summary and "| recall@10 |" in summary and "| MRR |" in summary
    assert f"(https://github.com/octo/kb/blob/{HEAD_SHA}/{KB}/notes/leak-0.md#L4)" in summary, summary
    assert "c" * 40 not in summary  # the merge commit (GITHUB_SHA) is not what the diff shows
    assert "1 query missed an expected document in the top 10" in summary
    assert "ghost" in summary and "gone.md" in summary
    # The expected-not-in-corpus warning sits on the golden file's line of that entry.
    warnings = [a for a in observed.annotations if a[4] == "kb-eval: expected document not in the corpus"]
    entry_line = golden.read_text().splitlines().index('      - path: "gone.md"') + 1
    assert [(a[1], a[2]) for a in warnings] == [(f"{KB}/.kb-eval.yml", str(entry_line))]
    assert "'ghost'" in warnings[0][5] and "'gone.md'" in warnings[0][5]


def echoed(stdout: str, tokens: list[str]) -> str:
    """Everything printed between a stop-commands line and its resume line."""
    return "".join(stdout.split(f"::stop-commands::{t}\n", 1)[1].split(f"::{t}::\n", 1)[0] for t in tokens)


def test_the_log_is_folded_and_the_findings_printed_once_with_commands_stopped(
    launch: Launch, layout: RunnerLayout
) -> None:
    finding_workspace(layout.workspace)
    golden = layout.workspace / KB / ".kb-eval.yml"
    golden.write_text(golden.read_text() + golden_yaml(("ghost", "where is the ghost manual", ["gone.md"]))[9:])
    run = run_entrypoint(launch, layout, action_inputs({"kb-path": KB}))
    observed = observe(run)
    assert_only_our_commands(observed)
    assert [c.data for c in observed.log.commands if c.name == "group"] == [
        "kb-eval: settings", "kb-eval: 1 warning(s)", "kb-eval: results",
    ]
    text = echoed(run.stdout, observed.log.stop_tokens)
    assert text.count("quotes 2 or more golden queries verbatim") == 1  # the report's list, not the stderr warning too
    assert "recall" in text and "MRR" in text and "'ghost' expects 'gone.md'" in text
    assert '"golden_sha256"' not in text and "golden_sha256:" in text  # the settings fold
    # Our own annotations come after the last resume line.
    assert run.stdout.rindex(f"::{observed.log.stop_tokens[-1]}::") < run.stdout.index("::warning ")


# --- no finding, missing golden ------------------------------------------------------------


def test_a_clean_kb_has_no_annotation_and_zero_findings(launch: Launch, layout: RunnerLayout) -> None:
    clean_workspace(layout.workspace)
    observed = observe(run_entrypoint(launch, layout, action_inputs({"kb-path": KB})))
    assert observed.returncode == ExitCode.OK
    assert observed.annotations == []
    assert observed.outputs["findings-count"] == "0" and observed.outputs["query-count"] == "3"
    assert "No document quotes 2 or more golden queries verbatim" in observed.summary
    assert_only_our_commands(observed)


def test_a_missing_golden_file_is_exit_2_with_an_error_annotation_on_it(launch: Launch, layout: RunnerLayout) -> None:
    clean_workspace(layout.workspace)
    inputs = action_inputs({"kb-path": KB, "golden": f"{KB}/missing.yml"})
    observed = observe(run_entrypoint(launch, layout, inputs))
    assert observed.returncode == ExitCode.BAD_INPUT
    [(kind, file, line, _, title, message)] = observed.annotations
    assert (kind, file, line, title) == ("error", f"{KB}/missing.yml", None, "kb-eval: input error")
    assert message.startswith("golden file not found") and "hint:" in message
    assert observed.outputs == {}  # no report, no outputs
    assert "input error" in observed.summary and "golden file not found" in observed.summary
    assert not (layout.workspace / "kb-eval-report.json").exists()
    assert_only_our_commands(observed)


def test_no_golden_file_in_the_kb_is_an_error_annotation_on_the_kb_folder(launch: Launch, layout: RunnerLayout) -> None:
    write_tree(layout.workspace / KB, {"a.md": "# A\ntext\n"})
    observed = observe(run_entrypoint(launch, layout, action_inputs({"kb-path": KB})))
    assert observed.returncode == ExitCode.BAD_INPUT
    [(kind, file, _, _, _, message)] = observed.annotations
    assert (kind, file) == ("error", KB)
    assert ".kb-eval.yml" in message


def test_a_skipped_file_is_a_warning_on_that_file_relative_to_the_repository(
    launch: Launch, layout: RunnerLayout
) -> None:
    clean_workspace(layout.workspace)
    write_tree(layout.workspace / KB, {"notes/bad.md": b"# B\n\xff\xfe\n"})
    observed = observe(run_entrypoint(launch, layout, action_inputs({"kb-path": KB})))
    assert observed.returncode == ExitCode.OK
    [(kind, file, _, _, title, message)] = observed.annotations
    assert (kind, file, title) == ("warning", f"{KB}/notes/bad.md", "kb-eval: file skipped")
    assert "UTF-8" in message
    assert "notes/bad.md" in observed.summary


# --- the annotation budget ---------------------------------------------------------------------


def test_more_findings_than_max_annotations_end_with_one_notice_and_the_summary_lists_all(
    layout: RunnerLayout, launch: Launch
) -> None:
    finding_workspace(layout.workspace, leaks=5)
    observed = observe(run_entrypoint(launch, layout, action_inputs({"kb-path": KB, "max-annotations": "3"})))
    assert observed.returncode == ExitCode.OK
    kinds = [a[0] for a in observed.annotations]
    assert kinds == ["warning", "warning", "warning", "notice"]
    assert [a[1] for a in observed.annotations[:3]] == [f"{KB}/notes/leak-{n}.md" for n in range(3)]
    notice = observed.annotations[3][5]
    assert notice.startswith("2 more annotations left out (2 warnings)")
    assert "the step summary and the JSON report list them all" in notice
    assert all(f"[notes/leak-{n}.md](" in observed.summary for n in range(5))
    assert observed.outputs["findings-count"] == "5"


def test_the_default_budget_is_githubs_ten_and_exactly_ten_need_no_notice(launch: Launch, layout: RunnerLayout) -> None:
    finding_workspace(layout.workspace, leaks=10)
    observed = observe(run_entrypoint(launch, layout, action_inputs({"kb-path": KB})))
    assert [a[0] for a in observed.annotations] == ["warning"] * 10


def test_annotations_false_prints_none_but_keeps_summary_and_outputs(launch: Launch, layout: RunnerLayout) -> None:
    finding_workspace(layout.workspace)
    observed = observe(run_entrypoint(launch, layout, action_inputs({"kb-path": KB, "annotations": "false"})))
    assert observed.annotations == []
    assert observed.outputs["findings-count"] == "1" and "leak" in observed.summary


# --- hostile content ---------------------------------------------------------------------------

HOSTILE_NAMES = [
    "::set-output name=pwned::1.md",
    "::add-mask::secret.md",
    "line\n::warning::injected.md",
    "100%25 %0A::error::x.md",
]


def test_hostile_file_names_and_ids_issue_no_command_but_ours(launch: Launch, layout: RunnerLayout) -> None:
    clean_workspace(layout.workspace)
    kb = layout.workspace / KB
    hostile_ids = ["q::set-output name=x::y", "q\n::add-mask::m", "q%0A::error::z"]
    texts = [f"hostile question number {n} about {word}" for n, word in enumerate(["masks", "outputs", "errors"])]
    golden = golden_yaml(
        *[(query_id, text, ["gone ::add-mask::x.md"]) for query_id, text in zip(hostile_ids, texts, strict=True)],
        # one path that is there: a golden file none of whose paths is indexed stops the run
        ("measurable", "how do I roll back a database migration", ["guides/deploy.md"]),
    )
    write_tree(kb, {".kb-eval.yml": golden})
    note = "# ::warning::heading\n\n" + "".join(f"- {text}\n" for text in texts) + "::add-mask::body\n##[error]legacy\n"
    for name in HOSTILE_NAMES:
        (kb / "notes").mkdir(exist_ok=True)
        (kb / "notes" / name).write_text(note, encoding="utf-8")
    run = run_entrypoint(launch, layout, action_inputs({"kb-path": KB, "max-annotations": "50"}))
    observed = observe(run)
    assert observed.returncode == ExitCode.OK, run.stdout + run.stderr
    assert_only_our_commands(observed)
    # The hostile text did reach the log, inside the stop-commands region, and printed escaped
    # (scanner/foundation/untrusted_text.py), so not even an ignored command appears there.
    text = echoed(run.stdout, observed.log.stop_tokens)
    assert "'q\\n::add-mask::m'" in text and "'notes/line\\n::warning::injected.md'" in text
    assert "\n::add-mask::m" not in run.stdout and observed.log.ignored == []
    # Exactly what we meant: 4 findings and the 3 expected-not-in-corpus warnings, nothing else.
    titles = [a[4] for a in observed.annotations]
    assert titles == ["golden-queries-quoted"] * 4 + ["kb-eval: expected document not in the corpus"] * 3
    findings = [a for a in observed.annotations if a[4] == "golden-queries-quoted"]
    assert sorted(str(a[1]) for a in findings) == sorted(f"{KB}/notes/{name}" for name in HOSTILE_NAMES)
    assert all(all(query_id in a[5] for query_id in hostile_ids) for a in findings)
    assert list(observed.outputs) == OUTPUT_NAMES and observed.outputs["findings-count"] == "4"
    # Nothing PR-controlled becomes markup in the summary.
    # (The summary is Markdown, never the log: `::` there is text, so only markup matters.)
    assert "<script" not in observed.summary


def test_hostile_markdown_in_names_stays_text_in_the_summary(launch: Launch, layout: RunnerLayout) -> None:
    clean_workspace(layout.workspace)
    kb = layout.workspace / KB
    (kb / "notes").mkdir()
    name = "<img src=x onerror=alert(1)>[click](javascript:x) @team |.md"
    (kb / "notes" / name).write_text(f"- {Q_ROLLBACK}\n- {Q_TAGS}\n", encoding="utf-8")
    observed = observe(run_entrypoint(launch, layout, action_inputs({"kb-path": KB})))
    assert observed.outputs["findings-count"] == "1"
    assert re.search(r"(?<!\\)<img", observed.summary) is None and "@team" not in observed.summary
    assert re.search(r"(?<!\\)\[click", observed.summary) is None
    assert "\\<img src=x onerror=alert\\(1\\)\\>\\[click\\]" in observed.summary
    assert "%3Cimg%20src%3Dx%20onerror%3Dalert%281%29%3E" in observed.summary  # the link target, encoded


def test_an_input_with_a_newline_is_refused_and_cannot_inject_a_command(launch: Launch, layout: RunnerLayout) -> None:
    clean_workspace(layout.workspace)
    for name, value in (("k", "1,5\n::set-output name=x::y"), ("kb-path", f"{KB}\n::add-mask::x")):
        observed = observe(run_entrypoint(launch, layout, action_inputs({"kb-path": KB, name: value})))
        assert observed.returncode == ExitCode.BAD_INPUT
        [(kind, _, _, _, title, message)] = observed.annotations
        assert kind == "error" and title == "kb-eval: input error" and f"input {name}" in message
        assert_only_our_commands(observed)
        assert observed.outputs == {}


# --- paths outside the workspace --------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("kb-path", "../outside"),
        ("kb-path", "/etc"),
        ("kb-path", "docs/../../outside"),
        ("golden", "/etc/passwd"),
        ("report", "../report.json"),
        ("report", "/tmp/kb-eval-report.json"),
    ],
)
def test_a_path_outside_the_workspace_is_exit_2_and_nothing_is_read_or_written_there(
    layout: RunnerLayout, name: str, value: str, launch: Launch
) -> None:
    clean_workspace(layout.workspace)
    (layout.root / "outside").mkdir()
    write_tree(layout.root / "outside", {".kb-eval.yml": golden_yaml(("q", "a question long enough", ["a.md"]))})
    observed = observe(run_entrypoint(launch, layout, action_inputs({"kb-path": KB, name: value})))
    assert observed.returncode == ExitCode.BAD_INPUT
    [(kind, file, _, _, _, message)] = observed.annotations
    assert kind == "error" and file is None
    assert f"input {name}" in message and "outside the workspace" in message
    assert not (layout.root / "report.json").exists()
    assert observed.outputs == {}


def test_a_symlink_in_the_workspace_that_leads_outside_is_refused(launch: Launch, layout: RunnerLayout) -> None:
    clean_workspace(layout.workspace)
    outside = layout.root / "outside"
    write_tree(outside, {".kb-eval.yml": golden_yaml(("q", "a question long enough", ["a.md"])), "a.md": "x"})
    (layout.workspace / "linked").symlink_to(outside)
    observed = observe(run_entrypoint(launch, layout, action_inputs({"kb-path": "linked"})))
    assert observed.returncode == ExitCode.BAD_INPUT
    assert "outside the workspace" in observed.annotations[0][5]


def test_an_absolute_path_inside_the_workspace_and_a_symlink_inside_it_are_accepted(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    clean_workspace(workspace)
    (workspace / "alias").symlink_to(workspace / KB)
    assert workspace_path(workspace, str(workspace / KB), "kb-path") == KB
    assert workspace_path(workspace, "alias", "kb-path") == "alias"
    assert workspace_path(workspace, "./docs//kb/", "kb-path") == KB
    assert workspace_path(workspace, "new/report.json", "report") == "new/report.json"
    with pytest.raises(InputError) as refused:
        workspace_path(workspace, str(tmp_path / "ws-sibling"), "kb-path")  # a prefix, not a parent
    assert refused.value.field == "kb-path"


def test_the_report_goes_where_the_input_says_in_a_new_folder_owned_by_the_workspace_owner(
    layout: RunnerLayout, launch: Launch
) -> None:
    if os.geteuid() != 0:
        pytest.skip("chown to another user needs root (the container runs as root)")
    clean_workspace(layout.workspace)
    os.chown(layout.workspace, 1001, 127)  # the runner user owns the checkout on GitHub
    observed = observe(run_entrypoint(launch, layout, action_inputs({"kb-path": KB, "report": "out/eval/report.json"})))
    assert observed.outputs["report"] == "out/eval/report.json"
    for path in ("out", "out/eval", "out/eval/report.json"):
        status = (layout.workspace / path).stat()
        assert (status.st_uid, status.st_gid) == (1001, 127), path
    assert stat.S_IMODE((layout.workspace / "out/eval/report.json").stat().st_mode) == 0o644


@pytest.mark.parametrize("planted", ["dangling link", "file"])
def test_a_report_folder_that_is_a_dangling_link_or_under_a_file_is_exit_2_naming_the_input(
    layout: RunnerLayout, launch: Launch, planted: str
) -> None:
    # Both were exit 3: the folder was taken for missing, and mkdir failed under it.
    clean_workspace(layout.workspace)
    if planted == "file":
        (layout.workspace / "out").write_text("a file, not a folder")
    else:
        (layout.workspace / "out").symlink_to("nowhere")  # inside the workspace, to nothing
    observed = observe(run_entrypoint(launch, layout, action_inputs({"kb-path": KB, "report": "out/eval/report.json"})))
    assert observed.returncode == ExitCode.BAD_INPUT
    [(kind, _, _, _, _, message)] = observed.annotations
    assert kind == "error" and "out/eval/report.json" in message and "report" in message
    assert os.path.lexists(layout.workspace / "out") and not (layout.workspace / "nowhere").exists()


# --- inputs ---------------------------------------------------------------------------------


def test_the_built_in_defaults_are_action_yml_s() -> None:
    declared = {name: str(spec.get("default", "")) for name, spec in load_action()["inputs"].items()}
    declared["github-token"] = ""  # an expression only the runner evaluates
    for alias in ("output", "run", "http-headers"):
        assert declared.pop(alias) == ""  # another spelling: empty unless set
    assert dict(INPUT_DEFAULTS) == declared


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("max-annotations", "ten"),
        ("max-annotations", "-1"),
        ("limit", "0"),
        ("k", "1,x"),
        ("regression-threshold", "1.5"),
        ("regression-threshold", "nan"),
        ("alpha", "0"),
        ("annotations", "yes"),
        ("comment", "1"),
        ("retriever", "elastic"),
        ("format", "xml"),
    ],
)
def test_a_bad_input_value_is_an_input_error_naming_the_input(tmp_path: Path, name: str, value: str) -> None:
    environ = {"INPUT_" + key.upper(): v for key, v in action_inputs({name: value}).items()}
    with pytest.raises(InputError) as refused:
        read_inputs(environ, tmp_path)
    assert refused.value.field == name and name in str(refused.value)


def test_every_input_reads_with_the_runner_s_names_and_trimming(tmp_path: Path) -> None:
    values = action_inputs(
        {
            "kb-path": "  docs  ",
            "exclude": "drafts/**\n\n  archive/*.md \n",
            "http-url": "http://127.0.0.1:9/search",
            "http-header": "X-A: 1\nX-B: 2\n",
            "max-annotations": "7",
            "fail-on-regression": "True",
            "alpha": "0.1",
        }
    )
    environ = {"INPUT_" + key.upper(): v for key, v in values.items()}
    assert "INPUT_MAX-ANNOTATIONS" in environ  # hyphens kept, as the runner names them
    inputs = read_inputs(environ, tmp_path)
    run = inputs.settings
    assert inputs.kb_path == "docs" and run.exclude == ("drafts/**", "archive/*.md")
    assert run.http_headers == ("X-A: 1", "X-B: 2") and inputs.max_annotations == 7
    assert run.fail_on_regression is True and run.alpha == 0.1 and run.k == (1, 5, 10)


def _inputs(tmp_path: Path, **overrides: str) -> ActionInputs:
    environ = {"INPUT_" + key.upper(): v for key, v in action_inputs(overrides).items()}
    return read_inputs(environ, tmp_path)


def test_the_inputs_become_the_run_s_settings_with_the_action_s_own_defaults(tmp_path: Path) -> None:
    run = _inputs(tmp_path, **{"http-url": "-http://x", "cache-dir": ".kb-eval-cache"}).settings
    assert run.http_url == "-http://x" and run.retriever is None  # implied by http-url, as in the CLI
    assert run.output == Path("kb-eval-report.json")  # the Action always writes its report
    assert run.no_history is True  # an empty history input keeps no history
    assert run.cache_dir == Path(".kb-eval-cache")
    assert "http-method" not in run.given  # its default is not "given", so it is no stray for builtin
    named = _inputs(tmp_path, history="h.json").settings
    assert named.history == Path("h.json") and named.no_history is False


def test_execute_returns_the_run_as_data_and_main_prints_the_same_text(tmp_path: Path) -> None:
    finding_workspace(tmp_path)
    result = execute(["--kb-path", str(tmp_path / KB)])
    assert result.exit_code == 0 and result.input_error is None
    assert result.outcome is not None and result.report is not None
    assert [f.finding.path for f in result.report.run.findings] == ["notes/leak-0.md"]
    assert result.outcome.evaluation.golden.path == str(tmp_path / KB / ".kb-eval.yml")
    assert "golden-queries-quoted" in result.stderr_text and result.stdout_text.startswith("kb-eval ")
    bad = execute(["--k", "0"])
    assert bad.exit_code == 2 and bad.input_error is not None and "--k" in str(bad.input_error)
    missing = execute(["--kb-path", str(tmp_path / "nowhere")])
    assert missing.exit_code == 2 and missing.input_error is not None and missing.report is None


def test_without_github_actions_or_with_arguments_the_entrypoint_is_the_plain_cli(
    launch: Launch, layout: RunnerLayout
) -> None:
    clean_workspace(layout.workspace)
    inputs = action_inputs({"kb-path": KB})
    plain = run_entrypoint(launch, layout, inputs, extra_env={"GITHUB_ACTIONS": ""})
    assert plain.returncode == ExitCode.BAD_INPUT  # the CLI's default kb-path . has no golden file
    assert "no golden file found" in plain.stderr and "::" not in plain.stdout + plain.stderr
    with_args = run_entrypoint(launch, layout, inputs, args=["--kb-path", KB])
    assert with_args.returncode == 0 and with_args.stdout.startswith("kb-eval ") and "::" not in with_args.stdout
    # The command line writes no outputs and no report unless asked; it does write the step summary,
    # as every command-line run does where GITHUB_STEP_SUMMARY is set (tests/cli/test_summary.py).
    assert with_args.outputs_text == ""
    assert with_args.summary_text.startswith("## kb-eval: ") and f"· {KB}" in with_args.summary_text
    assert not (layout.workspace / "kb-eval-report.json").exists()


# --- baseline and the gate (the CLI flags of the history work) -------------------------------


def test_the_gate_against_a_saved_baseline_fails_the_step_only_when_asked(launch: Launch, layout: RunnerLayout) -> None:
    clean_workspace(layout.workspace)
    if os.geteuid() == 0:
        os.chown(layout.workspace, 1001, 127)
    first = observe(run_entrypoint(launch, layout, action_inputs({"kb-path": KB, "save-baseline": "base/report.json"})))
    assert first.returncode == ExitCode.OK and first.outputs["regressed"] == "false"
    baseline = layout.workspace / "base" / "report.json"
    assert baseline.is_file()
    assert (baseline.stat().st_uid, baseline.stat().st_gid) == (
        layout.workspace.stat().st_uid,
        layout.workspace.stat().st_gid,
    )

    # The chunking query loses its answer.
    (layout.workspace / KB / "guides" / "search.md").rename(layout.workspace / KB / "guides" / "moved.md")
    # The threshold alone (`alpha: off`): one query of three cannot be told from chance.
    gate_inputs = {"kb-path": KB, "baseline": "base/report.json", "fail-on-regression": "true", "alpha": "off"}
    next_step(layout)
    gated = observe(run_entrypoint(launch, layout, action_inputs(gate_inputs)))
    assert gated.returncode == ExitCode.REGRESSION
    assert gated.outputs["regressed"] == "true" and list(gated.outputs) == OUTPUT_NAMES
    [regression] = [a for a in gated.annotations if a[4] == "kb-eval: regression"]
    assert regression[0] == "error" and "dropped by more than 0.05" in regression[5]
    assert "**Regression gate failed, so the step fails (fail-on-regression is true): " in (
        gated.summary
    ) and "▼ -0." in gated.summary
    assert " fell by 0." in gated.summary and ", more than 0.05" in gated.summary
    assert_only_our_commands(gated)

    next_step(layout)
    ungated = observe(run_entrypoint(launch, layout, action_inputs({**gate_inputs, "fail-on-regression": "false"})))
    assert ungated.returncode == ExitCode.OK  # the same drop, but the gate was not asked for
    assert ungated.outputs["regressed"] == "true"
    assert not [a for a in ungated.annotations if a[4] == "kb-eval: regression"]
    assert "The gate does not fail the step: fail-on-regression is off." in ungated.summary
    assert "step fails" not in ungated.summary


def test_the_history_input_keeps_a_history_in_the_workspace_and_empty_keeps_none(
    launch: Launch, layout: RunnerLayout
) -> None:
    clean_workspace(layout.workspace)
    observe(run_entrypoint(launch, layout, action_inputs({"kb-path": KB})))
    assert not (layout.workspace / KB / ".kb-eval-history.json").exists()  # empty input: --no-history
    next_step(layout)
    observed = observe(run_entrypoint(launch, layout, action_inputs({"kb-path": KB, "history": "ci/history.json"})))
    assert observed.returncode == ExitCode.OK
    assert (layout.workspace / "ci" / "history.json").is_file()


def test_a_gate_with_nothing_to_compare_is_a_warning_and_a_summary_line_in_input_words(
    launch: Launch, layout: RunnerLayout
) -> None:
    clean_workspace(layout.workspace)
    observed = observe(run_entrypoint(launch, layout, action_inputs({"kb-path": KB, "fail-on-regression": "true"})))
    assert observed.returncode == ExitCode.OK
    [gate] = [a for a in observed.annotations if a[4] == "kb-eval: regression gate not run"]
    assert gate[0] == "warning" and "the history input is empty and no baseline was given" in gate[5]
    assert "**The regression gate could not run: the history input is empty" in observed.summary
    assert "--no-history" not in observed.summary + gate[5]
    # The near miss: without fail-on-regression nothing is said about the gate.
    next_step(layout)
    observed = observe(run_entrypoint(launch, layout, action_inputs({"kb-path": KB})))
    assert not [a for a in observed.annotations if a[4] == "kb-eval: regression gate not run"]
    assert "could not run" not in observed.summary
