"""The one reader of JSON that kb-eval did not write itself this run: a search service's answer,
a command's output, a run file's line, a history or baseline file.

Standard JSON only, bounded before it is parsed, and one exception type for every way it can be
wrong, so no input reaches the caller as a crash (exit 3).
"""

from __future__ import annotations

import json
import math
import re

MAX_JSON_CONTAINERS = 1_000_000
"""Objects and arrays one document may hold, counted with bytes.count before parsing (an upper
bound: braces inside strings count too). Container count, not size, is what amplifies: an empty
object costs ~64 bytes of memory for its 3 bytes of text (`{},`). What real inputs hold: a search
answer of `limit` hits has tens; a 32 MiB history (10 runs of ~1,950 queries, 10 hits each)
~300,000. Peak memory at the cap, per reader: docs/limits-and-safety.md (bench/parser_rss.py)."""


def json_type(value: object) -> str:
    """A parsed value's JSON type, as a message names it: null, boolean, number, string, array,
    object; the Python type's name for anything JSON cannot hold."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    if isinstance(value, dict):
        return "object"
    return type(value).__name__


class NotJson(ValueError):
    """A document that is not one strict JSON value; `reason` says why, `line` where (1-based)."""

    def __init__(self, reason: str, line: int | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.line = line


def loads_strict(data: bytes | str, max_containers: int | None = None) -> object:
    """One JSON document, or NotJson; never another exception.

    Refused: NaN/Infinity and numbers that overflow a float (1e400), integers past Python's
    4,300-digit limit, text that is not UTF-8, more than `max_containers` objects and arrays, and
    nesting deep enough to exhaust the recursion limit (the C decoder raises RecursionError there).
    `max_containers` defaults to MAX_JSON_CONTAINERS."""
    if max_containers is None:
        max_containers = MAX_JSON_CONTAINERS
    containers = (
        data.count(b"{") + data.count(b"[") if isinstance(data, bytes) else data.count("{") + data.count("[")
    )
    if containers > max_containers:
        raise NotJson(f"more than {max_containers} objects and arrays")
    try:
        text = data.decode("utf-8") if isinstance(data, bytes) else data
        value = json.loads(text, parse_constant=_reject_constant, parse_float=_finite_float)
        if _SURROGATE_ESCAPE.search(text) is not None:
            _refuse_lone_surrogates(value)
        return value
    except NotJson:
        raise
    except json.JSONDecodeError as error:
        raise NotJson(f"{error.msg} at line {error.lineno} column {error.colno}", error.lineno) from None
    except UnicodeDecodeError as error:
        raise NotJson(f"not UTF-8 (byte {error.start})") from None
    except ValueError:  # an integer with more digits than int() converts
        raise NotJson("a number has too many digits") from None
    except RecursionError:
        raise NotJson("nested too deeply") from None


_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")
"""A `\\ud800`-style escape: the only way a lone surrogate gets into decoded JSON (UTF-8 text
cannot hold one). Text without it is not walked."""


def _refuse_lone_surrogates(value: object) -> None:
    """A string (or key) that is not text: a path `"\\ud800.md"` from a service, a command or a
    run file could be neither written to the report nor printed (UnicodeEncodeError, exit 3)."""
    pending = [value]
    while pending:
        item = pending.pop()
        if isinstance(item, dict):
            pending.extend(item.keys())
            pending.extend(item.values())
        elif isinstance(item, list):
            pending.extend(item)
        elif isinstance(item, str):
            try:
                item.encode("utf-8")
            except UnicodeEncodeError as error:
                raise NotJson(
                    f"a string holds a lone surrogate ({item[error.start]!a}), which is not text"
                ) from None


def _reject_constant(name: str) -> float:
    raise NotJson(f"{name} is not a JSON number")


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        # 1e400 parses to inf in Python; JSON has no infinity.
        raise NotJson(f"number {text[:40]} is out of range")
    return value
