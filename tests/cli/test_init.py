"""`kb-eval init`: what it writes runs, explains itself, and never replaces a file."""

from __future__ import annotations

import io
import json
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from scanner.cli.init import STARTER_TAG, WORKFLOW_PATH, render_workflow
from scanner.cli.main import main
from scanner.foundation.errors import ExitCode
from scanner.golden.file import load_golden
from tests.action.test_metadata import check_jsonschema_command
from tests.conftest import Launch
from tests.support.action_cases import run_entrypoint_script
from tests.support.action_docs import ROOT

EXAMPLE_KB = ROOT / "examples" / "kb"
EXAMPLE_WORKFLOW = ROOT / "examples" / "workflows" / "kb-eval-pull-request.yml"


def kb_eval(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(list(argv), out, err)
    return code, out.getvalue(), err.getvalue()


def example_kb_without_golden(root: Path) -> Path:
    kb = root / "docs" / "kb"
    # Only what the repository holds: a local run of the example leaves its (git-ignored) history.
    shutil.copytree(EXAMPLE_KB, kb, ignore=shutil.ignore_patterns("*kb-eval-history.json*"))
    (kb / ".kb-eval.yml").unlink()
    return kb


@pytest.fixture
def repository(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A repository root as the current folder, holding the example KB (without its golden file) in docs/kb."""
    example_kb_without_golden(tmp_path)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_init_writes_a_golden_file_that_runs_and_scores_every_starter(repository: Path) -> None:
    code, out, err = kb_eval("init", "--kb-path", "docs/kb")
    assert (code, err) == (ExitCode.OK, "")
    golden = repository / "docs/kb/.kb-eval.yml"
    assert out.splitlines()[0].startswith("wrote docs/kb/.kb-eval.yml: 5 starter queries")
    loaded = load_golden(golden)
    assert len(loaded.queries) == 5
    for query in loaded.queries:
        assert query.tags == (STARTER_TAG,)
        [expected] = query.expected
        assert (repository / "docs/kb" / expected.path).is_file()
    code, out, err = kb_eval("--kb-path", "docs/kb", "--no-history", "--format", "json")
    assert code == ExitCode.OK, err
    report = json.loads(out)
    assert len(report["per_query"]) == 5 and list(report["by_tag"]) == [STARTER_TAG]  # the starters left, counted


def test_the_starter_file_explains_what_to_fill_in_and_why_queries_are_paraphrases(repository: Path) -> None:
    kb_eval("init", "--kb-path", "docs/kb")
    text = (repository / "docs/kb/.kb-eval.yml").read_text(encoding="utf-8")
    comments = "\n".join(line for line in text.splitlines() if line.lstrip().startswith("#"))
    for words in ("PARAPHRASE", "not the\n#             document's heading", "golden-queries-quoted", "expected", "heading:"):
        assert words in comments, words
    assert comments.count("# TODO: the document's title") == 5  # one per proposed entry
    assert "kb-eval --kb-path docs/kb" in comments  # the next command, with this KB's path


def test_init_proposes_at_most_the_asked_number_spread_over_the_kb(tmp_path: Path) -> None:
    kb = tmp_path / "kb"
    for n in range(10):
        folder = kb / ("a" if n < 5 else "b")
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"note-{n}.md").write_text(f"# Note {n}\n\nbody {n}\n", encoding="utf-8")
    code, _, err = kb_eval("init", "--kb-path", str(kb), "--queries", "2")
    assert code == ExitCode.OK, err
    paths = [q.expected[0].path for q in load_golden(kb / ".kb-eval.yml").queries]
    assert paths == ["a/note-0.md", "b/note-5.md"]  # one from each half, not the first two
    assert "proposed 2 of the KB's 10 documents" in (kb / ".kb-eval.yml").read_text(encoding="utf-8")


def test_the_starter_query_is_the_title_search_scores_a_heading_title_included(tmp_path: Path) -> None:
    kb = tmp_path / "kb"
    kb.mkdir()
    (kb / "a.md").write_text("# Install guide\n\n## Options\n\nPass a flag.\n", encoding="utf-8")
    (kb / "b.md").write_text("---\ntitle: Setup\n---\n\n# Other heading\n\ntext\n", encoding="utf-8")
    (kb / "plain-notes.md").write_text("Text before any heading.\n\n## Later\n\nmore\n", encoding="utf-8")
    code, _, err = kb_eval("init", "--kb-path", str(kb))
    assert code == ExitCode.OK, err
    # A `# Title` enclosing the page is its title (not the file name); frontmatter wins; a page
    # with neither is named by its file.
    assert [q.text for q in load_golden(kb / ".kb-eval.yml").queries] == ["Install guide", "Setup", "plain-notes"]


def test_titles_that_are_yaml_syntax_are_written_as_text_and_read_back_unchanged(tmp_path: Path) -> None:
    titles = ["yes", "a: b # c", "- dash", "'quoted'", '"double"', "[list]", "{map}", "123", "検索メモ", "@at %pct"]
    kb = tmp_path / "kb"
    kb.mkdir()
    for n, title in enumerate(titles):
        (kb / f"doc-{n:02}.md").write_text(f"---\ntitle: {yaml.safe_dump(title).splitlines()[0]}\n---\n\ntext {n}\n")
    code, _, err = kb_eval("init", "--kb-path", str(kb), "--queries", str(len(titles)))
    assert code == ExitCode.OK, err
    assert [q.text for q in load_golden(kb / ".kb-eval.yml").queries] == titles
    assert kb_eval("--kb-path", str(kb), "--no-history")[0] == ExitCode.OK


def test_init_refuses_to_overwrite_a_golden_file_and_leaves_it_as_it_was(repository: Path) -> None:
    golden = repository / "docs/kb/.kb-eval.yml"
    golden.write_text("# mine\n", encoding="utf-8")
    code, out, err = kb_eval("init", "--kb-path", "docs/kb")
    assert (code, out) == (ExitCode.BAD_INPUT, "")
    assert "docs/kb/.kb-eval.yml: golden file already exists; kb-eval init never overwrites" in err
    assert "hint: edit that file, or move it away" in err
    assert golden.read_text(encoding="utf-8") == "# mine\n"


def test_init_refuses_when_the_kb_has_a_golden_file_under_another_name_kb_eval_reads(repository: Path) -> None:
    # A new .kb-eval.yml would be read instead of the KB's kb-mcp golden set.
    (repository / "docs/kb/.kb-mcp-eval.yml").write_text("queries: []\n", encoding="utf-8")
    code, _, err = kb_eval("init", "--kb-path", "docs/kb")
    assert code == ExitCode.BAD_INPUT and ".kb-mcp-eval.yml: golden file already exists" in err
    assert not (repository / "docs/kb/.kb-eval.yml").exists()


def test_with_workflow_it_writes_the_example_pull_request_workflow_for_this_kb(repository: Path) -> None:
    code, out, err = kb_eval("init", "--kb-path", "docs/kb", "--workflow")
    assert code == ExitCode.OK, err
    written = repository / WORKFLOW_PATH
    assert "wrote .github/workflows/kb-eval.yml" in out
    # The example in the repository is this very file for a KB in docs/kb (one template, tested once).
    assert written.read_text(encoding="utf-8") == EXAMPLE_WORKFLOW.read_text(encoding="utf-8")


def test_without_workflow_no_workflow_is_written(repository: Path) -> None:
    assert kb_eval("init", "--kb-path", "docs/kb")[0] == ExitCode.OK
    assert not (repository / ".github").exists()


def test_init_refuses_to_overwrite_a_workflow_and_then_writes_nothing_at_all(repository: Path) -> None:
    workflow = repository / WORKFLOW_PATH
    workflow.parent.mkdir(parents=True)
    workflow.write_text("name: mine\n", encoding="utf-8")
    code, _, err = kb_eval("init", "--kb-path", "docs/kb", "--workflow")
    assert code == ExitCode.BAD_INPUT
    assert ".github/workflows/kb-eval.yml: workflow file already exists; kb-eval init never overwrites" in err
    assert workflow.read_text(encoding="utf-8") == "name: mine\n"
    assert not (repository / "docs/kb/.kb-eval.yml").exists()  # checked before anything was written


def test_the_workflow_names_the_kb_relative_to_the_repository_root(repository: Path) -> None:
    assert kb_eval("init", "--kb-path", str(repository / "docs" / "kb"), "--workflow")[0] == ExitCode.OK
    workflow = yaml.safe_load((repository / WORKFLOW_PATH).read_text(encoding="utf-8"))
    [step] = [s for s in workflow["jobs"]["kb-eval"]["steps"] if s.get("id") == "kb-eval"]
    assert step["with"]["kb-path"] == "docs/kb"
    assert workflow[True]["pull_request"]["paths"] == ["docs/kb/**"]  # PyYAML reads `on` as True


def test_a_kb_at_the_repository_root_gets_a_workflow_for_every_path(tmp_path: Path) -> None:
    text = render_workflow(".")
    workflow = yaml.safe_load(text)
    assert workflow[True]["pull_request"]["paths"] == ["**"]
    odd = yaml.safe_load(render_workflow("my notes/kb: 2026"))
    [step] = [s for s in odd["jobs"]["kb-eval"]["steps"] if s.get("id") == "kb-eval"]
    assert step["with"]["kb-path"] == "my notes/kb: 2026"  # quoted, not a YAML mapping


def test_the_written_workflow_is_valid_against_githubs_workflow_schema(repository: Path) -> None:
    assert kb_eval("init", "--kb-path", "docs/kb", "--workflow")[0] == ExitCode.OK
    result = subprocess.run(
        [*check_jsonschema_command(), "--builtin-schema", "vendor.github-workflows", str(repository / WORKFLOW_PATH)],
        check=False, capture_output=True, text=True, timeout=120,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_with_workflow_a_kb_outside_the_current_folder_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    kb = example_kb_without_golden(tmp_path / "elsewhere")
    here = tmp_path / "repo"
    here.mkdir()
    monkeypatch.chdir(here)
    code, _, err = kb_eval("init", "--kb-path", str(kb), "--workflow")
    assert code == ExitCode.BAD_INPUT and "the knowledge base is outside the current folder" in err
    assert not (kb / ".kb-eval.yml").exists() and not (here / ".github").exists()
    assert kb_eval("init", "--kb-path", str(kb))[0] == ExitCode.OK  # without --workflow the folder is enough


def test_a_missing_kb_folder_is_named_as_such(tmp_path: Path) -> None:
    code, _, err = kb_eval("init", "--kb-path", str(tmp_path / "typo"))
    assert code == ExitCode.BAD_INPUT and "typo: knowledge base folder not found" in err


def test_a_kb_with_no_document_is_refused_and_nothing_is_written(tmp_path: Path) -> None:
    (tmp_path / "notes.pdf").write_bytes(b"%PDF")
    code, _, err = kb_eval("init", "--kb-path", str(tmp_path))
    assert code == ExitCode.BAD_INPUT and "no document to propose a query for" in err
    assert not (tmp_path / ".kb-eval.yml").exists()


@pytest.mark.parametrize("count", ["0", "101", "five"])
def test_the_number_of_queries_is_checked(tmp_path: Path, count: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as stopped:
        kb_eval("init", "--kb-path", str(tmp_path), "--queries", count)
    assert stopped.value.code == ExitCode.BAD_INPUT and "--queries" in capsys.readouterr().err


def test_init_is_reached_through_the_container_entry_point_too(repository: Path, launch: Launch) -> None:
    # entrypoint.py with arguments is the plain CLI: `docker run ... IMAGE init --kb-path KB` works.
    arguments = ["init", "--kb-path", "docs/kb"]
    code, _, stderr = run_entrypoint_script(launch, repository, {"PATH": "/usr/bin:/bin"}, arguments)
    assert code == ExitCode.OK, stderr
    assert (repository / "docs/kb/.kb-eval.yml").is_file()


def test_kb_eval_help_names_init() -> None:
    code, out, _ = kb_eval("--help")
    assert code == ExitCode.OK and "kb-eval init --kb-path" in out


def test_no_golden_file_names_kb_eval_init(tmp_path: Path) -> None:
    (tmp_path / "a.md").write_text("# A\n\nbody text here\n", encoding="utf-8")
    code, _, err = kb_eval("--kb-path", str(tmp_path), "--no-history")
    assert code == ExitCode.BAD_INPUT
    assert "no golden file found" in err and f"kb-eval init --kb-path {tmp_path}" in err


def test_a_run_after_init_leaves_only_ignored_files_in_the_kb_folder(repository: Path) -> None:
    """The history and its lock file stay in the KB folder (the lock must outlive the run);
    init's .gitignore lines cover both, so `git add -A` commits neither."""
    kb = repository / "docs/kb"
    code, out, _ = kb_eval("init", "--kb-path", "docs/kb")
    assert code == ExitCode.OK and "wrote docs/kb/.gitignore" in out
    before = {p.name for p in kb.iterdir()}
    kb_eval("--kb-path", "docs/kb")
    added = {p.name for p in kb.iterdir()} - before
    assert added == {".kb-eval-history.json", "..kb-eval-history.json.lock"}
    subprocess.run(["git", "init", "-q", str(repository)], check=True)
    listed = subprocess.run(
        ["git", "-C", str(repository), "status", "--porcelain", "--untracked-files=all", "docs/kb"],
        check=True, capture_output=True, text=True,
    ).stdout
    assert ".kb-eval-history.json" not in listed and ".lock" not in listed
    assert ".kb-eval.yml" in listed  # the golden file itself is meant to be committed


def test_init_appends_to_a_gitignore_without_repeating_lines(repository: Path) -> None:
    ignore = repository / "docs/kb/.gitignore"
    ignore.write_text("drafts/\n/.kb-eval-history.json", encoding="utf-8")
    kb_eval("init", "--kb-path", "docs/kb")
    lines = ignore.read_text(encoding="utf-8").splitlines()
    assert lines[:2] == ["drafts/", "/.kb-eval-history.json"]
    assert lines.count("/.kb-eval-history.json") == 1 and "/..kb-eval-history.json.lock" in lines


def test_starter_placeholders_are_a_warning_on_every_run_until_rewritten(repository: Path) -> None:
    kb_eval("init", "--kb-path", "docs/kb")
    for _ in range(2):
        code, _, err = kb_eval("--kb-path", "docs/kb", "--no-history")
        assert code == ExitCode.OK
        assert err.count("still a placeholder written by kb-eval init") == 5
    golden = repository / "docs/kb/.kb-eval.yml"
    data = yaml.safe_load(golden.read_text(encoding="utf-8"))
    for query in data["queries"]:
        query["tags"] = ["rewritten"]
        query["query"] = "how would a reader ask about " + query["query"]
    golden.write_text(yaml.safe_dump(data), encoding="utf-8")
    code, _, err = kb_eval("--kb-path", "docs/kb", "--no-history")
    assert code == ExitCode.OK and "placeholder" not in err
