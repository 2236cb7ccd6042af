"""The one user-facing error type and the exit codes.

Library exceptions are translated into `InputError` at the adapter that
called the library, so a bug never passes for bad input (a stray ValueError
is exit 3, not exit 2).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from scanner.foundation.untrusted_text import defused, shown


class ExitCode(enum.IntEnum):
    OK = 0
    """The run completed, whatever it found (findings never change this)."""
    REGRESSION = 1
    """--fail-on-regression was given and an aggregate metric dropped past the threshold."""
    BAD_INPUT = 2
    """The input files or the command line are wrong; the message says what and where."""
    INTERNAL = 3
    """A bug in kb-eval (including a report that fails its own schema)."""


# Not frozen: raising sets __traceback__ on the instance, and a frozen dataclass refuses that
# when the error is re-raised from a worker thread (concurrent retrievers).
@dataclass(eq=False)
class InputError(Exception):
    """Bad input or usage: stops the run with exit 2.

    Every refusal names the file, the line and the field where it can, and a
    hint that says what to do.
    """

    message: str
    file: str | None = None
    line: int | None = None
    field: str | None = None
    hint: str | None = None
    said: tuple[str, ...] = ()
    """What a program or service itself said (the end of its stderr), line by line: each shown on
    a line of its own, escaped, so a traceback reads as one and no line can pass for ours."""

    def __str__(self) -> str:
        # Every part may quote the pull request's text (a path, a query id), so each is escaped
        # onto its line (untrusted_text.py); the only line breaks are ours: one before each line a
        # program said and one before the hint.
        where = ""
        if self.file is not None:
            where = shown(self.file)
            if self.line is not None:
                where += f":{self.line}"
            where += ": "
        text = where + defused(self.message)
        if self.field is not None:
            text += f" (field: {defused(self.field)})"
        for said in self.said:
            text += f"\n  | {defused(said)}"
        if self.hint:
            text += f"\n  hint: {defused(self.hint)}"
        return text
