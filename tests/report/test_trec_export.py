"""`--export-trec DIR`: trec_eval (pytrec_eval) and ir_measures, reading the exported run and
qrels, reproduce the report's figures, per query and aggregated."""

from __future__ import annotations

import itertools
import json
import math
from pathlib import Path
from typing import Any

import ir_measures
import pytest
import pytrec_eval

from scanner.foundation.errors import ExitCode
from scanner.golden.file import ExpectedEntry
from scanner.report.trec import entry_docno, trec_id
from tests.conftest import run_cli, write_tree

KS = (1, 3, 5)
DOCS = {
    "ops/rollback.md": "# Rollback\nRollback the release: revert the deployment and page the on-call.\n",
    "ops/deploy steps.md": "# Deploy\nDeployment steps: build, tag the release, roll out.\n",
    "ops/images.md": "# Images\nContainer image tags follow the release number.\n",
    "team/oncall.md": "# On-call\nThe on-call rotation schedule changes every Monday.\n",
    "team/pager.md": "# Pager\nThe pager pages the on-call engineer for a failed deployment.\n",
    "notes/release.md": "# Release notes\nEvery release lists its deployment and rollback.\n",
    "notes/tags.md": "# Tags\n## Naming\nRelease tags name the image.\n## History\nOld tags.\n",
}
GOLDEN = """\
queries:
  - id: rollback a release
    query: rollback the release deployment
    expected:
      - {path: ops/rollback.md, grade: 3}
      - {path: notes/release.md, grade: 1}
      - {path: ops/deploy steps.md, grade: 0}
  - id: tags
    query: release tags image
    expected:
      - {path: ops/images.md, grade: 2}
      - {path: notes/tags.md, heading: Naming, grade: 3}
      - {path: notes/release.md, grade: 0}
  - id: oncall
    query: on-call pager schedule
    expected:
      - {path: team/oncall.md, grade: 2}
      - {path: team/pager.md, grade: 2}
  - id: nothing relevant at level 2
    query: deployment steps
    expected:
      - {path: ops/deploy steps.md, grade: 1}
  - id: unanswered
    query: zebra crossing
    expected:
      - {path: notes/release.md, grade: 2}
"""


def exported(tmp_path: Path, level: int) -> tuple[dict[str, Any], Path]:
    kb = write_tree(tmp_path / "kb", {**DOCS, ".kb-eval.yml": GOLDEN})
    out = tmp_path / "trec"
    result = run_cli("--kb-path", kb, "--no-history", "--format", "json", "--k", ",".join(map(str, KS)),
                     "--relevance-level", str(level), "--export-trec", out)
    assert result.code == ExitCode.OK, result.stderr
    return json.loads(result.stdout), out


def read_trec(out: Path) -> tuple[dict[str, dict[str, int]], dict[str, dict[str, float]]]:
    qrels: dict[str, dict[str, int]] = {}
    for line in (out / "kb-eval.qrels").read_text().splitlines():
        qid, _, docno, grade = line.split()
        qrels.setdefault(qid, {})[docno] = int(grade)
    run: dict[str, dict[str, float]] = {}
    for line in (out / "kb-eval.run").read_text().splitlines():
        qid, q0, docno, _rank, score, tag = line.split()
        assert q0 == "Q0" and tag == "kb-eval"
        assert docno not in run.get(qid, {}), "a docno appears twice in one query's ranking"
        run.setdefault(qid, {})[docno] = float(score)
    return qrels, run


@pytest.mark.parametrize("level", [1, 2])
def test_trec_eval_reproduces_every_figure_of_the_report(tmp_path: Path, level: int) -> None:
    report, out = exported(tmp_path, level)
    qrels, run = read_trec(out)
    cut = ",".join(map(str, KS))
    evaluator = pytrec_eval.RelevanceEvaluator(
        qrels, {"recip_rank", "map", f"recall.{cut}", f"P.{cut}", f"success.{cut}", f"ndcg_cut.{cut}"},
        relevance_level=level,
    )
    theirs = evaluator.evaluate(run)
    counted = [row for row in report["per_query"] if trec_id(row["id"]) in qrels]
    assert len(counted) == report["aggregate"]["query_count"] >= 3
    pairs = {"recip_rank": ("reciprocal_rank", None), "map": ("average_precision", None)}
    for k in KS:
        pairs |= {f"recall_{k}": ("recall_at_k", k), f"P_{k}": ("precision_at_k", k),
                  f"success_{k}": ("success_at_k", k), f"ndcg_cut_{k}": ("ndcg_at_k", k)}
    aggregate_keys = {"reciprocal_rank": "mrr", "average_precision": "map"}
    for measure, (key, k) in pairs.items():
        mean = 0.0
        for row in counted:
            # trec_eval -c: a query that returned nothing scores 0 (pytrec_eval leaves it out).
            value = theirs.get(trec_id(row["id"]), {}).get(measure, 0.0)
            mine = row["metrics"][key] if k is None else row["metrics"][key][str(k)]
            assert mine == pytest.approx(value, abs=1e-12), (row["id"], measure)
            mean += value
        aggregate = report["aggregate"][aggregate_keys.get(key, key)]
        assert (aggregate if k is None else aggregate[str(k)]) == pytest.approx(mean / len(counted), abs=1e-12)


def test_ir_measures_reproduces_judged_at_k_from_the_same_files(tmp_path: Path) -> None:
    report, out = exported(tmp_path, 1)
    qrels = list(ir_measures.read_trec_qrels(str(out / "kb-eval.qrels")))
    run = list(ir_measures.read_trec_run(str(out / "kb-eval.run")))
    values = {(m.query_id, m.measure.params["cutoff"]): m.value
              for m in ir_measures.iter_calc([ir_measures.Judged @ k for k in KS], qrels, run)}
    judged_somewhere = False
    for row in report["per_query"]:
        for k in KS:
            expected = values.get((trec_id(row["id"]), k))
            if expected is not None:
                assert row["metrics"]["judged_at_k"][str(k)] == pytest.approx(expected, abs=1e-12)
                judged_somewhere |= 0 < expected < 1
    assert judged_somewhere


def test_ids_and_paths_with_spaces_stay_one_field_and_chunks_of_one_document_are_distinct(tmp_path: Path) -> None:
    _, out = exported(tmp_path, 1)
    text = (out / "kb-eval.qrels").read_text() + (out / "kb-eval.run").read_text()
    assert "rollback%20a%20release 0 ops/rollback.md 3" in text
    assert "ops/deploy%20steps.md" in text and "notes/tags.md#naming" in text
    assert all(len(line.split()) in (4, 6) for line in text.splitlines())


def test_a_query_with_nothing_relevant_is_in_neither_file(tmp_path: Path) -> None:
    _, out = exported(tmp_path, 2)
    qrels, run = read_trec(out)
    assert trec_id("nothing relevant at level 2") not in qrels and trec_id("nothing relevant at level 2") not in run
    assert "oncall" in qrels


def test_ties_in_the_retriever_s_scores_keep_kb_eval_s_order(tmp_path: Path) -> None:
    _, out = exported(tmp_path, 1)
    for line_group in _by_query((out / "kb-eval.run").read_text()).values():
        ranks = [int(parts[3]) for parts in line_group]
        scores = [float(parts[4]) for parts in line_group]
        assert ranks == list(range(1, len(ranks) + 1))
        assert all(a > b for a, b in itertools.pairwise(scores))
        assert not math.isnan(sum(scores))


def _by_query(text: str) -> dict[str, list[list[str]]]:
    groups: dict[str, list[list[str]]] = {}
    for line in text.splitlines():
        parts = line.split()
        groups.setdefault(parts[0], []).append(parts)
    return groups


AMBIGUOUS = {
    "x.md": "# X\nintro words\n## y.md\nsection words about the hash\n",
    "x.md#y.md": "# Hash note\nnote words about the hash\n",
    "a@2.md": "# At\nat words about the hash\n",
}
AMBIGUOUS_GOLDEN = """\
queries:
  - id: section
    query: section words about the hash
    expected:
      - {path: x.md, heading: y.md}
  - id: note
    query: note words about the hash
    expected:
      - {path: "x.md#y.md"}
"""


def test_a_heading_and_a_file_name_that_spell_one_docno_stay_two_and_trec_eval_agrees(tmp_path: Path) -> None:
    # The section `y.md` of `x.md` and the note `x.md#y.md` shared the docno `x.md#y.md`: the note,
    # returned for the section's query, counted there as the section, and trec_eval disagreed.
    kb = write_tree(tmp_path / "kb", {**AMBIGUOUS, ".kb-eval.yml": AMBIGUOUS_GOLDEN})
    out = tmp_path / "trec"
    result = run_cli("--kb-path", kb, "--no-history", "--format", "json", "--k", "1,3", "--export-trec", out)
    assert result.code == ExitCode.OK, result.stderr
    report = result.json()
    qrels, run = read_trec(out)
    assert qrels["section"] == {"x.md#y.md": 1} and qrels["note"] == {"x.md%23y.md": 1}
    theirs = pytrec_eval.RelevanceEvaluator(qrels, {"recip_rank", "recall.1,3"}).evaluate(run)
    for row in report["per_query"]:
        assert row["metrics"]["reciprocal_rank"] == pytest.approx(theirs[row["id"]]["recip_rank"], abs=1e-12)
        assert row["metrics"]["recall_at_k"]["3"] == pytest.approx(theirs[row["id"]]["recall_3"], abs=1e-12)

def test_every_joining_character_in_a_path_or_heading_is_encoded_and_plain_names_are_not() -> None:
    # A hit's own `@rank` suffix, a group's `any:` and `|`, a parent's `<`, `subsections`' `/*`.
    assert entry_docno(ExpectedEntry("a@2.md", None, 1)) == "a%402.md"
    assert entry_docno(ExpectedEntry("any:b|c.md", None, 1)) == "any%3Ab%7Cc.md"
    assert entry_docno(ExpectedEntry("x*.md", "a<b", 1, parent="p#q", subsections=True)) == "x%2A.md#a%3Cb<p%23q/*"
    # The near miss: paths and headings without them read as they always did.
    assert entry_docno(ExpectedEntry("notes/tags.md", "Naming", 1)) == "notes/tags.md#naming"
