"""CPU time of reading a KB into the chunk table, as a run does it: this process and its reading workers apart.

    python bench/read_cpu.py DIR/kb
    python bench/read_cpu.py DIR/kb --parse     # parse_document alone, every file, in this process

Reads the folder with the workers a run would start and writes every document to a fresh index's
chunk table (`read_folder(..., table=True)` into `Index.build`, as scanner.pipeline.evaluate does),
then prints the user + system seconds of this process and of the workers (os.times), the wall time
and the corpus digest (which must not change with how the documents travel). No analysis, no search.
With --parse, the CPU seconds of scanner.corpus.markdown.parse_document over every file's text
(read first), in this process alone: the Markdown scanner without reading or the table.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

from scanner.corpus.markdown import parse_document
from scanner.corpus.reader import read_folder
from scanner.foundation.workers import keep_freed_memory
from scanner.search.index import Index


def main(argv: list[str]) -> int:
    keep_freed_memory()
    if argv[1:] == ["--parse"]:
        texts = [path.read_text(encoding="utf-8") for path in sorted(Path(argv[0]).rglob("*.md"))]
        start = time.process_time()
        for text in texts:
            parse_document(text, "title")
        print(f"parse_document: {time.process_time() - start:.2f} s of CPU for {len(texts)} files")
        return 0
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
