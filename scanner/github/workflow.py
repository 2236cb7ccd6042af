"""The GitHub Actions workflow protocol, and nothing else.

Everything the runner reads from this process goes through here: workflow
commands on stdout (annotations, stop/resume of command processing), the
file commands (GITHUB_OUTPUT, GITHUB_STEP_SUMMARY) and the `INPUT_*`
variables. No other module prints a line that starts with `::`
(tests/github/test_protocol_only_here.py enforces it), so escaping is decided
in one place and checked in one place against the real `@actions/core`
(tests/github/test_escaping.py).

The runner behaviours relied on are in docs/runner-contract.md: the escaping and
the property order are those of actions/toolkit `packages/core/src/command.ts`
and `utils.ts`; the parsing they must survive is actions/runner
`ActionCommand.TryParseV2` (re-implemented for the tests in tests/support/runner_log.py).

Functions that build text are pure; the few that write take the path or the
stream they write to as an argument, so nothing here touches the environment
or a file on import.
"""

from __future__ import annotations

import contextlib
import enum
import os
import posixpath
import re
import uuid
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import IO

from scanner.foundation.errors import InputError
from scanner.foundation.untrusted_text import visible

# --- workflow commands -------------------------------------------------------


class AnnotationKind(enum.Enum):
    """The three annotation commands; the value is the command name."""

    ERROR = "error"
    WARNING = "warning"
    NOTICE = "notice"


@dataclass(frozen=True, slots=True)
class AnnotationProperties:
    """Where an annotation points, as toolkit's `AnnotationProperties`.

    None leaves the property out of the command line. Lines and columns are
    1-based (the runner's convention); toolkit silently drops a 0 because it
    tests truthiness, so a 0 here is refused as the bug it would be.
    """

    title: str | None = None
    """Shown in bold above the message; empty is left out like None."""
    file: str | None = None
    """Path relative to the repository root (or under /github/workspace), `/` separators.
    Not `./x`, `/x` or `../x`: the runner can't place those in the PR diff."""
    line: int | None = None
    end_line: int | None = None
    column: int | None = None
    end_column: int | None = None

    def __post_init__(self) -> None:
        for name in ("line", "end_line", "column", "end_column"):
            value = getattr(self, name)
            # bool is an int subclass; True would print as "1" only by accident.
            if value is not None and (isinstance(value, bool) or value < 1):
                raise ValueError(f"annotation {name} must be a 1-based int, got {value!r}")


@dataclass(frozen=True, slots=True)
class Annotation:
    """One annotation waiting to be printed."""

    kind: AnnotationKind
    message: str
    properties: AnnotationProperties = AnnotationProperties()


def escape_data(text: str) -> str:
    """Escape a command's message (the part after the second `::`).

    `%` goes first, or the `%` of every later replacement would be escaped
    again. The runner reverses exactly these three and nothing else, so `:`
    and `,` stay as they are in a message.
    """
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    """Escape a property value: the message escaping plus `:` and `,`.

    `,` separates properties and `::` ends them, so either left raw in a file
    name or a title would let a pull request cut the property list short.
    """
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def _format_workflow_command(name: str, properties: Sequence[tuple[str, str]], data: str) -> str:
    """`::name k=v,k=v::data` with empty values left out, as toolkit's Command.toString."""
    pairs = [f"{key}={escape_property(value)}" for key, value in properties if value]
    head = f"::{name}"
    if pairs:
        head += " " + ",".join(pairs)
    return f"{head}::{escape_data(data)}"


def format_command(
    kind: AnnotationKind | str,
    properties: AnnotationProperties,
    message: str,
) -> str:
    """One annotation command line, without the line ending.

    Property order is toolkit's (title, file, line, endLine, col, endColumn),
    so the line equals what `core.warning(message, properties)` prints.
    One deliberate difference: when every property is empty toolkit still
    prints the separating space (`::warning ::msg`); this prints
    `::warning::msg`. The runner parses both the same way.
    """
    command = AnnotationKind(kind).value
    pairs = [
        ("title", properties.title or ""),
        ("file", properties.file or ""),
        ("line", _int_property(properties.line)),
        ("endLine", _int_property(properties.end_line)),
        ("col", _int_property(properties.column)),
        ("endColumn", _int_property(properties.end_column)),
    ]
    return _format_workflow_command(command, pairs, message)


@contextlib.contextmanager
def log_group(stream: IO[str], title: str) -> Iterator[None]:
    """A foldable group in the log (`::group::title` ... `::endgroup::`), as toolkit's
    `core.group`. Groups do not nest in the runner's log viewer; callers never nest them."""
    stream.write(_format_workflow_command("group", (), title) + "\n")
    try:
        yield
    finally:
        stream.write("::endgroup::\n")
        stream.flush()


CONTAINER_WORKSPACE = "/github/workspace"


def annotation_file(path: str) -> str:
    """`path` in the form the runner can place in the PR diff: repository-relative, `/`-separated.

    The runner maps `/github/workspace/x` back to `x` but keeps any other path
    as written, and an annotation on `./x`, `/x` or `../x` then shows on no
    line of the diff (docs/runner-contract.md#annotations). So `./` and `//` are normalised away, the
    container workspace prefix is dropped, and anything that would still
    point outside the repository is refused as the bug it is.
    """
    # Backslashes stay: on Linux they are part of a file name, not separators.
    normal = posixpath.normpath(path)
    if normal == CONTAINER_WORKSPACE or normal.startswith(CONTAINER_WORKSPACE + "/"):
        normal = normal[len(CONTAINER_WORKSPACE) + 1 :]
    if not normal or normal == "." or normal.startswith(("/", "../")) or normal == "..":
        raise ValueError(f"annotation file {path!r} is not inside the repository")
    return normal


def format_annotation(annotation: Annotation) -> str:
    return format_command(annotation.kind, annotation.properties, annotation.message)


def write_annotations(stream: IO[str], annotations: Iterable[Annotation]) -> None:
    """Print each annotation as one command line ending in `\n`, then flush.

    Flushing matters when stdout is a pipe (the runner gives no TTY): the
    runner interleaves stdout and stderr as they arrive.
    """
    for annotation in annotations:
        stream.write(format_annotation(annotation) + "\n")
    stream.flush()


def _int_property(value: int | None) -> str:
    return "" if value is None else str(value)


# Names the runner registers as commands (actions/runner ActionCommandManager.cs).
# A stop token equal to one of them (case-insensitive) fails the step.
_RUNNER_COMMANDS = frozenset(
    {
        "add-mask",
        "add-matcher",
        "add-path",
        "debug",
        "echo",
        "endgroup",
        "error",
        "group",
        "internal-set-repo-path",
        "notice",
        "remove-matcher",
        "save-state",
        "set-env",
        "set-output",
        "stop-commands",
        "warning",
        "pause-logging",
    }
)
_TOKEN_PATTERN = re.compile(r"[A-Za-z0-9_-]{8,}")


def new_stop_token() -> str:
    """A fresh unguessable token (uuid4, 32 hex digits).

    Unguessable is the point: text echoed between stop and resume can only
    switch commands back on by containing the token. Over 6 characters, the
    runner also masks it in the log.
    """
    return uuid.uuid4().hex


def _check_stop_token(token: str) -> None:
    if not _TOKEN_PATTERN.fullmatch(token) or token.lower() in _RUNNER_COMMANDS:
        # The runner fails the step on an empty or command-name token; spaces or
        # `:` would make the resume line parse as something else.
        raise ValueError(f"unusable stop-commands token {token!r}")


def stop_commands(token: str) -> str:
    """The line that makes the runner ignore every command until `resume_commands(token)`."""
    _check_stop_token(token)
    return f"::stop-commands::{token}"


def resume_commands(token: str) -> str:
    """The line that switches command processing back on."""
    _check_stop_token(token)
    return f"::{token}::"


class UntrustedWriter:
    """What `commands_stopped` yields: writes text while commands are stopped."""

    def __init__(self, stream: IO[str], token: str) -> None:
        self._stream = stream
        self._token = token
        self.ends_with_newline = True

    def write(self, text: str) -> None:
        if self._token in text:
            raise ValueError("untrusted text contains the stop token")
        if text:
            self._stream.write(text)
            self.ends_with_newline = text.endswith(("\n", "\r"))


_RUNNER_LINE_BREAK = re.compile(r"(\r\n|\r|\n)")
_LEGACY_COMMAND_TEXT = "##["
_LEGACY_COMMAND = re.compile(re.escape(_LEGACY_COMMAND_TEXT))


def defuse_workflow_commands(text: str) -> str:
    """`text` with every runner line that would be a command made inert, else unchanged.

    The runner splits output at `\\n`, `\\r` and `\\r\\n` (StreamReader.ReadLine); a line
    whose text after .NET's `Trim()` starts with `::` is a command (TryParseV2), and `##[`
    anywhere in a line is the legacy form (TryParse). The first `:` becomes `\\x3a` and
    `##[` becomes `#\\x23[`, the spelling `shown()` uses, so a reader sees what was there.
    The net under every line kb-eval prints (scanner/render/console.py)."""
    if "::" not in text and _LEGACY_COMMAND_TEXT not in text:
        # No line can be a command: the text as it is, without a pass over each of its lines
        # (a 29 MB JSON report printed to stdout took as long as serialising it).
        return text
    parts = _RUNNER_LINE_BREAK.split(text)
    for index in range(0, len(parts), 2):  # even indexes are lines, odd ones the breaks
        line = _LEGACY_COMMAND.sub(r"#\\x23[", parts[index])
        # str.isspace() covers .NET's Char.IsWhiteSpace (and \x1c-\x1f besides): stripping
        # more than the runner does can only defuse more.
        body = line.lstrip()
        if body.startswith("::"):
            start = len(line) - len(body)
            line = line[:start] + "\\x3a" + line[start + 1:]
        parts[index] = line
    return "".join(parts)


@contextlib.contextmanager
def commands_stopped(stream: IO[str], token: str | None = None) -> Iterator[UntrustedWriter]:
    """Stop command processing on `stream` for the duration of the block.

    Write the untrusted text through the yielded writer, on the same stream:
    the runner keeps one stop state for stdout and stderr, and text on the
    other stream while commands are stopped is safe too, but the action's own
    commands must wait until the block has ended.
    """
    token = token or new_stop_token()
    stream.write(stop_commands(token) + "\n")
    writer = UntrustedWriter(stream, token)
    try:
        yield writer
    finally:
        if not writer.ends_with_newline:
            stream.write("\n")
        stream.write(resume_commands(token) + "\n")
        stream.flush()


# --- annotation budget ---------------------------------------------------------

GITHUB_ANNOTATIONS_PER_KIND_PER_STEP = 10
"""The runner keeps 10 errors, 10 warnings and 10 notices per step and turns
the rest into plain log lines (actions/runner ExecutionContext.cs AddIssue)."""


def budget_annotations(
    annotations: Sequence[Annotation],
    max_per_kind: int,
    listed_in: str = "the step summary and the JSON report",
) -> list[Annotation]:
    """At most `max_per_kind` annotations of each kind, in their original order.

    When any were left out, the result ends with one notice that says how
    many and where they are all listed. That notice counts against the
    notice budget itself (the runner would drop an 11th notice silently), so
    one fewer ordinary notice is kept when something was cut. With
    `max_per_kind == 0` nothing is printed, not even the notice.
    """
    if max_per_kind < 0:
        raise ValueError("max_per_kind must be >= 0")
    if max_per_kind == 0:
        return []

    def take(
        limits: Mapping[AnnotationKind, int],
    ) -> tuple[list[Annotation], dict[AnnotationKind, int]]:
        kept: list[Annotation] = []
        used = {kind: 0 for kind in AnnotationKind}
        cut = {kind: 0 for kind in AnnotationKind}
        for annotation in annotations:
            if used[annotation.kind] < limits[annotation.kind]:
                kept.append(annotation)
                used[annotation.kind] += 1
            else:
                cut[annotation.kind] += 1
        return kept, cut

    kept, cut = take({kind: max_per_kind for kind in AnnotationKind})
    if not any(cut.values()):
        return kept
    limits = {kind: max_per_kind for kind in AnnotationKind}
    limits[AnnotationKind.NOTICE] = max_per_kind - 1
    kept, cut = take(limits)
    total = sum(cut.values())
    parts = [f"{cut[kind]} {kind.value}{'s' if cut[kind] != 1 else ''}" for kind in AnnotationKind if cut[kind]]
    message = (
        f"{total} more annotation{'s' if total != 1 else ''} left out ({', '.join(parts)}): "
        f"max-annotations is {max_per_kind} per kind; {listed_in} list them all."
    )
    kept.append(Annotation(AnnotationKind.NOTICE, message, AnnotationProperties(title="kb-eval")))
    return kept


# --- file commands -------------------------------------------------------------


def format_output(name: str, value: str, delimiter: str) -> str:
    """The GITHUB_OUTPUT block `name<<delimiter`, value, delimiter, each line ended by `\\n`.

    The multi-line form is used for every value: it is the one form in which
    no value (newlines, `=`, `<<`) can be misread, as long as the value does
    not contain the delimiter, which is refused. `\\r` is kept: on Linux the
    runner ends lines at `\\n` only, so it stays part of the value.
    """
    if not name or any(bad in name for bad in ("=", "<<", "\n", "\r")):
        # The runner picks the form at the first `=` or `<<` on the line.
        raise ValueError(f"unusable output name {name!r}")
    if delimiter in name or delimiter in value:
        raise ValueError(f"output {name!r} contains the delimiter {delimiter!r}")
    return f"{name}<<{delimiter}\n{value}\n{delimiter}\n"


def new_delimiter() -> str:
    """toolkit's delimiter form: `ghadelimiter_` + uuid4, unguessable by a pull request."""
    return f"ghadelimiter_{uuid.uuid4()}"


def append_output(path: str | os.PathLike[str], name: str, value: str) -> None:
    """Append one output to the GITHUB_OUTPUT file at `path`.

    The runner reads the file after the step, even on a non-zero exit, and a
    malformed file fails the step: so the block is built completely, then
    written in one call.
    """
    block = format_output(name, value, new_delimiter())
    with open(path, "a", encoding="utf-8", newline="") as file:
        file.write(block)


STEP_SUMMARY_LIMIT_BYTES = 1024 * 1024
"""GitHub uploads nothing of a step summary over 1 MiB (docs/runner-contract.md#outputs-and-the-step-summary)."""
SUMMARY_TRUNCATION_MARGIN_BYTES = 4 * 1024
"""Room kept under the limit for the truncation note and any later small append."""


def bound_summary(markdown: str, budget_bytes: int) -> str:
    """`markdown` if its UTF-8 size fits `budget_bytes`, else its head plus a visible note.

    The cut falls at the end of a line (never inside a UTF-8 sequence, a
    table row or an HTML tag on one line), and the note says how much was cut
    and where the full data is.
    """
    data = markdown.encode("utf-8")
    if len(data) <= budget_bytes:
        return markdown
    note_template = (
        "\n\n> [!WARNING]\n> Summary truncated: {shown} of {total} bytes shown "
        "(GitHub shows at most 1 MiB per step). The JSON report has everything.\n"
    )
    reserve = len(note_template.format(shown=budget_bytes, total=len(data)).encode("utf-8"))
    room = max(budget_bytes - reserve, 0)
    head = data[:room]
    cut_at = head.rfind(b"\n")
    head = head[: cut_at + 1] if cut_at >= 0 else b""
    text = head.decode("utf-8")  # cut after a newline byte, so always whole characters
    return text + note_template.format(shown=len(head), total=len(data))


def append_summary(path: str | os.PathLike[str], markdown: str) -> None:
    """Append `markdown` to the GITHUB_STEP_SUMMARY file, keeping the file under the limit.

    What the file already holds counts: the limit is on the whole file.
    """
    try:
        existing = os.path.getsize(path)
    except FileNotFoundError:
        existing = 0
    budget = STEP_SUMMARY_LIMIT_BYTES - SUMMARY_TRUNCATION_MARGIN_BYTES - existing
    text = bound_summary(markdown, max(budget, 0))
    with open(path, "a", encoding="utf-8", newline="") as file:
        file.write(text)


# --- Markdown for pull-request text ---------------------------------------------

# Everything Markdown, GFM tables or HTML could read as markup, as numeric
# character references: rendered, they show the character itself.
# CommonMark lets a backslash escape any ASCII punctuation, `<` and `&` included, so no HTML,
# entity, link, emphasis, code span or table pipe survives, and the text still reads as text
# in an e-mail notification (where `&#46;` would not). `.`, `-`, `'`, `"`, `=` and `:` are left
# alone: they are active only at the start of a line, and escaped text never starts one here.
_MARKDOWN_ACTIVE = {char: "\\" + char for char in "\\`*_{}[]()<>#+!|~&$"}
_LINE_BREAK = re.compile(r"\r\n|\r|\n")


def escape_markdown_text(text: str) -> str:
    """PR-controlled text made inert for a step summary or PR comment, one line.

    Invisible characters (bidirectional overrides, zero-width characters) are spelled out first
    (`visible`, the rule every renderer uses), so a name cannot display as another. HTML, links,
    images, emphasis, code spans, table pipes and headings all come out as the literal
    characters (backslash escapes). Line breaks become `<br>` so the text stays in its table
    cell. GitHub also makes links and mentions of plain text: `@` gets a zero-width space after
    it (a heading such as `@org/team` notifies nobody, and `a@b.example` is no e-mail link), and
    so do the `:` of `://` and the `www` of `www.` (GFM's bare-URL autolinks need them whole).
    These are kb-eval's own marks, added after untrusted ones were spelled out.
    """
    escaped = "".join(_MARKDOWN_ACTIVE.get(char, char) for char in visible(text))
    escaped = escaped.replace("@", "@\u200b")
    escaped = _AUTOLINK_START.sub(lambda match: match.group(0)[:-1] + "\u200b" + match.group(0)[-1], escaped)
    return _LINE_BREAK.sub("<br>", escaped)


_AUTOLINK_START = re.compile(r"://|(?i:www)\.")
"""Where GFM's extended autolinks start (`https://`, `ftp://`, `www.`): broken by a zero-width
space before their last character."""


# --- inputs ----------------------------------------------------------------------

# String.prototype.trim's set (ECMAScript WhiteSpace + LineTerminator), which is
# what toolkit's getInput strips. Python's str.strip differs: it also strips
# \x1c-\x1f and \x85, and keeps \ufeff.
_JS_WHITESPACE = "\t\n\v\f\r \u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000\ufeff"


def input_variable(name: str) -> str:
    """The environment variable the runner sets for input `name`: hyphens are kept."""
    return "INPUT_" + name.replace(" ", "_").upper()


def read_input(environ: Mapping[str, str], name: str, required: bool = False) -> str:
    """The trimmed value of input `name`, `""` when unset (as toolkit's getInput).

    The runner sets every declared input (to its default when the workflow
    gives none), so unset only happens outside a runner.
    """
    value = environ.get(input_variable(name), "").strip(_JS_WHITESPACE)
    if required and not value:
        raise InputError(
            f"Input required and not supplied: {name}",
            field=name,
            hint=f"set `{name}:` under `with:` in the workflow step",
        )
    return value


_TRUE = ("true", "True", "TRUE")
_FALSE = ("false", "False", "FALSE")


def read_bool_input(environ: Mapping[str, str], name: str, default: bool | None = None) -> bool:
    """Input `name` as YAML 1.2 core-schema boolean, exactly toolkit's getBooleanInput.

    `default` is used only when the variable is absent altogether (a local
    run); an empty or other value is an InputError naming the input.
    """
    if default is not None and input_variable(name) not in environ:
        return default
    value = read_input(environ, name)
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise InputError(
        f"input {name} is {value!r}, not a boolean",
        field=name,
        hint="use one of true | True | TRUE | false | False | FALSE",
    )
