"""Reads a step's log and file commands the way the GitHub runner does, for the tests.

A re-implementation of the parts of actions/runner (commit 258d6c8) that decide
what a line of output does, so tests can assert what the runner would see
instead of what we meant to print:
- `ProcessInvoker` reads stdout/stderr with `StreamReader.ReadLine` (`\\r\\n`, `\\r`
  or `\\n` end a line);
- `ActionCommand.TryParseV2` (`::cmd k=v,k=v::data` after leading whitespace)
  and the legacy `TryParse` (`##[cmd k=v;k=v]data` anywhere in a line), with
  .NET's `Trim` and `Split(..., RemoveEmptyEntries)` semantics;
- `ActionCommandManager.TryProcessCommand`: `::stop-commands::TOKEN` ... `::TOKEN::`;
- `FileCommandManager.EnvFileKeyValuePairs` for GITHUB_OUTPUT.
Only this file knows these rules; scanner/github/workflow.py must not import it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

# Commands the runner registers (ActionCommandManager and its extensions).
RUNNER_COMMANDS = frozenset(
    {
        "add-mask",
        "add-matcher",
        "add-path",
        "debug",
        "echo",
        "endgroup",
        "error",
        "group",
        "notice",
        "remove-matcher",
        "save-state",
        "set-env",
        "set-output",
        "warning",
    }
)
STOP_COMMAND = "stop-commands"

# char.IsWhiteSpace: Unicode Zs/Zl/Zp plus \t..\r, \x85, \xa0 (not \ufeff).
DOTNET_WHITESPACE = (
    "\t\n\v\f\r \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008"
    "\u2009\u200a\u2028\u2029\u202f\u205f\u3000"
)

_DATA_UNESCAPES = (("%0D", "\r"), ("%0A", "\n"), ("%25", "%"))
_PROPERTY_UNESCAPES = (
    ("%0D", "\r"),
    ("%0A", "\n"),
    ("%3A", ":"),
    ("%2C", ","),
    ("%25", "%"),
)
_LEGACY_UNESCAPES = (
    ("%3B", ";"),
    ("%0D", "\r"),
    ("%0A", "\n"),
    ("%5D", "]"),
    ("%25", "%"),
)


@dataclass(frozen=True)
class Command:
    """A workflow command as the runner parsed it."""

    name: str
    """As written; the runner compares command names case-insensitively."""
    properties: dict[str, str]
    """Keys lower-cased (the runner's dictionary ignores case): title, file, line, endline, col, endcolumn."""
    data: str
    line_number: int
    """1-based, in the runner's line splitting."""


@dataclass
class RunnerLog:
    """What the runner made of a log."""

    commands: list[Command] = field(default_factory=list)
    """Commands the runner would act on, stop/resume excluded."""
    ignored: list[Command] = field(default_factory=list)
    """Lines that parse as commands but arrived while commands were stopped."""
    stop_tokens: list[str] = field(default_factory=list)
    still_stopped: bool = False
    """True when the log ended without the resume line: every later command would be ignored."""
    step_failed: str | None = None
    """Why the runner would fail the step (an invalid stop token), else None."""

    def annotations(self, kind: str | None = None) -> list[Command]:
        kinds = {"error", "warning", "notice"} if kind is None else {kind}
        return [command for command in self.commands if command.name.lower() in kinds]


def split_lines(text: str) -> list[str]:
    """StreamReader.ReadLine: `\\r\\n`, `\\r` and `\\n` end a line; no empty last line."""
    lines = re.split(r"\r\n|\r|\n", text)
    if lines and lines[-1] == "":
        lines.pop()
    return lines


def dotnet_split_remove_empty(text: str, separator: str, count: int | None = None) -> list[str]:
    """`string.Split(separator, count, RemoveEmptyEntries)` as .NET Core does it.

    With a count, the entries before the last are taken first, then empty
    entries are skipped, and the rest of the string is the last entry: so
    `"title==x".Split('=', 2, ...)` gives `["title", "x"]`, not `"=x"`.
    """
    positions = [match.start() for match in re.finditer(re.escape(separator), text)]
    if count is None:
        count = len(positions) + 1
    result: list[str] = []
    current = 0
    index = 0
    while index < len(positions):
        entry = text[current : positions[index]]
        if entry:
            result.append(entry)
        current = positions[index] + len(separator)
        if len(result) == count - 1:
            index += 1
            while index < len(positions):
                if text[current : positions[index]]:
                    break
                current = positions[index] + len(separator)
                index += 1
            break
        index += 1
    last = text[current:]
    if last:
        result.append(last)
    return result


def _unescape(text: str, mappings: tuple[tuple[str, str], ...]) -> str:
    for escaped, raw in mappings:
        text = text.replace(escaped, raw)
    return text


def parse_v2(line: str, registered: set[str], line_number: int = 0) -> Command | None:
    """ActionCommand.TryParseV2."""
    message = line.lstrip(DOTNET_WHITESPACE)
    if not message.startswith("::"):
        return None
    end = message.find("::", 2)
    if end < 0:
        return None
    info = message[2:end]
    space = info.find(" ")
    name = info if space < 0 else info[:space]
    if name.lower() not in registered:
        return None
    properties: dict[str, str] = {}
    if space > 0:
        raw = info[space + 1 :].strip(DOTNET_WHITESPACE)
        for pair_text in dotnet_split_remove_empty(raw, ","):
            pair = dotnet_split_remove_empty(pair_text, "=", 2)
            if len(pair) == 2:
                properties[pair[0].lower()] = _unescape(pair[1], _PROPERTY_UNESCAPES)
    data = _unescape(message[end + 2 :], _DATA_UNESCAPES)
    return Command(name, properties, data, line_number)


def parse_legacy(line: str, registered: set[str], line_number: int = 0) -> Command | None:
    """ActionCommand.TryParse: `##[name k=v;k=v]data`, found anywhere in the line."""
    start = line.find("##[")
    if start < 0:
        return None
    close = line.find("]", start)
    if close < 0:
        return None
    info = line[start + 3 : close]
    space = info.find(" ")
    name = info if space < 0 else info[:space]
    if name.lower() not in registered:
        return None
    properties: dict[str, str] = {}
    if space > 0:
        for pair_text in dotnet_split_remove_empty(info[space + 1 :], ";"):
            pair = dotnet_split_remove_empty(pair_text, "=", 2)
            if len(pair) == 2:
                properties[pair[0].lower()] = _unescape(pair[1], _LEGACY_UNESCAPES)
    return Command(name, properties, _unescape(line[close + 1 :], _LEGACY_UNESCAPES), line_number)


def parse_log(text: str) -> RunnerLog:
    """Every line of `text` through the runner's command processing, in order."""
    log = RunnerLog()
    registered = set(RUNNER_COMMANDS) | {STOP_COMMAND}
    stop_token: str | None = None
    for number, line in enumerate(split_lines(text), start=1):
        if not line:
            continue
        command = parse_v2(line, registered, number) or parse_legacy(line, registered, number)
        if command is None:
            continue
        name = command.name.lower()
        if stop_token is not None:
            if name == stop_token.lower():
                registered.discard(stop_token.lower())
                stop_token = None
            else:
                log.ignored.append(command)
            continue
        if name == STOP_COMMAND:
            token = command.data
            if not token or token.lower() in registered or token.lower() == "pause-logging":
                log.step_failed = f"invalid stop-commands token {token!r}"
                return log
            stop_token = token
            registered.add(token.lower())
            log.stop_tokens.append(token)
            continue
        log.commands.append(command)
    log.still_stopped = stop_token is not None
    return log


class FileCommandError(Exception):
    """The runner would log 'Unable to process file command' and fail the step."""


def parse_env_file(text: str) -> list[tuple[str, str]]:
    """FileCommandManager.EnvFileKeyValuePairs on Linux (only `\\n` ends a line)."""
    pairs: list[tuple[str, str]] = []
    index = 0

    def read_line() -> tuple[str | None, bool]:
        nonlocal index
        if index >= len(text):
            return None, False
        newline_at = text.find("\n", index)
        if newline_at < 0:
            line = text[index:]
            index = len(text)
            return line, False
        line = text[index:newline_at]
        index = newline_at + 1
        return line, True

    line, _ = read_line()
    while line is not None:
        if line:
            equals = line.find("=")
            heredoc = line.find("<<")
            if equals >= 0 and (heredoc < 0 or equals < heredoc):
                key, value = line.split("=", 1)
                pairs.append((key, value))
            elif heredoc >= 0:
                key, delimiter = line.split("<<", 1)
                if not key or not delimiter:
                    raise FileCommandError(f"Invalid format '{line}'")
                start = end = index
                value_line, had_newline = read_line()
                while value_line != delimiter:
                    if value_line is None:
                        raise FileCommandError(f"Matching delimiter not found '{delimiter}'")
                    if not had_newline:
                        raise FileCommandError("EOF marker missing new line")
                    end = index - 1
                    value_line, had_newline = read_line()
                pairs.append((key, text[start:end] if end > start else ""))
            else:
                raise FileCommandError(f"Invalid format '{line}'")
        line, _ = read_line()
    return pairs
