"""Seeded synthetic Markdown KB and golden set, for benchmarking kb-eval.

    python bench/generate.py --docs 1000 --queries 100 --seed 1 OUT_DIR

writes OUT_DIR/kb/**.md and OUT_DIR/.kb-eval.yml. The same arguments always
give the same bytes (only `random.Random(seed)` decides anything, and nothing
iterates over a set or a hash-ordered container).

Shape, chosen to exercise what a real KB has: YAML frontmatter (title, tags)
on most files, ATX and setext headings at levels 1-4, fenced code blocks
(``` and ~~~), bullet and numbered lists, English, Japanese and mixed
documents, short and long documents, nested folders, non-ASCII file names.
Each document and each section has a few distinctive topic terms on top of
Zipf-distributed background words, so a section can be found by its words but
not trivially.

Golden queries are paraphrase-like bags of words drawn from the expected
section (topic terms weighted up, English words sometimes inflected, a noise
word sometimes added, order shuffled), so the expected section is the best
match only in expectation. A few "leak" notes quote 2-3 golden queries
verbatim, so the quote scan has something to find.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
from array import array
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from vocabulary import (
    ENGLISH_FUNCTION_WORDS,
    ENGLISH_SUFFIXES,
    ENGLISH_WORDS,
    JAPANESE_ENDINGS,
    JAPANESE_PARTICLES,
    JAPANESE_WORDS,
    Vocabulary,
    build_vocabulary,
)

ENGLISH_COMPOUNDS = 40_000
JAPANESE_COMPOUNDS = 20_000
TOPIC_SKIP = 300
"""Topic terms come from past this Zipf rank, so they are rare in the background text."""
DOCS_PER_CLUSTER = 15
CLUSTER_TERMS = 12
MIN_QUOTABLE_QUERY = 12
"""The quote scan ignores queries shorter than this (seed decision 0006)."""
FUNCTION_WORDS = frozenset(  # queries do not draw function words
    ENGLISH_WORDS[:ENGLISH_FUNCTION_WORDS])
TAGS = ("ops", "howto", "design", "incident", "meeting", "reference", "draft", "ml", "infra", "team")
CODE_LANGUAGES = ("python", "bash", "yaml", "sql", "go", "")


@dataclass(frozen=True, slots=True)
class Section:
    """A generated section, as a query generator needs to see it."""

    heading: str
    """Heading text as written (empty for text before the first heading)."""
    language: str
    """"en" or "ja"."""
    words: tuple[str, ...]
    """Every content word written in the section, in order."""
    topic: tuple[str, ...]
    """Distinctive terms of this section and of its document that it uses."""


@dataclass(frozen=True, slots=True)
class GeneratedDocument:
    path: str
    language: str
    text: str
    sections: tuple[Section, ...]


@dataclass(frozen=True, slots=True)
class GoldenQuery:
    id: str
    text: str
    path: str
    heading: str | None
    language: str


@dataclass(frozen=True, slots=True)
class Vocabularies:
    en: Vocabulary
    ja: Vocabulary

    def of(self, language: str) -> Vocabulary:
        return self.en if language == "en" else self.ja


@dataclass(frozen=True, slots=True)
class Cluster:
    """Topic terms shared by a group of documents about the same subject.

    Real KBs have many near-duplicate notes on one subject; without clusters
    every document would own its rare terms and retrieval would be trivial.
    """

    en: tuple[str, ...]
    ja: tuple[str, ...]

    def of(self, language: str) -> tuple[str, ...]:
        return self.en if language == "en" else self.ja


def make_clusters(rng: random.Random, vocab: Vocabularies, count: int) -> list[Cluster]:
    return [
        Cluster(tuple(vocab.en.sample_tail(rng, CLUSTER_TERMS, TOPIC_SKIP)), tuple(vocab.ja.sample_tail(rng, CLUSTER_TERMS, TOPIC_SKIP)))
        for _ in range(count)
    ]


class DocumentWriter:
    """Writes one document's Markdown; keeps the per-section word record beside it."""

    def __init__(self, rng: random.Random, vocab: Vocabularies, language: str, cluster: Cluster) -> None:
        self.rng = rng
        self.vocab = vocab
        self.language = language
        self.cluster = cluster
        self.lines: list[str] = []
        self.sections: list[Section] = []
        self.doc_topic = {"en": rng.sample(cluster.en, 6), "ja": rng.sample(cluster.ja, 6)}
        self.headings_seen: list[str] = []
        self.setext = rng.random() < 0.2
        self._words: list[str] = []
        self._topic_used: list[str] = []
        self._section_topic: list[str] = []
        self._section_language = "en"
        self._heading = ""

    # -- words -------------------------------------------------------------
    def draw(self, count: int, language: str) -> list[str]:
        rng = self.rng
        background = self.vocab.of(language).sample(rng, count)
        out: list[str] = []
        for word in background:
            roll = rng.random()
            if roll < 0.12 and self._section_topic:
                word = rng.choice(self._section_topic)
                self._topic_used.append(word)
            elif roll < 0.24:
                word = rng.choice(self.doc_topic[language])
                self._topic_used.append(word)
            out.append(word)
        self._words.extend(out)
        return out

    def section_language(self) -> str:
        if self.language == "mixed":
            return self.rng.choice(("en", "ja"))
        return self.language

    def sentence(self, language: str) -> str:
        rng = self.rng
        if language == "en":
            words = self.draw(rng.randint(6, 16), "en")
            if rng.random() < 0.15:
                i = rng.randrange(len(words))
                words[i] = f"`{words[i]}`"
            text = " ".join(words)
            return text[0].upper() + text[1:] + "."
        words = self.draw(rng.randint(3, 7), "ja")
        parts: list[str] = []
        for i, word in enumerate(words):
            if i and rng.random() < 0.1:
                # Mixed-script sentences are common in Japanese tech notes.
                parts.append(" " + self.draw(1, "en")[0] + " ")
            parts.append(word)
            if i < len(words) - 1:
                parts.append(rng.choice(JAPANESE_PARTICLES))
        return "".join(parts) + rng.choice(JAPANESE_ENDINGS)

    # -- blocks ------------------------------------------------------------
    def paragraph(self, language: str) -> None:
        joiner = " " if language == "en" else ""
        self.lines.append(joiner.join(self.sentence(language) for _ in range(self.rng.randint(1, 3))))
        self.lines.append("")

    def bullet_list(self, language: str) -> None:
        rng = self.rng
        numbered = rng.random() < 0.3
        marker = rng.choice(("-", "*"))
        for i in range(rng.randint(2, 6)):
            words = self.draw(rng.randint(2, 6), language)
            item = " ".join(words) if language == "en" else rng.choice(JAPANESE_PARTICLES).join(words)
            self.lines.append(f"{i + 1}. {item}" if numbered else f"{marker} {item}")
        self.lines.append("")

    def code_block(self) -> None:
        rng = self.rng
        fence = "```" if rng.random() < 0.85 else "~~~"
        self.lines.append(fence + rng.choice(CODE_LANGUAGES))
        for _ in range(rng.randint(2, 9)):
            a, b, c = self.draw(3, "en")
            kind = rng.random()
            if kind < 0.4:
                self.lines.append(f"{a}_{b} = {c}({rng.randint(0, 999)})")
            elif kind < 0.7:
                self.lines.append(f"  {a}: {b}-{c}")
            else:
                # A heading-like line inside a fence must not start a section.
                self.lines.append(f"# {a} {b} {c}")
        self.lines.append(fence)
        self.lines.append("")

    def body(self, language: str, blocks: int) -> None:
        for _ in range(blocks):
            roll = self.rng.random()
            if roll < 0.6:
                self.paragraph(language)
            elif roll < 0.82:
                self.bullet_list(language)
            else:
                self.code_block()

    # -- sections ----------------------------------------------------------
    def heading_text(self, language: str) -> str:
        rng = self.rng
        while True:
            words = [rng.choice(self._section_topic)]
            words += self.vocab.of(language).sample(rng, rng.randint(1, 3))
            rng.shuffle(words)
            if language == "en":
                text = " ".join(words)
                text = text[0].upper() + text[1:]
            else:
                text = rng.choice(JAPANESE_PARTICLES).join(words)
            if text not in self.headings_seen:
                self.headings_seen.append(text)
                return text

    def write_heading(self, level: int, text: str) -> None:
        rng = self.rng
        if level <= 2 and self.setext:
            self.lines.append(text)
            self.lines.append(("=" if level == 1 else "-") * max(3, len(text)))
        elif rng.random() < 0.03:
            self.lines.append(f"{'#' * level} {text} {'#' * level}")
        else:
            self.lines.append(f"{'#' * level} {text}")
        self.lines.append("")

    def start_section(self, heading: str, language: str) -> None:
        self.close_section()
        self._heading = heading
        self._section_language = language
        self._words = []
        self._topic_used = []

    def close_section(self) -> None:
        if self._words:
            topic = tuple(dict.fromkeys(self._topic_used))
            self.sections.append(Section(self._heading, self._section_language, tuple(self._words), topic))
        self._words = []

    def new_section_topic(self, language: str) -> None:
        # Two terms shared with sibling documents of the cluster, one of the section's own.
        self._section_topic = self.rng.sample(self.cluster.of(language), 2)
        self._section_topic += self.vocab.of(language).sample_tail(self.rng, 1, TOPIC_SKIP)


def document_path(rng: random.Random, index: int, language: str, title_words: list[str]) -> str:
    folders = [rng.choice(ENGLISH_WORDS[ENGLISH_FUNCTION_WORDS:200]) for _ in range(rng.choice((0, 1, 1, 2, 2, 3)))]
    if language != "en" and rng.random() < 0.3:
        stem = "".join(title_words[:2])
    else:
        stem = "-".join(w.lower() for w in title_words[:3] if w.isascii()) or "note"
    return "/".join([*folders, f"{stem}-{index:06d}.md"])


def generate_document(rng: random.Random, vocab: Vocabularies, index: int, clusters: list[Cluster]) -> GeneratedDocument:
    roll = rng.random()
    language = "en" if roll < 0.55 else "ja" if roll < 0.8 else "mixed"
    writer = DocumentWriter(rng, vocab, language, rng.choice(clusters))
    size = rng.random()
    sections = rng.randint(1, 3) if size < 0.25 else rng.randint(4, 12) if size < 0.75 else rng.randint(13, 30)

    title_language = "ja" if language == "ja" else "en"
    writer.new_section_topic(title_language)
    title_words = writer.doc_topic[title_language][:2] + vocab.of(title_language).sample(rng, rng.randint(0, 2))
    title = " ".join(title_words) if title_language == "en" else "の".join(title_words)
    if title_language == "en":
        title = title[0].upper() + title[1:]
    path = document_path(rng, index, language, title_words)

    has_frontmatter = rng.random() < 0.85
    if has_frontmatter:
        tags = rng.sample(TAGS, rng.randint(1, 3))
        writer.lines += ["---", f"title: {json.dumps(title, ensure_ascii=False)}", f"tags: [{', '.join(tags)}]", "---", ""]
    if not has_frontmatter or rng.random() < 0.5:
        writer.start_section(title, title_language)
        writer.headings_seen.append(title)
        writer.write_heading(1, title)
    else:
        writer.start_section("", title_language)
    if rng.random() < 0.6:
        writer.body(title_language, rng.randint(1, 2))

    level = 2
    for _ in range(sections):
        section_language = writer.section_language()
        writer.new_section_topic(section_language)
        level = 2 if level >= 4 or rng.random() < 0.5 else level + 1
        heading = writer.heading_text(section_language)
        writer.start_section(heading, section_language)
        writer.write_heading(level, heading)
        writer.body(section_language, rng.randint(1, 3))
    writer.close_section()
    text = "\n".join(writer.lines).rstrip("\n") + "\n"
    return GeneratedDocument(path, language, text, tuple(writer.sections))


def query_from_section(rng: random.Random, vocab: Vocabularies, section: Section) -> str:
    """A paraphrase-like bag of words: mostly the section's own distinctive words."""
    language = section.language
    if language == "en":
        pool = [w for w in section.words if w not in FUNCTION_WORDS]
    else:
        pool = list(section.words)
    weighted = pool + list(section.topic)
    want = rng.randint(3, 6) if language == "en" else rng.randint(2, 4)
    chosen: list[str] = []
    for _ in range(want * 4):
        if len(chosen) == want or not weighted:
            break
        word = rng.choice(weighted)
        if word not in chosen:
            chosen.append(word)
    if rng.random() < 0.3:
        chosen.insert(rng.randrange(len(chosen) + 1), vocab.of(language).sample(rng, 1)[0])
    rng.shuffle(chosen)
    if language == "en":
        words = [w + rng.choice(ENGLISH_SUFFIXES) if w.isalpha() and rng.random() < 0.25 else w for w in chosen]
        text = " ".join(words)
        if rng.random() < 0.2:
            text = "how to " + text
        return text
    if rng.random() < 0.4:
        # Space-separated keywords, as people type them into a search box.
        return " ".join(chosen)
    text = "".join(w + rng.choice(JAPANESE_PARTICLES) for w in chosen[:-1]) + chosen[-1]
    return text + rng.choice(("", "", "の方法", "について", "の手順"))


def generate_queries(
    rng: random.Random, vocab: Vocabularies, documents: list[StoredDocument], count: int
) -> list[GoldenQuery]:
    queries: list[GoldenQuery] = []
    seen: list[str] = []
    seen_set: set[str] = set()  # membership only; never iterated, so order stays seeded
    attempts = 0
    while len(queries) < count and attempts < count * 20:
        attempts += 1
        doc = rng.choice(documents)
        candidates = [s for s in doc.sections if len(s.words) >= 8]
        if not candidates:
            continue
        section = rng.choice(candidates)
        text = query_from_section(rng, vocab, section)
        if text in seen_set:
            continue
        seen.append(text)
        seen_set.add(text)
        heading = section.heading if section.heading and rng.random() < 0.9 else None
        queries.append(GoldenQuery(f"q{len(queries) + 1:05d}", text, doc.path, heading, section.language))
    return queries


def leak_notes(rng: random.Random, queries: list[GoldenQuery], count: int) -> list[GeneratedDocument]:
    """Notes that quote 2-3 golden queries verbatim, as a note about the test would."""
    quotable = [q for q in queries if len(" ".join(q.text.split())) >= MIN_QUOTABLE_QUERY]
    notes: list[GeneratedDocument] = []
    for i in range(count):
        if len(quotable) < 2:
            break
        quoted = rng.sample(quotable, min(len(quotable), rng.randint(2, 3)))
        lines = ["---", f'title: "Golden set notes {i + 1}"', "tags: [eval]", "---", "", "## How the golden queries were chosen", ""]
        lines += [f"- We check `{q.text}` because it is asked often." for q in quoted]
        notes.append(GeneratedDocument(f"eval-notes/golden-notes-{i + 1:03d}.md", "en", "\n".join(lines) + "\n", ()))
    return notes


def render_golden(queries: list[GoldenQuery]) -> str:
    lines = ["# Generated by bench/generate.py; do not edit.", "queries:"]
    for q in queries:
        lines.append(f"  - id: {q.id}")
        lines.append(f"    query: {json.dumps(q.text, ensure_ascii=False)}")
        lines.append("    expected:")
        lines.append(f"      - path: {json.dumps(q.path, ensure_ascii=False)}")
        if q.heading is not None:
            lines.append(f"        heading: {json.dumps(q.heading, ensure_ascii=False)}")
        lines.append(f"    tags: [{q.language}]")
    return "\n".join(lines) + "\n"


def build_vocabularies(seed: int) -> Vocabularies:
    rng = random.Random(f"vocabulary-{seed}")
    return Vocabularies(
        en=build_vocabulary(ENGLISH_WORDS, ENGLISH_COMPOUNDS, rng, ENGLISH_FUNCTION_WORDS),
        ja=build_vocabulary(JAPANESE_WORDS, JAPANESE_COMPOUNDS, rng),
    )


class StoredDocument:
    """A written document as the query generator needs it, kept small.

    A million documents held whole (text and word tuples) need more memory than the machine that
    benchmarks them; the text is on disk once written, and each section's words are kept as an
    array of ids into one table of the distinct words, which gives back equal strings.
    """

    __slots__ = ("_sections", "_table", "path")

    def __init__(self, doc: GeneratedDocument, ids: dict[str, int], table: list[str]) -> None:
        self.path = doc.path
        self._table = table
        stored = []
        for section in doc.sections:
            word_ids = array("I")
            for word in section.words:
                found = ids.get(word)
                if found is None:
                    found = ids[word] = len(table)
                    table.append(word)
                word_ids.append(found)
            stored.append((section.heading, section.language, word_ids, section.topic))
        self._sections = tuple(stored)

    @property
    def sections(self) -> tuple[Section, ...]:
        table = self._table
        return tuple(Section(heading, language, tuple(table[i] for i in word_ids), topic)
                     for heading, language, word_ids, topic in self._sections)


def generate(out_dir: Path, docs: int, queries: int, seed: int, leaks: int, documents_from: Path | None = None) -> None:
    rng = random.Random(seed)
    vocab = build_vocabularies(seed)
    kb = out_dir / "kb"
    clusters = make_clusters(rng, vocab, max(1, docs // DOCS_PER_CLUSTER))
    made: set[Path] = set()

    def write(doc: GeneratedDocument, reusable: bool = False) -> None:
        target = kb / doc.path
        if target.parent not in made:
            target.parent.mkdir(parents=True, exist_ok=True)
            made.add(target.parent)
        data = doc.text.encode("utf-8")
        if reusable and documents_from is not None:
            # The documents come before the queries in rng's sequence, so another query count
            # gives the same documents: linked, once their bytes are seen to be these.
            source = documents_from / "kb" / doc.path
            if not source.is_file() or source.read_bytes() != data:
                print(f"error: {source} is not this generation's document; not the same --docs and --seed", file=sys.stderr)
                raise SystemExit(2)
            os.link(source, target)
            return
        target.write_bytes(data)

    # Each document is written as it is made (nothing below draws from rng in between, so the
    # bytes are those of generating all first), and only what the queries need is kept.
    ids: dict[str, int] = {}
    table: list[str] = []
    documents: list[StoredDocument] = []
    for i in range(docs):
        doc = generate_document(rng, vocab, i, clusters)
        write(doc, reusable=True)
        documents.append(StoredDocument(doc, ids, table))
    golden = generate_queries(rng, vocab, documents, queries)
    for note in leak_notes(rng, golden, leaks):
        write(note)
    (out_dir / ".kb-eval.yml").write_bytes(render_golden(golden).encode("utf-8"))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--docs", type=int, required=True)
    parser.add_argument("--queries", type=int, required=True)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--leaks", type=int, default=2, help="notes quoting 2-3 golden queries verbatim")
    parser.add_argument(
        "--documents-from", type=Path, default=None,
        help="a generation with the same --docs and --seed: its documents are hard-linked (bytes checked), not written",
    )
    parser.add_argument("out_dir", type=Path)
    args = parser.parse_args(argv)
    if args.out_dir.exists() and any(args.out_dir.iterdir()):
        print(f"error: {args.out_dir} is not empty; generate into a new folder", file=sys.stderr)
        return 2
    generate(args.out_dir, args.docs, args.queries, args.seed, args.leaks, args.documents_from)
    print(f"{args.out_dir / 'kb'}\n{args.out_dir / '.kb-eval.yml'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
