"""Only scanner/github/workflow.py speaks the workflow protocol.

A `::` command printed anywhere else would bypass the escaping and the
stop-commands wrapping that scanner/github/workflow.py guarantees, so any string
literal that starts with `::` outside it fails this test.
"""

from __future__ import annotations

import io
import tokenize
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PROTOCOL_MODULE = ROOT / "scanner" / "github" / "workflow.py"


def checked_files() -> list[Path]:
    files = sorted((ROOT / "scanner").rglob("*.py"))
    entrypoint = ROOT / "entrypoint.py"
    if entrypoint.exists():
        files.append(entrypoint)
    return [path for path in files if path != PROTOCOL_MODULE]


def command_literals(source: str) -> list[tuple[int, str]]:
    """String literals (f-strings included) whose text starts with `::` or `##[`."""
    found = []
    fstring_start = getattr(tokenize, "FSTRING_START", None)  # Python 3.12+ splits f-strings
    fstring_middle = getattr(tokenize, "FSTRING_MIDDLE", None)
    previous: tokenize.TokenInfo | None = None
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        body = None
        if token.type == tokenize.STRING:
            body = token.string.lstrip("rRbBuUfF")
            for quote in ('"""', "'''", '"', "'"):
                if body.startswith(quote):
                    body = body[len(quote) :]
                    break
        elif token.type == fstring_middle and previous is not None and previous.type == fstring_start:
            body = token.string
        if body is not None and body.startswith(("::", "##[")):
            found.append((token.start[0], token.string))
        previous = token
    return found


def test_no_module_but_scanner_github_writes_workflow_commands() -> None:
    offenders = [
        f"{path.relative_to(ROOT)}:{line}: {literal}"
        for path in checked_files()
        for line, literal in command_literals(path.read_text(encoding="utf-8"))
    ]
    assert not offenders, "workflow commands outside scanner/github/workflow.py:\n" + "\n".join(offenders)


def test_the_check_sees_a_command_literal_where_one_is() -> None:
    # Guard against a vacuous pass: the detector must fire on the forms it looks for.
    source = 'print("::warning::x")\nprint(f"::error file={f}::m")\nx = \'##[error]y\'\nok = "a::b"\n'
    assert [line for line, _ in command_literals(source)] == [1, 2, 3]


def test_the_protocol_module_itself_is_where_the_commands_are() -> None:
    assert command_literals(PROTOCOL_MODULE.read_text(encoding="utf-8"))
    assert checked_files(), "nothing to check: scanner/ not found"
