"""`kb-eval compare REPORT...`: a row per metric, a column per run, each later run's paired
significance against the first where the runs measured the same queries the same way, and the
reason where they did not."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from scanner.cli.main import main
from scanner.compare.significance import paired_sign_flip_test
from scanner.foundation.errors import ExitCode

QUERIES = [f"q{n}" for n in range(1, 9)]
DOCS = ["a.md", "b.md", "c.md", "d.md"]


def kb_eval(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(list(argv), out, err)
    return code, out.getvalue(), err.getvalue()


@pytest.fixture()
def kb(tmp_path: Path) -> Path:
    folder = tmp_path / "kb"
    folder.mkdir()
    for doc in DOCS:
        (folder / doc).write_text(f"# {doc}\n\nText about {doc}.\n", encoding="utf-8")
    entries = "".join(
        f"  - id: {q}\n    query: question {n}\n    expected: [a.md]\n    tags: [{'ops' if n <= 4 else 'dev'}]\n"
        for n, q in enumerate(QUERIES, 1)
    )
    (tmp_path / "golden.yml").write_text("queries:\n" + entries, encoding="utf-8")
    return folder


def report(tmp_path: Path, kb: Path, name: str, first: dict[str, str], *extra: str) -> str:
    """A report of a run whose top hit for each query is `first[query]` (else b.md), a.md second."""
    lines = []
    for q in QUERIES:
        top = first.get(q, "b.md")
        ranking = [top, *(d for d in ["a.md", "b.md", "c.md"] if d != top)]
        lines += [f"{q} Q0 {doc} {rank} {10 - rank} run\n" for rank, doc in enumerate(ranking, 1)]
    run = tmp_path / f"{name}.trec"
    run.write_text("".join(lines), encoding="utf-8")
    path = tmp_path / f"{name}.json"
    code, _, err = kb_eval("--kb-path", str(kb), "--golden", str(tmp_path / "golden.yml"), "--run-file", str(run),
                           "--no-history", "--report", str(path), *extra)
    assert code == ExitCode.OK, err
    return str(path)


def test_every_metric_is_a_row_and_every_run_a_column_with_its_paired_test(tmp_path: Path, kb: Path) -> None:
    base = report(tmp_path, kb, "base", {})
    better = report(tmp_path, kb, "better", {q: "a.md" for q in QUERIES})
    some = report(tmp_path, kb, "some", {"q1": "a.md"})
    code, out, _ = kb_eval("compare", base, better, some, "--format", "json")
    assert code == ExitCode.OK
    table = json.loads(out)
    assert [run["name"] for run in table["runs"]] == [base, better, some]
    rows = {row["metric"]: row["cells"] for row in table["metrics"]}
    assert {"recall@1", "MRR", "nDCG@10", "P@5", "success@1", "MAP", "judged@10"} <= set(rows)
    mrr = rows["MRR"]
    assert [cell["value"] for cell in mrr] == [0.5, 1.0, pytest.approx(0.5625)]
    assert mrr[0]["delta"] is None and mrr[0]["p_value"] is None
    assert mrr[1]["delta"] == 0.5
    # Eight queries each gaining 0.5: the exact sign-flip p-value is 2/256.
    assert mrr[1]["p_value"] == pytest.approx(paired_sign_flip_test([1.0] * 8, [0.5] * 8).p_value) == pytest.approx(2 / 256)
    assert mrr[1]["significant"] is True
    # One query of eight moving is not significant: the near miss.
    assert mrr[2]["p_value"] == 1.0 and mrr[2]["significant"] is False
    assert table["runs"][1]["paired"] is True and table["runs"][1]["paired_queries"] == 8


def test_runs_that_measured_differently_show_values_and_the_reason_without_a_test(tmp_path: Path, kb: Path) -> None:
    base = report(tmp_path, kb, "base", {})
    other_k = report(tmp_path, kb, "other-k", {q: "a.md" for q in QUERIES}, "--k", "1,3")
    code, out, _ = kb_eval("compare", base, other_k, "--format", "json")
    assert code == ExitCode.OK
    table = json.loads(out)
    assert table["runs"][1]["paired"] is False
    assert table["runs"][1]["not_paired_because"] == ["k values differ: [1, 5, 10] vs [1, 3] (the first run vs this run)"]
    mrr = next(row["cells"] for row in table["metrics"] if row["metric"] == "MRR")
    assert mrr[1] == {"value": 1.0, "delta": None, "p_value": None, "significant": None}
    recall_3 = next(row["cells"] for row in table["metrics"] if row["metric"] == "recall@3")
    assert recall_3[0]["value"] is None and recall_3[1]["value"] == 1.0
    code, text, _ = kb_eval("compare", base, other_k)
    assert "[2] " in text and "not paired with the first run, values only: k values differ" in text


def test_another_retriever_still_pairs_and_another_golden_file_does_not(tmp_path: Path, kb: Path) -> None:
    # The runs compared are different search configurations: the retriever is what they compare.
    base = report(tmp_path, kb, "base", {})
    builtin = tmp_path / "builtin.json"
    golden = tmp_path / "golden.yml"
    code, _, err = kb_eval("--kb-path", str(kb), "--golden", str(golden), "--weights", "1,1,1", "--no-history",
                           "--report", str(builtin))
    assert code == ExitCode.OK, err
    golden.write_text(golden.read_text().replace("question 8", "the eighth question"), encoding="utf-8")
    edited = report(tmp_path, kb, "edited", {})
    code, out, _ = kb_eval("compare", base, str(builtin), edited, "--format", "json")
    runs = json.loads(out)["runs"]
    assert code == ExitCode.OK and runs[1]["paired"] is True and runs[1]["retriever"] != runs[0]["retriever"]
    assert runs[2]["paired"] is False and runs[2]["not_paired_because"] == ["golden changed since the first run"]


def test_a_tag_compares_its_own_means_and_queries(tmp_path: Path, kb: Path) -> None:
    base = report(tmp_path, kb, "base", {})
    ops_only = report(tmp_path, kb, "ops", {q: "a.md" for q in QUERIES[:4]})
    code, out, _ = kb_eval("compare", base, ops_only, "--tag", "ops", "--format", "json")
    assert code == ExitCode.OK
    table = json.loads(out)
    mrr = next(row["cells"] for row in table["metrics"] if row["metric"] == "MRR")
    assert table["tag"] == "ops" and [c["value"] for c in mrr] == [0.5, 1.0] and table["runs"][1]["paired_queries"] == 4
    # The near miss: the other tag did not move.
    code, out, _ = kb_eval("compare", base, ops_only, "--tag", "dev", "--format", "json")
    mrr = next(row["cells"] for row in json.loads(out)["metrics"] if row["metric"] == "MRR")
    assert [c["value"] for c in mrr] == [0.5, 0.5] and mrr[1]["delta"] == 0.0


def test_an_unknown_tag_is_refused_naming_the_tags_there_are(tmp_path: Path, kb: Path) -> None:
    base = report(tmp_path, kb, "base", {})
    code, out, err = kb_eval("compare", base, base, "--tag", "opz")
    assert code == ExitCode.BAD_INPUT and out == ""
    assert "no query of these runs carries the tag 'opz' (tags: dev, ops)" in err


def test_the_markdown_table_marks_significant_changes_and_escapes_report_names(tmp_path: Path, kb: Path) -> None:
    base = report(tmp_path, kb, "base", {})
    better = report(tmp_path, kb, "better", {q: "a.md" for q in QUERIES})
    named = tmp_path / "a|b`<img>.json"
    Path(better).rename(named)
    code, out, _ = kb_eval("compare", base, str(named), "--format", "markdown")
    assert code == ExitCode.OK
    assert "| MRR | 0.5000 | **1.0000&nbsp;+0.5000&nbsp;(p&nbsp;0.00781)** |" in out
    assert "| recall@10 | 1.0000 | 1.0000&nbsp;+0.0000&nbsp;(p&nbsp;1) |" in out  # not significant: not bold
    assert "\\(p below 0.05: bold\\)" in out
    assert "a\\|b'<img>.json" in out and "<img>" not in out.replace("`" + str(named).replace("|", "\\|").replace("`", "'") + "`", "")


@pytest.mark.parametrize(
    ("argv", "words"),
    [
        (["only-one.json"], "1 reports given; compare needs 2 to 20"),
        (["missing.json", "missing-too.json"], "the report file does not exist"),
    ],
)
def test_compare_refuses_what_it_cannot_compare(tmp_path: Path, argv: list[str], words: str) -> None:
    code, out, err = kb_eval("compare", *(str(tmp_path / a) for a in argv))
    assert code == ExitCode.BAD_INPUT and out == "" and words in err


def test_a_file_that_is_not_a_report_is_refused_naming_it(tmp_path: Path, kb: Path) -> None:
    base = report(tmp_path, kb, "base", {})
    other = tmp_path / "other.json"
    other.write_text('{"not": "a report"}', encoding="utf-8")
    code, _, err = kb_eval("compare", base, str(other))
    assert code == ExitCode.BAD_INPUT and f"{other}: the report is not a valid kb-eval report" in err
