"""kb-eval against what a user of bm25s or tantivy writes: CPU of the whole process tree, paired.

    python bench/lean.py --data /tmp/kb-lean --docs 20000 --queries 225 --repeat 3
    python bench/lean.py --data /tmp/kb-lean --docs 20000 --queries 10000 --systems kb-eval,bm25s-lean
    python bench/lean.py --kb DIR --golden FILE --repeat 5

bench/run.py gives every system the harness's Markdown section reader (PyYAML on every
frontmatter), which is most of a reference's time and so flatters kb-eval. Here the references
read the KB the way their user would, in the ten lines of `lean_documents`: walk, read, cut the
frontmatter, one entry per file. kb-eval is its real command line (`kb-eval --no-history
--output FILE`): read, parse into sections, index, answer, the quote scan, metrics with
intervals, the validated report.

Every system runs in a fresh process per round, rounds interleaved (kb-eval, bm25s-lean,
tantivy-lean, kb-eval, ...) so a noisy minute hits all of them. Reported per system: CPU time
(user + system of the process and every child it waited for, from wait4), which is what compares
on a shared machine; wall time; peak memory as the largest PSS summed over the process tree
(bench/run.py's TreeRssSampler). Ratios are medians of the per-round ratios to --reference. The
load average is printed before and after, since CPU time also grows a little on a loaded machine.

--data is where the generated KBs live (DATA/docsN-qM-s1, made by bench/generate.py and reused).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from statistics import median

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
sys.path.insert(0, str(BENCH))

from run import TreeRssSampler

SYSTEMS = ("kb-eval", "bm25s-lean", "tantivy-lean")
TOP_K = 10


# -- what runs in the child ------------------------------------------------------------------
def lean_documents(kb: str) -> list[tuple[str, str]]:
    """The loader a user of a search library writes: walk, read, cut the frontmatter."""
    documents = []
    for root, folders, files in os.walk(kb):
        folders[:] = [f for f in folders if not f.startswith(".")]
        for name in files:
            if name.endswith((".md", ".markdown")):
                with open(os.path.join(root, name), encoding="utf-8", errors="replace") as file:
                    text = file.read()
                end = text.find("\n---\n", 4) if text.startswith("---\n") else -1
                documents.append((os.path.relpath(os.path.join(root, name), kb), text[end + 5 :] if end >= 0 else text))
    return documents


def lean_queries(golden: str) -> list[str]:
    import yaml

    with open(golden, encoding="utf-8") as file:
        return [str(entry["query"]) for entry in yaml.safe_load(file)["queries"]]


def child_bm25s(kb: str, golden: str) -> list[list[str]]:
    import bm25s
    import Stemmer

    documents = lean_documents(kb)
    queries = lean_queries(golden)
    stemmer = Stemmer.Stemmer("english")
    retriever = bm25s.BM25()
    retriever.index(bm25s.tokenize([t for _, t in documents], stopwords="en", stemmer=stemmer, show_progress=False),
                    show_progress=False)
    tokens = bm25s.tokenize(queries, stopwords="en", stemmer=stemmer, return_ids=False, show_progress=False)
    answers: list[list[str]] = []
    k = min(TOP_K, len(documents))
    for words in tokens:
        known = [w for w in words if w in retriever.vocab_dict]
        if not known:
            answers.append([])
            continue
        ids, scores = retriever.retrieve([known], k=k, show_progress=False)
        answers.append([documents[i][0] for i, s in zip(ids[0], scores[0]) if s > 0])
    return answers


def child_tantivy(kb: str, golden: str) -> list[list[str]]:
    import re

    import tantivy

    documents = lean_documents(kb)
    queries = lean_queries(golden)
    builder = tantivy.SchemaBuilder()
    builder.add_text_field("path", stored=True, tokenizer_name="raw")
    builder.add_text_field("body", tokenizer_name="en_stem")
    index = tantivy.Index(builder.build())
    writer = index.writer(heap_size=256_000_000)
    for path, text in documents:
        writer.add_document(tantivy.Document(path=path, body=text))
    writer.commit()
    writer.wait_merging_threads()
    index.reload()
    searcher = index.searcher()
    answers: list[list[str]] = []
    for query in queries:
        words = re.findall(r"\w+", query)
        if not words:
            answers.append([])
            continue
        hits = searcher.search(index.parse_query(" ".join(words), ["body"]), TOP_K).hits
        answers.append([searcher.doc(address)["path"][0] for _, address in hits])
    return answers


def child(system: str, kb: str, golden: str, out: str) -> int:
    answers = child_bm25s(kb, golden) if system == "bm25s-lean" else child_tantivy(kb, golden)
    Path(out).write_text(json.dumps({"answered": sum(1 for a in answers if a), "queries": len(answers)}))
    return 0


# -- the parent ----------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class Measured:
    system: str
    cpu_seconds: float
    wall_seconds: float
    peak_pss_mib: float
    answered: int


def command(system: str, kb: Path, golden: Path, out: Path, flags: Sequence[str] = ()) -> list[str]:
    if system == "kb-eval":
        return [sys.executable, "-c", "from scanner.cli.main import run; run()",
                f"--kb-path={kb}", f"--golden={golden}", "--no-history", "--format=json", f"--output={out}", *flags]
    return [sys.executable, str(Path(__file__).resolve()), "--child", system, str(kb), str(golden), str(out)]


def measure(system: str, kb: Path, golden: Path, flags: Sequence[str] = ()) -> Measured:
    with tempfile.TemporaryDirectory(prefix="kb-eval-lean-") as tmp:
        out = Path(tmp) / "out.json"
        started = time.perf_counter()
        process = subprocess.Popen(command(system, kb, golden, out, flags), cwd=REPO, stdout=subprocess.DEVNULL,
                                   stderr=subprocess.PIPE, env={**os.environ, "PYTHONPATH": str(REPO)})
        sampler = TreeRssSampler(process.pid)
        sampler.start()
        assert process.stderr is not None
        errors = process.stderr.read()
        # wait4's usage is the child's own plus every descendant it waited for: the whole tree.
        _, status, usage = os.wait4(process.pid, 0)
        wall = time.perf_counter() - started
        sampler.done.set()
        sampler.join()
        code = os.waitstatus_to_exitcode(status)
        if code not in (0, 1):
            raise RuntimeError(f"{system} exited {code}: {errors.decode(errors='replace')[-2000:]}")
        data = json.loads(out.read_text(encoding="utf-8"))
    answered = data["answered"] if "answered" in data else sum(1 for q in data["per_query"] if q["top_k"])
    return Measured(system, usage.ru_utime + usage.ru_stime, wall, sampler.peak_kib / 1024, answered)


def generated(data: Path, docs: int, queries: int, seed: int) -> tuple[Path, Path]:
    target = data / f"docs{docs}-q{queries}-s{seed}"
    if not (target / ".kb-eval.yml").exists():
        subprocess.run([sys.executable, str(BENCH / "generate.py"), "--docs", str(docs), "--queries", str(queries),
                        "--seed", str(seed), str(target)], check=True, stdout=subprocess.DEVNULL)
    return target / "kb", target / ".kb-eval.yml"


def load_average() -> str:
    return " ".join(f"{value:.2f}" for value in os.getloadavg())


def main(argv: list[str] | None = None) -> int:
    if argv is None and len(sys.argv) > 1 and sys.argv[1] == "--child":
        return child(*sys.argv[2:6])
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=Path(tempfile.gettempdir()) / "kb-eval-lean",
                        help="where generated KBs are made and reused")
    parser.add_argument("--docs", type=int, default=20000)
    parser.add_argument("--queries", type=int, default=225)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--kb", type=Path, help="a KB folder instead of a generated one")
    parser.add_argument("--golden", type=Path, help="its golden file (default KB/.kb-eval.yml)")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--systems", default=",".join(SYSTEMS))
    parser.add_argument("--reference", default="bm25s-lean")
    parser.add_argument("--json", type=Path, help="write every round here")
    parser.add_argument("--kb-eval-flag", action="append", default=[],
                        help="a flag for kb-eval's command line, e.g. --kb-eval-flag=--max-files=1000000 (repeatable)")
    args = parser.parse_args(argv)
    systems = [s for s in args.systems.split(",") if s]
    if any(s not in SYSTEMS for s in systems):
        parser.error(f"systems are {', '.join(SYSTEMS)}")
    if args.kb is not None:
        kb, golden = args.kb, args.golden or args.kb / ".kb-eval.yml"
    else:
        kb, golden = generated(args.data, args.docs, args.queries, args.seed)
    print(f"{kb} ({golden.name}); load average before: {load_average()}", flush=True)
    rounds: list[dict[str, Measured]] = []
    for number in range(args.repeat):
        this: dict[str, Measured] = {}
        for system in systems:
            this[system] = measure(system, kb, golden, args.kb_eval_flag)
            m = this[system]
            print(f"round {number + 1} {system:<13} CPU {m.cpu_seconds:8.2f} s  wall {m.wall_seconds:8.2f} s  "
                  f"peak {m.peak_pss_mib:7.0f} MiB  answered {m.answered}  load {load_average()}", flush=True)
        rounds.append(this)
    print(f"load average after: {load_average()}")
    print(f"{'system':<13} {'CPU s':>8} {'wall s':>8} {'peak MiB':>9} {'CPU / ' + args.reference:>18} {'wall /':>8}")
    for system in systems:
        cpu = median(r[system].cpu_seconds for r in rounds)
        wall = median(r[system].wall_seconds for r in rounds)
        peak = median(r[system].peak_pss_mib for r in rounds)
        ratio = wall_ratio = "-"
        if args.reference in systems:
            ratio = f"{median(r[system].cpu_seconds / r[args.reference].cpu_seconds for r in rounds):.2f}"
            wall_ratio = f"{median(r[system].wall_seconds / r[args.reference].wall_seconds for r in rounds):.2f}"
        print(f"{system:<13} {cpu:8.2f} {wall:8.2f} {peak:9.0f} {ratio:>18} {wall_ratio:>8}")
    if args.json:
        args.json.write_text(json.dumps({"kb": str(kb), "rounds": [{s: vars_of(m) for s, m in r.items()} for r in rounds]},
                                        indent=2) + "\n", encoding="utf-8")
    return 0


def vars_of(measured: Measured) -> dict[str, object]:
    return {f: getattr(measured, f) for f in Measured.__dataclass_fields__}


if __name__ == "__main__":
    sys.exit(main())
