"""Public test collections turned into kb-eval knowledge bases and golden sets (quality only).

    python bench/collections.py [--out bench/.collections]

Reads the snapshots that the search tool's `fetch` brought to /work/.mirror (or any git
directory given with --mirror; the commit each one was read at is recorded in
`sources.json` beside the output) and writes, per collection, `kb/` (one Markdown file per
document: its title in the frontmatter, its text as the body) and `golden.yml` (kb-eval's
golden format, one entry per query with at least one judged-relevant document, expected at
document level). Nothing fetched is committed: the output folder is git-ignored.

The collections:
- cranfield, cisi, cacm: classic English collections with pooled (or exhaustive) judgments.
  Cranfield's graded codes 1-4 count as relevant (binary), -1 ("no interest") does not.
- jsquad (JGLUE v1.3 validation) and cmrc2018 (dev): Japanese and Chinese reading-comprehension
  sets whose questions were written by people about a Wikipedia passage. As MTEB does for such
  sets, every distinct passage becomes a document and each question's one relevant document
  is the passage it was written about.
- grooveseek: grooveseek's bilingual `tests/fixtures/kb-eval` fixture with its own golden file,
  copied unchanged.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import yaml

MIRROR = Path("/work/.mirror")
BENCH = Path(__file__).resolve().parent
DEFAULT_OUT = BENCH / ".collections"


@dataclass(frozen=True, slots=True)
class Source:
    repository: str
    """owner/name on GitHub."""
    files: tuple[str, ...]
    """Paths inside the repository that the converter reads."""


@dataclass(frozen=True, slots=True)
class Collection:
    documents: dict[str, tuple[str, str]]
    """document id -> (title, text)."""
    queries: dict[str, str]
    """query id -> text, only queries with at least one relevant document."""
    relevant: dict[str, list[str]]
    """query id -> relevant document ids."""


SOURCES: dict[str, Source] = {
    "cranfield": Source("noramtboraas/information-retrieval", ("cran.all.1400", "cran.qry", "cranqrel")),
    "cisi": Source(
        "glaucapicea/ir-model-evaluation",
        ("collections/CISI_simplified.ALL", "collections/CISI_simplified.QRY", "collections/CISI_simplified.REL"),
    ),
    "cacm": Source("atcherepanov/Stemming-Algorithm", ("cacm.all", "query.text", "qrels.text")),
    "jsquad": Source("yahoojapan/JGLUE", ("datasets/jsquad-v1.3/valid-v1.3.json",)),
    "cmrc2018": Source("ymcui/cmrc2018", ("squad-style-data/cmrc2018_dev.json",)),
    "grooveseek": Source("alphabet-h/grooveseek", ("grooveseek/tests/fixtures/kb-eval-golden.yml",)),
}


def git_dir(mirror: Path, repository: str) -> Path:
    return mirror / repository.replace("/", "+") / "repo"


def show(repo: Path, path: str) -> str:
    return subprocess.run(
        ["git", "-C", str(repo), "show", f"HEAD:{path}"], check=True, capture_output=True
    ).stdout.decode("utf-8", errors="replace")


def head(repo: Path) -> str:
    return subprocess.run(["git", "-C", str(repo), "rev-parse", "HEAD"], check=True, capture_output=True, text=True).stdout.strip()


def parse_dot_fields(text: str) -> dict[str, dict[str, str]]:
    """SMART-format records: `.I id` starts one, `.X` lines (`.T`, `.W`, ...) start a field."""
    records: dict[str, dict[str, str]] = {}
    current: dict[str, str] = {}
    field: str | None = None
    for line in text.splitlines():
        marker = re.match(r"^\.([A-Z])\b\s*(.*)$", line)
        if marker and marker.group(1) == "I":
            current = {}
            records[marker.group(2).strip()] = current
            field = None
        elif marker:
            field = marker.group(1)
            current.setdefault(field, "")
        elif field is not None:
            current[field] += line + "\n"
    return records


def squash(text: str) -> str:
    return " ".join(text.split())


def smart_collection(
    documents: dict[str, dict[str, str]], queries: dict[str, str], pairs: list[tuple[str, str]]
) -> Collection:
    relevant: dict[str, list[str]] = {}
    for query_id, doc_id in pairs:
        if doc_id in documents and query_id in queries and doc_id not in relevant.get(query_id, []):
            relevant.setdefault(query_id, []).append(doc_id)
    docs = {d: (squash(r.get("T", "")), r.get("W", "").strip()) for d, r in documents.items()}
    return Collection(docs, {q: queries[q] for q in relevant}, relevant)


def cranfield(repo: Path) -> Collection:
    documents = parse_dot_fields(show(repo, "cran.all.1400"))
    # cran.qry numbers its queries with gaps; the judgments number them 1..225 in file order.
    raw = parse_dot_fields(show(repo, "cran.qry"))
    queries = {str(n): squash(r.get("W", "")) for n, r in enumerate(raw.values(), 1)}
    pairs = []
    for line in show(repo, "cranqrel").splitlines():
        parts = line.split()
        if len(parts) == 3 and 1 <= int(parts[2]) <= 4:
            pairs.append((parts[0], parts[1]))
    return smart_collection(documents, queries, pairs)


def cisi(repo: Path) -> Collection:
    documents = parse_dot_fields(show(repo, "collections/CISI_simplified.ALL"))
    queries = {q: squash(r.get("W", "")) for q, r in parse_dot_fields(show(repo, "collections/CISI_simplified.QRY")).items()}
    pairs = [tuple(line.split()[:2]) for line in show(repo, "collections/CISI_simplified.REL").splitlines() if line.strip()]
    return smart_collection(documents, queries, pairs)  # type: ignore[arg-type]


def cacm(repo: Path) -> Collection:
    documents = parse_dot_fields(show(repo, "cacm.all"))
    queries = {q: squash(r.get("W", "")) for q, r in parse_dot_fields(show(repo, "query.text")).items()}
    pairs = []
    for line in show(repo, "qrels.text").splitlines():
        parts = line.split()
        if len(parts) >= 2:
            pairs.append((str(int(parts[0])), str(int(parts[1]))))
    return smart_collection(documents, queries, pairs)


def squad_collection(text: str, split_title: bool) -> Collection:
    """Every distinct passage is a document; a question is relevant to its own passage only."""
    passages: dict[str, str] = {}
    documents: dict[str, tuple[str, str]] = {}
    queries: dict[str, str] = {}
    relevant: dict[str, list[str]] = {}
    for article in json.loads(text)["data"]:
        for paragraph in article["paragraphs"]:
            context = paragraph["context"]
            title = article.get("title", "")
            if split_title and " [SEP] " in context:
                # JSQuAD writes each passage as "title [SEP] text".
                title, context = context.split(" [SEP] ", 1)
            if context not in passages:
                passages[context] = str(len(passages) + 1)
                documents[passages[context]] = (title.strip(), context.strip())
            for qa in paragraph["qas"]:
                question = squash(qa["question"])
                if question:
                    queries[qa["id"]] = question
                    relevant[qa["id"]] = [passages[context]]
    return Collection(documents, queries, relevant)


def jsquad(repo: Path) -> Collection:
    return squad_collection(show(repo, "datasets/jsquad-v1.3/valid-v1.3.json"), split_title=True)


def cmrc2018(repo: Path) -> Collection:
    return squad_collection(show(repo, "squad-style-data/cmrc2018_dev.json"), split_title=False)


CONVERTERS: dict[str, Callable[[Path], Collection]] = {
    "cranfield": cranfield,
    "cisi": cisi,
    "cacm": cacm,
    "jsquad": jsquad,
    "cmrc2018": cmrc2018,
}


def write_collection(collection: Collection, out: Path) -> None:
    kb = out / "kb"
    kb.mkdir(parents=True)
    for doc_id, (title, text) in collection.documents.items():
        frontmatter = f"---\ntitle: {json.dumps(title or doc_id, ensure_ascii=False)}\n---\n"
        (kb / f"{doc_id}.md").write_text(frontmatter + text + "\n", encoding="utf-8")
    golden = {
        "queries": [
            {"id": q, "query": text, "expected": [{"path": f"{d}.md"} for d in collection.relevant[q]]}
            for q, text in collection.queries.items()
        ]
    }
    (out / "golden.yml").write_text(yaml.safe_dump(golden, allow_unicode=True, sort_keys=False), encoding="utf-8")


def write_grooveseek(repo: Path, out: Path) -> None:
    listing = subprocess.run(
        ["git", "-C", str(repo), "ls-tree", "-r", "--name-only", "HEAD", "grooveseek/tests/fixtures/kb-eval/"],
        check=True, capture_output=True, text=True,
    ).stdout.split()
    for path in listing:
        target = out / "kb" / path.removeprefix("grooveseek/tests/fixtures/kb-eval/")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(show(repo, path), encoding="utf-8")
    (out / "golden.yml").write_text(show(repo, "grooveseek/tests/fixtures/kb-eval-golden.yml"), encoding="utf-8")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    parser.add_argument("--mirror", type=Path, default=MIRROR)
    args = parser.parse_args()
    sources = {}
    for name, source in SOURCES.items():
        repo = git_dir(args.mirror, source.repository)
        if not repo.exists():
            print(f"{name}: no snapshot of {source.repository} at {repo}; skipped", file=sys.stderr)
            continue
        out = args.out / name
        shutil.rmtree(out, ignore_errors=True)
        if name == "grooveseek":
            write_grooveseek(repo, out)
        else:
            collection = CONVERTERS[name](repo)
            write_collection(collection, out)
            print(f"{name}: {len(collection.documents)} documents, {len(collection.queries)} queries", file=sys.stderr)
        sources[name] = {"repository": source.repository, "commit": head(repo), "files": list(source.files)}
    (args.out / "sources.json").write_text(json.dumps(sources, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
