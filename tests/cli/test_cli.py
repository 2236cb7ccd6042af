"""The command line end to end, in-process: exit codes, stdout vs stderr, the report and its schema."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from scanner.foundation.errors import ExitCode
from scanner.pipeline import run as pipeline
from scanner.report.document import validation_errors
from tests.conftest import REPO, Launch, golden_yaml, run_cli, write_tree
from tests.support.action_cases import run_entrypoint_script

EXAMPLE = REPO / "examples" / "kb"


def small_kb(root: Path) -> Path:
    return write_tree(
        root,
        {
            "a.md": "# Alpha\nThe alpha document talks about rollback procedures.\n",
            "b.md": "# Beta\nThe beta document explains container image tags.\n",
            ".kb-eval.yml": golden_yaml(
                ("q1", "rollback procedures", ["a.md"]),
                ("q2", "container image tags", ["b.md"]),
            ),
        },
    )


def test_the_bundled_example_runs_and_its_json_report_is_schema_valid() -> None:
    result = run_cli("--kb-path", EXAMPLE, "--format", "json", "--no-history")
    assert result.code == ExitCode.OK, result.stderr
    report = result.json()
    assert validation_errors(report) == []
    assert report["aggregate"]["query_count"] == 8
    assert report["corpus"]["documents"] == 5
    assert report["findings"] == []
    assert set(report["by_tag"]) == {"ops", "ja"}


def test_json_goes_to_stdout_and_diagnostics_to_stderr(tmp_path: Path) -> None:
    kb = small_kb(tmp_path / "kb")
    write_tree(kb, {"bad.md": b"\xff\xfe"})
    result = run_cli("--kb-path", kb, "--format", "json")
    assert result.code == 0
    json.loads(result.stdout)  # nothing but the report on stdout
    assert "kb-eval: warning: bad.md: not valid UTF-8" in result.stderr
    assert result.json()["warnings"][0]["file"] == "bad.md"


def test_output_always_writes_the_json_report_also_with_text_on_stdout(tmp_path: Path) -> None:
    kb = small_kb(tmp_path / "kb")
    out = tmp_path / "report.json"
    result = run_cli("--kb-path", kb, "--output", out)
    assert result.code == 0
    assert result.stdout.startswith("kb-eval ")
    written = json.loads(out.read_text(encoding="utf-8"))
    assert written["aggregate"]["mrr"] == 1.0 and written["findings"] == []


def test_perfect_and_missed_queries_are_scored_and_the_text_report_lists_the_misses(tmp_path: Path) -> None:
    kb = small_kb(tmp_path / "kb")
    write_tree(kb, {".kb-eval.yml": golden_yaml(("q1", "rollback procedures", ["a.md"]), ("gone", "rollback procedures", ["b.md"]))})
    result = run_cli("--kb-path", kb, "--limit", "1", "--k", "1")
    assert result.code == 0
    assert "gone: recall@1 0.00" in result.stdout and "q1:" not in result.stdout


def test_a_missing_golden_file_is_exit_2_saying_where_it_looked(tmp_path: Path) -> None:
    kb = write_tree(tmp_path / "kb", {"a.md": "x"})
    result = run_cli("--kb-path", kb)
    assert result.code == ExitCode.BAD_INPUT
    assert result.stdout == ""
    assert ".kb-eval.yml" in result.stderr and ".kb-mcp-eval.yml" in result.stderr and "--golden" in result.stderr


def test_a_bad_golden_file_is_exit_2_naming_file_line_and_field(tmp_path: Path) -> None:
    kb = small_kb(tmp_path / "kb")
    (kb / ".kb-eval.yml").write_text("queries:\n  - id: x\n    query: q\n    expected: [/abs.md]\n", encoding="utf-8")
    result = run_cli("--kb-path", kb)
    assert result.code == 2
    assert f"{kb / '.kb-eval.yml'}:4: " in result.stderr and "queries[x].expected[0].path" in result.stderr


def test_a_query_with_nothing_searchable_is_refused_when_the_golden_file_is_loaded(tmp_path: Path) -> None:
    kb = small_kb(tmp_path / "kb")
    (kb / ".kb-eval.yml").write_text(golden_yaml(("ok", "rollback", ["a.md"]), ("ops", '"" * - ( )', ["a.md"])), encoding="utf-8")
    result = run_cli("--kb-path", kb)
    assert result.code == 2 and "'ops'" in result.stderr and ":6:" in result.stderr


def test_an_expected_path_missing_from_the_corpus_warns_with_query_path_and_line_and_still_scores(tmp_path: Path) -> None:
    kb = small_kb(tmp_path / "kb")
    (kb / ".kb-eval.yml").write_text(golden_yaml(("q1", "rollback", ["a.md", "typo.md"])), encoding="utf-8")
    result = run_cli("--kb-path", kb, "--format", "json")
    assert result.code == 0
    [warning] = result.json()["warnings"]
    assert warning["code"] == "expected-not-in-corpus"
    assert "'q1'" in warning["message"] and "'typo.md'" in warning["message"] and warning["line"] == 6
    assert result.json()["per_query"][0]["metrics"]["recall_at_k"]["10"] == 0.5


def test_usage_errors_are_exit_2(tmp_path: Path) -> None:
    assert run_cli("--k", "0").code == 2
    assert run_cli("--limit", "ten").code == 2
    assert run_cli("--no-such-flag").code == 2


def test_a_report_that_fails_its_schema_is_exit_3_and_nothing_is_written(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    kb = small_kb(tmp_path / "kb")
    out, history, baseline = tmp_path / "report.json", tmp_path / "history.json", tmp_path / "baseline.json"
    original = pipeline.report_document

    def broken(report):  # type: ignore[no-untyped-def]
        document = original(report)
        del document["findings"]
        return document

    monkeypatch.setattr(pipeline, "report_document", broken)
    result = run_cli(
        "--kb-path", kb, "--output", out, "--format", "json", "--history", history, "--save-baseline", baseline
    )
    assert result.code == ExitCode.INTERNAL
    assert "findings" in result.stderr and result.stdout == ""
    assert not out.exists() and not history.exists() and not baseline.exists()


def test_an_unexpected_exception_is_exit_3_not_bad_input(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def explode(*args, **kwargs):  # type: ignore[no-untyped-def]
        raise ValueError("a bug")

    monkeypatch.setattr(pipeline, "prepare", explode)
    result = run_cli("--kb-path", small_kb(tmp_path / "kb"))
    assert result.code == 3 and "ValueError: a bug" in result.stderr


def test_a_bug_is_named_in_the_same_words_whether_the_cli_or_the_action_process_catches_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
) -> None:
    from scanner.action import mode

    said = "kb-eval: internal error (please report this):"

    def explode(*args, **kwargs):  # type: ignore[no-untyped-def]
        raise ValueError("a bug")

    monkeypatch.setattr(pipeline, "prepare", explode)
    caught_by_the_cli = run_cli("--kb-path", small_kb(tmp_path / "kb"))
    assert caught_by_the_cli.code == ExitCode.INTERNAL and said in caught_by_the_cli.stderr.splitlines()
    monkeypatch.setattr(mode, "run_action", explode)
    assert mode.main({}) == ExitCode.INTERNAL
    log = capsys.readouterr().out.splitlines()
    assert said in log and "ValueError: a bug" in log
    assert any(line.startswith("::error title=kb-eval%3A internal error::") for line in log)
    # The near miss: input the Action refuses is no bug, and is not named as one.
    monkeypatch.undo()
    assert mode.main({}) == ExitCode.BAD_INPUT
    assert "internal error" not in capsys.readouterr().out


def test_the_schema_requires_findings_and_a_present_null_rank(tmp_path: Path) -> None:
    report = run_cli("--kb-path", small_kb(tmp_path / "kb"), "--format", "json").json()
    assert validation_errors(report) == []
    without = {k: v for k, v in report.items() if k != "findings"}
    assert any("findings" in e for e in validation_errors(without))
    finding = {"check": "golden-queries-quoted", "path": "x.md", "quoted": [
        {"query_id": "a", "rank_in_top_k": None, "field": "body", "line": 1, "column": None},
        {"query_id": "b", "field": "body", "line": 1, "column": None},
    ]}
    assert any("rank_in_top_k" in e for e in validation_errors({**report, "findings": [finding]}))


def test_the_golden_defaults_limit_is_the_default_limit_and_the_flag_overrides_it(tmp_path: Path) -> None:
    kb = small_kb(tmp_path / "kb")
    text = (kb / ".kb-eval.yml").read_text(encoding="utf-8")
    (kb / ".kb-eval.yml").write_text("defaults:\n  limit: 1\n" + text, encoding="utf-8")
    assert run_cli("--kb-path", kb, "--format", "json").json()["fingerprint"]["limit"] == 1
    assert run_cli("--kb-path", kb, "--format", "json", "--limit", "3").json()["fingerprint"]["limit"] == 3


def test_the_console_script_and_entrypoint_run_the_same_code(tmp_path: Path, launch: Launch) -> None:
    kb = small_kb(tmp_path / "kb")
    arguments = ["--kb-path", str(kb), "--format", "json", "--no-history"]
    code, stdout, _ = run_entrypoint_script(launch, tmp_path, dict(os.environ), arguments, timeout=60)
    via_module = run_cli(*arguments)
    assert code == 0
    strip = lambda r: {k: v for k, v in json.loads(r).items() if k != "timestamp"}
    assert strip(stdout) == strip(via_module.stdout)


def test_an_external_retriever_is_chosen_by_its_flag_and_a_missing_query_is_exit_2(tmp_path: Path) -> None:
    kb = small_kb(tmp_path / "kb")
    run = tmp_path / "run.jsonl"
    run.write_text(
        '{"id": "q1", "hits": [{"path": "a.md", "heading": "Alpha"}]}\n{"id": "q2", "hits": [{"path": "a.md"}]}\n',
        encoding="utf-8",
    )
    result = run_cli("--kb-path", kb, "--run", run, "--format", "json")
    assert result.code == 0, result.stderr
    report = result.json()
    assert report["fingerprint"]["retriever"]["name"] == "run"
    assert [q["metrics"]["reciprocal_rank"] for q in report["per_query"]] == [1.0, 0.0]
    run.write_text('{"id": "q1", "hits": []}\n', encoding="utf-8")
    missing = run_cli("--kb-path", kb, "--run", run)
    assert missing.code == 2 and "q2" in missing.stderr


def test_the_written_report_is_readable_by_other_users(tmp_path: Path) -> None:
    out = tmp_path / "report.json"
    assert run_cli("--kb-path", small_kb(tmp_path / "kb"), "--output", out).code == 0
    assert out.stat().st_mode & 0o777 == 0o644


def test_an_unknown_flag_is_answered_with_the_declared_flag_meant(capsys: pytest.CaptureFixture[str]) -> None:
    from scanner.cli.main import build_parser

    with pytest.raises(SystemExit) as stopped:
        build_parser().parse_args(["--kb-pth", "docs", "--fail-on-regresion"])
    assert stopped.value.code == ExitCode.BAD_INPUT
    err = capsys.readouterr().err
    assert "unrecognized arguments: --kb-pth docs --fail-on-regresion; did you mean --kb-path or --fail-on-regression?" in err
    # The near miss: a flag close to none gets no guess.
    with pytest.raises(SystemExit):
        build_parser().parse_args(["--zzz"])
    assert "did you mean" not in capsys.readouterr().err
