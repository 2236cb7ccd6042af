"""Untrusted text wrapped in the runner's stop-commands pair as one string, for comparing the
runner's reading of it; kb-eval itself writes through `commands_stopped`."""

from __future__ import annotations

from scanner.github.workflow import resume_commands, stop_commands


def wrap_untrusted(text: str, token: str) -> str:
    """`text` between a stop and a resume line, ready to print as is. A newline is added before the
    resume line when `text` lacks one, because the runner only sees a command at the start of a line."""
    if token in text:
        raise ValueError("untrusted text contains the stop token; use a fresh token")
    if text and not text.endswith(("\n", "\r")):
        text += "\n"
    return f"{stop_commands(token)}\n{text}{resume_commands(token)}\n"
