"""Compose untrusted YAML (the golden file, frontmatter) into nodes without it costing more than its text.

Both YAML inputs come from the pull request. Composing recurses once per level of
nesting, in Python (RecursionError: exit 3) or in libyaml's C composer (a stack
overflow: SIGSEGV, no report at all), so nesting past `MAX_YAML_DEPTH` is refused
before it is composed. The golden loader also refuses aliases outright.
Nothing is constructed: callers walk the nodes and check their tags themselves.
"""

from __future__ import annotations

import yaml

MAX_YAML_DEPTH = 50
"""Collections nested deeper than this are refused. The golden format nests five levels and real
frontmatter rarely ten; composing costs about three Python frames per level, so 50 stays far from
the interpreter's recursion limit of 1,000 whatever the caller's own stack depth."""


class ComposeLoader(yaml.SafeLoader):
    """Use with `yaml.compose(text, Loader=ComposeLoader)`; raises yaml.YAMLError subclasses only."""

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self._depth = 0

    def compose_node(self, parent, index):  # type: ignore[no-untyped-def]
        if self.check_event(yaml.AliasEvent):
            event = self.peek_event()  # type: ignore[no-untyped-call]
            raise yaml.composer.ComposerError(None, None, "aliases (*name) are not accepted", event.start_mark)
        if self._depth >= MAX_YAML_DEPTH:
            event = self.peek_event()  # type: ignore[no-untyped-call]
            raise yaml.composer.ComposerError(
                None, None, f"nested more than {MAX_YAML_DEPTH} levels deep", event.start_mark
            )
        self._depth += 1
        try:
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1


def refuse_deep_nesting(text: str, loader: type) -> None:
    """Raise yaml.composer.ComposerError at the first collection nested past MAX_YAML_DEPTH.

    Reads the event stream, which libyaml and PyYAML produce without recursion, and stops at the
    offending event (measured: under 20 ms for `[` x 1,000,000), so any composer can run after it."""
    depth = 0
    for event in yaml.parse(text, Loader=loader):
        if isinstance(event, (yaml.SequenceStartEvent, yaml.MappingStartEvent)):
            depth += 1
            if depth > MAX_YAML_DEPTH:
                raise yaml.composer.ComposerError(
                    None, None, f"nested more than {MAX_YAML_DEPTH} levels deep", event.start_mark  # type: ignore[arg-type]
                )
        elif isinstance(event, (yaml.SequenceEndEvent, yaml.MappingEndEvent)):
            depth -= 1
