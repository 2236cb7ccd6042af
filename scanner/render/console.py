"""What kb-eval prints on stderr, and the one path every printed line takes.

The runner reads stdout and stderr line by line and runs some lines as workflow
commands (scanner/github/workflow.py knows which, docs/runner-contract.md says why). Untrusted text is already escaped by
`shown()`/`defused()` where it is composed; `log_safe` is the net under
that: whatever reaches a stream goes through it, so a text that slipped past
(an id, a key from a history file, an exception message) still cannot become
a command. It is the identity on every line that holds no command.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import IO

from scanner.compare.findings import FindingAtBase
from scanner.compare.gate import GateResult
from scanner.evaluation.records import LocatedFinding
from scanner.foundation.diagnostics import Diagnostic
from scanner.foundation.errors import InputError
from scanner.foundation.untrusted_text import shown
from scanner.github.workflow import defuse_workflow_commands
from scanner.render import phrases


def log_safe(text: str) -> str:
    """`text` with no line the runner would run as a workflow command (scanner/github/workflow.py)."""
    return defuse_workflow_commands(text)


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


def findings_warning(findings: Sequence[LocatedFinding], at_base: Sequence[FindingAtBase] | None = None) -> str:
    """The stderr warning: names the check, each path, each quoted query with its rank, the ones that
    displaced a labelled answer first, and both possible causes without choosing one; against a pull
    request's base, which findings the base already had."""
    if not findings:
        return ""
    by_path = {item.path: item for item in at_base or ()}
    lines = [f"kb-eval: {phrases.findings_headline(len(findings))}."]
    note = phrases.findings_at_base_note(at_base)
    if note is not None:
        lines.append(f"  {note}")
    for located in phrases.reading_order(findings, at_base):
        known = by_path.get(located.finding.path)
        origin = f" ({phrases.AT_BASE})" if known is not None and known.present_at_base else ""
        lines.append(f"  {shown(located.finding.path)}{origin}")
        for quoted in located.finding.quoted:
            phrase = phrases.quoted_phrase(quoted, known)
            lines.append(f"    {shown(quoted.query_id)} ({phrase})")
    lines.append("  " + phrases.TWO_CAUSES)
    return "\n".join(lines) + "\n"


def regression_line(gate: GateResult) -> str:
    return f"kb-eval: regression: {gate.reason}\n"
