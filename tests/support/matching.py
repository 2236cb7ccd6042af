"""The matching rule of scanner/metrics/measures.py written for one (hit, entry) pair, as its
module docstring states it: the reference the tests hold `Judgments` (which matches a whole ranking
at once, by lookup) and the labels' cases against."""

from __future__ import annotations

from scanner.golden.file import ExpectedEntry
from scanner.golden.headings import heading_forms, reader_heading
from scanner.retrievers.base import Hit


def hit_matches(hit: Hit, entry: ExpectedEntry) -> bool:
    """Whether `hit` matches `entry`, for one pair. The package matches a whole ranking
    through `Judgments`, which must give the same answer for every pair."""
    if entry.any_of:
        return any(_matches_one(hit, member) for member in entry.any_of)
    return _matches_one(hit, entry)


def _matches_one(hit: Hit, entry: ExpectedEntry) -> bool:
    if hit.path != entry.path:
        return False
    if entry.heading is None:
        return True
    wanted = reader_heading(entry.heading)
    own = heading_forms(hit.heading)
    if hit.parents is None:
        # Where the section sits is unknown (a retriever's heading its document repeats): the
        # heading alone decides, for `parent:` and `subsections:` labels too (docs/metrics.md).
        return wanted in own
    chain = [heading_forms(part) for part in hit.parents] + [own]
    parent = reader_heading(entry.parent) if entry.parent is not None else None
    # The labelled section is chain[i]; with `subsections` it may be any enclosing one.
    candidates = range(len(chain)) if entry.subsections else (len(chain) - 1,)
    return any(
        wanted in chain[i] and (parent is None or any(parent in forms for forms in chain[:i])) for i in candidates
    )
