"""Placeholder substitution for request templates: `{query}`, `{query_sql}`, `{limit}` and `${ENV_NAME}`
per query; `{kb}`, `{work}` and `{port}` once per side (`SideSlots`).

Substitution happens inside already-split structures (JSON values, argument
lists), never in raw text, so a query holding quotes, `;` or `$(...)` cannot
change the structure it is put into. Each string is substituted in one pass,
so a query that itself contains `{limit}` or `${HOME}` stays literal.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from scanner.foundation.errors import InputError

PLACEHOLDER = re.compile(r"\{(query|query_sql|limit)\}")
QUERY_PLACEHOLDERS = ("{query}", "{query_sql}")
"""Either one puts the query into a request."""


SIDE_PLACEHOLDER = re.compile(r"\{(kb|work|port)\}")
"""Filled once per side of a run, before any query: the side's KB folder, its work folder and its
server's port."""


@dataclass(frozen=True, slots=True)
class SideSlots:
    """What a retriever with its own index is told about the side it answers for."""

    kb: Path
    """The side's KB folder, absolute: the checkout's, or the base commit's written out."""
    work: Path
    """An empty folder for this side's index (`--index-command` writes there), removed after the side."""
    port: int | None = None
    """The loopback port the side's `--serve-command` listens on; None without one."""


def uses_side(text: str) -> bool:
    """Whether `text` names anything of a side (so the retriever answers per side)."""
    return SIDE_PLACEHOLDER.search(text) is not None


def fill_side(text: str, slots: SideSlots, what: str) -> str:
    """`{kb}`, `{work}` and `{port}` replaced in one pass; `{port}` without a server is refused."""

    def value(match: re.Match[str]) -> str:
        name = match.group(1)
        if name == "port":
            if slots.port is None:
                raise InputError(
                    f"{what} uses {{port}}, but no --serve-command starts a server for it to name",
                    field=what, hint="give --serve-command, or write the server's port",
                )
            return str(slots.port)
        return str(slots.kb if name == "kb" else slots.work)

    return SIDE_PLACEHOLDER.sub(value, text)


def fill_side_in_json(template: object, slots: SideSlots, what: str) -> object:
    """`fill_side` in every string value of a parsed JSON template (keys are left alone)."""
    if isinstance(template, str):
        return fill_side(template, slots, what)
    if isinstance(template, list):
        return [fill_side_in_json(item, slots, what) for item in template]
    if isinstance(template, dict):
        return {key: fill_side_in_json(value, slots, what) for key, value in template.items()}
    return template


def sql_string_literal(text: str) -> str:
    """`text` as an SQL string literal: in single quotes, each quote doubled (SQL-92; SQLite and
    PostgreSQL with standard_conforming_strings, its default since 9.1, read no other escape), so a
    question with an apostrophe stays one string inside the SQL of a command template."""
    return "'" + text.replace("'", "''") + "'"
ENV_REFERENCE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")


def substitute_placeholders(text: str, query: str, limit: int) -> str:
    """`{query}` -> query, `{query_sql}` -> query as an SQL string literal, `{limit}` -> limit, in one
    pass over `text`."""
    values = {"query": query, "query_sql": sql_string_literal(query), "limit": str(limit)}
    return PLACEHOLDER.sub(lambda match: values[match.group(1)], text)


def resolve_env(text: str, env: Mapping[str, str], what: str) -> tuple[str, list[str]]:
    """Replace `${NAME}` with the environment's value; return the text and the values used.

    The values are returned so the caller can scrub them from any message.
    A missing variable is refused by NAME only (its value is what must stay secret).
    """
    used: list[str] = []

    def value_of(match: re.Match[str]) -> str:
        name = match.group(1)
        if name not in env:
            raise InputError(
                f"{what} refers to ${{{name}}}, but the environment variable {name} is not set",
                field=what,
                hint=f"export {name} (in a workflow: env: {name}: ${{{{ secrets.{name} }}}})",
            )
        used.append(env[name])
        return env[name]

    return ENV_REFERENCE.sub(value_of, text), used


def quote_bare_placeholders(template: str) -> str:
    """Turn `{"limit": {limit}}` into `{"limit": "{limit}"}` so it parses as JSON.

    Only placeholders outside JSON strings are quoted; a placeholder inside a
    string is left for substitution into that string.
    """
    out: list[str] = []
    in_string = False
    escaped = False
    i = 0
    while i < len(template):
        char = template[i]
        if in_string:
            out.append(char)
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
            i += 1
            continue
        if char == '"':
            in_string = True
            out.append(char)
            i += 1
            continue
        match = PLACEHOLDER.match(template, i)
        if match:
            out.append(f'"{match.group(0)}"')
            i = match.end()
            continue
        out.append(char)
        i += 1
    return "".join(out)


def parse_json_template(template: str, flag: str) -> object:
    """Parse a JSON template that may use bare `{query}`/`{limit}` as values."""
    try:
        parsed: object = json.loads(quote_bare_placeholders(template))
    except json.JSONDecodeError as exc:
        raise InputError(
            f"{flag} is not valid JSON: {exc.msg} at column {exc.colno}",
            field=flag,
            hint='e.g. {"query": "{query}", "limit": {limit}}',
        ) from exc
    if not _mentions_query(parsed):
        raise InputError(
            f"{flag} never uses {{query}}, so every query would send the same request",
            field=flag,
            hint='put "{query}" where the service expects the query text',
        )
    return parsed


def render_json_template(template: object, query: str, limit: int) -> object:
    """The template with placeholders filled in; a string that is exactly `{limit}` becomes a number."""
    if isinstance(template, str):
        if template == "{limit}":
            return limit
        return substitute_placeholders(template, query, limit)
    if isinstance(template, list):
        return [render_json_template(item, query, limit) for item in template]
    if isinstance(template, dict):
        return {key: render_json_template(value, query, limit) for key, value in template.items()}
    return template


def resolve_env_in_json(template: object, env: Mapping[str, str], flag: str) -> tuple[object, list[str]]:
    """`${NAME}` resolved in every string value of a JSON template (keys are left alone)."""
    if isinstance(template, str):
        return resolve_env(template, env, flag)
    if isinstance(template, list):
        items: list[object] = []
        used: list[str] = []
        for item in template:
            resolved, item_used = resolve_env_in_json(item, env, flag)
            items.append(resolved)
            used.extend(item_used)
        return items, used
    if isinstance(template, dict):
        mapping: dict[str, object] = {}
        used = []
        for key, value in template.items():
            resolved, value_used = resolve_env_in_json(value, env, flag)
            mapping[key] = resolved
            used.extend(value_used)
        return mapping, used
    return template, []


def _mentions_query(template: object) -> bool:
    if isinstance(template, str):
        return any(placeholder in template for placeholder in QUERY_PLACEHOLDERS)
    if isinstance(template, list):
        return any(_mentions_query(item) for item in template)
    if isinstance(template, dict):
        return any(_mentions_query(value) for value in template.values())
    return False
