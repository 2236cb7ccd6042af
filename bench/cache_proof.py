"""What proving a parse-cache entry costs against parsing the file, on the synthetic KB.

    python bench/cache_proof.py --docs 1000 --rounds 5

Generates the bench KB (bench/generate.py), then times, per round and paired, parsing every file
(`build_document`) against using its cache entry (`unpack` and `proves_itself`, what a cache hit
costs), and prints the median of each and their ratio, with how many entries were proven and how
many were left to a parse (a setext heading). Single process; the numbers are per run of all files.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.generate import generate
from scanner.corpus.parse_cache import pack, proves_itself, unpack
from scanner.corpus.reader import build_document
from scanner.foundation.diagnostics import Diagnostics


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as folder:
        generate(Path(folder), args.docs, 10, seed=1, leaks=0)
        root = Path(folder) / "kb"
        files = [(p.relative_to(root).as_posix(), p.read_bytes()) for p in sorted(root.rglob("*.md"))]
    entries = [pack(build_document(relative, data.decode(), Diagnostics()), []) for relative, data in files]
    parse_times, proof_times = [], []
    proofs: Counter[str] = Counter()
    for _ in range(args.rounds):
        start = time.perf_counter()
        for relative, data in files:
            build_document(relative, data.decode(), Diagnostics())
        parse_times.append(time.perf_counter() - start)
        start = time.perf_counter()
        proofs.clear()
        for (relative, data), entry in zip(files, entries, strict=True):
            unpacked = unpack(relative, entry)
            assert unpacked is not None
            proofs[proves_itself(relative, data, *unpacked).value] += 1
        proof_times.append(time.perf_counter() - start)
    parse, proof = statistics.median(parse_times), statistics.median(proof_times)
    print(f"{len(files)} files: parse {parse:.3f} s, cache hit (unpack + proof) {proof:.3f} s, ratio {proof / parse:.2f}")
    print("entries: " + ", ".join(f"{count} {name}" for name, count in sorted(proofs.items())))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
