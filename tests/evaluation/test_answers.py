"""A retriever's answers checked against the corpus before they are scored (evaluation/answers.py),
through the whole CLI run with a JSONL run file and with a command."""

from __future__ import annotations

import json
import shlex
import shutil
import sys
from pathlib import Path

import pytest

from scanner.cli.main import execute
from scanner.evaluation import answers as answers_module
from scanner.evaluation.answers import EXAMPLES_SHOWN, AnswerSource, ScoreLevel, check_answers
from scanner.foundation.diagnostics import DiagnosticCode, Diagnostics
from scanner.foundation.errors import ExitCode
from scanner.golden.file import load_golden
from scanner.golden.headings import heading_forms
from scanner.retrievers.base import Hit, RetrieverKind
from tests.support.loopback_server import running, serve_rankings

EXAMPLE_KB = Path(__file__).parents[2] / "examples" / "kb"
GOLDEN = """queries:
  - id: deploy
    query: how do I roll back a database migration
    expected:
      - path: guides/deploy.md
        heading: Database
  - id: search
    query: what reranks the candidates
    expected:
      - path: guides/search.md
"""


@pytest.fixture
def kb(tmp_path: Path) -> Path:
    folder = tmp_path / "kb"
    shutil.copytree(EXAMPLE_KB, folder)
    for old in folder.glob(".kb-eval*"):
        old.unlink()
    (folder / ".kb-eval.yml").write_text(GOLDEN)
    return folder


def run_with(kb: Path, answers: dict[str, list[dict[str, object]]], *extra: str) -> tuple[int, str, dict[str, object] | None]:
    run = kb.parent / "run.jsonl"
    run.write_text("".join(json.dumps({"id": qid, "hits": hits}) + "\n" for qid, hits in answers.items()))
    report = kb.parent / "report.json"
    result = execute(["--kb-path", str(kb), "--run-file", str(run), "--no-history", "--report", str(report), *extra])
    document = json.loads(report.read_text()) if report.exists() else None
    return result.exit_code, result.stderr_text, document


def codes(document: dict[str, object] | None) -> list[str]:
    assert document is not None
    warnings = document["warnings"]
    assert isinstance(warnings, list)
    return [w["code"] for w in warnings]


def command_template(tmp_path: Path, answers: dict[str, list[dict[str, object]]]) -> str:
    table = tmp_path / "answers.json"
    table.write_text(json.dumps(answers))
    script = "import json,sys; print(json.dumps({'results': json.load(open(sys.argv[1])).get(sys.argv[2], [])}))"
    return f"{shlex.quote(sys.executable)} -c {shlex.quote(script)} {shlex.quote(str(table))} {{query}}"


QUERIES = {"deploy": "how do I roll back a database migration", "search": "what reranks the candidates"}


def run_command(kb: Path, by_id: dict[str, list[dict[str, object]]], *extra: str) -> tuple[int, str, dict[str, object] | None]:
    template = command_template(kb.parent, {QUERIES[qid]: hits for qid, hits in by_id.items()})
    report = kb.parent / "report.json"
    result = execute(["--kb-path", str(kb), "--command", template, "--no-history", "--report", str(report), *extra])
    document = json.loads(report.read_text()) if report.exists() else None
    return result.exit_code, result.stderr_text, document


def test_a_prefix_one_folder_short_stops_the_run_with_the_longer_prefix(kb: Path) -> None:
    # The engine returns /srv/repo/kb/guides/deploy.md; --path-prefix-strip /srv/repo leaves kb/guides/...
    answers = {"deploy": [{"path": "/srv/repo/kb/guides/deploy.md"}], "search": [{"path": "/srv/repo/kb/guides/search.md"}]}
    code, stderr, document = run_command(kb, answers, "--path-prefix-strip", "/srv/repo")
    assert code == ExitCode.BAD_INPUT and document is None
    assert "no hit of any query is a document of the corpus: 2 returned path(s)" in stderr
    assert "'kb/guides/deploy.md'" in stderr
    assert "--path-prefix-strip '/srv/repo/kb'" in stderr
    # The fix works: the same answers with the computed prefix score.
    code, _, document = run_command(kb, answers, "--path-prefix-strip", "/srv/repo/kb")
    assert code == ExitCode.OK and document is not None
    assert DiagnosticCode.HITS_OUTSIDE_CORPUS not in codes(document)


def test_a_run_file_none_of_whose_paths_is_in_the_corpus_is_refused_naming_the_file(kb: Path) -> None:
    answers = {"deploy": [{"path": "elsewhere/deploy.md"}], "search": [{"path": "elsewhere/search.md"}]}
    code, stderr, document = run_with(kb, answers)
    assert code == ExitCode.BAD_INPUT and document is None
    assert stderr.startswith(f"kb-eval: error: {kb.parent / 'run.jsonl'}: no hit of any query is a document")
    # The near miss: a command has no file to name; the refusal names its setting.
    code, stderr, _ = run_command(kb, answers)
    assert code == ExitCode.BAD_INPUT and stderr.startswith("kb-eval: error: no hit of any query")


def test_absolute_paths_without_a_prefix_get_the_prefix_computed_from_them(kb: Path) -> None:
    answers = {"deploy": [{"path": "/data/kb/guides/deploy.md"}], "search": [{"path": "/data/kb/guides/search.md"}]}
    code, stderr, _ = run_command(kb, answers)
    assert code == ExitCode.BAD_INPUT
    assert "2 of 2 would be corpus paths with --path-prefix-strip '/data/kb'" in stderr


def test_some_paths_outside_the_corpus_are_a_warning_and_the_run_goes_on(kb: Path) -> None:
    answers = {"deploy": [{"path": "guides/deploy.md", "heading": "Database"}, {"path": "old/gone.md"}],
               "search": [{"path": "x/guides/search.md"}]}
    code, stderr, document = run_command(kb, answers)
    assert code == ExitCode.OK
    assert codes(document).count(DiagnosticCode.HITS_OUTSIDE_CORPUS) == 1
    assert "2 returned path(s) are not documents of the corpus" in stderr
    assert "'old/gone.md'" in stderr and "'x/guides/search.md'" in stderr
    assert "1 of 2 would be corpus paths with --path-prefix-strip 'x'" in stderr


def test_every_hit_in_the_corpus_makes_no_warning(kb: Path) -> None:
    answers = {"deploy": [{"path": "guides/deploy.md", "heading": "Database"}], "search": [{"path": "guides/search.md"}]}
    code, _, document = run_command(kb, answers)
    assert code == ExitCode.OK and codes(document) == []


def test_no_hit_for_any_query_from_a_command_is_exit_2_with_what_it_said_on_stderr(kb: Path) -> None:
    # Scored, it was all zeros and exit 0: the program's stderr (here: its index is missing) unseen.
    script = "import sys; sys.stderr.write('e' * 300_000 + '\\nfatal: index not built\\n')"
    template = f"{shlex.quote(sys.executable)} -c {shlex.quote(script)} {{query}}"
    result = execute(["--kb-path", str(kb), "--command", template, "--no-history"])
    assert result.exit_code == ExitCode.BAD_INPUT
    assert "answered none of the 2 queries with a hit" in result.stderr_text
    assert "fatal: index not built" in result.stderr_text and "--command" in result.stderr_text
    assert len(result.stderr_text) < 5_000  # the tail, not the 300 KB


def test_an_empty_json_answer_for_every_query_is_exit_2_too_and_not_a_wrong_path(kb: Path) -> None:
    code, stderr, document = run_command(kb, {"deploy": [], "search": []})
    assert code == ExitCode.BAD_INPUT and document is None
    assert "answered none of the 2 queries" in stderr and "not a document of the corpus" not in stderr


def test_some_queries_without_a_hit_are_a_warning_counting_them(kb: Path) -> None:
    code, stderr, document = run_command(kb, {"deploy": [], "search": [{"path": "guides/search.md"}]}, "--score-level", "document")
    assert code == ExitCode.OK and codes(document) == [DiagnosticCode.EMPTY_ANSWERS]
    assert "1 of 2 queries came back from the command retriever with no hit ('deploy')" in stderr


def test_a_run_file_with_no_hit_is_the_run_it_is(kb: Path) -> None:
    # The near miss: a run file is what some system returned, empty lists included; no warning.
    code, _, document = run_with(kb, {"deploy": [], "search": [{"path": "guides/search.md"}]})
    assert code == ExitCode.OK and DiagnosticCode.EMPTY_ANSWERS not in codes(document)


def test_kb_evals_own_files_returned_as_hits_are_named(kb: Path) -> None:
    answers = {"deploy": [{"path": ".kb-eval.yml"}, {"path": "guides/deploy.md", "heading": "Database"}],
               "search": [{"path": ".kb-eval-history.json"}, {"path": "guides/search.md"}]}
    code, stderr, document = run_command(kb, answers)
    assert code == ExitCode.OK
    assert codes(document).count(DiagnosticCode.OWN_FILE_RETURNED) == 1
    assert "golden file '.kb-eval.yml' (1 time)" in stderr and "run history '.kb-eval-history.json'" in stderr
    assert DiagnosticCode.HITS_OUTSIDE_CORPUS not in codes(document)


def test_a_golden_file_of_another_name_is_recognised_too(kb: Path) -> None:
    (kb / "my-golden.yml").write_text(GOLDEN)
    answers = {"deploy": [{"path": "my-golden.yml"}, {"path": "guides/deploy.md"}], "search": []}
    template = command_template(kb.parent, {QUERIES[qid]: hits for qid, hits in answers.items()})
    result = execute(["--kb-path", str(kb), "--golden", str(kb / "my-golden.yml"), "--command", template, "--no-history"])
    assert "golden file 'my-golden.yml'" in result.stderr_text


def test_a_run_file_outside_the_corpus_is_refused_in_run_file_words(kb: Path) -> None:
    code, stderr, _ = run_with(kb, {"deploy": [{"path": "kb/guides/deploy.md"}], "search": [{"path": "kb/guides/search.md"}]})
    assert code == ExitCode.BAD_INPUT
    assert "--run-file" in stderr and "without the leading 'kb/'" in stderr


# --- headings -----------------------------------------------------------------------------------


DOCUMENT_ANSWERS = {"deploy": [{"path": "guides/deploy.md"}], "search": [{"path": "guides/search.md"}]}


def test_answers_without_headings_against_heading_labels_are_a_warning(kb: Path) -> None:
    code, stderr, document = run_command(kb, DOCUMENT_ANSWERS)
    assert code == ExitCode.OK
    assert DiagnosticCode.ANSWERS_WITHOUT_HEADINGS in codes(document)
    assert "--score-level document" in stderr
    assert document is not None
    assert document["per_query"][0]["metrics"]["reciprocal_rank"] == 0.0  # type: ignore[index]


def test_score_level_document_scores_such_a_retriever_and_is_recorded(kb: Path) -> None:
    code, _, document = run_command(kb, DOCUMENT_ANSWERS, "--score-level", "document")
    assert code == ExitCode.OK and document is not None
    assert DiagnosticCode.ANSWERS_WITHOUT_HEADINGS not in codes(document)
    assert [q["metrics"]["reciprocal_rank"] for q in document["per_query"]] == [1.0, 1.0]  # type: ignore[index]
    assert document["fingerprint"]["score_level"] == "document"  # type: ignore[index]


def test_one_hit_with_a_heading_makes_no_headings_warning(kb: Path) -> None:
    answers = {"deploy": [{"path": "guides/deploy.md", "heading": "Database"}], "search": [{"path": "guides/search.md"}]}
    _, _, document = run_command(kb, answers)
    assert DiagnosticCode.ANSWERS_WITHOUT_HEADINGS not in codes(document)
    assert "score_level" not in document["fingerprint"]  # type: ignore[index]


def test_a_returned_heading_no_section_of_its_document_has_is_named_once_with_the_closest(kb: Path) -> None:
    answers = {"deploy": [{"path": "guides/deploy.md", "heading": "Databse"}, {"path": "guides/search.md", "heading": "Overview"}],
               "search": [{"path": "guides/deploy.md", "heading": "Databse"}]}
    code, stderr, document = run_command(kb, answers)
    assert code == ExitCode.OK
    assert codes(document).count(DiagnosticCode.RETURNED_HEADING_NOT_IN_DOCUMENT) == 1
    # Each (path, heading) once: 'Databse' came back for both queries.
    assert "2 returned heading(s) are no section of their document" in stderr
    assert "'Databse' in 'guides/deploy.md' (2 hits, closest headings there: 'Database'" in stderr
    assert "'Overview' in 'guides/search.md' (" in stderr
    assert "--heading-field" in stderr


def test_a_run_files_wrong_heading_is_named_with_the_run_files_fix(kb: Path) -> None:
    code, stderr, document = run_with(kb, {"deploy": [{"path": "guides/deploy.md", "heading": "Databse"}], "search": []})
    assert code == ExitCode.OK
    assert DiagnosticCode.RETURNED_HEADING_NOT_IN_DOCUMENT in codes(document)
    assert "path#heading" in stderr and "--heading-field" not in stderr


@pytest.mark.parametrize("written", ["Database", "database", "**Database**", "`Database`", "  Database "])
def test_a_returned_heading_written_as_the_page_shows_it_raises_nothing(kb: Path, written: str) -> None:
    answers = {"deploy": [{"path": "guides/deploy.md", "heading": written}], "search": [{"path": "guides/search.md"}]}
    code, _, document = run_command(kb, answers)
    assert code == ExitCode.OK and codes(document) == []
    assert document is not None and document["per_query"][0]["metrics"]["reciprocal_rank"] == 1.0  # type: ignore[index]


def test_returned_headings_are_not_checked_where_headings_are_not_scored(kb: Path) -> None:
    answers = {"deploy": [{"path": "guides/deploy.md", "heading": "Databse"}], "search": [{"path": "guides/search.md"}]}
    _, _, document = run_command(kb, answers, "--score-level", "document")
    assert DiagnosticCode.RETURNED_HEADING_NOT_IN_DOCUMENT not in codes(document)
    (kb / ".kb-eval.yml").write_text(GOLDEN.replace("        heading: Database\n", ""))
    _, _, document = run_command(kb, answers)
    assert DiagnosticCode.RETURNED_HEADING_NOT_IN_DOCUMENT not in codes(document)


def test_past_the_examples_shown_the_wrong_headings_are_counted(kb: Path) -> None:
    wrong = [{"path": "guides/deploy.md", "heading": f"Step {n}"} for n in range(EXAMPLES_SHOWN + 2)]
    _, stderr, _ = run_command(kb, {"deploy": wrong, "search": []}, "--limit", "10")
    assert f"{EXAMPLES_SHOWN + 2} returned heading(s)" in stderr and " and 2 more;" in stderr


def test_the_heading_check_reads_each_distinct_heading_once_however_often_it_is_returned(
    kb: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    counted: list[str] = []

    def counting(text: str) -> tuple[str, ...]:
        counted.append(text)
        return heading_forms(text)

    monkeypatch.setattr(answers_module, "heading_forms", counting)
    golden = load_golden(kb / ".kb-eval.yml")
    documents = {"guides/deploy.md": ["Build", "Rollback", "Database"]}
    reads = []
    for repeats in (10, 10_000):
        counted.clear()
        lists = [[Hit(1, "guides/deploy.md", "Databse", None)] * repeats, [Hit(1, "guides/deploy.md", "Rollback", None)] * repeats]
        warnings = Diagnostics()
        check_answers(golden, lists, set(documents), AnswerSource(RetrieverKind.COMMAND), ScoreLevel.SECTION, warnings,
                      headings=documents)
        assert [item.code for item in warnings.items] == [DiagnosticCode.RETURNED_HEADING_NOT_IN_DOCUMENT]
        reads.append(len(counted))
    assert reads[0] == reads[1] == 3 + 2  # the document's three headings, the two distinct returned


# --- notes become warnings -----------------------------------------------------------------------


def test_text_scores_are_a_warning_and_the_run_scores(kb: Path) -> None:
    answers = {"deploy": [{"path": "guides/deploy.md", "heading": "Database", "score": "83%"}],
               "search": [{"path": "guides/search.md", "score": "0.204014"}]}
    code, stderr, document = run_command(kb, answers)
    assert code == ExitCode.OK
    assert DiagnosticCode.SCORE_NOT_NUMBER in codes(document)
    assert "2 hit score(s) in 2 queries are not numbers" in stderr
    assert document is not None and document["aggregate"]["mrr"] == 1.0  # type: ignore[index]


def test_in_a_workflow_the_warnings_name_the_inputs_not_the_flags(kb: Path) -> None:
    from scanner.settings.declaration import Interface, run_settings

    answers = {"deploy": [{"path": "guides/deploy.md"}, {"path": "x/guides/search.md"}], "search": []}
    template = command_template(kb.parent, {QUERIES[qid]: hits for qid, hits in answers.items()})
    settings = run_settings(
        {"kb_path": kb, "command": template, "no_history": True}, ("command",), Interface.ACTION
    )
    result = execute(settings)
    assert result.exit_code == ExitCode.OK
    messages = [d.message for d in result.diagnostics]
    assert any("with path-prefix-strip 'x'" in m for m in messages), messages
    assert any("score-level document" in m for m in messages)
    assert not any("--path-prefix-strip" in m or "--score-level" in m for m in messages)


def test_at_document_level_a_label_form_keeps_its_documents_and_a_group_stays_one_entry() -> None:
    from scanner.evaluation.answers import ScoreLevel, expected_for_scoring
    from scanner.golden.file import ExpectedEntry

    section = ExpectedEntry("a.md", "Options", 3, 2, parent="Build", subsections=True)
    group = ExpectedEntry("b.md", "X", 4, 3, any_of=(ExpectedEntry("b.md", "X", 0), ExpectedEntry("c.md", None, 0)))
    same_page = ExpectedEntry("d.md", "Y", 5, any_of=(ExpectedEntry("d.md", "Y", 0), ExpectedEntry("d.md", "Z", 0)))
    scored = expected_for_scoring([section, group, same_page], ScoreLevel.DOCUMENT)
    assert [(e.path, e.heading, e.parent, e.subsections, e.grade) for e in scored] == [
        ("a.md", None, None, False, 2), ("b.md", None, None, False, 3), ("d.md", None, None, False, 1)
    ]
    assert [m.path for m in scored[1].members] == ["b.md", "c.md"] and all(m.heading is None for m in scored[1].members)
    assert scored[2].any_of == ()  # one document: a plain entry
    assert expected_for_scoring([section, group], ScoreLevel.SECTION) == (section, group)



def printing(body: dict[str, object], **by_query: dict[str, object]) -> str:
    """A command that prints `body` (or `by_query[query id]`) as its answer, and exits 0."""
    table = {QUERIES[qid]: answer for qid, answer in by_query.items()}
    script = f"import json, sys; sys.stdout.write(json.dumps({table!r}.get(sys.argv[1], {body!r})))"
    return f"{shlex.quote(sys.executable)} -c {shlex.quote(script)} {{query}}"


def test_a_command_that_prints_an_error_as_success_is_exit_2_in_its_own_words(kb: Path) -> None:
    template = printing({"results": [], "error": "Search failed: no such table: search_index"})
    result = execute(["--kb-path", str(kb), "--command", template, "--no-history"])
    assert result.exit_code == ExitCode.BAD_INPUT
    assert "query 'deploy': the service answered with an error: 'Search failed: no such table: search_index'" in (
        result.stderr_text
    )


def test_a_command_that_prints_no_hits_and_a_null_error_found_nothing(kb: Path) -> None:
    # One query answered, so the run measures something; the other found nothing, and says no error.
    template = printing({"results": [], "error": None}, search={"results": [{"path": "guides/search.md"}], "error": None})
    result = execute(["--kb-path", str(kb), "--command", template, "--no-history"])
    assert result.exit_code == ExitCode.OK and "the service answered with an error" not in result.stderr_text


def run_http(kb: Path, by_id: dict[str, list[dict[str, object]]]) -> tuple[int, str]:
    rankings = {QUERIES[qid]: hits for qid, hits in by_id.items()}
    with running(serve_rankings(rankings)) as server:
        result = execute(["--kb-path", str(kb), "--http-url", server.url + "/search", "--no-history", "--format", "json"])
    return result.exit_code, result.stderr_text


def test_an_http_service_answering_no_query_with_a_hit_is_exit_2_naming_its_url_setting(kb: Path) -> None:
    code, stderr = run_http(kb, {"deploy": [], "search": []})
    assert code == ExitCode.BAD_INPUT
    assert "the http retriever answered none of the 2 queries with a hit" in stderr and "--http-url" in stderr
    # The near miss: one answered query makes the run, with the other counted.
    code, stderr = run_http(kb, {"deploy": [], "search": [{"path": "guides/search.md"}]})
    assert code == ExitCode.OK and "1 of 2 queries came back from the http retriever with no hit" in stderr
