"""Rules that exist once: the fingerprint is read by key in one place, closed choices are enums."""

from __future__ import annotations

import re
from pathlib import Path

from scanner.compare.comparison import QueryStatus, Source
from tests.conftest import REPO

FINGERPRINT_READ = re.compile(r"fingerprint(\.get\(|\[)")


def readers_of_the_fingerprint(root: Path) -> set[str]:
    return {
        path.relative_to(root).as_posix()
        for path in (root / "scanner").rglob("*.py")
        if FINGERPRINT_READ.search(path.read_text(encoding="utf-8"))
    }


def test_only_the_run_record_reads_the_fingerprint_by_key() -> None:
    # report/read.py reads untrusted JSON into the record; the record's properties answer the rest.
    assert readers_of_the_fingerprint(REPO) <= {"scanner/evaluation/records.py", "scanner/report/read.py"}


def test_a_renderer_reading_the_fingerprint_would_be_seen(tmp_path: Path) -> None:
    (tmp_path / "scanner").mkdir()
    (tmp_path / "scanner" / "x.py").write_text('name = run.fingerprint.get("retriever")\n', encoding="utf-8")
    assert readers_of_the_fingerprint(tmp_path) == {"scanner/x.py"}


def test_statuses_and_sources_keep_their_report_spelling() -> None:
    assert [status.value for status in QueryStatus] == ["worse", "better", "mixed", "unchanged"]
    assert [source.value for source in Source] == ["history", "baseline", "git"]


DEFINED = re.compile(r"^(MAX_REVISION_CHARS|INDEXED_SUFFIXES|MAX_DOCUMENT_BYTES)\s*=|^def (compile_excludes|is_revision_name)\(", re.MULTILINE)


def test_the_revision_rule_and_the_kb_files_rule_are_defined_once() -> None:
    defined: dict[str, list[str]] = {}
    for path in (REPO / "scanner").rglob("*.py"):
        for match in DEFINED.finditer(path.read_text(encoding="utf-8")):
            defined.setdefault(match.group(1) or match.group(2), []).append(path.relative_to(REPO).as_posix())
    assert defined == {
        "MAX_REVISION_CHARS": ["scanner/git/revision.py"],
        "is_revision_name": ["scanner/git/revision.py"],
        "INDEXED_SUFFIXES": ["scanner/corpus/kb_files.py"],
        "MAX_DOCUMENT_BYTES": ["scanner/corpus/kb_files.py"],
        "compile_excludes": ["scanner/corpus/kb_files.py"],
    }
