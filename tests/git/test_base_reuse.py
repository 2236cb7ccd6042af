"""A pull request's base takes the head's analysis of every document the pull request left as it
was: on a real git repository, its rankings and scores are exactly those of the base evaluated
from scratch, in process and in the child beside the head, with one process or analysis workers."""

from __future__ import annotations

import gc
import os
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from scanner.compare.comparison import BaseRequest
from scanner.corpus.parse_memo import ParseMemo
from scanner.evaluation.records import RunRecord
from scanner.foundation.diagnostics import Diagnostics
from scanner.pipeline.base import BaseEvaluation, ResolvedBase, evaluate_base, resolve_base
from scanner.pipeline.beside import BaseBesideHead
from scanner.pipeline.evaluate import EvalOptions, Plan, answer, bind, head_side, plan_evaluation, prepare
from scanner.search import index as index_module
from scanner.search.bm25 import Postings
from scanner.search.index import Index
from tests.conftest import golden_yaml
from tests.git.test_git_base import commit, new_repo
from tests.support.analysis_spy import spy_on_analysis
from tests.support.phases import head_keeping_analysis

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="needs git")

WORDS = ["kettle", "stove", "rollback", "image", "migration", "ranking", "deploy", "release", "checklist", "canary", "queue", "shard"]


def note(n: int) -> str:
    words = " ".join(WORDS[(n * k) % len(WORDS)] for k in range(1, 3 + n % 7))
    return f"# Note {n} {WORDS[n % len(WORDS)]}\n{words}\n\n## Details {n}\n{WORDS[(n + 5) % len(WORDS)]} {words}\n"


BASE_KB: dict[str, str | bytes] = {f"notes/n{n:02d}.md": note(n) for n in range(40)}
BASE_KB[".kb-eval.yml"] = golden_yaml(
    ("q1", "kettle stove", ["notes/n01.md"]),
    ("q2", "rollback image canary", ["notes/n07.md"]),
    ("q3", "zeppelin hangar", ["notes/n13.md"]),  # words only the base's n13.md has
    ("q4", "quokka burrow", ["notes/added.md"]),  # only in the document the pull request adds
    ("q5", "release checklist queue", ["notes/n20.md"]),
)
BASE_KB["notes/n13.md"] = "# Zeppelin\nzeppelin hangar kettle\n\n## More\nhangar doors\n"
PULL_REQUEST: dict[str, str | bytes] = {
    "notes/n05.md": note(5) + "\n## Added\nrollback image canary canary\n",  # a section more
    "notes/n20.md": "# Note 20\nrelease checklist queue, rewritten\n\n## Details\nshard\n",  # as many sections
    "notes/added.md": "# Quokka\nquokka burrow kettle\n",
}


def repository(tmp_path: Path) -> tuple[Path, ResolvedBase]:
    repo = new_repo(tmp_path / "repo")
    commit(repo, BASE_KB, "base")
    (repo / "kb/notes/n13.md").unlink()  # the pull request deletes it
    commit(repo, PULL_REQUEST, "pull request")
    kb = repo / "kb"
    resolved = resolve_base(kb, BaseRequest("HEAD~1"), one_index=False)
    assert isinstance(resolved, ResolvedBase)
    return kb, resolved


def rankings(run: RunRecord) -> dict[str, list[tuple[str, str | None, float]]]:
    return {q.id: [(hit.path, hit.heading, hit.score) for hit in q.hits] for q in run.queries}


def from_scratch(kb: Path, resolved: ResolvedBase, plan: Plan) -> RunRecord:
    """The base with no memo and no head: every document read, parsed and analysed."""
    evaluated = evaluate_base(resolved, EvalOptions(kb_path=kb), plan, None)
    assert isinstance(evaluated, BaseEvaluation)
    return evaluated.run


def test_the_base_analyses_only_what_the_pull_request_changed_and_ranks_as_from_scratch(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    kb, resolved = repository(tmp_path)
    memo = ParseMemo()
    head, plan, head_index = head_keeping_analysis(EvalOptions(kb_path=kb), memo)
    analysed = spy_on_analysis(monkeypatch)
    reused = evaluate_base(resolved, EvalOptions(kb_path=kb), plan, memo, head_index)
    assert isinstance(reused, BaseEvaluation)
    # The base's versions of n05.md (2 sections), n20.md (2) and the deleted n13.md (2).
    assert analysed == [6]
    assert reused.unchanged == frozenset(BASE_KB) - {".kb-eval.yml", "notes/n05.md", "notes/n13.md", "notes/n20.md"}
    analysed.clear()
    scratch = from_scratch(kb, resolved, plan)
    assert analysed == [scratch.corpus.chunks]
    assert rankings(reused.run) == rankings(scratch)
    assert reused.run.corpus == scratch.corpus
    assert [q.metrics for q in reused.run.queries] == [q.metrics for q in scratch.queries]
    ranked = rankings(scratch)
    assert ranked["q3"][0][0] == "notes/n13.md" and not ranked["q4"]
    # The head's scores of the same unchanged sections differ (other statistics): a base that
    # kept the head's would not pass the equality above.
    assert rankings(head.run)["q1"] != ranked["q1"]


@pytest.mark.parametrize("workers", ["one process", "worker processes", "no fork"])
def test_the_base_evaluated_beside_the_head_ranks_as_from_scratch(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, workers: str
) -> None:
    if workers == "worker processes":
        # The head's analysis and the base's (of the changed documents) both split over workers.
        monkeypatch.setattr(index_module, "PARALLEL_MIN_CHUNKS", 1)
    kb, resolved = repository(tmp_path)
    analysed: list[int] = []
    if workers == "no fork":
        # As on Windows: the base is evaluated after the head, in process, from its analysis.
        monkeypatch.delattr(os, "fork")
        real_analyse = Index._analyse

        def spy(self: Index, job: object, ranges: list[tuple[int, int]], tick: Callable[[int], None]) -> list[Postings]:
            analysed.append(sum(last - first for first, last in ranges))
            return real_analyse(self, job, ranges, tick)  # type: ignore[arg-type]

        monkeypatch.setattr(Index, "_analyse", spy)
    from scanner.pipeline import beside as beside_module

    apart: list[int] = []
    monkeypatch.setattr(beside_module, "large_allocations_apart", lambda: apart.append(os.getpid()) or True)
    options = EvalOptions(kb_path=kb)
    beside = BaseBesideHead(resolved, options, ParseMemo())
    diagnostics = Diagnostics()
    plan = plan_evaluation(options, diagnostics)
    prepared = prepare(options, plan, head_side(options, beside.memo, keep_analysis=True), diagnostics)
    retriever = bind(options, prepared)
    beside.start(plan, prepared.index)
    # While the child runs, the objects both processes had at the fork are out of the collector's
    # sight (a collection writes to each one's header, a page copied per page of objects); the
    # head's collector has them back once the child answered.
    frozen = gc.get_freeze_count()
    answer(options, prepared, retriever, diagnostics)
    evaluated = beside.result()
    assert isinstance(evaluated, BaseEvaluation)
    assert (frozen > 0) == (workers != "no fork") and gc.get_freeze_count() == 0
    # Forked, the head's large arrays get pages of their own from the fork on (the child's too,
    # out of sight here); in process there is no fork and the allocator is left as it is.
    assert apart == ([] if workers == "no fork" else [os.getpid()])
    if workers == "no fork":
        assert analysed[1:] == [6]  # the head's whole corpus, then the base's changed documents only
    scratch = from_scratch(kb, resolved, plan)
    assert rankings(evaluated.run) == rankings(scratch)  # through the child's JSON, float for float
    assert evaluated.run.corpus == scratch.corpus
    assert rankings(scratch)["q3"][0][0] == "notes/n13.md"


def test_a_pull_request_that_edits_adds_deletes_renames_and_moves_document_frequencies_has_the_base_of_git_archive(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tests.git.test_git_base import run
    from tests.sides.test_both_sides import archived

    repo = new_repo(tmp_path / "repo")
    commit(repo, BASE_KB, "base")
    (repo / "kb/notes/n13.md").unlink()  # deleted
    (repo / "kb/notes/n17.md").rename(repo / "kb/moved-n17.md")  # renamed, the same bytes
    kettles = sum("kettle" in str(text) for text in BASE_KB.values())
    edits = dict(PULL_REQUEST)  # two edited, one added
    # An edit that takes "kettle" out of a note: its document frequency is one less at the head.
    edits["notes/n12.md"] = "# Note 12\nstove only, no more of the word\n\n## Details\nshard\n"
    assert "kettle" in str(BASE_KB["notes/n12.md"]) and kettles > 5
    commit(repo, edits, "the pull request")
    kb = repo / "kb"
    result, report = run(kb, "--baseline-ref=HEAD~1")
    assert result.exit_code == 0, result.stderr_text
    assert report["comparison"]["status"] == "compared"
    _, alone = run(archived(repo, "HEAD~1", tmp_path / "archive"))
    base = report["previous"]
    # Hits, scores to the last bit (JSON floats), metrics and the corpus, as a run of the base alone.
    assert base["per_query"] == alone["per_query"]
    assert base["corpus"] == alone["corpus"]
    # (Only the run a report is about gets its intervals bootstrapped.)
    assert {k: v for k, v in base["aggregate"].items() if not k.startswith("interval")} == {
        k: v for k, v in alone["aggregate"].items() if not k.startswith("interval")
    }
    # The near miss: the head's scores of the sections it shares with the base differ (its kettle
    # is rarer), so a base that kept any of the head's statistics would not be equal above.
    kettle = next(q for q in report["per_query"] if q["id"] == "q1")
    at_base = next(q for q in base["per_query"] if q["id"] == "q1")
    assert kettle["top_k"] != at_base["top_k"]
    # In process, the same base from the head's rows and analysis: only the sections of the
    # documents the base holds otherwise analysed, two each: n05, n12, n13, n20, and n17, which
    # the head holds under another path.
    memo = ParseMemo()
    _, plan, head_index = head_keeping_analysis(EvalOptions(kb_path=kb), memo)
    analysed = spy_on_analysis(monkeypatch)
    resolved = resolve_base(kb, BaseRequest("HEAD~1"), one_index=False)
    assert isinstance(resolved, ResolvedBase)
    evaluated = evaluate_base(resolved, EvalOptions(kb_path=kb), plan, memo, head_index)
    assert isinstance(evaluated, BaseEvaluation)
    assert analysed == [10]
    assert rankings(evaluated.run) == rankings(from_scratch(kb, resolved, plan))


def test_a_fork_that_fails_leaves_the_objects_in_the_collectors_sight_and_no_pipe_open(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    kb, resolved = repository(tmp_path)
    options = EvalOptions(kb_path=kb)
    beside = BaseBesideHead(resolved, options, ParseMemo())
    diagnostics = Diagnostics()
    plan = plan_evaluation(options, diagnostics)
    prepared = prepare(options, plan, head_side(options, beside.memo, keep_analysis=True), diagnostics)
    bind(options, prepared)
    opened: list[int] = []
    pipe = os.pipe

    def recorded() -> tuple[int, int]:
        ends = pipe()
        opened.extend(ends)
        return ends

    def refused() -> int:
        raise OSError("fork refused")

    monkeypatch.setattr(os, "pipe", recorded)
    monkeypatch.setattr(os, "fork", refused)
    with pytest.raises(OSError, match="fork refused"):
        beside.start(plan, prepared.index)
    assert gc.get_freeze_count() == 0
    assert opened  # not vacuous: the child's pipe was made before the fork
    for end in opened:
        with pytest.raises(OSError):
            os.fstat(end)  # closed
