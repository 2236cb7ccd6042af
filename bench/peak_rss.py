"""Peak memory and wall time of the CLI on the largest hostile inputs.

Each case is built in a temporary folder, then the CLI runs in a fresh child
process (so the figure is that run's alone) and the child's ru_maxrss is read
with os.wait4. Usage, from the repository root:

    python bench/peak_rss.py            # every case
    python bench/peak_rss.py files_over_corpus_cap  # some cases, by name

    python bench/peak_rss.py --as-limit-mib 2048 title_x_headings_114kb   # under an address-space cap

Prints one Markdown table row per case: name, exit code, documents, seconds, peak RSS in MiB.
With --as-limit-mib the child runs under RLIMIT_AS (through prlimit), so a case that would need gigabytes fails
fast (MemoryError, exit 3) instead of swapping the machine.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from scanner.foundation.strict_json import MAX_JSON_CONTAINERS

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from scanner.corpus.reader import DEFAULT_MAX_FILES, DEFAULT_MAX_MIB, MAX_DOCUMENT_BYTES

MAX_CORPUS_FILES = DEFAULT_MAX_FILES
MAX_CORPUS_BYTES = DEFAULT_MAX_MIB * 2**20

sys.path.insert(0, str(REPO / "bench"))
from run import TreeRssSampler

MIB = 1024 * 1024
CAP = MAX_DOCUMENT_BYTES
GOLDEN = 'queries:\n  - id: q1\n    query: "alpha beta gamma"\n    expected: [a.md]\n'
CLI = "from scanner.cli.main import run; run()"


def _kb(root: Path) -> Path:
    kb = root / "kb"
    kb.mkdir()
    (kb / ".kb-eval.yml").write_text(GOLDEN, encoding="utf-8")
    (kb / "a.md").write_text("# A\nalpha beta gamma\n", encoding="utf-8")
    return kb


def baseline(root: Path) -> Path:
    return _kb(root)


def sparse_200mb(root: Path) -> Path:
    kb = _kb(root)
    with open(kb / "huge.md", "wb") as handle:
        handle.truncate(200 * MIB)  # sparse: no disk used, and the size cap must refuse it unread
    return kb


def line_50mb(root: Path) -> Path:
    kb = _kb(root)
    with open(kb / "line.md", "wb") as handle:
        handle.writelines(b"alpha " * (MIB // 6) + b"x" * (MIB % 6) for _ in range(50))
    return kb


def line_under_cap(root: Path) -> Path:
    """One line of the cap - 1 byte: the largest document that is indexed."""
    kb = _kb(root)
    words = b"alpha beta gamma delta " * ((CAP - 1) // 23)
    (kb / "line.md").write_bytes(words + b"x" * (CAP - 1 - len(words)))
    return kb


def spaces_heading_under_cap(root: Path) -> Path:
    """A heading line of the cap - 1 byte that is mostly one run of spaces (the old quadratic case)."""
    kb = _kb(root)
    (kb / "spaces.md").write_bytes(b"# a" + b" " * (CAP - 6) + b"b\n")
    return kb


def _tiny_files(root: Path, count: int) -> Path:
    """a.md and `count` tiny notes, a thousand a folder."""
    kb = _kb(root)
    for n in range(count):
        sub = kb / f"d{n // 1000:03}"
        sub.mkdir(exist_ok=True)
        (sub / f"n{n % 1000:04}.md").write_bytes(b"# t\nw\n")
    return kb


def files_at_corpus_cap(root: Path) -> Path:
    """Tiny files and a.md: exactly MAX_CORPUS_FILES indexable files."""
    return _tiny_files(root, MAX_CORPUS_FILES - 1)


def files_over_corpus_cap(root: Path) -> Path:
    """One indexable file more than files_at_corpus_cap: refused (exit 2) before any file is read."""
    return _tiny_files(root, MAX_CORPUS_FILES)


def headings_10k(root: Path) -> Path:
    kb = _kb(root)
    (kb / "many.md").write_text("".join(f"## Heading {n}\nbody {n}\n" for n in range(10_000)), encoding="utf-8")
    return kb


def headings_100kb(root: Path) -> Path:
    """Six nested headings of 100 KB each, repeated to just under the cap: every chunk's
    breadcrumb carries its ancestors, the worst amplification a document can cause."""
    kb = _kb(root)
    block = "".join("#" * level + " " + ("h" * 9 + " ") * 10_000 + "\n" for level in range(1, 7))
    (kb / "long.md").write_text(block * (CAP // len(block)), encoding="utf-8")
    return kb


def golden_flat_1mib(root: Path) -> Path:
    """A golden file at the byte cap made of the cheapest YAML nodes: the loader's worst case."""
    kb = _kb(root)
    (kb / ".kb-eval.yml").write_text("queries: [" + ",".join(["a"] * (MIB // 2 - 10)) + "]\n", encoding="utf-8")
    return kb


def golden_10000_queries(root: Path) -> Path:
    kb = _kb(root)
    (kb / ".kb-eval.yml").write_text(
        "queries:\n" + "".join(f"  - {{query: alpha beta {n}, expected: [a.md]}}\n" for n in range(10_000)),
        encoding="utf-8",
    )
    return kb


def title_x_headings_57kb(root: Path) -> Path:
    """An amplification once found: a 40,000-character title and 2,000 empty headings (57 KB)."""
    kb = _kb(root)
    (kb / "amp.md").write_text("---\ntitle: " + "t" * 40_000 + "\n---\n" + "## \n" * 2_000, encoding="utf-8")
    return kb


def title_x_headings_114kb(root: Path) -> Path:
    """The same, twice as large (the issue measured 12.8 GB for it before the caps)."""
    kb = _kb(root)
    (kb / "amp.md").write_text("---\ntitle: " + "t" * 60_000 + "\n---\n" + "## \n" * 13_500, encoding="utf-8")
    return kb


def nested_title_headings_under_cap(root: Path) -> Path:
    """Six nested 60,000-character headings, then headings under them up to the section cap and
    the file cap: every section carries the longest breadcrumb there is."""
    kb = _kb(root)
    head = "---\ntitle: " + "t" * 60_000 + "\n---\n" + "".join("#" * n + " " + "h" * 60_000 + "\n" for n in range(1, 6))
    room = CAP - 1 - len(head)
    per = max(room // 9_999, 8)
    line = "###### " + "w" * (per - 8) + "\n"
    (kb / "deep.md").write_text(head + line * min(9_994, room // len(line)), encoding="utf-8")
    return kb


def empty_headings_under_cap(root: Path) -> Path:
    """The cap - 1 byte of `#` lines: millions of headings, of which MAX_SECTIONS_PER_DOCUMENT are sections."""
    kb = _kb(root)
    (kb / "hashes.md").write_bytes(b"#\n" * ((CAP - 1) // 2))
    return kb


def frontmatter_at_cap(root: Path) -> Path:
    """A 64 KiB flow sequence of one-letter scalars: the most YAML nodes the frontmatter cap lets in."""
    kb = _kb(root)
    items = ",".join(["a"] * ((64 * 1024 - 20) // 2))
    (kb / "fm.md").write_text("---\ntitle: x\nl: [" + items + "]\n---\n# A\nalpha\n", encoding="utf-8")
    return kb


def sections_at_corpus_cap(root: Path) -> Path:
    """149 files of 10,000 headings, one of 9,999, and a.md: 1.5 million sections, the corpus cap."""
    kb = _kb(root)
    data = b"# h\n" * 10_000
    for n in range(149):
        (kb / f"s{n:03}.md").write_bytes(data)
    (kb / "s149.md").write_bytes(b"# h\n" * 9_999)
    return kb


def sections_over_corpus_cap(root: Path) -> Path:
    """One section more than sections_at_corpus_cap: refused (exit 2) at the file that crosses."""
    kb = sections_at_corpus_cap(root)
    (kb / "s149.md").write_bytes(b"# h\n" * 10_000)
    return kb


def _prose(size: int) -> bytes:
    line = b"alpha beta gamma delta epsilon zeta eta theta iota kappa\n"
    return (line * (size // len(line) + 1))[:size]


def bytes_at_corpus_cap(root: Path) -> Path:
    """Files at the cap of prose, the last one filling up to exactly MAX_CORPUS_BYTES with a.md."""
    kb = _kb(root)
    big = _prose(CAP)
    full, rest = divmod(MAX_CORPUS_BYTES - (kb / "a.md").stat().st_size, CAP)
    for n in range(full):
        (kb / f"big{n:03}.md").write_bytes(big)
    if rest:
        (kb / "last.md").write_bytes(big[:rest])
    return kb


def bytes_over_corpus_cap(root: Path) -> Path:
    """One byte more than bytes_at_corpus_cap: refused (exit 2) before any file is read."""
    kb = bytes_at_corpus_cap(root)
    with open(kb / "last.md", "ab") as handle:
        handle.write(b"x")
    return kb


def _history(kb: Path, runs_json: bytes) -> None:
    (kb / ".kb-eval-history.json").write_bytes(b'{"format":"kb-eval-history","schema_version":1,"runs":' + runs_json + b"}")


def history_objects_at_cap(root: Path) -> Path:
    """A history of empty runs (`{}`) at the container cap: the most objects it may hold."""
    kb = _kb(root)
    _history(kb, b"[" + b",".join([b"{}"] * (MAX_JSON_CONTAINERS - 2)) + b"]")
    return kb


def history_floats_at_cap(root: Path) -> Path:
    """A history just under 32 MiB whose one run holds a list of floats: 8 bytes of memory per 4 of text."""
    kb = _kb(root)
    floats = b",".join([b"0.5"] * ((32 * MIB - 200) // 4))
    _history(kb, b'[{"x":[' + floats + b"]}]")
    return kb


# -- one file's cost per script and per construct: the worst of each class at the per-file cap ------

UNDER_CAP = MAX_DOCUMENT_BYTES - 64
"""Bytes of the single-file cases below: the largest file that is indexed, less a margin."""

SCRIPTS = {
    "latin": [chr(c) for c in range(ord("a"), ord("z") + 1)],
    "han": [chr(c) for c in range(0x4E00, 0x9FA6)],
    "kana": [chr(c) for c in range(0x3041, 0x3097)] + [chr(c) for c in range(0x30A1, 0x30FB)],
    "hangul": [chr(c) for c in range(0xAC00, 0xD7A4)],
}


def _random_text(alphabets: list[list[str]], size: int, seed: int = 25) -> bytes:
    """Random words of 1-8 characters from the alphabets in turn, space-separated, `size` bytes:
    the most distinct terms (and so the largest vocabulary) a file of that script can hold."""
    generator = random.Random(seed)
    words: list[bytes] = []
    total = 0
    while total < size:
        alphabet = alphabets[len(words) % len(alphabets)]
        word = "".join(generator.choices(alphabet, k=generator.randint(1, 8))).encode("utf-8") + b" "
        words.append(word)
        total += len(word)
    text = b"".join(words)[:size]
    return text.decode("utf-8", "ignore").encode("utf-8")


def _script_case(*names: str) -> Callable[[Path], Path]:
    def build(root: Path) -> Path:
        kb = _kb(root)
        (kb / "big.md").write_bytes(_random_text([SCRIPTS[name] for name in names], UNDER_CAP))
        return kb

    build.__name__ = "random_" + "_".join(names) + "_under_cap"
    build.__doc__ = f"A file at the cap of random {' and '.join(names)} words, the vocabulary's worst case for the script."
    return build


def fence_over_short_lines_under_cap(root: Path) -> Path:
    """A fence opened by half the cap of backticks, then one-character lines to the cap (8 MiB was 325 s)."""
    kb = _kb(root)
    (kb / "big.md").write_bytes(b"`" * (UNDER_CAP // 2) + b"\n" + b"a\n" * ((UNDER_CAP // 2 - 1) // 2))
    return kb


def quotes_suffix_chain(root: Path) -> Path:
    """A golden file near its cap of queries that are suffixes of one another (`a` x 12, 13, ...),
    all quoted by one note of `a` at the cap: every character ends every query (1 MiB took 355 s)."""
    kb = _kb(root)
    queries, size, length = [], 0, 12
    while size < MIB - 64 * 1024:
        queries.append(f"  - {{id: q{length}, query: {'a' * length}, expected: [a.md]}}\n")
        size += len(queries[-1])
        length += 1
    (kb / ".kb-eval.yml").write_text("queries:\n" + "".join(queries), encoding="utf-8")
    (kb / "big.md").write_bytes(b"a" * UNDER_CAP)
    return kb


def quotes_periodic(root: Path) -> Path:
    """One 2,000-character query of one letter and a note of that letter at the cap: pyahocorasick
    walks a failure chain as long as the query at every character (the quote scan's worst)."""
    kb = _kb(root)
    (kb / ".kb-eval.yml").write_text(
        f"queries:\n  - {{id: long, query: {'a' * 2000}, expected: [a.md]}}\n"
        f"  - {{id: other, query: {'b' * 12}, expected: [a.md]}}\n",
        encoding="utf-8",
    )
    (kb / "big.md").write_bytes(b"a" * UNDER_CAP)
    return kb


def quotes_located_in_one_section(root: Path) -> Path:
    """10,000 distinct queries, all quoted once at the end of one section at the cap (locating re-read
    the section once per query: hours)."""
    kb = _kb(root)
    queries = [f"golden query number {n:05d} here" for n in range(10_000)]
    (kb / ".kb-eval.yml").write_text(
        "queries:\n" + "".join(f"  - {{query: {q}, expected: [a.md]}}\n" for q in queries), encoding="utf-8"
    )
    tail = "\n".join(queries).encode("utf-8") + b"\n"
    (kb / "big.md").write_bytes(_prose(UNDER_CAP - len(tail)) + tail)
    return kb


CASES: dict[str, Callable[[Path], Path]] = {
    f.__name__: f
    for f in (
        baseline, sparse_200mb, line_50mb, line_under_cap, spaces_heading_under_cap, files_over_corpus_cap, files_at_corpus_cap,
        headings_10k, headings_100kb, golden_flat_1mib, golden_10000_queries,
        title_x_headings_57kb, title_x_headings_114kb, nested_title_headings_under_cap, empty_headings_under_cap,
        frontmatter_at_cap, sections_at_corpus_cap, sections_over_corpus_cap,
        history_objects_at_cap, history_floats_at_cap, bytes_at_corpus_cap, bytes_over_corpus_cap,
        fence_over_short_lines_under_cap, quotes_suffix_chain, quotes_periodic, quotes_located_in_one_section,
        *(_script_case(*names) for names in (("latin",), ("han",), ("kana",), ("hangul",), ("latin", "han", "kana", "hangul"))),
    )
}


def measure(name: str, as_limit_mib: int | None = None) -> str:
    with tempfile.TemporaryDirectory() as folder:
        # Built in a process of its own: Linux carries the exec'ing process's peak RSS into the
        # child's ru_maxrss (subprocess forks with vfork), so a parent that had grown while building
        # a large case would show up as the CLI's peak.
        subprocess.run([sys.executable, __file__, "--build", name, folder], check=True, cwd=REPO)
        kb = Path(folder) / "kb"
        report = Path(folder) / "report.json"
        started = time.perf_counter()
        # prlimit (util-linux) execs the CLI under the cap, so wait4 still measures the CLI itself.
        limit = [] if as_limit_mib is None else ["prlimit", f"--as={as_limit_mib * MIB}"]
        child = subprocess.Popen(
            [*limit, sys.executable, "-c", CLI, "--kb-path", str(kb), "--format", "json", "--output", str(report)],
            cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )
        sampler = TreeRssSampler(child.pid)
        sampler.start()
        _, status, usage = os.wait4(child.pid, 0)
        sampler.done.set()
        sampler.join()
        seconds = time.perf_counter() - started
        code = os.waitstatus_to_exitcode(status)
        documents = json.loads(report.read_text(encoding="utf-8"))["corpus"]["documents"] if report.exists() else "-"
    # ru_maxrss is in KiB on Linux.
    return (
        f"| {name} | {code} | {documents} | {seconds:.1f} | {usage.ru_maxrss / 1024:.0f}"
        f" | {max(sampler.peak_kib, 0) / 1024:.0f} |"
    )


def main(arguments: list[str]) -> None:
    if arguments[:1] == ["--build"]:
        CASES[arguments[1]](Path(arguments[2]))
        return
    as_limit_mib = None
    if arguments[:1] == ["--as-limit-mib"]:
        as_limit_mib = int(arguments[1])
        arguments = arguments[2:]
    # Largest process (ru_maxrss), and the largest PSS summed over the CLI and its worker processes.
    print("| case | exit | documents | seconds | peak RSS (MiB) | all processes, PSS (MiB) |")
    print("|---|---|---|---|---|---|")
    for name in arguments or list(CASES):
        print(measure(name, as_limit_mib), flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
