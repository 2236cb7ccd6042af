"""The golden set's health: duplicated wordings, queries that are their answer's title, and how
much of the KB the labels reach. Reported and warned about, never fatal."""

from __future__ import annotations

import io
import json
from pathlib import Path

from scanner.cli.main import main
from scanner.evaluation.health import TITLE_SIMILARITY, coverage, title_similarity
from scanner.foundation.errors import ExitCode
from scanner.golden.file import ExpectedEntry, GoldenQuery


def run(tmp_path: Path, golden: str, docs: dict[str, str], *extra: str) -> tuple[int, dict, str]:  # type: ignore[type-arg]
    kb = tmp_path / "kb"
    kb.mkdir(exist_ok=True)
    for name, text in docs.items():
        (kb / name).write_text(text, encoding="utf-8")
    (tmp_path / "golden.yml").write_text(golden, encoding="utf-8")
    out, err = io.StringIO(), io.StringIO()
    code = main(["--kb-path", str(kb), "--golden", str(tmp_path / "golden.yml"), "--no-history",
                 "--report", str(tmp_path / "report.json"), *extra], out, err)
    report = json.loads((tmp_path / "report.json").read_text()) if code == ExitCode.OK else {}
    return code, report, err.getvalue()


DOCS = {
    "deploy.md": "# Deploy Guide\n\nShip the service with the release pipeline.\n\n## Rolling back\n\nRevert the tag.\n",
    "style.md": "# Writing style\n\nShort sentences.\n",
    "faq.md": "# FAQ\n\nQuestions people ask.\n",
}


def golden(*queries: tuple[str, str, str]) -> str:
    return "queries:\n" + "".join(f"  - id: {qid}\n    query: {text!r}\n    expected: [{path}]\n" for qid, text, path in queries)


def test_queries_with_the_same_wording_after_normalisation_are_warned_naming_every_id(tmp_path: Path) -> None:
    code, report, err = run(tmp_path, golden(
        ("a", "How do I ship the service?", "deploy.md"),
        ("b", "how do  I SHIP the service?", "deploy.md"),
        ("c", "How do I ship the service?", "deploy.md"),
        # The near miss: punctuation is not normalised away, so this is another wording.
        ("d", "How do I ship the service", "deploy.md"),
    ), DOCS)
    assert code == ExitCode.OK
    [duplicate] = report["golden_health"]["duplicate_wordings"]
    assert duplicate == {"wording": "how do i ship the service?", "ids": ["a", "b", "c"], "lines": [2, 5, 8]}
    assert "queries 'a', 'b', 'c' have the same wording" in err and "'d'" not in err.split("same wording")[0]
    assert [w["code"] for w in report["warnings"]].count("duplicate-wording") == 1


def test_a_query_that_is_its_answer_s_title_or_heading_is_warned(tmp_path: Path) -> None:
    code, report, err = run(tmp_path, golden(
        ("title", "deploy guide", "deploy.md"),
        ("heading", "Rolling back!", "deploy.md"),
        # The near misses: a reader's question about the page, and a title of a page that is not the answer.
        ("question", "how do I ship the service", "deploy.md"),
        ("other", "writing style", "faq.md"),
    ), DOCS)
    assert code == ExitCode.OK
    found = {t["id"]: (t["path"], t["title"], t["similarity"]) for t in report["golden_health"]["title_queries"]}
    assert found == {"title": ("deploy.md", "Deploy Guide", 1.0), "heading": ("deploy.md", "Rolling back", 1.0)}
    assert "query 'title' is (nearly) the title of its answer 'deploy.md' ('Deploy Guide')" in err
    assert next(w for w in report["warnings"] if w["code"] == "title-query")["line"] == 2


def test_the_title_threshold_sits_between_a_copied_title_and_a_real_question() -> None:
    # Cranfield's query 172 is its answer's title less its first three words; queries 100 and 105
    # ask about their answers' subjects in their own words (TITLE_SIMILARITY's docstring has the distribution).
    copied = title_similarity(
        "solution of the blasius problem with three-point boundary conditions .",
        "on the numerical solution of the blasius problem with three-point boundary conditions .",
    )
    asked = [
        title_similarity(
            "what are the effects of initial imperfections on the elastic buckling of cylindrical shells under axial compression .",
            "on the role of initial imperfections in plastic buckling of cylinders under axial compression .",
        ),
        title_similarity(
            "what is the effect of an internal liquid column on the breathing vibrations of a cylindrical shell .",
            "the effect of an internal compressible fluid column on the breathing vibrations of a thin pressurised "
            "cylindrical shell .",
        ),
    ]
    assert max(asked) < TITLE_SIMILARITY <= copied
    assert title_similarity("Deploy guide", "deploy-guide") == 1.0


def query(qid: str, *paths: str, grade: int = 1) -> GoldenQuery:
    return GoldenQuery(qid, qid, tuple(ExpectedEntry(p, None, 1, grade) for p in paths), (), 1)


def test_coverage_counts_answers_among_indexed_documents_and_what_no_top_k_reaches() -> None:
    indexed = {"a.md", "b.md", "c.md", "d.md"}
    golden = [query("q1", "a.md", "gone.md"), query("q2", "b.md", grade=0)]
    # c.md is ranked exactly at k by one query, d.md just past it.
    cover = coverage(indexed, golden, [["a.md", "c.md", "d.md"], ["b.md"]], 2)
    assert (cover.documents, cover.answers, cover.answer_share) == (4, 1, 0.25)  # grade 0 and unindexed do not count
    assert (cover.k, cover.unreached_count, cover.unreached) == (2, 1, ("d.md",))


def test_health_is_in_the_text_report_and_folded_in_the_summary_and_never_fails_the_run(tmp_path: Path) -> None:
    summary = tmp_path / "summary.md"
    code, report, _ = run(tmp_path, golden(("title", "deploy guide", "deploy.md"), ("dup", "deploy guide", "deploy.md")),
                          DOCS, "--summary", str(summary))
    assert code == ExitCode.OK
    coverage_document = report["golden_health"]["coverage"]
    assert coverage_document["answers"] == 1 and coverage_document["documents"] == 3
    text = summary.read_text()
    # Inside <summary> (an HTML block) the parentheses are as typed: no Markdown escape to show.
    assert "<details><summary>Golden set: 1 of 3 documents (33%) are some query's answer;" in text
    assert "1 wording used by more than one query; 2 queries test only a title</summary>" in text



def test_a_starter_query_keeps_its_own_warning_and_gets_no_second_one(tmp_path: Path) -> None:
    starter = "queries:\n  - {id: s, query: Deploy Guide, expected: [deploy.md], tags: [starter]}\n"
    code, report, _ = run(tmp_path, starter + "  - {id: t, query: Deploy Guide!, expected: [deploy.md]}\n", DOCS)
    codes = [w["code"] for w in report["warnings"]]
    assert code == ExitCode.OK and codes.count("starter-placeholder") == 1
    # The near miss: the same title without the starter tag is warned as a title query.
    assert [t["id"] for t in report["golden_health"]["title_queries"]] == ["t"] and codes.count("title-query") == 1


def test_a_heading_that_cannot_reach_the_threshold_is_not_aligned_and_one_that_can_is(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    # difflib's alignment is pure Python and runs per heading of every answer: the bounds from the
    # lengths and the shared characters decide most headings without it, with the same answer.
    from scanner.evaluation import health

    aligned: list[str] = []

    class Counting(health.SequenceMatcher):  # type: ignore[misc,name-defined]
        def ratio(self) -> float:
            aligned.append(self.b)
            return float(super().ratio())

    monkeypatch.setattr(health, "SequenceMatcher", Counting)
    headings = ["Deploy guide", "Deploy guides", "Rollback", "Deploy the whole fleet again", "xyzzy quux plugh"]
    found = health.title_queries([query("deploy guide", "a.md")], {"a.md": headings})
    assert [(t.title, t.similarity) for t in found] == [("Deploy guide", 1.0)]
    # Only the headings whose bounds reach 0.85 were aligned; "Deploy guides" (0.96) among them.
    assert aligned == ["deploy guide", "deploy guides"]
    assert title_similarity("deploy guide", "deploy guides") >= TITLE_SIMILARITY
    # Unbounded, the ratio of every pair is difflib's own.
    from difflib import SequenceMatcher

    for heading in headings:
        expected = SequenceMatcher(None, "deploy guide", heading.lower(), autojunk=False).ratio()
        assert title_similarity("deploy guide", heading) == expected
