"""Load and validate the golden query set.

The file is untrusted (a pull request can change it), so it is composed into
YAML nodes and checked node by node: every error names the file, the line, the
field and the query it belongs to. Aliases and deep nesting are refused while
composing (see yaml_nodes.py: a 'billion laughs' file costs nothing), and only
the standard scalar tags are accepted (a tag cannot construct an object).
"""

from __future__ import annotations

import hashlib
import os
import re
from dataclasses import dataclass
from pathlib import Path

import yaml

from scanner.foundation.collector import collector_paused
from scanner.foundation.diagnostics import Diagnostic, DiagnosticCode
from scanner.foundation.errors import InputError
from scanner.foundation.files import FileRefused, LinkPolicy, Refusal, read_capped
from scanner.foundation.yaml_nodes import compose_untrusted

DEFAULT_GOLDEN_NAMES = (".kb-eval.yml", ".kb-mcp-eval.yml", ".groove-eval.yml")
"""Looked up in this order in the KB folder; the last two keep kb-mcp and grooveseek golden sets working unchanged."""

MAX_GOLDEN_BYTES = 16 * 1024 * 1024
"""Room for MAX_QUERIES queries of a few hundred characters each, and for long ones (CISI's run to
2,000): the bench's 10,000 queries are 2.3 MB. What it costs is bounded by MAX_GOLDEN_NODES and by
the text itself (held about three times while composed: 50 MiB at the cap)."""
MAX_GOLDEN_NODES = 500_000
"""YAML values (scalars, lists, mappings) composed at most: about 300 bytes each while composed,
so 150 MiB at the cap, whatever the bytes. 10,000 bench queries with one expected section each
are 147,000."""
MAX_QUERIES = 10_000
MAX_QUERY_CHARS = 2_000
"""Longer queries are searched as their first 2,000 characters, with a warning naming the line
(`cut_query`). A golden query is usually a question a person would type, and this bounds the cost of
compiling and matching it; but test collections hold longer ones (CISI query 90 is 2,023
characters), and kb-mcp, which sets no limit, runs them, so a long query is cut, never refused."""
MAX_LIMIT = 1000
"""The largest limit (`defaults.limit` here, `limit` in the settings) and k: a golden query judges
a handful of documents, and a deeper list only costs time (and, for an HTTP service, load)."""
MAX_LIMIT_DIGITS = len(str(MAX_LIMIT))
"""More digits than MAX_LIMIT has are refused before they are converted."""
ID_FROM_TEXT_CHARS = 32
DEFAULT_GRADE = 1
"""An expected entry without `grade:`: relevant, with the binary gain every ungraded file meant."""
MAX_GRADE = 1000
"""Largest `grade:`. Graded scales in use are short (TREC 0-4, Cranfield 1-4, Elasticsearch's
ratings 0-3); the bound keeps the number a person can mistype small and the digits checked."""
STARTER_TAG = "starter"
"""The tag `kb-eval init` gives each entry it proposes (a document's title as the query): a query
still carrying it is a placeholder, warned about on every run until it is rewritten."""

_STR = "tag:yaml.org,2002:str"
_INT = "tag:yaml.org,2002:int"
_BOOL = "tag:yaml.org,2002:bool"
_NULL = "tag:yaml.org,2002:null"
_PLAIN_DECIMAL = re.compile(f"\\+?([0-9]{{1,{MAX_LIMIT_DIGITS}}})")
_SURROGATE = re.compile("[\ud800-\udfff]")


@dataclass(frozen=True, slots=True)
class ExpectedEntry:
    """One answer a query expects: a document, a section of it, or a group of alternatives.

    kb-mcp's entries are `path` and `heading`; the other fields are kb-eval's, optional, and leave
    a kb-mcp entry's meaning as it was (docs/golden-file.md, docs/metrics.md)."""

    path: str
    """For a group (`any:`), its first member's path."""
    heading: str | None
    line: int
    """Line of this entry in the golden file."""
    grade: int = DEFAULT_GRADE
    """How relevant the entry is (`grade:`): 0 is "judged, not relevant"; higher is more relevant.
    nDCG uses it as the gain; `--relevance-level` decides which grades the other measures count
    as relevant. An entry without `grade:` is 1, so an ungraded file keeps its binary meaning.
    A group (`any:`) carries one grade for the one answer it is; its members carry none."""
    parent: str | None = None
    """`parent:`: the labelled heading is the one under this enclosing heading (at any depth), for a
    heading text the document repeats (forty sections called `Options`)."""
    subsections: bool = False
    """`subsections: true`: the section together with every section nested under it is one answer."""
    any_of: tuple[ExpectedEntry, ...] = ()
    """`any:`: a group of answers of which any one is enough; the group counts as one entry."""

    @property
    def members(self) -> tuple[ExpectedEntry, ...]:
        """The entries a hit is matched against: a group's members, or the entry itself."""
        return self.any_of or (self,)


@dataclass(frozen=True, slots=True)
class GoldenQuery:
    id: str
    text: str
    """The query as searched: the file's text, cut to MAX_QUERY_CHARS when it was longer."""
    expected: tuple[ExpectedEntry, ...]
    """May be empty, as kb-mcp allows: the query is searched and reported, and left out of every
    aggregate (`metrics.aggregate`), since recall and nDCG have nothing to divide by."""
    tags: tuple[str, ...]
    line: int
    """Line where this query's entry starts in the golden file."""
    cut_from_chars: int | None = None
    """The query's length in the file when it was cut to MAX_QUERY_CHARS; None when it was not."""


@dataclass(frozen=True, slots=True)
class GoldenSet:
    path: str
    """The golden file as the user named it (for messages and annotations)."""
    sha256: str
    """Of the file's bytes: part of the fingerprint, so any edit makes runs incomparable."""
    queries: tuple[GoldenQuery, ...]
    default_limit: int | None
    warnings: tuple[Diagnostic, ...] = ()
    """What the loader accepted but the user should hear about (a query cut to MAX_QUERY_CHARS)."""


def find_golden(kb_path: Path, explicit: Path | None) -> Path:
    """The golden file: `explicit`, else the one default name present in the KB folder.

    Two default names present is exit 2 naming both, never a silent pick: the first name wins the
    lookup, so a pull request that adds `.kb-eval.yml` beside the `.kb-mcp-eval.yml` the
    repository keeps would otherwise swap the golden set it is measured against (and pass the
    gate with a query it broke). Saying which file was picked would be one line in a log nobody
    reads; a refusal names both and the fix."""
    if explicit is not None:
        return explicit
    present = [kb_path / name for name in DEFAULT_GOLDEN_NAMES if os.path.lexists(kb_path / name)]
    if len(present) > 1:
        raise InputError(
            f"{len(present)} golden files in one knowledge base: " + " and ".join(str(p) for p in present)
            + "; kb-eval does not pick one, since a file added by a pull request would take the place of "
            "the one the repository keeps",
            file=str(present[0]),
            field="golden",
            hint=f"delete the ones not in use, or pass --golden {present[-1]} (input `golden`) to name the one to use",
        )
    if present:
        return present[0]
    looked = ", ".join(str(kb_path / name) for name in DEFAULT_GOLDEN_NAMES)
    below = golden_below(kb_path)
    if below is not None:
        folder = below.parent
        raise InputError(
            f"no golden file found in {kb_path}, but there is {below}",
            file=str(kb_path),
            field="kb-path",
            hint=f"run with --kb-path {folder} (the Action's input `kb-path: {folder}`): the KB is the folder "
            "that holds the golden file",
        )
    raise InputError(
        "no golden file found",
        file=str(kb_path),
        hint=f"looked for {looked}; run `kb-eval init --kb-path {kb_path}` to write a starter one, or pass --golden FILE",
    )


GOLDEN_SEARCH_DEPTH = 3
GOLDEN_SEARCH_FOLDERS = 2_000
"""How far below the given folder a golden file is looked for when the folder has none (kb-eval run
from the repository root with the KB in `docs/`): three levels, two thousand folders at most, so a
run from a large checkout costs milliseconds before it says what it found."""


_NOT_SEARCHED = frozenset({"node_modules", "site", "venv", "__pycache__"})
"""Dependency trees and build output: no KB's golden file lives there."""


def golden_below(folder: Path) -> Path | None:
    """The shallowest default golden file in a folder under `folder` (hidden folders and
    dependency trees skipped; names in sorted order, so the answer does not depend on the file
    system's), or None."""
    level = [folder]
    visited = 0
    for _ in range(GOLDEN_SEARCH_DEPTH):
        below: list[Path] = []
        for parent in level:
            try:
                with os.scandir(parent) as entries:
                    children = sorted(
                        Path(entry.path) for entry in entries
                        if entry.is_dir(follow_symlinks=False) and not entry.name.startswith(".")
                        and entry.name not in _NOT_SEARCHED
                    )
            except OSError:
                continue
            for child in children:
                visited += 1
                if visited > GOLDEN_SEARCH_FOLDERS:
                    return None
                for name in DEFAULT_GOLDEN_NAMES:
                    if (child / name).is_file():
                        return child / name
                below.append(child)
        level = below
    return None


MAX_RANKED_HITS = 100_000
"""Hits one run may ask for: queries x limit. Every hit is ranked, judged, kept in memory and
written to the report (about 140 bytes each), so 1,000 queries at `defaults: limit: 1000` were
113 s, 1.5 GB and a 140 MB report. At the cap the report is about 21 MB (212 bytes a hit:
`python bench/report_size.py` recorded 77,622 hits in 16.4 MB), under the history's and
baseline's 32 MiB. The most queries at
the default limit (10,000 x 10) are exactly the cap: only a raised limit can cross it."""


def refuse_too_many_hits(golden: GoldenSet, limit: int, limit_given: bool, limit_words: str = "--limit") -> None:
    """Exit 2 when the golden set's queries times the limit is over MAX_RANKED_HITS, naming where
    the limit came from (`limit_given`: the flag or input, else the golden file's defaults.limit)."""
    asked = len(golden.queries) * limit
    if asked <= MAX_RANKED_HITS:
        return
    most = max(MAX_RANKED_HITS // max(len(golden.queries), 1), 1)
    raise InputError(
        f"{len(golden.queries)} queries x limit {limit} is {asked} hits to rank and record, over the "
        f"{MAX_RANKED_HITS} one run may ask for",
        file=None if limit_given else golden.path,
        field=limit_words if limit_given else "defaults.limit",
        hint=f"lower the limit to {most} or less, or split the golden file",
    )


def load_golden(path: Path, shown: str | None = None) -> GoldenSet:
    shown = shown if shown is not None else str(path)
    data = _read_golden_bytes(path, shown)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise InputError(f"not valid UTF-8 at byte {error.start}", file=shown, hint="save the file as UTF-8") from None
    # The nodes and the queries read from them form no reference cycle (collector.py).
    with collector_paused():
        return _GoldenReader(shown).read(_composed(text, shown), hashlib.sha256(data).hexdigest())


def _composed(text: str, shown: str) -> yaml.Node | None:
    """The golden file's YAML nodes (compose_untrusted), or an InputError naming the line to fix."""
    try:
        return compose_untrusted(text, MAX_GOLDEN_NODES)
    except yaml.MarkedYAMLError as error:
        mark = error.problem_mark or error.context_mark
        line = mark.line + 1 if mark is not None else None
        opened = _quote_run_on(text, line) if line is not None else None
        if opened is not None:
            # An unclosed quote reads on, over line breaks, to the next quote: the error YAML finds
            # there can be a hundred lines after the line to fix.
            raise InputError(
                f"not valid YAML: {error.problem or error.context} at line {line}, after a quoted value "
                f"that opens at line {opened} and runs on to there",
                file=shown, line=opened, hint="close the quote on the line it opens",
            ) from None
        raise InputError(
            f"not valid YAML: {error.problem or error.context}",
            file=shown,
            line=line,
            hint="fix the YAML syntax (anchors, aliases and nesting deeper than 50 levels are not accepted)",
        ) from None
    except yaml.YAMLError as error:
        raise InputError(f"not valid YAML: {error}", file=shown) from None


def _quote_run_on(text: str, error_line: int) -> int | None:
    """The line a quoted value opens on when it spans lines and ends at, or just before, the line
    YAML stopped on (an unclosed quote that swallowed what followed); None otherwise. Only read
    once the file is known to be wrong, with the pure-Python scanner, which stops where the
    composer did."""
    opened = None
    try:
        for token in yaml.scan(text, Loader=yaml.SafeLoader):
            if isinstance(token, yaml.ScalarToken) and token.start_mark.line + 1 > error_line:
                break
            if isinstance(token, yaml.ScalarToken) and token.style in ('"', "'"):
                start, end = token.start_mark.line + 1, token.end_mark.line + 1
                opened = start if end > start and error_line - end <= 1 else None
    except yaml.YAMLError:
        pass
    return opened


def _read_golden_bytes(path: Path, shown: str) -> bytes:
    try:
        return read_capped(path, MAX_GOLDEN_BYTES, LinkPolicy.REFUSE)
    except FileRefused as refused:
        hints = {
            Refusal.MISSING: "check --golden, or create the file (kb-eval init writes a starter)",
            # A link in a pull request could make kb-eval read any file on the runner.
            Refusal.LINK: "point --golden at the real file, not a link",
            Refusal.NOT_REGULAR: "point --golden at a YAML file",
            Refusal.TOO_LARGE: "split the golden set or remove unused queries",
        }
        what = "not found" if refused.refusal is Refusal.MISSING else refused.reason
        raise InputError(f"golden file {what}", file=shown, hint=hints.get(refused.refusal)) from None


class _GoldenReader:
    """Validates the composed node tree; each method knows where it is, for the message."""

    def __init__(self, shown: str) -> None:
        self.file = shown

    def fail(self, node: yaml.Node | None, message: str, field: str, hint: str | None = None) -> InputError:
        line = node.start_mark.line + 1 if node is not None else None
        return InputError(message, file=self.file, line=line, field=field, hint=hint)

    def mapping(self, node: yaml.Node, field: str, allowed: tuple[str, ...]) -> dict[str, yaml.Node]:
        if not isinstance(node, yaml.MappingNode):
            raise self.fail(node, f"{field} must be a mapping", field)
        result: dict[str, yaml.Node] = {}
        for key, value in node.value:
            if not isinstance(key, yaml.ScalarNode) or key.tag != _STR:
                raise self.fail(key, f"{field} has a key that is not a string", field)
            key.value = self.join_surrogate_pairs(key, key.value, field, f"a key of {field}")
            if key.value not in allowed:
                raise self.fail(
                    key, f"unknown key {key.value!r} in {field}", f"{field}.{key.value}",
                    hint=f"allowed keys: {', '.join(allowed)}",
                )
            if key.value in result:
                raise self.fail(key, f"key {key.value!r} appears twice in {field}", f"{field}.{key.value}")
            result[key.value] = value
        return result

    def string(self, node: yaml.Node, field: str, *, allow_int: bool = False) -> str:
        if isinstance(node, yaml.ScalarNode) and (node.tag == _STR or (allow_int and node.tag == _INT)):
            return self.join_surrogate_pairs(node, str(node.value), field)
        raise self.fail(node, f"{field} must be a string", field)

    def join_surrogate_pairs(self, node: yaml.Node, text: str, field: str, subject: str | None = None) -> str:
        """YAML's "\\ud83d\\ude00" (what a JSON writer emits for one emoji) decodes to two halves of a
        UTF-16 pair: joined here into the character they encode. A half on its own is not a
        character: it cannot be written as UTF-8 to the report, stderr or a search request, so it
        would crash the run far from the golden file. Refused here, where line and field are known."""
        if _SURROGATE.search(text) is None:
            return text
        try:
            return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le")
        except UnicodeDecodeError:
            raise self.fail(
                node, f"{subject or field} holds a lone surrogate escape (\\uD800-\\uDFFF), which is not a character", field,
                hint="write the character itself, or escape it as one \\U0001XXXX (or a high and low surrogate pair, in order)",
            ) from None

    def read(self, root: yaml.Node | None, sha256: str) -> GoldenSet:
        if root is None:
            raise InputError("golden file is empty", file=self.file, hint="add a `queries:` list")
        top = self.mapping(root, "the top level", ("queries", "defaults"))
        default_limit = self.defaults(top["defaults"]) if _given(top, "defaults") else None
        if "queries" not in top:
            raise self.fail(root, "missing `queries:` list", "queries")
        items = top["queries"]
        if not isinstance(items, yaml.SequenceNode) or not items.value:
            raise self.fail(items, "`queries` must be a non-empty list", "queries")
        if len(items.value) > MAX_QUERIES:
            raise self.fail(items, f"{len(items.value)} queries is over the limit of {MAX_QUERIES}", "queries")
        queries = [self.query(node, n) for n, node in enumerate(items.value)]
        warnings = tuple(self.cut_warning(query) for query in queries if query.cut_from_chars is not None)
        warnings += tuple(self.starter_warning(query) for query in queries if STARTER_TAG in query.tags)
        seen: dict[str, GoldenQuery] = {}
        for query in queries:
            if query.id in seen:
                raise InputError(
                    f"duplicate query id {query.id!r} (first at line {seen[query.id].line})",
                    file=self.file, line=query.line, field=f"queries[{query.id}].id",
                    hint="give each query a unique `id:`",
                )
            seen[query.id] = query
        return GoldenSet(self.file, sha256, tuple(queries), default_limit, warnings)

    def cut_warning(self, query: GoldenQuery) -> Diagnostic:
        return Diagnostic(
            DiagnosticCode.QUERY_CUT,
            f"query {query.id!r} is {query.cut_from_chars} characters; it is searched as its first "
            f"{MAX_QUERY_CHARS} (field: queries[{query.id}].query)",
            self.file, query.line,
        )

    def starter_warning(self, query: GoldenQuery) -> Diagnostic:
        return Diagnostic(
            DiagnosticCode.STARTER_PLACEHOLDER,
            f"query {query.id!r} is still a placeholder written by kb-eval init (tagged `{STARTER_TAG}`): "
            f"a document's title finds that document and measures nothing; rewrite it as a question a "
            f"reader would ask, then remove the `{STARTER_TAG}` tag (field: queries[{query.id}].tags)",
            self.file, query.line,
        )

    def defaults(self, node: yaml.Node) -> int | None:
        fields = self.mapping(node, "defaults", ("limit", "rerank"))
        if _given(fields, "rerank"):
            value = fields["rerank"]
            if not (isinstance(value, yaml.ScalarNode) and value.tag == _BOOL):
                raise self.fail(value, "defaults.rerank must be true or false", "defaults.rerank")
        if not _given(fields, "limit"):
            return None
        value = fields["limit"]
        limit = _plain_decimal(value.value) if isinstance(value, yaml.ScalarNode) and value.tag == _INT else None
        if limit is None or not 1 <= limit <= MAX_LIMIT:
            raise self.fail(
                value, f"defaults.limit must be an integer from 1 to {MAX_LIMIT}", "defaults.limit",
                hint="write it in decimal digits, e.g. `limit: 10`",
            )
        return limit

    def query(self, node: yaml.Node, position: int) -> GoldenQuery:
        where = f"queries[{position}]"
        fields = self.mapping(node, where, ("id", "query", "expected", "tags"))
        if "query" not in fields:
            raise self.fail(node, "missing `query`", f"{where}.query")
        text = self.string(fields["query"], f"{where}.query")
        if not text.strip():
            raise self.fail(fields["query"], "`query` is empty", f"{where}.query")
        cut_from_chars = len(text) if len(text) > MAX_QUERY_CHARS else None
        text = cut_query(text)
        if _given(fields, "id"):
            query_id = self.string(fields["id"], f"{where}.id", allow_int=True)
            if not query_id.strip():
                raise self.fail(fields["id"], "`id` is empty", f"{where}.id")
        else:
            query_id = text[:ID_FROM_TEXT_CHARS]
        where = f"queries[{query_id}]"
        if "expected" not in fields:
            raise self.fail(node, "missing `expected`", f"{where}.expected")
        expected_node = fields["expected"]
        # `expected: []` is accepted as kb-mcp accepts it (reported, left out of the aggregate);
        # a missing key is refused, as kb-mcp refuses it: forgetting it is not the same as writing it.
        if not isinstance(expected_node, yaml.SequenceNode):
            raise self.fail(
                expected_node, "`expected` must be a list", f"{where}.expected",
                hint="list the documents that answer the query, or `expected: []` for none",
            )
        expected = tuple(self.expected(entry, f"{where}.expected[{n}]") for n, entry in enumerate(expected_node.value))
        tags: tuple[str, ...] = ()
        if _given(fields, "tags"):
            tags_node = fields["tags"]
            if not isinstance(tags_node, yaml.SequenceNode):
                raise self.fail(tags_node, "`tags` must be a list of strings", f"{where}.tags")
            tags = tuple(self.string(tag, f"{where}.tags") for tag in tags_node.value)
        return GoldenQuery(query_id, text, expected, tags, node.start_mark.line + 1, cut_from_chars)

    def expected(self, node: yaml.Node, where: str, *, in_group: bool = False) -> ExpectedEntry:
        path_node: yaml.Node
        grade = DEFAULT_GRADE
        parent: str | None = None
        subsections = False
        if isinstance(node, yaml.ScalarNode):  # `- notes/a.md` is shorthand for `- path: notes/a.md`
            path_node, heading = node, None
        else:
            # A group's members share the group's grade: `grade` and `any` belong to the group.
            keys = ("path", "heading", "parent", "subsections") + (() if in_group else ("grade", "any"))
            fields = self.mapping(node, where, keys)
            if "any" in fields:
                return self.group(node, fields, where)
            if "path" not in fields:
                raise self.fail(node, "missing `path`", f"{where}.path")
            path_node = fields["path"]
            heading = self.string(fields["heading"], f"{where}.heading") if _given(fields, "heading") else None
            if _given(fields, "grade"):
                grade = self.grade(fields["grade"], f"{where}.grade")
            if _given(fields, "parent"):
                parent = self.string(fields["parent"], f"{where}.parent")
            if _given(fields, "subsections"):
                value = fields["subsections"]
                if not (isinstance(value, yaml.ScalarNode) and value.tag == _BOOL):
                    raise self.fail(value, "`subsections` must be true or false", f"{where}.subsections")
                subsections = value.value.lower() in ("true", "yes", "on", "y")
            if heading is None and (parent is not None or subsections):
                key = "parent" if parent is not None else "subsections"
                raise self.fail(
                    fields[key], f"`{key}` needs a `heading` to apply to", f"{where}.{key}",
                    hint="add `heading:` naming the section, or remove the key (a path alone already counts every section)",
                )
        path = self.string(path_node, f"{where}.path")
        problem = _path_problem(path)
        if problem is not None:
            raise self.fail(path_node, problem, f"{where}.path", hint="write the path relative to the KB folder, with `/`")
        return ExpectedEntry(path, heading, node.start_mark.line + 1, grade, parent, subsections)

    def group(self, node: yaml.Node, fields: dict[str, yaml.Node], where: str) -> ExpectedEntry:
        """`- any: [a.md, {path: b.md, heading: X}]`: one answer, given by any of its members."""
        extra = next((key for key in fields if key not in ("any", "grade")), None)
        if extra is not None:
            raise self.fail(
                fields[extra], f"`any` is a group on its own; `{extra}` belongs to one of its members",
                f"{where}.{extra}", hint="move the key into the entry under `any:` it is about",
            )
        grade = self.grade(fields["grade"], f"{where}.grade") if _given(fields, "grade") else DEFAULT_GRADE
        items = fields["any"]
        if not isinstance(items, yaml.SequenceNode) or len(items.value) < 2:
            raise self.fail(
                items, "`any` must list two or more alternative answers", f"{where}.any",
                hint="list the entries of which any one answers the query; a single answer needs no group",
            )
        members = tuple(
            self.expected(item, f"{where}.any[{n}]", in_group=True) for n, item in enumerate(items.value)
        )
        first = members[0]
        return ExpectedEntry(first.path, first.heading, node.start_mark.line + 1, grade, any_of=members)

    def grade(self, node: yaml.Node, field: str) -> int:
        """A whole number from 0 to MAX_GRADE, in decimal digits. `true`, `2.5`, `"2"` and `0x2` are
        refused rather than read as a number: a grade is a judgment, and a misread one changes nDCG
        with nobody told."""
        value = _plain_decimal(node.value) if isinstance(node, yaml.ScalarNode) and node.tag == _INT else None
        if value is None or value > MAX_GRADE:
            raise self.fail(
                node, f"`grade` must be a whole number from 0 to {MAX_GRADE}", field,
                hint="0 means judged not relevant; 1 (the default) relevant; higher, more relevant (e.g. `grade: 2`)",
            )
        return value


def _given(fields: dict[str, yaml.Node], key: str) -> bool:
    """Whether an optional key holds a value. An explicit `null` (or `key:` with nothing after it)
    means the same as leaving the key out, as it does for kb-mcp, whose optional fields are Rust
    `Option`s: a kb-mcp golden file that writes `heading: null` keeps working unchanged."""
    node = fields.get(key)
    return node is not None and not (isinstance(node, yaml.ScalarNode) and node.tag == _NULL)


def cut_query(text: str) -> str:
    """A query longer than MAX_QUERY_CHARS is searched as its first MAX_QUERY_CHARS characters.

    Cut, not refused: kb-mcp runs such a query (its embedder reads a prefix of it too), and one long
    query in a test collection must not stop the run. Trailing whitespace of the cut is dropped, so
    the searched text never ends in a space the file did not end in."""
    if len(text) <= MAX_QUERY_CHARS:
        return text
    return text[:MAX_QUERY_CHARS].rstrip()


def _plain_decimal(text: str) -> int | None:
    """The value of a plain decimal integer, None for anything else.

    YAML 1.1 also reads `0x10`, `0o17`, `0b101`, `1_000` and sexagesimal `1:30` as integers, and
    int() takes none of them (nor more than 4,300 digits): a number a person writes as a limit is
    decimal, so that is all this accepts, and the digit count is bounded before converting."""
    match = _PLAIN_DECIMAL.fullmatch(text)
    return int(match.group(1)) if match else None


def expected_path_problem(path: str) -> str | None:
    """Why an `expected` path cannot be written in a golden file, or None: the rule `kb-eval init`
    checks a document's name against before proposing it."""
    return _path_problem(path)


def _path_problem(path: str) -> str | None:
    if not path.strip():
        return "`path` is empty"
    # A drive letter only with a separator after it: `a:b.md` is a fine file name on Linux.
    if path.startswith(("/", "\\")) or re.match(r"[A-Za-z]:[\\/]", path):
        return f"`path` {path!r} is absolute"
    if ".." in path.replace("\\", "/").split("/"):
        return f"`path` {path!r} contains `..`"
    return None
