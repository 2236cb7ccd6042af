"""`kb-eval init` writes only what kb-eval accepts.

File names legal on Linux can look like other systems' paths (`..\\up.md`, `C:\\notes.md`,
`\\share.md`); the golden loader refuses them as `expected` paths, so a starter file naming them
was refused by kb-eval itself. They are left out, listed in a comment that says why, and a name
that breaks a line cannot end that comment.
"""

from __future__ import annotations

import io
from pathlib import Path

from scanner.cli.main import main
from scanner.foundation.errors import ExitCode
from scanner.golden.file import load_golden

UNNAMEABLE = ["..\\up.md", "C:\\notes.md", "\\share.md", "c:/x.md".replace("/", "\\")]
NEAR_MISSES = ["a:b.md", "up..md", "back\\slash.md", "..dots.md"]
"""Legal here and accepted by the loader: a colon without a separator, dots inside a name, a backslash inside."""


def kb_eval(*argv: str) -> tuple[int, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(list(argv), out, err)
    return code, err.getvalue()


def test_init_leaves_out_names_its_golden_file_cannot_hold_and_says_why(tmp_path: Path) -> None:
    kb = tmp_path / "kb"
    kb.mkdir()
    for n, name in enumerate(UNNAMEABLE + NEAR_MISSES):
        (kb / name).write_text(f"# Note {n}\nbody {n}\n", encoding="utf-8")
    (kb / "line\nbreak\\..\\x.md").write_text("# Broken\ntext\n", encoding="utf-8")  # `..` and a line break
    code, err = kb_eval("init", "--kb-path", str(kb), "--queries", "50")
    assert code == ExitCode.OK, err
    golden = load_golden(kb / ".kb-eval.yml")  # kb-eval accepts what init wrote
    assert sorted(e.path for q in golden.queries for e in q.expected) == sorted(NEAR_MISSES)
    text = (kb / ".kb-eval.yml").read_text(encoding="utf-8")
    assert "Left out" in text and all(repr(name)[1:-1] in text or name in text for name in UNNAMEABLE)
    assert "\nbreak" not in text  # the line break is spelled in the comment, not written
    assert kb_eval("--kb-path", str(kb), "--no-history")[0] == ExitCode.OK
