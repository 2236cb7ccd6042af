"""Pull-request text must reach the report exactly and the workflow log never as a command.

Every hostile string below goes in as a file name, folder name, frontmatter title,
heading, query id, tag, expected path and expected heading, at once. The JSON
report must carry each one unchanged; no line of stdout or stderr, in any format
or on any path (success, warnings, refusals), may start with `::` after
whitespace or contain `##[` (support.run checks every line).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from scanner.foundation.untrusted_text import defused, shown
from tests.conftest import REPO
from tests.hostile.support import ANSWER, command_lines, refused, run, run_json

HOSTILE = [
    "::set-output name=x::y",
    "::add-mask::secret",
    "::stop-commands::token",
    "::add-path::%2Ftmp%2Fevil",
    "::warning file=a.md,line=1::pwned",
    "%0A::error::encoded",
    "x\n::error::newline",
    "x\r::error::carriage-return",
    "x\r\n::error::crlf",
    "  ::error::indented",
    "\t::notice::tab",
    "##[error]legacy",
    "a ##[add-mask]b",
    "x\u2028::error::line-separator",
    "x\x85::error::next-line",
    "x\x1b[31m::error::ansi",
    "x\x0b::error::vertical-tab",
]


def file_name(text: str) -> str:
    return text + ".md"


def hostile_kb(root: Path) -> Path:
    kb = root / "kb"
    (kb / "::dir\n::error::folder").mkdir(parents=True)
    queries = []
    for n, text in enumerate(HOSTILE):
        name = file_name(text)
        body = f"---\ntitle: {json.dumps(text)}\n---\n# {text.splitlines()[0] if text.strip() else 'h'}\nalpha beta gamma {n}\n"
        (kb / name).write_text(body, encoding="utf-8")
        (kb / "::dir\n::error::folder" / name).write_text(body, encoding="utf-8")
        queries.append(
            f"  - id: {json.dumps(text)}\n    query: {json.dumps(f'alpha beta gamma {n}')}\n"
            f"    tags: [{json.dumps(text)}]\n"
            f"    expected:\n      - path: {json.dumps(name)}\n        heading: {json.dumps(text)}\n"
        )
    # One document quoting two queries verbatim: a finding whose ids are hostile.
    (kb / "::quoter\n::error::x.md").write_text("# q\nalpha beta gamma 0 and alpha beta gamma 11\n", encoding="utf-8")
    # Skipped files with hostile names: warnings name them.
    (kb / "x\n::error::binary.md").write_bytes(b"\x00")
    (kb / "##[warning]latin1.md").write_bytes(b"\xe9")
    (kb / "::frontmatter\n::error::.md").write_text("---\ntitle: [\n---\n# F\nx\n", encoding="utf-8")
    (kb / ".kb-eval.yml").write_text("queries:\n" + "".join(queries), encoding="utf-8")
    return kb


def test_hostile_strings_reach_the_json_report_unchanged(tmp_path: Path) -> None:
    kb = hostile_kb(tmp_path)
    result, report = run_json(kb, "--limit", "100", "--k", "1,100")
    assert [q["id"] for q in report["per_query"]] == HOSTILE
    assert [q["tags"] for q in report["per_query"]] == [[text] for text in HOSTILE]
    assert set(report["by_tag"]) == set(HOSTILE)
    assert [q["expected"] for q in report["per_query"]] == [[{"path": file_name(t), "heading": t, "grade": 1}] for t in HOSTILE]
    indexed = {hit["path"] for q in report["per_query"] for hit in q["top_k"]}
    assert {file_name(t) for t in HOSTILE} <= indexed
    assert {"::dir\n::error::folder/" + file_name(t) for t in HOSTILE} <= indexed
    [finding] = report["findings"]
    assert finding["path"] == "::quoter\n::error::x.md"
    assert [q["query_id"] for q in finding["quoted"]] == [HOSTILE[0], HOSTILE[11]]
    # A heading label of more than one line names no section (headings are one line): warned.
    multi_line = [text for text in HOSTILE if len(text.splitlines()) != 1]
    assert sorted((w["code"], w["file"]) for w in report["warnings"] if w["code"] != "heading-not-in-document") == [
        ("file-skipped", "##[warning]latin1.md"),
        ("file-skipped", "x\n::error::binary.md"),
        ("frontmatter-invalid", "::frontmatter\n::error::.md"),
    ]
    assert len([w for w in report["warnings"] if w["code"] == "heading-not-in-document"]) == len(multi_line)
    # Each query's pinned heading is its id; a file's heading is the id's first line, so the
    # queries whose id fits on one line find their section, and only those.
    found = [q["id"] for q in report["per_query"] if q["metrics"]["recall_at_k"]["100"] == 1.0]
    assert found == [text for text in HOSTILE if len(text.splitlines()) == 1]
    # The raw JSON text holds `##[` only as `#\u0023[`, which any JSON reader decodes back.
    assert "##[" not in result.stdout and "#\\u0023[" in result.stdout


def test_the_text_report_and_the_warnings_print_hostile_strings_escaped_on_one_line(tmp_path: Path) -> None:
    kb = hostile_kb(tmp_path)
    result = run(kb, "--limit", "1", "--k", "1")
    assert result.code == 0
    # The quote warning on stderr and the findings/misses in the text report name the hostile ids.
    assert f"    {shown(HOSTILE[0])} (" in result.stderr
    assert f"  {shown('::quoter' + chr(10) + '::error::x.md')}" in result.stdout
    assert "kb-eval: warning: 'x\\n::error::binary.md': contains NUL bytes" in result.stderr
    assert "kb-eval: warning: '#\\x23[warning]latin1.md': not valid UTF-8" in result.stderr


@pytest.mark.parametrize("text", HOSTILE)
def test_a_refusal_that_quotes_a_hostile_id_stays_on_its_line(tmp_path: Path, text: str) -> None:
    kb = tmp_path / "kb"
    kb.mkdir()
    (kb / "a.md").write_text(ANSWER, encoding="utf-8")
    golden = f"queries:\n  - id: {json.dumps(text)}\n    query: '?!'\n    expected: [a.md]\n"
    (kb / ".kb-eval.yml").write_text(golden, encoding="utf-8")
    stderr = refused(kb)
    assert f"query {defused(repr(text))} has no letters or digits to search for" in stderr
    assert len(stderr.splitlines()) == 2  # the error line and its hint


def test_the_real_process_writes_hostile_and_undecodable_names_without_crashing(tmp_path: Path) -> None:
    # In-process runs write to StringIO, which accepts anything; the real stdout is UTF-8 and
    # would raise on a lone surrogate from an undecodable file name.
    kb = hostile_kb(tmp_path)
    with open(os.path.join(os.fsencode(kb), b"caf\xe9 ::error::x.md"), "wb") as handle:
        handle.write(b"# c\nalpha\n")
    for output_format in ("json", "text"):
        completed = subprocess.run(
            [sys.executable, "-c", "from scanner.cli.main import run; run()",
             "--kb-path", str(kb), "--format", output_format],
            check=False, cwd=REPO, capture_output=True, timeout=60, env={**os.environ, "PYTHONIOENCODING": "utf-8"},
        )
        stdout, stderr = completed.stdout.decode("utf-8"), completed.stderr.decode("utf-8")
        assert completed.returncode == 0, stderr
        assert command_lines(stdout) == [] and command_lines(stderr) == []
        assert "caf\\xe9 ::error::x.md" in stderr
