"""What kb-eval prints on stderr, and the one path every printed line takes.

The runner reads stdout and stderr line by line, splitting at `\\n`, `\\r` and
`\\r\\n`; a line whose text, after the whitespace .NET's `Trim()` removes,
starts with `::` is a workflow command, and `##[` anywhere in a line is the
legacy form (docs/runner-contract.md). Untrusted text is already escaped by
`shown()`/`defused()` where it is composed; `log_safe` is the net under
that: whatever reaches a stream goes through it, so a text that slipped past
(an id, a key from a history file, an exception message) still cannot become
a command. It is the identity on every line that holds no command.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import IO

from ..diagnostics import Diagnostic
from ..errors import InputError
from ..gate import GateResult
from ..run import LocatedFinding, displacing_first
from ..untrusted_text import shown
from . import phrases

_RUNNER_LINE_BREAK = re.compile(r"(\r\n|\r|\n)")
_LEGACY_COMMAND = re.compile(r"##\[")


def log_safe(text: str) -> str:
    """`text` with every runner line that would be a command defused (`::` -> `\\x3a:`, `##[` -> `#\\x23[`)."""
    parts = _RUNNER_LINE_BREAK.split(text)
    for index in range(0, len(parts), 2):  # even indexes are lines, odd ones the breaks
        line = _LEGACY_COMMAND.sub(r"#\\x23[", parts[index])
        # str.isspace() covers .NET's Char.IsWhiteSpace (and \x1c-\x1f besides): stripping more
        # than the runner does can only defuse more.
        body = line.lstrip("".join(c for c in line[:64] if c.isspace()))
        if body.startswith("::"):
            start = len(line) - len(body)
            line = line[:start] + "\\x3a" + line[start + 1:]
        parts[index] = line
    return "".join(parts)


class SafeStream:
    """A text stream whose every write goes through `log_safe`."""

    def __init__(self, stream: IO[str]) -> None:
        self._stream = stream
        self._pending = ""

    def write(self, text: str) -> None:
        # A command can only start a line: hold a partial last line until it is complete.
        text = self._pending + text
        cut = max(text.rfind("\n"), text.rfind("\r"))
        self._pending = text[cut + 1:]
        if cut >= 0:
            self._stream.write(log_safe(text[: cut + 1]))

    def flush(self) -> None:
        if self._pending:
            self._stream.write(log_safe(self._pending))
            self._pending = ""
        self._stream.flush()


def diagnostic_line(item: Diagnostic) -> str:
    """`kb-eval: warning: path:line: message`, the file and message escaped onto the line."""
    return item.render()


def error_lines(error: InputError) -> str:
    return f"kb-eval: error: {error}\n"


def findings_warning(findings: Sequence[LocatedFinding]) -> str:
    """The stderr warning: names the check, each path, each quoted query with its rank, the ones that
    displaced a labelled answer first, and both possible causes without choosing one."""
    if not findings:
        return ""
    lines = [f"kb-eval: {phrases.findings_headline(len(findings))}."]
    for located in displacing_first(findings):
        lines.append(f"  {shown(located.finding.path)}")
        for quoted in located.finding.quoted:
            phrase = phrases.displaced_phrase(quoted.rank_in_top_k, quoted.displaces_expected)
            lines.append(f"    {shown(quoted.query_id)} ({phrase})")
    lines.append("  " + phrases.TWO_CAUSES)
    return "\n".join(lines) + "\n"


def regression_line(gate: GateResult) -> str:
    return f"kb-eval: regression: {gate.reason}\n"
