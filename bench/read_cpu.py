"""CPU time of reading a KB into the chunk table, as a run does it: this process and its reading workers apart.

    python bench/read_cpu.py DIR/kb

Reads the folder with the workers a run would start and writes every document to a fresh index's
chunk table (`read_folder(..., table=True)` into `Index.build`, as scanner.pipeline.evaluate does),
then prints the user + system seconds of this process and of the workers (os.times), the wall time
and the corpus digest (which must not change with how the documents travel). No analysis, no search.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

from scanner.corpus.reader import read_folder
from scanner.foundation.workers import keep_freed_memory
from scanner.search.index import Index


def main(argv: list[str]) -> int:
    keep_freed_memory()
    start, wall = os.times(), time.perf_counter()
    index = Index.build(read_folder(Path(argv[0]), table=True))
    end = os.times()
    parent = end.user + end.system - start.user - start.system
    workers = end.children_user + end.children_system - start.children_user - start.children_system
    print(
        f"parent {parent:.2f} s, workers {workers:.2f} s, total {parent + workers:.2f} s of CPU,"
        f" {time.perf_counter() - wall:.2f} s wall; {index.corpus.documents} documents,"
        f" {index.corpus.chunks} chunks, {index.corpus.digest}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
