"""How text is cut into searchable units; shared by the index and the query compiler so both agree.

Japanese and Chinese have no spaces between words, so SQLite's unicode61
tokenizer would see a whole sentence as one token. Each run of CJK characters
is rewritten as its overlapping two-character windows (`中文检索` -> `中文 文检 检索`),
the scheme of Lucene's CJKAnalyzer: most CJK words are one or two characters,
so a paraphrased question shares bigrams with its answer even when it shares
no longer substring. Latin text passes through unchanged (and is stemmed by
the Porter tokenizer).
"""

from __future__ import annotations

import re

CJK_CHARACTERS = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af\uff66-\uff9f"
_CJK_RUN = re.compile(f"[{CJK_CHARACTERS}]+")


def _bigrams(match: re.Match[str]) -> str:
    run = match.group(0)
    if len(run) == 1:
        return f" {run} "
    return " " + " ".join(run[i : i + 2] for i in range(len(run) - 1)) + " "


def with_cjk_bigrams(text: str) -> str:
    """The text the word index holds: CJK runs expanded to bigrams, everything else as is."""
    return _CJK_RUN.sub(_bigrams, text)


def has_cjk(text: str) -> bool:
    return _CJK_RUN.search(text) is not None
