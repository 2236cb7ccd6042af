"""Compose untrusted YAML (the golden file, frontmatter) into nodes without it costing more than its text.

Both YAML inputs come from the pull request. Composing recurses once per level of
nesting, in Python (RecursionError: exit 3) or in libyaml's C composer (a stack
overflow: SIGSEGV, no report at all), so nesting past `MAX_YAML_DEPTH` is refused
before it is composed. The golden loader also refuses aliases outright (`compose_untrusted`).
Nothing is constructed: callers walk the nodes and check their tags themselves.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import yaml

MAX_YAML_DEPTH = 50
"""Collections nested deeper than this are refused. The golden format nests five levels and real
frontmatter rarely ten; composing costs about three Python frames per level, so 50 stays far from
the interpreter's recursion limit of 1,000 whatever the caller's own stack depth."""


def compose_untrusted(text: str, max_nodes: int) -> yaml.Node | None:
    """The one document of `text` as nodes (None for an empty stream); raises yaml.YAMLError
    subclasses only: for an alias, for collections nested past MAX_YAML_DEPTH, for a second
    document, for more than `max_nodes` nodes (a node costs about 300 bytes, whatever its text:
    two bytes of `a,` are one node).

    libyaml parses (PyYAML's Python scanner was nine tenths of loading a golden file of 10,000
    queries) and the nodes are built here from its events, without recursion, so no nesting can
    reach the interpreter's recursion limit or libyaml's C stack. An alias is refused outright: a
    walk over a shared node would visit it once per reference ('billion laughs'). Tags are resolved
    as PyYAML's safe loader resolves them.

    A text libyaml refuses is composed again from PyYAML's own parser, which is what decides:
    libyaml refuses some texts PyYAML reads (a lone surrogate escape, which the golden loader
    names with its field), and its messages are PyYAML's for every other mistake."""
    try:
        return _compose_events(yaml.parse(text, Loader=yaml.CSafeLoader), max_nodes)
    except _Refused:
        raise
    except yaml.YAMLError:
        return _compose_events(yaml.parse(text, Loader=yaml.SafeLoader), max_nodes)


LIBYAML_NESTING_PROBLEM = "exceeded maximum nesting depth"
"""libyaml's own refusal of deep flow nesting (its limit is 1,000 levels, past MAX_YAML_DEPTH)."""


class _Refused(yaml.composer.ComposerError):
    """What compose_untrusted refuses itself, whichever parser read the text."""


def _compose_events(events: Iterator[Any], max_nodes: int) -> yaml.Node | None:
    # Any: libyaml's events carry its own Mark type, which the nodes keep as PyYAML's would.
    resolve: Any = yaml.resolver.Resolver().resolve
    root: yaml.Node | None = None
    documents = 0
    nodes = 0
    open_nodes: list[yaml.CollectionNode] = []
    keys: list[yaml.Node | None] = []
    """Per open mapping, the key composed whose value is still to come."""
    for event in events:
        node: yaml.Node
        start: Any = event.start_mark
        end: Any = event.end_mark
        if isinstance(event, yaml.ScalarEvent):
            tag = event.tag
            if tag is None or tag == "!":
                tag = resolve(yaml.ScalarNode, event.value, event.implicit)
            # libyaml spells the plain style "", PyYAML None.
            node = yaml.ScalarNode(tag, event.value, start, end, style=event.style or None)
        elif isinstance(event, (yaml.SequenceStartEvent, yaml.MappingStartEvent)):
            if len(open_nodes) >= MAX_YAML_DEPTH:
                raise _Refused(
                    None, None, f"nested more than {MAX_YAML_DEPTH} levels deep", start
                )
            kind: type[yaml.CollectionNode] = (
                yaml.SequenceNode if isinstance(event, yaml.SequenceStartEvent) else yaml.MappingNode
            )
            tag = event.tag
            if tag is None or tag == "!":
                tag = resolve(kind, None, event.implicit)
            node = kind(tag, [], start, None, flow_style=event.flow_style)
        elif isinstance(event, (yaml.SequenceEndEvent, yaml.MappingEndEvent)):
            open_nodes.pop().end_mark = end
            keys.pop()
            continue
        elif isinstance(event, yaml.AliasEvent):
            raise _Refused(None, None, "aliases (*name) are not accepted", start)
        elif isinstance(event, yaml.DocumentStartEvent):
            documents += 1
            if documents > 1:
                raise _Refused(
                    "expected a single document in the stream", None, "but found another document",
                    event.start_mark,  # type: ignore[arg-type]
                )
            continue
        else:
            continue
        nodes += 1
        if nodes > max_nodes:
            raise _Refused(None, None, f"more than {max_nodes} values", start)
        if not open_nodes:
            root = node
        elif isinstance(open_nodes[-1], yaml.SequenceNode):
            open_nodes[-1].value.append(node)
        elif keys[-1] is None:
            keys[-1] = node
        else:
            open_nodes[-1].value.append((keys[-1], node))
            keys[-1] = None
        if isinstance(node, yaml.CollectionNode):
            open_nodes.append(node)
            keys.append(None)
    return root


def refuse_deep_nesting(text: str, loader: type) -> None:
    """Raise yaml.composer.ComposerError at the first collection nested past MAX_YAML_DEPTH.

    Reads the event stream, which libyaml and PyYAML produce without recursion, and stops at the
    offending event (measured: under 20 ms for `[` x 1,000,000), so any composer can run after it."""
    depth = 0
    try:
        for event in yaml.parse(text, Loader=loader):
            if isinstance(event, (yaml.SequenceStartEvent, yaml.MappingStartEvent)):
                depth += 1
                if depth > MAX_YAML_DEPTH:
                    raise _Refused(
                        None, None, f"nested more than {MAX_YAML_DEPTH} levels deep", event.start_mark  # type: ignore[arg-type]
                    )
            elif isinstance(event, (yaml.SequenceEndEvent, yaml.MappingEndEvent)):
                depth -= 1
    except yaml.MarkedYAMLError as error:
        # libyaml 0.2.6 (PyYAML 6.0.4's wheels) stops flow nesting past its own limit of 1,000 while
        # scanning ahead, before the events reach the check above: the same refusal, said the same
        # way whichever libyaml the wheel carries.
        if error.problem != LIBYAML_NESTING_PROBLEM or isinstance(error, _Refused):
            raise
        raise _Refused(None, None, f"nested more than {MAX_YAML_DEPTH} levels deep", error.problem_mark) from None
