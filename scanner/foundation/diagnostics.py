"""Warnings collected during a run.

A warning is a recorded fact, never a silent drop: every skipped file, broken
frontmatter block or unlabelled expected path becomes one of these, goes to
stderr, into the JSON report, and (in Action mode) into an annotation.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from scanner.foundation.untrusted_text import defused, shown


@dataclass(frozen=True, slots=True)
class Diagnostic:
    code: str
    """Stable machine name, e.g. `file-skipped`, `frontmatter-invalid`, `expected-not-in-corpus`."""
    message: str
    file: str | None = None
    """Path as the user wrote it or KB-relative; None when the warning is about the run."""
    line: int | None = None

    def render(self) -> str:
        """One stderr line. The file name and message may hold pull-request text, so they are
        escaped (untrusted_text.py): the line cannot break or carry a workflow command."""
        where = ""
        if self.file is not None:
            where = shown(self.file) + (f":{self.line}" if self.line is not None else "") + ": "
        return f"kb-eval: warning: {where}{defused(self.message)}"

    def to_json(self) -> dict[str, object]:
        return {"code": self.code, "message": self.message, "file": self.file, "line": self.line}


@dataclass(slots=True)
class Diagnostics:
    """An append-only list, passed to the stages that can warn."""

    items: list[Diagnostic] = field(default_factory=list)

    def warn(self, code: str, message: str, file: str | None = None, line: int | None = None) -> None:
        self.items.append(Diagnostic(code, message, file, line))
