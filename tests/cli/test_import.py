"""`kb-eval import`: TREC qrels with their queries, and Quepid's ratings, become a golden file that
scores as trec_eval scores the same judgments; every refusal names the file, the line and the field."""

from __future__ import annotations

import io
import json
import random
from pathlib import Path

import pytest
import pytrec_eval

from scanner.cli.main import main
from scanner.foundation.errors import ExitCode
from scanner.golden.file import load_golden

SLICE = Path(__file__).parents[1] / "fixtures" / "cranfield" / "slice"
QRELS = SLICE / "cranfield.qrels"
QUERIES = SLICE / "cranfield-queries.tsv"
KS = (1, 5, 10)
DEPTH = 20


def kb_eval(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(list(argv), out, err)
    return code, out.getvalue(), err.getvalue()


def write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def imported(*argv: str) -> str:
    code, out, err = kb_eval("import", *argv)
    assert code == ExitCode.OK, err
    return out


def golden_of(tmp_path: Path, text: str, name: str = "golden.yml") -> list[tuple[str, str, list[tuple[str, str | None, int]]]]:
    queries = load_golden(write(tmp_path / name, text)).queries
    return [(q.id, q.text, [(e.path, e.heading, e.grade) for e in q.expected]) for q in queries]


def test_the_slice_is_graded_and_holds_negative_judgments() -> None:
    # Guards the round trip against passing on binary or positive-only judgments.
    grades = {int(line.split()[3]) for line in QRELS.read_text().splitlines()}
    assert grades == {-1, 1, 2, 3, 4}


def test_imported_cranfield_judgments_score_as_trec_eval_scores_them(tmp_path: Path) -> None:
    qrels: dict[str, dict[str, int]] = {}
    for line in QRELS.read_text().splitlines():
        query, _, doc, grade = line.split()
        qrels.setdefault(query, {})[doc] = int(grade)
    rng = random.Random(7)
    runs = {}
    for query, judged in qrels.items():
        pool = list(dict.fromkeys([*judged, *(str(n) for n in rng.sample(range(1, 1401), 30))]))
        rng.shuffle(pool)
        runs[query] = pool[: rng.randint(1, DEPTH)]
    kb = tmp_path / "kb"
    kb.mkdir()
    for doc in {d for ranking in runs.values() for d in ranking} | {d for judged in qrels.values() for d in judged}:
        write(kb / f"{doc}.md", f"# Document {doc}\n")
    run = write(tmp_path / "run.trec", "".join(
        f"{q} Q0 {doc}.md {rank} {DEPTH - rank + 1} seeded\n" for q, ranking in runs.items() for rank, doc in enumerate(ranking, 1)
    ))
    golden = write(tmp_path / "golden.yml", imported("--qrels", str(QRELS), "--queries", str(QUERIES), "--doc-path", "{docno}.md"))
    report = tmp_path / "report.json"
    code, _, err = kb_eval("--kb-path", str(kb), "--golden", str(golden), "--run-file", str(run), "--no-history",
                           "--limit", str(DEPTH), "--k", ",".join(map(str, KS)), "--report", str(report))
    assert code == ExitCode.OK, err
    ours = {row["id"]: row["metrics"] for row in json.loads(report.read_text())["per_query"]}
    cut = ",".join(map(str, KS))
    theirs = pytrec_eval.RelevanceEvaluator(
        qrels, {"recip_rank", "map", f"recall.{cut}", f"P.{cut}", f"ndcg_cut.{cut}"}, relevance_level=1,
    ).evaluate({q: {d: float(DEPTH - r) for r, d in enumerate(ranking, 1)} for q, ranking in runs.items()})
    assert set(ours) == set(theirs) == set(qrels) and len(ours) == 30
    for query, row in theirs.items():
        mine = ours[query]
        assert mine["reciprocal_rank"] == pytest.approx(row["recip_rank"], abs=1e-12)
        assert mine["average_precision"] == pytest.approx(row["map"], abs=1e-12)
        for k in KS:
            assert mine["recall_at_k"][str(k)] == pytest.approx(row[f"recall_{k}"], abs=1e-12)
            assert mine["precision_at_k"][str(k)] == pytest.approx(row[f"P_{k}"], abs=1e-12)
            # A -1 judgment is a gain of 0 to trec_eval's nDCG, as grade 0 is to kb-eval's.
            assert mine["ndcg_at_k"][str(k)] == pytest.approx(row[f"ndcg_cut_{k}"], abs=1e-12)


def test_an_import_reads_back_as_the_same_judgments_written_by_hand(tmp_path: Path) -> None:
    qrels = write(tmp_path / "q.qrels", "a 0 guide.md 2\na 0 faq.md#Set%20up 0\nb 0 guide.md -2\n")
    queries = write(tmp_path / "q.tsv", "a\thow do I deploy\nb\twhat is a release\nc\tnever judged\n")
    by_hand = (
        "queries:\n"
        "  - {id: a, query: how do I deploy, expected: [{path: guide.md, grade: 2}, {path: faq.md, heading: Set up, grade: 0}]}\n"
        "  - {id: b, query: what is a release, expected: [{path: guide.md, grade: 0}]}\n"
    )
    assert golden_of(tmp_path, imported("--qrels", str(qrels), "--queries", str(queries))) == golden_of(tmp_path, by_hand, "hand.yml")


def test_beir_jsonl_queries_import_as_the_same_golden_file_as_tsv(tmp_path: Path) -> None:
    qrels = write(tmp_path / "q.qrels", "1 0 a.md 1\n2 0 b.md 3\n")
    tsv = write(tmp_path / "q.tsv", "1\tfirst question\n2\tsecond question\n")
    jsonl = write(tmp_path / "q.jsonl", '{"_id": "1", "text": "first question", "metadata": {}}\n{"_id": "2", "text": "second question"}\n')
    from_tsv = imported("--qrels", str(qrels), "--queries", str(tsv)).split("\n", 1)[1]
    from_jsonl = imported("--qrels", str(qrels), "--queries", str(jsonl)).split("\n", 1)[1]
    assert from_tsv == from_jsonl and "second question" in from_tsv


def test_queries_the_qrels_do_not_judge_are_left_out_and_counted(tmp_path: Path) -> None:
    qrels = write(tmp_path / "q.qrels", "1 0 a.md 1\n")
    queries = write(tmp_path / "q.tsv", "1\tjudged\n2\tnot judged\n")
    code, out, err = kb_eval("import", "--qrels", str(qrels), "--queries", str(queries))
    assert code == ExitCode.OK
    assert "not judged" not in out and "judged" in out
    assert "1 of the 2 queries" in err and "left out" in err


def test_negative_grades_are_read_as_zero_and_said(tmp_path: Path) -> None:
    queries = write(tmp_path / "q.tsv", "1\tq\n")
    code, out, err = kb_eval("import", "--qrels", str(write(tmp_path / "n.qrels", "1 0 a.md -1\n")), "--queries", str(queries))
    assert code == ExitCode.OK and "grade: 0" in out and "1 negative grades read as 0" in err
    # The near miss: a zero is not negative, and nothing is said.
    code, out, err = kb_eval("import", "--qrels", str(write(tmp_path / "z.qrels", "1 0 a.md 0\n")), "--queries", str(queries))
    assert code == ExitCode.OK and "grade: 0" in out and "negative" not in err


@pytest.mark.parametrize(
    ("qrels", "queries", "line", "field", "words"),
    [
        ("1 0 a.md 1\n1 0 b.md\n", "1\tq\n", 2, "--qrels", "has 3 fields, expected 4"),
        ("1 0 a.md 1\n1 0 b.md 2.5\n", "1\tq\n", 2, "grade", "grade '2.5' is not a whole number"),
        ("1 0 a.md 1\n1 0 a.md 2\n", "1\tq\n", 2, "docno", "judged twice for query '1' (first on line 1)"),
        ("1 0 a.md 1\n7 0 b.md 1\n", "1\tq\n", 2, "query", "query '7' is judged here but not in"),
        ("1 0 ../a.md 1\n", "1\tq\n", 1, "docno", "contains `..`"),
        ("1 0 a.md 1\n", "1\tq\n2 no tab\n", 2, "--queries", "no tab between the id and the text"),
        ("1 0 a.md 1\n", '{"_id": "1"}\n', 1, "text", "none of text, query"),
        # Nested past the recursion limit: the strict reader's refusal, not an internal error.
        ("1 0 a.md 1\n", "{" + '"a":[' * 50_000 + "]" * 50_000 + "}\n", 1, "--queries", "not a JSON object"),
        ("1 0 a.md 1\n", '{"_id": "1", "text": NaN}\n', 1, "--queries", "not a JSON object"),
        ("1 0 a.md 1\n", "1\tq\n1\tagain\n", 2, "id", "query id '1' appears twice"),
    ],
)
def test_a_refused_trec_import_names_file_line_and_field_and_writes_nothing(
    tmp_path: Path, qrels: str, queries: str, line: int, field: str, words: str
) -> None:
    qrels_file = write(tmp_path / "x.qrels", qrels)
    queries_file = write(tmp_path / ("x.jsonl" if queries.startswith("{") else "x.tsv"), queries)
    broken = queries_file if field in ("--queries", "text", "id") else qrels_file
    output = tmp_path / "golden.yml"
    code, out, err = kb_eval("import", "--qrels", str(qrels_file), "--queries", str(queries_file), "--output", str(output))
    assert code == ExitCode.BAD_INPUT
    assert f"{broken}:{line}: " in err and f"(field: {field})" in err and words in err and "hint:" in err
    assert out == "" and not output.exists()


def test_the_near_misses_of_the_refusals_import(tmp_path: Path) -> None:
    # Blank lines, extra whitespace, a `+` grade and an integer JSONL id are what the files in use hold.
    qrels = write(tmp_path / "x.qrels", "\n1  0\ta.md +2\n2 0 b.md 1\n")
    queries = write(tmp_path / "x.jsonl", '{"_id": 1, "text": "q one"}\n\n{"query_id": "2", "query": "q two"}\n')
    assert [q[0] for q in golden_of(tmp_path, imported("--qrels", str(qrels), "--queries", str(queries)))] == ["1", "2"]


def test_an_existing_output_is_never_overwritten(tmp_path: Path) -> None:
    qrels, queries = write(tmp_path / "x.qrels", "1 0 a.md 1\n"), write(tmp_path / "x.tsv", "1\tq\n")
    output = write(tmp_path / "golden.yml", "mine\n")
    code, _, err = kb_eval("import", "--qrels", str(qrels), "--queries", str(queries), "--output", str(output))
    assert code == ExitCode.BAD_INPUT and "already exists; kb-eval import never overwrites" in err
    assert output.read_text() == "mine\n"
    # The near miss: a new file is written, and stdout stays empty.
    fresh = tmp_path / "new.yml"
    code, out, err = kb_eval("import", "--qrels", str(qrels), "--queries", str(queries), "--output", str(fresh))
    assert code == ExitCode.OK and out == "" and f"wrote {fresh}: 1 queries, 1 judgments" in err
    assert golden_of(tmp_path, fresh.read_text()) == [("1", "q", [("a.md", None, 1)])]


def test_quepid_ratings_import_with_ids_from_the_text_and_unrated_rows_left_out(tmp_path: Path) -> None:
    long = "how do I configure the deployment pipeline for staging"
    ratings = write(tmp_path / "r.csv", (
        "query,docid,rating\n"
        f"{long},deploy.md,3\n"
        f"{long},faq.md,\n"
        f"{long} and production,deploy.md,1\n"
        '"tabs, spaces",style.md#Indentation,0\n'
    ))
    code, out, err = kb_eval("import", "--quepid", str(ratings))
    assert code == ExitCode.OK, err
    assert golden_of(tmp_path, out) == [
        (long[:32], long, [("deploy.md", None, 3)]),
        (f"{long[:32]} (2)", f"{long} and production", [("deploy.md", None, 1)]),
        ("tabs, spaces", "tabs, spaces", [("style.md", "Indentation", 0)]),
    ]
    assert "1 rows without a rating left out" in err and "ids end in (2)" in err


def test_quepid_s_detailed_export_columns_are_found_by_name(tmp_path: Path) -> None:
    ratings = write(tmp_path / "r.csv", "Team Name,Query Text,Doc ID,Title,Rating\nsearch,what is up,12,Up,2\n")
    assert golden_of(tmp_path, imported("--quepid", str(ratings), "--doc-path", "kb/{docno}.md")) == [
        ("what is up", "what is up", [("kb/12.md", None, 2)])
    ]


@pytest.mark.parametrize(
    ("csv", "line", "field", "words"),
    [
        ("query,doc,rating\nq,a.md,1\n", 1, "docid", "the header has no `docid` column"),
        ("query,docid,rating\nq,a.md,high\n", 2, "rating", "grade 'high' is not a whole number"),
        ("query,docid,rating\nq,a.md,1\nq,a.md,2\n", 3, "docid", "rated twice for this query (first on line 2)"),
        ("query,docid,rating\n,a.md,1\n", 2, "query", "the query is empty"),
    ],
)
def test_a_refused_quepid_import_names_file_line_and_field(tmp_path: Path, csv: str, line: int, field: str, words: str) -> None:
    ratings = write(tmp_path / "r.csv", csv)
    code, out, err = kb_eval("import", "--quepid", str(ratings))
    assert code == ExitCode.BAD_INPUT and out == ""
    assert f"{ratings}:{line}: " in err and f"(field: {field})" in err and words in err


def test_the_sources_are_given_one_at_a_time_and_whole(tmp_path: Path) -> None:
    qrels, ratings = write(tmp_path / "x.qrels", "1 0 a.md 1\n"), write(tmp_path / "r.csv", "query,docid,rating\nq,a.md,1\n")
    code, _, err = kb_eval("import", "--qrels", str(qrels))
    assert code == ExitCode.BAD_INPUT and "--queries is missing" in err
    code, _, err = kb_eval("import", "--quepid", str(ratings), "--qrels", str(qrels))
    assert code == ExitCode.BAD_INPUT and "--quepid and --qrels/--queries both name judgments" in err
    code, _, err = kb_eval("import", "--quepid", str(ratings), "--doc-path", "docs/")
    assert code == ExitCode.BAD_INPUT and "does not hold {docno}" in err
