"""The base evaluated in a forked child while this process evaluates the head.

The only process plumbing of a run's phases: the child runs `evaluate_base`
(scanner.pipeline.base) and sends its record back over a pipe in the report's JSON run
format, which the history's reader reads back.
"""

from __future__ import annotations

import gc
import json
import os
import traceback
from typing import Any

from scanner.compare.comparison import Comparison, NotComparedCause, Source, no_previous
from scanner.corpus.parse_memo import ParseMemo
from scanner.foundation.diagnostics import Diagnostics
from scanner.foundation.workers import large_allocations_apart, release_free_memory
from scanner.pipeline import base as base_phase
from scanner.pipeline.base import BaseEvaluation, ResolvedBase
from scanner.pipeline.evaluate import EvalOptions, Plan
from scanner.report.document import run_document
from scanner.report.read import run_from_document
from scanner.search.index import Index
from scanner.search.query_compiler import compile_query


class BaseBesideHead:
    """The base evaluated in a forked child while this process goes on with the head.

    Started by the pipeline once the head's corpus is read and analysed: the child inherits the filled parse memo and the head's analysed index (copy-on-write, nothing
    is sent), so its own index analyses only the documents the pull request changed (Reuse),
    and it reads, indexes, searches and scans the base while this process searches and scans
    the head, on two cores at once (bench/base_and_head.py). Starting it earlier, beside the
    head's analysis, would mean two analyses (each with its worker processes) competing for the
    cores; the analysis the base no longer does was most of its work. The child sends its run
    back as the report's JSON run document (the history's format, read back by the history's
    reader) or why it could not compare; a child that fails is an internal error, as it would be
    in process. Where there is no fork (Windows) the base is evaluated after the head, in process.

    The child never returns into the head's evaluation (it leaves by os._exit), so the head's
    index, on its stack, is neither dropped nor finalised there: its folder stays the head's. The
    child reads the head's chunk table (the rows of the documents it takes), so this process
    keeps the head's index, and its folder, until the child has answered."""

    def __init__(self, base: ResolvedBase, options: EvalOptions, memo: ParseMemo, *, fork: bool = True) -> None:
        self.base = base
        self._fork = fork
        """False: evaluate the base after the head, in this process. A search with its own index
        is asked after the head's server is stopped, so two servers never compete for the machine
        and each side's latency is its own."""
        self.options = options
        self.memo = memo
        self._plan: Plan | None = None
        self._head: Index | None = None
        """The head's index, kept until the base is evaluated (its chunk table is read for it)."""
        self._child: tuple[int, int] | None = None
        """(pid, read end of its pipe) while a child runs."""

    @staticmethod
    def asked_terms(plan: Plan) -> frozenset[str]:
        """The terms the base's search will ask for: the golden queries', which the head asks too."""
        return frozenset(
            term for request in plan.requests if (compiled := compile_query(request.text)) is not None
            for term, _ in compiled.terms
        )

    def start(self, plan: Plan, head: Index) -> None:
        self._plan = plan
        self._head = head
        # The base asks the golden queries the head asks: of the head's analysis it keeps only
        # their terms' postings, before the child is forked, so no process holds the others.
        head.keep_only_terms(self.asked_terms(plan))
        if not self._fork or not hasattr(os, "fork"):
            return
        read_end, write_end = os.pipe()
        head.release_page_cache()
        release_free_memory()
        # What both processes hold at the fork is kept out of the collector's sight until the child
        # has answered: a collection writes to each object it walks, copying every page of them in
        # whichever process collects.
        gc.freeze()
        try:
            pid = os.fork()
        except BaseException:
            gc.unfreeze()
            os.close(read_end)
            os.close(write_end)
            raise
        # Both processes' temporary arrays in pages of their own from here: carved from the heap
        # the head's analysis left, they stayed resident in both once freed.
        large_allocations_apart()
        if pid == 0:  # pragma: no cover - the child's lines are measured by what it sends back
            os.close(read_end)
            self._run_child(write_end, plan, head)
        os.close(write_end)
        self._child = (pid, read_end)
        # The child has its copy; this process builds no index from it.
        head.release_analysis()

    def _run_child(self, write_end: int, plan: Plan, head: Index) -> None:  # pragma: no cover - in the child
        code = 0
        try:
            # The child's copy of the head's index searches no more here: its analyzer is taken.
            evaluated = base_phase.evaluate_base(self.base, self.options, plan, self.memo, head, head_done=True)
            message: dict[str, object]
            if isinstance(evaluated, Comparison):
                message = {"not_compared": [
                    evaluated.reasons[0], evaluated.cause.value if evaluated.cause else None, evaluated.hint,
                ]}
            else:
                message = {
                    "run": run_document(evaluated.run), "renamed": dict(evaluated.renamed),
                    "quoted": {path: list(ids) for path, ids in evaluated.quoted.items()},
                    "unchanged": sorted(evaluated.unchanged),
                    "quoted_by_content": {digest: list(ids) for digest, ids in evaluated.quoted_by_content.items()},
                }
        except BaseException:  # noqa: BLE001 - whatever happens, the parent must hear of it
            message, code = {"error": traceback.format_exc()}, 1
        try:
            with os.fdopen(write_end, "wb") as pipe:
                pipe.write(json.dumps(message).encode("utf-8"))
        finally:
            os._exit(code)  # no atexit handler, no flush of buffers the parent also holds

    def result(self) -> BaseEvaluation | Comparison:
        if self._plan is None:
            raise RuntimeError("the base was never started")  # the pipeline starts it after the head's index
        if self._child is None:
            head, self._head = self._head, None
            try:
                return base_phase.evaluate_base(self.base, self.options, self._plan, self.memo, head)
            finally:
                if head is not None:
                    head.release_analysis()
        pid, read_end = self._child
        self._child = None
        with os.fdopen(read_end, "rb") as pipe:
            data = pipe.read()  # to EOF before waiting: a large run would fill the pipe
        os.waitpid(pid, 0)
        gc.unfreeze()
        self._head = None
        message: dict[str, Any] = (
            json.loads(data) if data else {"error": "the base evaluation's process ended without an answer"}
        )
        if "error" in message:
            raise RuntimeError(f"evaluating the base revision failed:\n{message['error']}")
        if "not_compared" in message:
            reason, cause, hint = message["not_compared"]
            return no_previous(
                reason, Source.GIT, NotComparedCause(cause) if cause else NotComparedCause.REVISION_UNAVAILABLE,
                revision=self.base.revision, hint=hint,
            )
        quoted = {path: tuple(ids) for path, ids in message.get("quoted", {}).items()}
        unchanged = frozenset(message.get("unchanged", ()))
        by_content = {digest: tuple(ids) for digest, ids in message.get("quoted_by_content", {}).items()}
        return BaseEvaluation(
            run_from_document(message["run"]), Diagnostics(), message.get("renamed", {}), quoted, unchanged, by_content
        )

    def cancel(self) -> None:
        """Stop a child whose answer is no longer wanted (the head's evaluation failed)."""
        if self._child is not None:
            pid, read_end = self._child
            self._child = None
            self._head = None
            os.close(read_end)
            try:
                os.kill(pid, 9)
            except ProcessLookupError:
                pass
            os.waitpid(pid, 0)
            gc.unfreeze()
