"""Memory of a run per distinct term and per posting: random words against the bench's notes.

    python bench/term_memory.py                      # both corpora at two sizes each
    python bench/term_memory.py --words 500000,1600000 --notes 2000,8000

The corpus caps of files, bytes and sections bound a KB whose words repeat, as notes' words do.
Text in which every word is new costs more per byte: every word is a term of the vocabulary
(and of the analyser's cache of words) and a posting. This measures the two costs apart, on
the CLI as a user runs it (`kb-eval --no-history`, default settings), in a fresh child per
case, its peak memory the largest PSS summed over the process tree (bench/run.py's
TreeRssSampler):

- `random N`: N random lower-case words of 6-12 letters (every one distinct), 100 words to a
  paragraph, 40 paragraphs to a file under one heading each: one posting per term. Both sizes
  have more than 5,000 sections, so both are analysed by parallel processes as a large KB is.
- `notes N`: bench/generate.py's seeded notes (seed 1, 225 queries): a vocabulary that stops
  growing, so the difference between two sizes is postings.

For each case the postings and distinct terms are counted in this process by building the
index as the run does (scanner.search.index), without caps. A last case (--over) is a random-words
KB past the default `max-terms`: the run's exit status (2) and the peak memory it reached first. Printed: per case its peak and counts; then the
slopes between the two sizes of each corpus: bytes per posting from the notes, and bytes per
term from the random words (less their one posting each).
"""

from __future__ import annotations

import argparse
import os
import random
import string
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
sys.path.insert(0, str(BENCH))
sys.path.insert(0, str(REPO))

from run import TreeRssSampler

CLI = "from scanner.cli.main import run; run()"
WORDS_PER_PARAGRAPH = 100
PARAGRAPHS_PER_FILE = 40


def random_words(root: Path, count: int) -> tuple[Path, Path]:
    """`count` random words (distinct with overwhelming odds: 26^6 and more), and one golden query."""
    rng = random.Random(f"term-memory-{count}")
    kb = root / "kb"
    kb.mkdir()
    per_file = WORDS_PER_PARAGRAPH * PARAGRAPHS_PER_FILE
    letters = string.ascii_lowercase
    for number, first in enumerate(range(0, count, per_file)):
        words = ["".join(rng.choices(letters, k=rng.randint(6, 12))) for _ in range(min(per_file, count - first))]
        lines = [f"# Words {number}", ""]
        for at in range(0, len(words), WORDS_PER_PARAGRAPH):
            lines += [f"## Part {at // WORDS_PER_PARAGRAPH}", "", " ".join(words[at : at + WORDS_PER_PARAGRAPH]), ""]
        (kb / f"words-{number:05d}.md").write_text("\n".join(lines), encoding="utf-8")
    golden = root / "golden.yml"
    golden.write_text('queries:\n  - id: q1\n    query: "words part"\n    expected: [words-00000.md]\n', encoding="utf-8")
    return kb, golden


def notes(root: Path, count: int) -> tuple[Path, Path]:
    out = root / "notes"
    subprocess.run([sys.executable, str(BENCH / "generate.py"), "--docs", str(count), "--queries", "225", "--seed", "1",
                    str(out)], check=True, stdout=subprocess.DEVNULL)
    return out / "kb", out / ".kb-eval.yml"


def counted(kb: Path) -> tuple[int, int, int, int]:
    """(documents, sections, postings over every scoring layer, distinct terms) as the run indexes them."""
    from scanner.corpus.reader import CorpusCaps, read_folder
    from scanner.retrievers.builtin import FieldWeights
    from scanner.search.bm25 import Bm25Parameters
    from scanner.search.index import Index

    big = CorpusCaps(10**9, 10**9, 10**9, 10**12, 10**12)
    index = Index.build(read_folder(kb, caps=big), caps=big)
    scorer = index.scorer(FieldWeights().as_tuple(), Bm25Parameters())
    postings = sum(len(chunks) for _, chunks, _ in scorer.layers)
    return index.corpus.documents, index.corpus.chunks, postings, len(index.analyzer.vocabulary)


def peak(kb: Path, golden: Path, flags: list[str]) -> tuple[int, float, float]:
    """(exit status, seconds, peak PSS MiB of the process tree) of one CLI run in a fresh child."""
    with tempfile.TemporaryDirectory(prefix="kb-eval-terms-") as tmp:
        started = time.perf_counter()
        child = subprocess.Popen(
            [sys.executable, "-c", CLI, f"--kb-path={kb}", f"--golden={golden}", "--no-history", "--format=json",
             f"--output={Path(tmp) / 'out.json'}", *flags],
            cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env={**os.environ, "PYTHONPATH": str(REPO)},
        )
        sampler = TreeRssSampler(child.pid)
        sampler.start()
        _, status, _ = os.wait4(child.pid, 0)
        sampler.done.set()
        sampler.join()
        return os.waitstatus_to_exitcode(status), time.perf_counter() - started, sampler.peak_kib / 1024


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--words", default="500000,1600000", help="two sizes of the random-words KB")
    parser.add_argument("--notes", default="2000,8000", help="two sizes of the bench's notes")
    parser.add_argument("--over", type=int, default=4_000_000,
                        help="a random-words KB past the default max-terms: its refusal's exit status and peak (0: none)")
    parser.add_argument("--flag", action="append", default=[], help="a CLI flag for every run (repeatable)")
    args = parser.parse_args(argv)
    print(f"load average before: {' '.join(f'{v:.2f}' for v in os.getloadavg())}", flush=True)
    print("| case | exit | s | peak MiB | documents | sections | postings | terms | MiB of Markdown |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    rows: dict[str, list[tuple[float, int, int]]] = {"random": [], "notes": []}
    for kind, sizes in (("random", args.words), ("notes", args.notes)):
        for size in (int(s) for s in sizes.split(",")):
            with tempfile.TemporaryDirectory(prefix="kb-eval-terms-kb-") as tmp:
                kb, golden = (random_words if kind == "random" else notes)(Path(tmp), size)
                mib = sum(f.stat().st_size for f in kb.rglob("*.md")) / 2**20
                status, seconds, mib_peak = peak(kb, golden, args.flag)
                documents, sections, postings, terms = counted(kb)
            rows[kind].append((mib_peak, postings, terms))
            print(f"| {kind} {size} | {status} | {seconds:.1f} | {mib_peak:.0f} | {documents} | {sections} | {postings} |"
                  f" {terms} | {mib:.1f} |", flush=True)
    if args.over:
        with tempfile.TemporaryDirectory(prefix="kb-eval-terms-kb-") as tmp:
            kb, golden = random_words(Path(tmp), args.over)
            mib = sum(f.stat().st_size for f in kb.rglob("*.md")) / 2**20
            status, seconds, mib_peak = peak(kb, golden, args.flag)
        print(f"| random {args.over} (past the cap) | {status} | {seconds:.1f} | {mib_peak:.0f} | - | - | - | - | {mib:.1f} |",
              flush=True)
    (n1, p1, _), (n2, p2, _) = rows["notes"]
    per_posting = (n2 - n1) * 2**20 / (p2 - p1)
    (r1, rp1, rt1), (r2, rp2, rt2) = rows["random"]
    per_term = ((r2 - r1) * 2**20 - per_posting * (rp2 - rp1)) / (rt2 - rt1)
    print(f"bytes of peak memory per posting (notes): {per_posting:.1f}")
    print(f"bytes of peak memory per distinct term, beyond its postings (random words): {per_term:.1f}")
    print(f"load average after: {' '.join(f'{v:.2f}' for v in os.getloadavg())}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
