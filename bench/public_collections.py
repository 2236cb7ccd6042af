"""Public test collections turned into kb-eval knowledge bases and golden sets (quality only).

    python bench/public_collections.py --sources DIR [--clone] [--out bench/.collections]

Reads each collection from a git copy of the public repository that publishes it, at the commit
pinned below, so that every run converts the same bytes. `--sources DIR` is the folder holding
those copies, one per repository, named `owner+name` (a clone, bare or not, or a folder whose
`repo/` is one); with `--clone`, a missing one is cloned there from GitHub first. Writes, per
collection, `golden.yml` (kb-eval's golden format, one entry per query with at least one
judged-relevant document, expected at document level) and the knowledge base three times, once
per way Markdown sites write a page's title (`Layout`): `frontmatter/kb`, `heading/kb` and
`both/kb`, the same documents with only the title's place changed. `sources.json` beside them
records the repository, commit and files of each. Nothing fetched is committed: the output
folder is git-ignored.

The collections:
- cranfield, cisi, cacm, lisa: classic English collections with pooled (or exhaustive)
  judgments. Cranfield's graded codes 1-4 count as relevant (binary), -1 ("no interest") does not.
- jsquad (JGLUE v1.3 validation), cmrc2018 (dev) and korquad (KorQuAD 1.0 dev): Japanese,
  Chinese and Korean reading-comprehension sets whose questions were written by people about a
  Wikipedia passage. As MTEB does for such sets, every distinct passage becomes a document and
  each question's one relevant document is the passage it was written about.
- grooveseek: grooveseek's bilingual `tests/fixtures/kb-eval` fixture with its own golden file;
  its documents are rewritten only to move their titles (`relayout`).
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
from enum import Enum
from pathlib import Path

import yaml

BENCH = Path(__file__).resolve().parent
DEFAULT_OUT = BENCH / ".collections"


class Layout(str, Enum):
    """Where a page's title is written: the three common ways of Markdown sites."""

    FRONTMATTER = "frontmatter"
    """A frontmatter `title:` only (Hugo, Docusaurus)."""
    HEADING = "heading"
    """A `# Title` line only (MkDocs, most note apps)."""
    BOTH = "both"
    """Both, with the same text (many documentation sites)."""


@dataclass(frozen=True, slots=True)
class Source:
    repository: str
    """owner/name on GitHub."""
    commit: str
    """The commit the files are read at."""
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


GROOVESEEK_KB = "grooveseek/tests/fixtures/kb-eval/"

SOURCES: dict[str, Source] = {
    "cranfield": Source(
        "noramtboraas/information-retrieval", "4ea1b8e02da1db64b68b0364d50620b3c95528dc",
        ("cran.all.1400", "cran.qry", "cranqrel"),
    ),
    "cisi": Source(
        "glaucapicea/ir-model-evaluation", "74a42c64ffd4936bb820808298310bf8ae350da4",
        ("collections/CISI_simplified.ALL", "collections/CISI_simplified.QRY", "collections/CISI_simplified.REL"),
    ),
    "cacm": Source(
        "atcherepanov/Stemming-Algorithm", "a92ce141e3cba95b0213569a42cb1668201963f7",
        ("cacm.all", "query.text", "qrels.text"),
    ),
    "lisa": Source(
        # The files were deleted by the repository's next commit; this one holds them.
        "HamzaMouaz/AI-powered-information-retrieval-system", "9b403e8cde7fe9c7d2ec0feaca19a1198d87579d",
        ("Collections/LISA*", "LISA.QUE", "LISA.REL"),
    ),
    "jsquad": Source(
        "yahoojapan/JGLUE", "6f071c09316baae89c3d083a90985b4b1cb9968c", ("datasets/jsquad-v1.3/valid-v1.3.json",),
    ),
    "cmrc2018": Source("ymcui/cmrc2018", "c0eb1b6ba219847457e6af3180da722bbeb656af", ("squad-style-data/cmrc2018_dev.json",)),
    "korquad": Source(
        "korquad/korquad.github.io", "61d7d6682948375dd8f06ef27e788fd19982af38", ("dataset/KorQuAD_v1.0_dev.json",),
    ),
    "grooveseek": Source(
        "alphabet-h/grooveseek", "49be2af9158448758425613f7e79b3fee2d9efcf",
        (GROOVESEEK_KB, "grooveseek/tests/fixtures/kb-eval-golden.yml"),
    ),
}


@dataclass(frozen=True, slots=True)
class Repository:
    git_dir: Path
    commit: str

    def show(self, path: str) -> str:
        return _git(self.git_dir, "show", f"{self.commit}:{path}").decode("utf-8", errors="replace")

    def files(self, folder: str) -> list[str]:
        return _git(self.git_dir, "ls-tree", "-r", "--name-only", self.commit, folder).decode("utf-8").split("\n")[:-1]


def _git(git_dir: Path, *arguments: str) -> bytes:
    return subprocess.run(["git", "--git-dir", str(git_dir), *arguments], check=True, capture_output=True).stdout


def locate(sources: Path, source: Source, clone: bool) -> Repository | None:
    """The git directory of `source` under `sources` (cloned from GitHub first with `clone`)."""
    folder = sources / source.repository.replace("/", "+")
    for candidate in (folder / "repo", folder / ".git", folder):
        if (candidate / "HEAD").is_file():
            return Repository(candidate, source.commit)
    if not clone:
        return None
    subprocess.run(
        ["git", "clone", "--bare", "--quiet", f"https://github.com/{source.repository}.git", str(folder)], check=True
    )
    return Repository(folder, source.commit)


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


def judged_collection(
    documents: dict[str, tuple[str, str]], queries: dict[str, str], pairs: list[tuple[str, str]]
) -> Collection:
    relevant: dict[str, list[str]] = {}
    for query_id, doc_id in pairs:
        if doc_id in documents and query_id in queries and doc_id not in relevant.get(query_id, []):
            relevant.setdefault(query_id, []).append(doc_id)
    return Collection(documents, {q: queries[q] for q in relevant}, relevant)


def smart_documents(records: dict[str, dict[str, str]]) -> dict[str, tuple[str, str]]:
    return {d: (squash(r.get("T", "")), r.get("W", "").strip()) for d, r in records.items()}


def cranfield(repo: Repository) -> Collection:
    documents = smart_documents(parse_dot_fields(repo.show("cran.all.1400")))
    # cran.qry numbers its queries with gaps; the judgments number them 1..225 in file order.
    raw = parse_dot_fields(repo.show("cran.qry"))
    queries = {str(n): squash(r.get("W", "")) for n, r in enumerate(raw.values(), 1)}
    pairs = []
    for line in repo.show("cranqrel").splitlines():
        parts = line.split()
        if len(parts) == 3 and 1 <= int(parts[2]) <= 4:
            pairs.append((parts[0], parts[1]))
    return judged_collection(documents, queries, pairs)


def cisi(repo: Repository) -> Collection:
    documents = smart_documents(parse_dot_fields(repo.show("collections/CISI_simplified.ALL")))
    queries = {q: squash(r.get("W", "")) for q, r in parse_dot_fields(repo.show("collections/CISI_simplified.QRY")).items()}
    pairs = [(line.split()[0], line.split()[1]) for line in repo.show("collections/CISI_simplified.REL").splitlines() if line.strip()]
    return judged_collection(documents, queries, pairs)


def cacm(repo: Repository) -> Collection:
    documents = smart_documents(parse_dot_fields(repo.show("cacm.all")))
    queries = {q: squash(r.get("W", "")) for q, r in parse_dot_fields(repo.show("query.text")).items()}
    pairs = []
    for line in repo.show("qrels.text").splitlines():
        parts = line.split()
        if len(parts) >= 2:
            pairs.append((str(int(parts[0])), str(int(parts[1]))))
    return judged_collection(documents, queries, pairs)


def lisa(repo: Repository) -> Collection:
    """LISA (Library and Information Science Abstracts): `Document N`, the title up to the first
    blank line, then the abstract; records end with a line of asterisks. Queries are a number line
    and text up to `#`; judgments are `Query N`, `k Relevant Refs:`, then ids ending with -1."""
    documents: dict[str, tuple[str, str]] = {}
    for path in repo.files("Collections/"):
        for record in re.split(r"^\*{10,}\s*$", repo.show(path), flags=re.MULTILINE):
            match = re.match(r"\s*Document\s+(\d+)\s*\n(.*?)(?:\n\s*\n(.*))?$", record, re.DOTALL)
            if match:
                documents[match.group(1)] = (squash(match.group(2)), (match.group(3) or "").strip())
    queries = {
        match.group(1): squash(match.group(2))
        for match in re.finditer(r"^\s*(\d+)\s*\n(.*?)#", repo.show("LISA.QUE"), re.MULTILINE | re.DOTALL)
    }
    pairs = []
    for match in re.finditer(r"Query\s+(\d+)\s*\n\s*\d+\s+Relevant Refs:\s*\n([\d\s-]*?)-1", repo.show("LISA.REL")):
        pairs.extend((match.group(1), doc_id) for doc_id in match.group(2).split())
    return judged_collection(documents, queries, pairs)


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
                documents[passages[context]] = (squash(title), context.strip())
            for qa in paragraph["qas"]:
                question = squash(qa["question"])
                if question:
                    queries[qa["id"]] = question
                    relevant[qa["id"]] = [passages[context]]
    return Collection(documents, queries, relevant)


def jsquad(repo: Repository) -> Collection:
    return squad_collection(repo.show("datasets/jsquad-v1.3/valid-v1.3.json"), split_title=True)


def cmrc2018(repo: Repository) -> Collection:
    return squad_collection(repo.show("squad-style-data/cmrc2018_dev.json"), split_title=False)


def korquad(repo: Repository) -> Collection:
    # KorQuAD's titles are the Wikipedia article's, with `_` for spaces.
    collection = squad_collection(repo.show("dataset/KorQuAD_v1.0_dev.json"), split_title=False)
    documents = {d: (title.replace("_", " "), text) for d, (title, text) in collection.documents.items()}
    return Collection(documents, collection.queries, collection.relevant)


CONVERTERS: dict[str, Callable[[Repository], Collection]] = {
    "cranfield": cranfield,
    "cisi": cisi,
    "cacm": cacm,
    "lisa": lisa,
    "jsquad": jsquad,
    "cmrc2018": cmrc2018,
    "korquad": korquad,
}

# -- the title, written three ways ------------------------------------------------------------
FRONTMATTER = re.compile(r"\A---\n(.*?\n)---\n", re.DOTALL)
TITLE_KEY = re.compile(r"^title:.*\n(?:[ \t]+.*\n)*", re.MULTILINE)
FIRST_LINE_H1 = re.compile(r"\A\s*# (.+?)\s*#*\s*\n")


def page(title: str, text: str, layout: Layout, frontmatter: str = "") -> str:
    """One page: `frontmatter` (YAML lines without `title`, may be empty) and the title placed as `layout` says."""
    if layout is not Layout.HEADING:
        frontmatter = f"title: {json.dumps(title, ensure_ascii=False)}\n" + frontmatter
    head = f"---\n{frontmatter}---\n" if frontmatter else ""
    if layout is not Layout.FRONTMATTER:
        head += f"# {title}\n\n"
    return head + text.strip("\n") + "\n"


def relayout(text: str, fallback_title: str, layout: Layout) -> str:
    """A page written with its title in any of the three places, rewritten with it in `layout`.
    The title is the frontmatter's `title`, else a `# Title` first line, else the file name."""
    frontmatter, body, title = "", text, None
    match = FRONTMATTER.match(text)
    if match:
        frontmatter, body = match.group(1), text[match.end() :]
        data = yaml.safe_load(frontmatter)
        if isinstance(data, dict) and isinstance(data.get("title"), str):
            title = " ".join(data["title"].split())
        frontmatter = TITLE_KEY.sub("", frontmatter)
    heading = FIRST_LINE_H1.match(body)
    if heading and (title is None or " ".join(heading.group(1).split()) == title):
        title, body = " ".join(heading.group(1).split()), body[heading.end() :]
    return page(title or fallback_title, body, layout, frontmatter)


def write_golden(collection: Collection, out: Path) -> None:
    golden = {
        "queries": [
            {"id": q, "query": text, "expected": [{"path": f"{d}.md"} for d in collection.relevant[q]]}
            for q, text in collection.queries.items()
        ]
    }
    (out / "golden.yml").write_text(yaml.safe_dump(golden, allow_unicode=True, sort_keys=False), encoding="utf-8")


def write_collection(collection: Collection, out: Path) -> None:
    for layout in Layout:
        kb = out / layout.value / "kb"
        kb.mkdir(parents=True)
        for doc_id, (title, text) in collection.documents.items():
            (kb / f"{doc_id}.md").write_text(page(title or doc_id, text, layout), encoding="utf-8")
    write_golden(collection, out)


def write_grooveseek(repo: Repository, out: Path) -> None:
    for path in repo.files(GROOVESEEK_KB):
        relative = path.removeprefix(GROOVESEEK_KB)
        text = repo.show(path)
        for layout in Layout:
            target = out / layout.value / "kb" / relative
            target.parent.mkdir(parents=True, exist_ok=True)
            stem = relative.rsplit("/", 1)[-1].split(".", 1)[0]
            target.write_text(relayout(text, stem, layout) if path.endswith(".md") else text, encoding="utf-8")
    (out / "golden.yml").write_text(repo.show("grooveseek/tests/fixtures/kb-eval-golden.yml"), encoding="utf-8")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--sources", type=Path, required=True,
        help="folder holding a git copy of each source repository, named owner+name (see --clone)",
    )
    parser.add_argument("--clone", action="store_true", help="clone a missing repository from GitHub into --sources")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    parser.add_argument("--only", nargs="*", choices=list(SOURCES), default=list(SOURCES))
    args = parser.parse_args()
    written = {}
    missing = []
    for name in args.only:
        source = SOURCES[name]
        repo = locate(args.sources, source, args.clone)
        if repo is None:
            missing.append(f"{name}: no git copy of {source.repository} in {args.sources}; clone it there or add --clone")
            continue
        out = args.out / name
        shutil.rmtree(out, ignore_errors=True)
        if name == "grooveseek":
            write_grooveseek(repo, out)
        else:
            collection = CONVERTERS[name](repo)
            write_collection(collection, out)
            print(f"{name}: {len(collection.documents)} documents, {len(collection.queries)} queries", file=sys.stderr)
        written[name] = {"repository": source.repository, "commit": source.commit, "files": list(source.files)}
    args.out.mkdir(parents=True, exist_ok=True)
    sources_file = args.out / "sources.json"
    previous = json.loads(sources_file.read_text(encoding="utf-8")) if sources_file.exists() else {}
    sources_file.write_text(json.dumps({**previous, **written}, indent=2) + "\n", encoding="utf-8")
    for line in missing:
        print(line, file=sys.stderr)
    return 2 if missing else 0


if __name__ == "__main__":
    raise SystemExit(main())
