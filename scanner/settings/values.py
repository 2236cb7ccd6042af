"""How a setting's text becomes its value: one parser per kind of value, each refusing with
`Refused` (what is wrong, and an example that would be accepted), which the declaration turns into
an InputError in the words of the interface the value came from."""

from __future__ import annotations

import math
import os
import re
from collections.abc import Callable, Sequence
from pathlib import Path

from scanner.compare.cost_budgets import STATISTICS, CostBudgets
from scanner.compare.floors import Floors
from scanner.compare.gate import DEFAULT_REGRESSION_THRESHOLD, MetricSelector, RegressionBudget
from scanner.foundation.errors import InputError
from scanner.github.comment import CommentMode
from scanner.golden.file import MAX_LIMIT
from scanner.metrics.catalogue import BUDGET_NAMES, CATALOGUE
from scanner.retrievers import command as command_module
from scanner.retrievers import http_settings as http_module
from scanner.retrievers.base import RetrieverKind
from scanner.retrievers.builtin import FieldWeights
from scanner.retrievers.mapping import validate_dotted_path


class Refused(Exception):
    """A value its parser cannot accept; turned into an InputError in the interface's words."""

    def __init__(self, problem: str, example: str) -> None:
        super().__init__(problem)
        self.problem = problem
        """Says what is wrong, completing "`<name>` is '<value>': "."""
        self.example = example
        """A value that would be accepted, for the hint."""



def text(text: str) -> str:
    return text


PATH_MAX_BYTES = 4096
"""Bytes of the longest path the kernel takes (Linux's PATH_MAX, with its NUL); NAME_MAX_BYTES for
one name in it. A path input past either was an OSError (ENAMETOOLONG) deep in the run, exit 3;
it is refused here, as written and as the absolute path the run uses, with the setting's name.
PATH_ROOM bytes are kept for the names kb-eval adds inside a folder input (the parse cache's file)."""
NAME_MAX_BYTES = 255
PATH_ROOM = 64


def path(text: str) -> Path:
    if not text:
        raise Refused("an empty path", "docs")
    try:
        absolute = os.fsencode(os.path.abspath(text))
    except (UnicodeError, ValueError):  # a lone surrogate not from undecodable bytes, a NUL
        raise Refused("not a path this system can name", "docs") from None
    longest = PATH_MAX_BYTES - PATH_ROOM
    if len(absolute) >= longest or any(len(part) > NAME_MAX_BYTES for part in absolute.split(b"/")):
        raise Refused(f"longer than a path can be here ({longest} bytes in all, {NAME_MAX_BYTES} per name)", "docs")
    return Path(text)


def int_in(low: int, high: int, example: int) -> Callable[[str], int]:
    """Every numeric setting has an upper bound the code can hold (declared with the setting):
    a value the settings accept must run (an unbounded one overflowed deep inside the run, exit 3)."""

    def parse(text: str) -> int:
        try:
            # Digits are counted before int() sees them: a 5,000-digit number is refused here.
            value = int(text) if len(text.strip()) <= 32 else None
        except ValueError:
            value = None
        if value is None or value < low or value > high:
            raise Refused(f"not a whole number from {low} to {high}", str(example))
        return value

    return parse


def alpha(text: str) -> float | None:
    """`--alpha`: a level in (0, 1], or `off` (the threshold alone decides)."""
    if text.strip().casefold() == "off":
        return None
    try:
        return float_in(0.0, 1.0, low_open=True, high_open=False, example="0.05")(text)
    except Refused:
        raise Refused("not a number in (0, 1], nor off", "0.05") from None


def float_in(low: float, high: float, *, low_open: bool, high_open: bool, example: str) -> Callable[[str], float]:
    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            value = math.nan
        above = value > low if low_open else value >= low
        below = value < high if high_open else value <= high
        if not (math.isfinite(value) and above and below):
            upper = f"{high:g}{')' if high_open else ']'}"
            raise Refused(f"not a number in {'(' if low_open else '['}{low:g}, {upper}", example)
        return value

    return parse


_BUDGET_EXAMPLE = "0.05,map=0.02,ops:mrr=0.02"
_BUDGET_NAMES_SPELLED = (
    ", ".join(measure.name for measure in CATALOGUE if not measure.at_k)
    + ", or "
    + ", ".join(min((measure.name, *measure.budget_aliases), key=len) for measure in CATALOGUE if measure.at_k)
    + ", each with or without @k, after an optional tag:"
)
"""The names a `metric=drop` pair may use, in any case, as a refusal lists them: the report's labels
(MRR, MAP, recall@5, nDCG@10, P@5, success@1, judged@10) and the JSON's words (precision)."""


def budget(text: str) -> RegressionBudget:
    """`0.05`, or `metric=drop` and `tag:metric=drop` pairs beside it, comma separated
    (`0.05,map=0.02,recall@10=0.1,ops:mrr=0.02`).
    A drop is a number in [0, 1); a metric appears at most once; the single number at most once.
    Whether a named k is measured is checked with --k (declaration.py, `_check_budget_cutoffs`)."""
    drop = float_in(0.0, 1.0, low_open=False, high_open=True, example="0.05")
    default: float | None = None
    pairs: list[tuple[MetricSelector, float]] = []
    for item in (part.strip() for part in text.split(",")):
        if not item:
            continue
        if "=" not in item:
            if default is not None:
                raise Refused("holds two numbers without a metric name", _BUDGET_EXAMPLE)
            default = drop(item)
            continue
        pairs.append(_metric_pair(item, pairs, drop, "drop", "[0, 1)", _BUDGET_EXAMPLE))
    if default is None and not pairs:
        raise Refused("not a number in [0, 1)", "0.05")
    return RegressionBudget(DEFAULT_REGRESSION_THRESHOLD if default is None else default, tuple(pairs))


def _metric_pair(
    item: str, taken: Sequence[tuple[MetricSelector, float]], parse_value: Callable[[str], float], noun: str,
    bounds: str, example: str,
) -> tuple[MetricSelector, float]:
    """One `metric=value` or `tag:metric=value` pair of a budget or a floor; a metric (of a tag)
    already `taken` is refused, so each is named at most once."""
    name, _, value = (piece.strip() for piece in item.partition("="))
    selector = _selector(name, item, example)
    if any(existing == selector for existing, _ in taken):
        raise Refused(f"names {selector.label} twice", example)
    try:
        return selector, parse_value(value)
    except Refused:
        raise Refused(f"gives {name} the {noun} {value!r}, not a number in {bounds}", example) from None


def _selector(name: str, item: str, example: str) -> MetricSelector:
    """`recall@10`, `map`, `ops:mrr`: the metric (of a tag's mean) a pair names, in any case."""
    # `ops:mrr`: a tag's mean. A tag may hold `:` itself (`lang:en:mrr`); a metric name never does.
    tag, colon, name = name.rpartition(":")
    if colon and not tag.strip():
        raise Refused(f"names an empty tag in {item!r}", example)
    family_name, at, cutoff = name.strip().lower().partition("@")
    measure = BUDGET_NAMES.get(family_name)
    k = int_in(1, MAX_LIMIT, 10)(cutoff) if at and cutoff.isdigit() else None
    if measure is None or (at and k is None) or (not measure.at_k and at):
        raise Refused(f"names no metric in {item!r} ({_BUDGET_NAMES_SPELLED})", example)
    return MetricSelector(measure.name, k, tag.strip() if colon else None)


_FLOORS_EXAMPLE = "recall@10=0.6,ops:mrr=0.5"


def floors(text: str) -> Floors:
    """`metric=value` and `tag:metric=value` pairs, comma separated (`recall@10=0.6,ops:mrr=0.5`).
    A value is in [0, 1]; a metric (of a tag) appears at most once. Whether a named k is measured
    is checked with --k (declaration.py), whether a tag exists with the golden set (the pipeline)."""
    value_in = float_in(0.0, 1.0, low_open=False, high_open=False, example="0.5")
    pairs: list[tuple[MetricSelector, float]] = []
    for item in (part.strip() for part in text.split(",")):
        if not item:
            continue
        if "=" not in item:
            raise Refused(f"{item!r} names no metric (a floor is metric=value)", _FLOORS_EXAMPLE)
        pairs.append(_metric_pair(item, pairs, value_in, "floor", "[0, 1]", _FLOORS_EXAMPLE))
    return Floors(tuple(pairs))


_DURATION = re.compile(r"([0-9]+(?:\.[0-9]+)?)\s*(ms|s)")
_SIZE = re.compile(r"([0-9]+(?:\.[0-9]+)?)\s*(B|KB|KiB|MB|MiB)")
_SIZE_UNITS = {"B": 1, "KB": 1000, "KiB": 1024, "MB": 1000**2, "MiB": 1024**2}


def _cost_pairs(text: str, unit: re.Pattern[str], scale: Callable[[str], float], example: str) -> tuple[tuple[str, float], ...]:
    pairs: list[tuple[str, float]] = []
    for item in (part.strip() for part in text.split(",")):
        if not item:
            continue
        statistic, sign, value = (piece.strip() for piece in item.partition("="))
        if not sign or statistic not in STATISTICS:
            raise Refused(f"{item!r} is not statistic=value with a statistic of {', '.join(STATISTICS)}", example)
        if any(existing == statistic for existing, _ in pairs):
            raise Refused(f"names {statistic} twice", example)
        matched = unit.fullmatch(value)
        if matched is None:
            raise Refused(f"gives {statistic} {value!r}, not a number with its unit", example)
        pairs.append((statistic, float(matched[1]) * scale(matched[2])))
    return tuple(pairs)


def latency_budget(text: str) -> CostBudgets:
    """`p95=800ms,max=2s`: seconds per statistic (the unit is required: 800 alone could mean either)."""
    return CostBudgets(time=_cost_pairs(text, _DURATION, lambda u: 0.001 if u == "ms" else 1.0, "p95=800ms,max=2s"))


def answer_budget(text: str) -> CostBudgets:
    """`max=64KiB`: bytes per statistic (KB = 1000 bytes, KiB = 1024)."""
    return CostBudgets(size=_cost_pairs(text, _SIZE, lambda u: float(_SIZE_UNITS[u]), "max=64KiB"))


def choice(values: Sequence[str]) -> Callable[[str], str]:
    def parse(text: str) -> str:
        if text not in values:
            raise Refused(f"not one of {', '.join(values)}", values[0])
        return text

    return parse


def comment_mode(text: str) -> CommentMode:
    # `true`/`false` were the input's values before the modes; workflows that use them keep working.
    spelled = {"true": CommentMode.ALWAYS, "false": CommentMode.OFF}
    if text in spelled:
        return spelled[text]
    try:
        return CommentMode(text)
    except ValueError:
        raise Refused("not one of off, always, on-change", "on-change") from None


def retriever_kind(text: str) -> RetrieverKind:
    return RetrieverKind(choice([kind.value for kind in RetrieverKind])(text))


def k_list(text: str) -> tuple[int, ...]:
    parts = [part.strip() for part in text.split(",") if part.strip()]
    one = int_in(1, MAX_LIMIT, 10)
    try:
        values = tuple(one(part) for part in parts)
    except Refused:
        values = ()
    if not values:
        raise Refused(f"not a comma-separated list of cut-offs from 1 to {MAX_LIMIT}", "1,5,10")
    return values


MAX_FIELD_WEIGHT = 1000.0
"""Each BM25F field weight is below this: a weight is a ratio between fields, and one of a
thousand already lets that field alone decide every ranking."""


def weights(text: str) -> FieldWeights:
    try:
        values = [float(part) for part in text.split(",")]
    except ValueError:
        values = []
    if len(values) != 3 or not all(0 < value < MAX_FIELD_WEIGHT for value in values):
        raise Refused("not three positive numbers heading,breadcrumb,body", "2,3.5,1")
    return FieldWeights(*values)


def http_method(text: str) -> str:
    # The http module's own rule (GET or POST, any case); its words are the CLI's.
    try:
        return http_module.parse_method(text).value
    except InputError:
        raise Refused("not GET or POST", "GET") from None


def env_name(text: str) -> str:
    try:
        command_module.command_environment([text], {})
    except InputError:
        raise Refused("not an environment variable name", "KB_TOKEN") from None
    return text


def http_header(text: str) -> str:
    try:
        http_module.parse_header(text)
    except InputError:
        raise Refused("not `Name: value`", "'Authorization: Bearer ${KB_TOKEN}'") from None
    return text


def dotted_path(text: str) -> str:
    try:
        return validate_dotted_path(text, "")
    except InputError:
        raise Refused("not a dotted path (field names separated by dots)", "hits.hits") from None

