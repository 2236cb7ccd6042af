"""The cyclic garbage collector held off while a large acyclic structure is built.

CPython's collector runs a full collection each time the objects that survived the previous ones
have grown by a quarter, and each walks every object alive. Building a tree of a few hundred
thousand objects (a golden file's YAML nodes, then its queries) thus walks the tree several times
over while it grows, and finds nothing: the nodes hold no reference back to their parents, so
reference counting frees them. Composing and reading the 10,000-query bench golden file took 1.44 s
of CPU with the collector running, 0.64 s without (0.82 s of collections, counted by gc.callbacks).
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def collector_paused() -> Iterator[None]:
    """No cyclic collection inside the block; the collector as it was afterwards, whatever is raised.
    For code that creates no reference cycles, whose memory reference counting frees anyway."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()
