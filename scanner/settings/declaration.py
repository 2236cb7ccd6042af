"""Every setting of a run, declared once.

One `Setting` per setting: its name (the Action input and the CLI flag without
`--` are the same word), how its text is parsed and checked, its default, its
help, the old spellings that keep working, which retriever it belongs to and
where it lands in the run fingerprint. Everything else is derived from
`SETTINGS`:

- the CLI's flags (scanner/settings/arguments.py),
- the Action's input reading (scanner/action/inputs.py walks `SETTINGS`),
- `action.yml`'s `inputs:` and the README's tables (tests/support/action_docs.py
  writes them; tests/action/test_metadata.py fails when they differ),
- the refusals, in the words of the interface the value came from
  (`display_name`): `--kb-path` on the command line, `kb-path` in a workflow.

A value is checked once, here, when it is read (the parsers are scanner/settings/values.py); the
rule that a setting of another retriever is refused is scanner/settings/retriever.py.

Adding a setting: one `Setting` in `SETTINGS`, its attribute on `RunSettings`
(or, for the Action alone, on scanner/action/inputs.py's `ActionInputs`), then
`python -m tests.support.action_docs --write` for action.yml and the README.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

from scanner.compare.comparison import BaseRequest
from scanner.compare.cost_budgets import CostBudgets
from scanner.compare.floors import Floors
from scanner.compare.gate import DEFAULT_ALPHA, DEFAULT_REGRESSION_THRESHOLD, RegressionBudget
from scanner.corpus.reader import (
    DEFAULT_MAX_FILES,
    DEFAULT_MAX_MIB,
    DEFAULT_MAX_POSTINGS,
    DEFAULT_MAX_SECTIONS,
    DEFAULT_MAX_TERMS,
)
from scanner.evaluation.answers import ScoreLevel
from scanner.foundation.errors import InputError
from scanner.git.revision import is_revision_name
from scanner.github.comment import CommentMode
from scanner.github.workflow import GITHUB_ANNOTATIONS_PER_KIND_PER_STEP
from scanner.golden.file import MAX_GRADE, MAX_LIMIT
from scanner.metrics.measures import DEFAULT_RELEVANCE_LEVEL
from scanner.report.history import DEFAULT_HISTORY_SIZE, MAX_HISTORY_RUNS
from scanner.retrievers import command as command_module
from scanner.retrievers import http_settings as http_module
from scanner.retrievers import mcp_settings as mcp_module
from scanner.retrievers import sides as sides_module
from scanner.retrievers.base import RetrieverKind
from scanner.retrievers.builtin import FieldWeights, Tokenization
from scanner.retrievers.mapping import (
    DEFAULT_HEADING_FIELD,
    DEFAULT_PATH_FIELD,
    DEFAULT_SCORE_FIELD,
)
from scanner.settings import values as parse
from scanner.settings.values import Refused

DEFAULT_LIMIT = 10
"""Hits asked per query when neither `limit` nor the golden file's `defaults.limit` says."""
DEFAULT_KS = (1, 5, 10)
MAX_ANNOTATIONS_INPUT = 1000
MAX_TIMEOUT_S = 3600.0
"""Largest `http-timeout`, `command-timeout` and `mcp-timeout`: an hour per attempt. Every value the settings
accept must run, and past ~9.2e9 s a timeout overflows the C types socket and thread waits use
(`--http-timeout 9223372037` was a traceback); no search answer is worth waiting longer for."""
MAX_HTTP_RETRIES = 100
"""Largest `http-retries`: each retry waits at most the backoff cap, so this bounds one query's
time by what the timeout allows, not by what an integer can spell."""
MAX_CONCURRENCY = 64
"""Largest `concurrency`: one thread per query in flight, and a service that is asked more at
once only answers 429."""
FORMATS = ("text", "json")
MAX_CAP_SETTING = 10**12
"""Largest value of each corpus cap (`max-files` ... `max-terms`): far past any machine's memory, and an integer
every comparison holds."""


class Interface(enum.Enum):
    """Where a value came from, which decides the words a refusal uses."""

    CLI = "cli"
    """The `kb-eval` command: settings are `--flags`."""
    ACTION = "action"
    """A workflow step: settings are inputs under `with:`."""


class Group(enum.Enum):
    """Headings of `--help` and order of the README tables."""

    EVALUATED = "what is evaluated"
    OUTPUT = "output"
    HISTORY = "history, baseline and the regression gate"
    RETRIEVER = "retriever (what answers the golden queries)"
    WORKFLOW = "the workflow (Action only)"


class Form(enum.Enum):
    """How a value is written in each interface."""

    VALUE = "value"
    """`--name VALUE`; `name: value`."""
    SWITCH = "switch"
    """`--name` alone; `name: true` or `false`."""
    LIST = "list"
    """`--name` repeated; one item per line of the input."""


@dataclass(frozen=True)
class Setting:
    """One setting, everything both interfaces need to know about it."""

    name: str
    """The Action input's name and the CLI flag without `--`."""
    attribute: str
    """The attribute of `RunSettings` (or of the Action's own inputs) holding the value."""
    group: Group
    help: str
    """What it does, as a lower-case phrase; `--help` appends the default, action.yml a full stop."""
    parse: Callable[[str], Any]
    """Text to value; raises `Refused`. Not called for switches."""
    default: Any
    """The value when the setting is not given (None: unset)."""
    default_text: str = ""
    """The default as written in action.yml; "" for an unset one."""
    default_note: str | None = None
    """How the default reads in `--help` and the README, when its text alone does not say it."""
    form: Form = Form.VALUE
    aliases: tuple[str, ...] = ()
    """Other spellings that keep working in both interfaces (`--output`, `output:`)."""
    retrievers: frozenset[RetrieverKind] = frozenset()
    """The retrievers this setting belongs to; empty for a general setting."""
    fingerprint: str | None = None
    """The fingerprint field it changes (`retriever` for what a retriever's describe() records)."""
    cli: bool = True
    """Has a `--flag`."""
    action: bool = True
    """Is an Action input."""
    action_default: str | None = None
    """action.yml's default when it differs from `default_text` (the Action always writes a report)."""
    action_note: str = ""
    """A sentence action.yml adds (what an empty value means in a workflow)."""
    path: bool = False
    """A file or folder: in the Action it must stay inside the workspace."""
    metavar: str | None = None
    secret: bool = False
    """Never echoed in a refusal."""
    cli_flag: str | None = None
    """The command line's spelling when it differs from `name`: the CLI's `--summary FILE` is a file,
    where the Action's input `summary` is a switch (the step summary is always there)."""

    @property
    def flags(self) -> tuple[str, ...]:
        return tuple("--" + spelling for spelling in (self.cli_flag or self.name, *self.aliases))

    @property
    def action_default_text(self) -> str:
        return self.default_text if self.action_default is None else self.action_default


def display_name(setting: Setting, interface: Interface) -> str:
    """The setting as the person wrote it: `--kb-path` on the command line, `kb-path` in a workflow."""
    return "--" + (setting.cli_flag or setting.name) if interface is Interface.CLI else setting.name


def refusal(setting: Setting, interface: Interface, text: str, refused: Refused) -> InputError:
    """The InputError for a value its parser refused, in `interface`'s words."""
    who = display_name(setting, interface)
    shown = "(hidden)" if setting.secret else repr(text)
    if interface is Interface.CLI:
        return InputError(f"{who} {shown}: {refused.problem}", field=who, hint=f"e.g. {who}={refused.example}")
    return InputError(
        f"input {who} is {shown}: {refused.problem}", field=who, hint=f"set `{who}:` to e.g. {refused.example}"
    )


_FLAG = re.compile(r"--([a-z][a-z-]*)")


def in_interface_words(error: InputError, interface: Interface) -> InputError:
    """`error` with each `--flag` of a setting named as `interface` names it.

    For refusals raised below the settings (a retriever checking its own
    configuration words them for the command line): in a workflow the person
    wrote `run-file:`, not `--run`.
    """
    if interface is Interface.CLI:
        return error
    words = interface_words(interface)

    def reworded(text: str | None) -> str | None:
        return None if text is None else words(text)

    return InputError(
        reworded(error.message) or "", error.file, error.line, reworded(error.field), reworded(error.hint), error.said
    )


def interface_words(interface: Interface) -> Callable[[str], str]:
    """Text with each `--flag` of a setting named as `interface` names it (warnings written below the
    settings use the command line's words too)."""

    def named(match: re.Match[str]) -> str:
        try:
            return display_name(setting(match.group(1)), interface)
        except KeyError:
            return match.group(0)

    if interface is Interface.CLI:
        return lambda text: text
    return lambda text: _FLAG.sub(named, text)


def _revision(text: str) -> BaseRequest:
    """One git name (scanner.git.revision's rule); whether it names a commit is the repository's to
    say (exit 2 then too, naming the setting)."""
    text = text.strip()
    if not is_revision_name(text):
        raise Refused("not a git revision (a branch, tag or commit SHA)", "origin/main")
    return BaseRequest(text)


_EXTERNAL = frozenset({RetrieverKind.HTTP, RetrieverKind.COMMAND, RetrieverKind.MCP})
"""The retrievers whose answers are JSON read by the mapping settings (hits-path, path-field...)."""
_HTTP = frozenset({RetrieverKind.HTTP})
_OWN_INDEX = frozenset({RetrieverKind.HTTP, RetrieverKind.COMMAND, RetrieverKind.MCP, RetrieverKind.RUN})
"""The retrievers that answer from an index of their own, built per side by --index-command."""
_SERVED = frozenset({RetrieverKind.HTTP, RetrieverKind.COMMAND, RetrieverKind.MCP})
_HTTP_AND_MCP = frozenset({RetrieverKind.HTTP, RetrieverKind.MCP})
_MCP = frozenset({RetrieverKind.MCP})
_MEASURED = frozenset({RetrieverKind.HTTP, RetrieverKind.COMMAND, RetrieverKind.MCP})
"""The retrievers whose answers are timed and sized (the built-in search and run files answer inside kb-eval)."""
_BUILTIN = frozenset({RetrieverKind.BUILTIN})
_PATH_NOTE = "Relative to the repository root."


SETTINGS: tuple[Setting, ...] = (
    # --- what is evaluated
    Setting(
        "kb-path", "kb_path", Group.EVALUATED, "the Markdown knowledge base folder, walked recursively",
        parse.path, Path("."), ".", path=True, metavar="DIR", action_note=_PATH_NOTE,
    ),
    Setting(
        "golden", "golden", Group.EVALUATED, "the golden query file", parse.path, None,
        default_note="the one of <kb>/.kb-eval.yml, .kb-mcp-eval.yml, .groove-eval.yml (two: exit 2)",
        fingerprint="golden_sha256", path=True, metavar="FILE",
        action_note="Relative to the repository root; empty takes the one of .kb-eval.yml, .kb-mcp-eval.yml "
        "and .groove-eval.yml in kb-path (two of them present is an error naming both).",
    ),
    Setting(
        "exclude", "exclude", Group.EVALUATED, "skip KB files matching this glob, relative to the KB folder",
        parse.text, (), default_note="none", form=Form.LIST, metavar="GLOB",
        action_note="One pattern per line.",
    ),
    Setting(
        "limit", "limit", Group.EVALUATED, "hits asked of the retriever per query",
        parse.int_in(1, MAX_LIMIT, 20), None, default_note=f"the golden file's defaults.limit, else {DEFAULT_LIMIT}",
        fingerprint="limit", metavar="N",
    ),
    Setting(
        "relevance-level", "relevance_level", Group.EVALUATED,
        "the lowest grade that counts as relevant for recall, precision, success, MRR and MAP, as "
        "trec_eval's -l; nDCG uses every grade as its gain",
        parse.int_in(1, MAX_GRADE, 2), DEFAULT_RELEVANCE_LEVEL, str(DEFAULT_RELEVANCE_LEVEL),
        fingerprint="relevance_level", metavar="N",
        action_note="An expected entry without grade: is grade 1.",
    ),
    Setting(
        "score-level", "score_level", Group.EVALUATED,
        "section: a golden entry with a heading is found only by a hit of that section; document: headings "
        "are ignored, for a retriever that answers with whole documents (docs/retrievers.md)",
        lambda text: ScoreLevel(parse.choice([level.value for level in ScoreLevel])(text)),
        ScoreLevel.SECTION, ScoreLevel.SECTION.value, fingerprint="score_level", metavar="{section,document}",
    ),
    Setting(
        "k", "k", Group.EVALUATED, "cut-offs for recall@k and nDCG@k, comma separated",
        parse.k_list, DEFAULT_KS, ",".join(map(str, DEFAULT_KS)), fingerprint="k", metavar="LIST",
        action_note="The largest one feeds the recall and ndcg outputs.",
    ),
    # --- output
    Setting(
        "format", "format", Group.OUTPUT, "what is printed on stdout (the log): text or json",
        parse.choice(FORMATS), "text", "text", metavar="{text,json}",
        action_note="The JSON report file is written either way.",
    ),
    # `report`, not `output`: it names what is written (`--output` next to `--format` reads as if it
    # were where stdout goes), and the Action's output of the same name already holds its path.
    Setting(
        "report", "output", Group.OUTPUT, "write the JSON report to this file (atomically)",
        parse.path, None, default_note="none", aliases=("output",), path=True, metavar="FILE",
        action_default="kb-eval-report.json",
        action_note="Relative to the repository root; the report output names it.",
    ),
    Setting(
        "export-trec", "export_trec", Group.OUTPUT,
        "also write the run and the qrels this report was computed from into this folder (kb-eval.run, "
        "kb-eval.qrels), for trec_eval -c -l <relevance-level>",
        parse.path, None, default_note="none", path=True, metavar="DIR",
        action_note="Relative to the repository root; empty writes none.",
    ),
    Setting(
        "summary-file", "summary_file", Group.OUTPUT,
        "write the Markdown summary Action mode puts in the step summary to this file (the step summary gets it "
        "too whenever GITHUB_STEP_SUMMARY is set, as in a workflow's run: step)",
        parse.path, None, default_note="none", path=True, metavar="FILE", action=False, cli_flag="summary",
    ),
    Setting(
        "max-files", "max_files", Group.EVALUATED,
        "stop (exit 2) rather than read a KB of more indexable files than this; the defaults of the three "
        "caps are what a pull request's run holds on a 16 GiB runner (docs/limits-and-safety.md)",
        parse.int_in(1, MAX_CAP_SETTING, DEFAULT_MAX_FILES), DEFAULT_MAX_FILES, str(DEFAULT_MAX_FILES), metavar="N",
    ),
    Setting(
        "max-mib", "max_mib", Group.EVALUATED,
        "stop (exit 2) rather than read a KB whose files add up to more MiB than this",
        parse.int_in(1, MAX_CAP_SETTING, DEFAULT_MAX_MIB), DEFAULT_MAX_MIB, str(DEFAULT_MAX_MIB), metavar="MIB",
    ),
    Setting(
        "max-sections", "max_sections", Group.EVALUATED,
        "stop (exit 2) rather than index more sections than this, all documents together",
        parse.int_in(1, MAX_CAP_SETTING, DEFAULT_MAX_SECTIONS), DEFAULT_MAX_SECTIONS, str(DEFAULT_MAX_SECTIONS),
        metavar="N",
    ),
    Setting(
        "max-postings", "max_postings", Group.EVALUATED,
        "stop (exit 2) rather than build more postings (a word in a section) than this for the built-in search; "
        "counted as they are built, so text of words that never repeat cannot outgrow the memory the caps promise",
        parse.int_in(1, MAX_CAP_SETTING, DEFAULT_MAX_POSTINGS), DEFAULT_MAX_POSTINGS, str(DEFAULT_MAX_POSTINGS),
        metavar="N",
    ),
    Setting(
        "max-terms", "max_terms", Group.EVALUATED,
        "stop (exit 2) rather than analyse more distinct words than this for the built-in search",
        parse.int_in(1, MAX_CAP_SETTING, DEFAULT_MAX_TERMS), DEFAULT_MAX_TERMS, str(DEFAULT_MAX_TERMS), metavar="N",
    ),
    Setting(
        "cache-dir", "cache_dir", Group.OUTPUT,
        "keep parsed documents in this folder between runs (restore and save it with actions/cache); "
        "unchanged files are not parsed again",
        parse.path, None, default_note="none", path=True, metavar="DIR",
        action_note="Relative to the repository root; empty keeps no cache.",
    ),
    # --- history, baseline and the gate
    Setting(
        "history", "history", Group.HISTORY, "run history to compare with and append to",
        parse.path, None, default_note="<kb>/.kb-eval-history.json", path=True, metavar="FILE",
        action_note="Relative to the repository root; empty keeps no history (the workflow's files are "
        "gone after the job unless you save them).",
    ),
    Setting(
        "no-history", "no_history", Group.HISTORY, "neither read nor write a history",
        parse.text, False, default_note="off", form=Form.SWITCH, action=False,
    ),
    Setting(
        "history-size", "history_size", Group.HISTORY, "runs kept in the history",
        parse.int_in(1, MAX_HISTORY_RUNS, DEFAULT_HISTORY_SIZE), DEFAULT_HISTORY_SIZE, str(DEFAULT_HISTORY_SIZE), metavar="N",
    ),
    Setting(
        "baseline", "baseline", Group.HISTORY,
        "compare with this JSON report (e.g. the default branch's) instead of the history",
        parse.path, None, default_note="none", path=True, metavar="FILE",
        action_note="Relative to the repository root; empty compares with the history, if any.",
    ),
    Setting(
        "baseline-ref", "baseline_ref", Group.HISTORY,
        "evaluate the KB as it was at this git revision (branch, tag or SHA) with this run's golden file and "
        "settings, and compare with that instead of the history or a baseline",
        _revision, None, default_note="none", metavar="REV",
        action_note="Empty compares a pull request with its base commit (needs `fetch-depth: 0` on "
        "actions/checkout), other events with baseline or history. docs/pull-request-loop.md.",
    ),
    Setting(
        "save-baseline", "save_baseline", Group.HISTORY,
        "also write this run's JSON report to this file, to use later as baseline",
        parse.path, None, default_note="none", path=True, metavar="FILE", action_note=_PATH_NOTE,
    ),
    Setting(
        "fail-on-regression", "fail_on_regression", Group.HISTORY,
        "exit 1 when an aggregate metric dropped by more than regression-threshold against a comparable run "
        "(findings never do)",
        parse.text, False, "false", default_note="off", form=Form.SWITCH, action_note="Exit 1 fails the step.",
    ),
    Setting(
        "regression-threshold", "regression_threshold", Group.HISTORY,
        "largest tolerated drop of any aggregate metric, absolute on the 0..1 scale; metric=drop pairs "
        "beside it give a metric its own budget (0.05,map=0.02,recall@10=0.1; recall=0.1 for every k), "
        "tag:metric=drop pairs gate a tag's mean too (ops:mrr=0.02); judged@k and a tag's means are gated "
        "only when a pair names them",
        parse.budget, RegressionBudget(), str(DEFAULT_REGRESSION_THRESHOLD),
        metavar="DROP[,METRIC=DROP,TAG:METRIC=DROP...]",
    ),
    Setting(
        "fail-under", "fail_under", Group.HISTORY,
        "exit 1 when a mean is below its floor, with or without a run to compare with: metric=value pairs "
        "(recall@10=0.6; recall=0.6 for every k), tag:metric=value for a tag's mean (ops:mrr=0.5)",
        parse.floors, Floors(), "", default_note="none", metavar="METRIC=VALUE[,TAG:METRIC=VALUE...]",
        action_note="Empty sets no floor; exit 1 fails the step.",
    ),
    Setting(
        "latency-budget", "latency_budget", Group.HISTORY,
        "exit 1 when an answer time is over its budget: statistic=duration pairs over the run's queries "
        "(p95=800ms,max=2s; p50, p95 or max; ms or s)",
        parse.latency_budget, CostBudgets(), "", default_note="none", retrievers=_MEASURED,
        metavar="STAT=DURATION[,...]", action_note="Empty sets no budget; exit 1 fails the step.",
    ),
    Setting(
        "answer-budget", "answer_budget", Group.HISTORY,
        "exit 1 when an answer's size is over its budget: statistic=size pairs (max=64KiB; B, KB, KiB, MB, MiB)",
        parse.answer_budget, CostBudgets(), "", default_note="none", retrievers=_MEASURED,
        metavar="STAT=SIZE[,...]", action_note="Empty sets no budget; exit 1 fails the step.",
    ),
    Setting(
        "alpha", "alpha", Group.HISTORY,
        "count a drop past the threshold only when a paired sign-flip test over the queries gives p < alpha "
        "(more queries fell than chance explains); off: the threshold alone",
        parse.alpha, DEFAULT_ALPHA, f"{DEFAULT_ALPHA:g}", metavar="A|off",
    ),
    # --- the retriever
    Setting(
        "retriever", "retriever", Group.RETRIEVER,
        "what answers the golden queries: builtin (kb-eval's own index of the KB), http, command, "
        "mcp (a search tool of an MCP server) or run (a run file); when not given, the one whose http-url, "
        "command, mcp-command or mcp-url, or run-file is given",
        parse.retriever_kind, None, "builtin", default_note="builtin", fingerprint="retriever",
        metavar="{" + ",".join(kind.value for kind in RetrieverKind) + "}",
    ),
    Setting(
        "tokenization", "tokenization", Group.RETRIEVER,
        "built-in retriever: auto or word, one analysis for every script since query compiler 5 "
        "(stemmed words, CJK runs as bigrams); both stay valid",
        lambda text: Tokenization(parse.choice([t.value for t in Tokenization])(text)),
        Tokenization.AUTO, Tokenization.AUTO.value, retrievers=_BUILTIN, fingerprint="retriever",
        metavar="{" + ",".join(t.value for t in Tokenization) + "}",
    ),
    Setting(
        "weights", "weights", Group.RETRIEVER, "built-in retriever: bm25 weights of heading,breadcrumb,body",
        parse.weights, FieldWeights(), "2,3.5,1", retrievers=_BUILTIN, fingerprint="retriever", metavar="H,B,B",
    ),
    Setting(
        "http-url", "http_url", Group.RETRIEVER, "HTTP retriever: the search endpoint; may hold ${ENV_NAME}",
        parse.text, None, default_note="none", retrievers=_HTTP, fingerprint="retriever", metavar="URL",
    ),
    Setting(
        "http-method", "http_method", Group.RETRIEVER, "HTTP retriever: GET or POST",
        parse.http_method, "POST", "POST", retrievers=_HTTP, fingerprint="retriever", metavar="METHOD",
    ),
    Setting(
        "http-body", "http_body", Group.RETRIEVER,
        "HTTP retriever: JSON request template with {query} and {limit}; for GET its fields become query "
        "parameters",
        parse.text, None, default_note=http_module.DEFAULT_BODY_TEMPLATE, retrievers=_HTTP, fingerprint="retriever",
        metavar="JSON",
    ),
    # Singular, like the other repeatable settings (`exclude`, `path-prefix-strip`) and curl's
    # `--header`: each flag, or each line of the input, is one header.
    Setting(
        "http-header", "http_headers", Group.RETRIEVER,
        "HTTP retriever and mcp-url: a request header `Name: value`; the value may hold ${ENV_NAME} and is never "
        "recorded",
        parse.http_header, (), default_note="none", form=Form.LIST, aliases=("http-headers",), retrievers=_HTTP_AND_MCP,
        fingerprint="retriever", metavar="'NAME: VALUE'", secret=True,
        action_note="One per line; pass secrets through the step's env: and ${ENV_NAME}.",
    ),
    Setting(
        "http-timeout", "http_timeout", Group.RETRIEVER, "HTTP retriever: seconds per attempt",
        parse.float_in(0.0, MAX_TIMEOUT_S, low_open=True, high_open=False, example="30"),
        http_module.DEFAULT_TIMEOUT_S, f"{http_module.DEFAULT_TIMEOUT_S:g}", retrievers=_HTTP, metavar="SECONDS",
    ),
    Setting(
        "http-retries", "http_retries", Group.RETRIEVER,
        "HTTP retriever: extra attempts after a connection error, timeout, 429 or 5xx",
        parse.int_in(0, MAX_HTTP_RETRIES, http_module.DEFAULT_RETRIES), http_module.DEFAULT_RETRIES,
        str(http_module.DEFAULT_RETRIES), retrievers=_HTTP, metavar="N",
    ),
    Setting(
        "command", "command", Group.RETRIEVER,
        "command retriever: a program run once per query without a shell, {query} and {limit} substituted "
        "inside its arguments, printing JSON hits",
        parse.text, None, default_note="none", retrievers=frozenset({RetrieverKind.COMMAND}), fingerprint="retriever",
        metavar="TEMPLATE",
    ),
    Setting(
        "command-timeout", "command_timeout", Group.RETRIEVER,
        "command retriever: seconds per query before the program is killed",
        parse.float_in(0.0, MAX_TIMEOUT_S, low_open=True, high_open=False, example="60"),
        command_module.DEFAULT_TIMEOUT_S, f"{command_module.DEFAULT_TIMEOUT_S:g}",
        retrievers=frozenset({RetrieverKind.COMMAND}), metavar="SECONDS",
    ),
    Setting(
        "command-env", "command_env", Group.RETRIEVER,
        "command retriever, mcp-command, index and serve commands: an environment variable passed to the "
        "program by name (it gets only PATH, HOME, LANG, LC_*, TZ, TMPDIR, USER and LOGNAME otherwise: no action "
        "input, no token)",
        parse.env_name, (), default_note="none", form=Form.LIST, retrievers=_OWN_INDEX,
        metavar="NAME", action_note="One name per line; the value comes from the step's env:.",
    ),
    Setting(
        "mcp-command", "mcp_command", Group.RETRIEVER,
        "MCP retriever: a server started over stdio once per side, {kb} and {work} substituted inside its "
        "arguments; split like a shell line, never run by a shell",
        parse.text, None, default_note="none", retrievers=_MCP, fingerprint="retriever", metavar="TEMPLATE",
    ),
    Setting(
        "mcp-url", "mcp_url", Group.RETRIEVER,
        "MCP retriever: a server's Streamable HTTP endpoint (e.g. http://127.0.0.1:{port}/mcp with "
        "serve-command); may hold ${ENV_NAME}; authorisation with http-header",
        parse.text, None, default_note="none", retrievers=_MCP, fingerprint="retriever", metavar="URL",
    ),
    Setting(
        "mcp-tool", "mcp_tool", Group.RETRIEVER, "MCP retriever: the search tool called once per query",
        parse.text, mcp_module.DEFAULT_TOOL, mcp_module.DEFAULT_TOOL, retrievers=_MCP, fingerprint="retriever",
        metavar="NAME",
    ),
    Setting(
        "mcp-arguments", "mcp_arguments", Group.RETRIEVER,
        "MCP retriever: the tool's arguments, a JSON object template with {query} and {limit} (and {kb}, "
        "{work}); ${ENV_NAME} in its strings",
        parse.text, mcp_module.DEFAULT_ARGUMENTS, mcp_module.DEFAULT_ARGUMENTS, retrievers=_MCP,
        fingerprint="retriever", metavar="JSON",
    ),
    Setting(
        "mcp-timeout", "mcp_timeout", Group.RETRIEVER,
        "MCP retriever: seconds for each wait (the server's start and handshake, the tool listing, each call)",
        parse.float_in(0.0, MAX_TIMEOUT_S, low_open=True, high_open=False, example="60"),
        mcp_module.DEFAULT_TIMEOUT_S, f"{mcp_module.DEFAULT_TIMEOUT_S:g}", retrievers=_MCP, metavar="SECONDS",
    ),
    Setting(
        "concurrency", "concurrency", Group.RETRIEVER,
        "HTTP, command and MCP retrievers: queries in flight at once (the report is the same)",
        parse.int_in(1, MAX_CONCURRENCY, 4), 1, "1", retrievers=_EXTERNAL, metavar="N",
    ),
    Setting(
        "hits-path", "hits_path", Group.RETRIEVER,
        "HTTP, command and MCP retrievers: dotted path to the hit list in the answer",
        parse.dotted_path, None, default_note="results, or the answer itself when it is a list",
        retrievers=_EXTERNAL, fingerprint="retriever", metavar="PATH",
    ),
    Setting(
        "path-field", "path_field", Group.RETRIEVER, "HTTP, command and MCP retrievers: dotted path to a hit's document",
        parse.dotted_path, DEFAULT_PATH_FIELD, DEFAULT_PATH_FIELD, retrievers=_EXTERNAL,
        fingerprint="retriever", metavar="PATH",
    ),
    Setting(
        "heading-field", "heading_field", Group.RETRIEVER,
        "HTTP, command and MCP retrievers: dotted path to a hit's section heading",
        parse.dotted_path, DEFAULT_HEADING_FIELD, DEFAULT_HEADING_FIELD, retrievers=_EXTERNAL,
        fingerprint="retriever", metavar="PATH",
    ),
    Setting(
        "score-field", "score_field", Group.RETRIEVER, "HTTP, command and MCP retrievers: dotted path to a hit's score",
        parse.dotted_path, DEFAULT_SCORE_FIELD, DEFAULT_SCORE_FIELD, retrievers=_EXTERNAL,
        fingerprint="retriever", metavar="PATH",
    ),
    Setting(
        "path-prefix-strip", "path_prefix_strip", Group.RETRIEVER,
        "HTTP, command and MCP retrievers: a directory or URL prefix removed from returned paths to make them "
        "KB-relative",
        parse.text, (), default_note="none", form=Form.LIST, retrievers=_EXTERNAL, fingerprint="retriever",
        metavar="PREFIX", action_note="One prefix per line.",
    ),
    # `run-file`, not `run`: the value is a file, and `run` alone is also the retriever's name
    # (`retriever: run`) and reads like a yes/no input in a workflow.
    Setting(
        "run-file", "run", Group.RETRIEVER, "run retriever: a TREC or JSONL run file of precomputed rankings",
        parse.path, None, default_note="none", aliases=("run",), retrievers=frozenset({RetrieverKind.RUN}),
        fingerprint="retriever", path=True, metavar="FILE", action_note=_PATH_NOTE,
    ),
    # A search with its own index answers for one tree: these build and serve it once per side
    # (the head's KB, and the base commit's written out), so the pull request's base can be
    # evaluated with it (scanner/retrievers/sides.py).
    Setting(
        "index-command", "index_command", Group.RETRIEVER,
        "HTTP, command, MCP and run retrievers: a program run once per side before its first query, {kb} (the "
        "side's KB folder) and {work} (an empty folder for its index) substituted inside its arguments",
        parse.text, None, default_note="none", retrievers=_OWN_INDEX, fingerprint="retriever", metavar="TEMPLATE",
    ),
    Setting(
        "index-timeout", "index_timeout", Group.RETRIEVER, "seconds the index command may take per side",
        parse.float_in(0.0, MAX_TIMEOUT_S, low_open=True, high_open=False, example="600"),
        sides_module.DEFAULT_INDEX_TIMEOUT_S, f"{sides_module.DEFAULT_INDEX_TIMEOUT_S:g}",
        retrievers=_OWN_INDEX, metavar="SECONDS",
    ),
    Setting(
        "serve-command", "serve_command", Group.RETRIEVER,
        "HTTP, command and MCP retrievers: a server started once per side with {kb}, {work} and {port} (a free "
        "loopback port, also filled in --http-url or --mcp-url) substituted, waited for until it accepts "
        "connections, and "
        "stopped after that side's queries",
        parse.text, None, default_note="none", retrievers=_SERVED, fingerprint="retriever", metavar="TEMPLATE",
    ),
    Setting(
        "serve-timeout", "serve_timeout", Group.RETRIEVER,
        "seconds a started server has to accept connections",
        parse.float_in(0.0, MAX_TIMEOUT_S, low_open=True, high_open=False, example="120"),
        sides_module.DEFAULT_SERVE_TIMEOUT_S, f"{sides_module.DEFAULT_SERVE_TIMEOUT_S:g}",
        retrievers=_SERVED, metavar="SECONDS",
    ),
    # --- the workflow (Action only)
    Setting(
        "annotations", "annotations", Group.WORKFLOW,
        "print warning annotations on the lines that quote the golden set, and on golden entries that point "
        "at missing files",
        parse.text, True, "true", form=Form.SWITCH, cli=False,
    ),
    Setting(
        "max-annotations", "max_annotations", Group.WORKFLOW,
        f"most annotations of each kind to print (GitHub shows {GITHUB_ANNOTATIONS_PER_KIND_PER_STEP} per kind "
        "per step); one notice counts the rest",
        parse.int_in(0, MAX_ANNOTATIONS_INPUT, GITHUB_ANNOTATIONS_PER_KIND_PER_STEP),
        GITHUB_ANNOTATIONS_PER_KIND_PER_STEP, str(GITHUB_ANNOTATIONS_PER_KIND_PER_STEP), cli=False,
    ),
    Setting(
        "summary", "summary", Group.WORKFLOW, "write the Markdown summary to the job's step summary",
        parse.text, True, "true", form=Form.SWITCH, cli=False,
    ),
    Setting(
        "comment", "comment", Group.WORKFLOW,
        "post the summary as a pull-request comment: off; always (created, then updated in place on every "
        "run); or on-change (created or updated only when the metrics, the changed queries or the findings "
        "differ from the last comment, so a re-run notifies nobody); true means always, false off; needs "
        "pull-requests and issues write permission",
        parse.comment_mode, CommentMode.OFF, "false", cli=False, metavar="{off,always,on-change}",
    ),
    Setting(
        "github-token", "github_token", Group.WORKFLOW, "token for the pull-request comment, used only when comment is true",
        parse.text, "", "", cli=False, action_default="${{ github.token }}", secret=True,
    ),
)
"""In `--help` and table order. action.yml lists the inputs in this order too."""



def setting(name: str) -> Setting:
    """The declaration of the setting spelled `name` (or one of its aliases)."""
    for candidate in SETTINGS:
        if name == candidate.name or name in candidate.aliases:
            return candidate
    raise KeyError(name)


# --- the parsed result ---------------------------------------------------------------------


@dataclass(frozen=True)
class RunSettings:
    """Every setting of one run, checked. Attribute names are the CLI's historic `dest` names."""

    kb_path: Path
    golden: Path | None
    exclude: tuple[str, ...]
    limit: int | None
    relevance_level: int
    score_level: ScoreLevel
    k: tuple[int, ...]
    format: str
    output: Path | None
    """The `report` setting (`--report`, `--output`)."""
    export_trec: Path | None
    """The `export-trec` setting: a folder for the run and qrels (scanner/report/trec.py)."""
    max_files: int
    max_mib: int
    max_sections: int
    max_postings: int
    max_terms: int
    cache_dir: Path | None
    summary_file: Path | None
    """The CLI's `--summary FILE`."""
    history: Path | None
    no_history: bool
    history_size: int
    baseline: Path | None
    baseline_ref: BaseRequest | None
    """The Action sets the pull request's base commit here when neither is given."""
    save_baseline: Path | None
    fail_on_regression: bool
    regression_threshold: RegressionBudget
    """The single number and any `metric=drop` pairs (`--regression-threshold`)."""
    fail_under: Floors
    latency_budget: CostBudgets
    answer_budget: CostBudgets
    """The `metric=value` floors (`--fail-under`)."""
    alpha: float | None
    retriever: RetrieverKind | None
    """As given; None lets the factory infer it from the source setting given (scanner/settings/retriever.py)."""
    tokenization: Tokenization
    weights: FieldWeights
    http_url: str | None
    http_method: str
    http_body: str | None
    http_headers: tuple[str, ...]
    """The `http-header` setting."""
    http_timeout: float
    http_retries: int
    command: str | None
    command_timeout: float
    command_env: tuple[str, ...]
    """The `command-env` setting: names of variables passed to the command."""
    mcp_command: str | None
    mcp_url: str | None
    mcp_tool: str
    mcp_arguments: str
    mcp_timeout: float
    concurrency: int
    hits_path: str | None
    path_field: str
    heading_field: str
    score_field: str
    path_prefix_strip: tuple[str, ...]
    run: Path | None
    """The `run-file` setting (`--run-file`, `--run`)."""
    index_command: str | None
    index_timeout: float
    serve_command: str | None
    serve_timeout: float
    given: frozenset[str]
    """Names of the settings given explicitly (in the Action: set to other than their default)."""
    interface: Interface
    """Where the values came from, so that a later refusal names them the same way."""


RUN_SETTINGS: tuple[Setting, ...] = tuple(s for s in SETTINGS if s.cli)
"""The settings a run reads (the CLI's); the Action-only ones stay with the Action."""


def run_settings(values: Mapping[str, object], given: Iterable[str], interface: Interface) -> RunSettings:
    """A RunSettings from `values` keyed by attribute; a missing attribute takes its default."""
    complete = {s.attribute: values.get(s.attribute, s.default) for s in RUN_SETTINGS}
    _check_budget_cutoffs(complete, interface)
    return RunSettings(**cast(dict[str, Any], complete), given=frozenset(given), interface=interface)


def _check_budget_cutoffs(values: Mapping[str, Any], interface: Interface) -> None:
    """A pair naming a k the run does not measure (`recall@20` with k 1,5,10) would budget (or floor)
    nothing, silently: refused, naming both settings."""
    measured = set(values["k"])
    named = (("regression-threshold", values["regression_threshold"]), ("fail-under", values["fail_under"]))
    for name, pairs in named:
        missing = sorted(pairs.named_cutoffs() - measured)
        if not missing:
            continue
        who, k = display_name(setting(name), interface), display_name(setting("k"), interface)
        verb = "budgets" if name == "regression-threshold" else "sets a floor at"
        raise InputError(
            f"{who} {verb} @{', @'.join(map(str, missing))}, which {k} does not measure "
            f"({k} is {','.join(map(str, sorted(measured)))})",
            field=who, hint=f"add the cut-off to {k}, or name one it measures",
        )


def default_settings(interface: Interface = Interface.CLI) -> RunSettings:
    return run_settings({}, (), interface)


def convert(setting: Setting, text: str, interface: Interface) -> Any:
    """One item of `setting` parsed, or an InputError in `interface`'s words."""
    try:
        return setting.parse(text)
    except Refused as refused:
        raise refusal(setting, interface, text, refused) from None


