"""When two runs measured the same thing: their fingerprints (every setting that changes the
numbers) are equal key by key, and when they are not, one reason per key says why."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence

from scanner.evaluation.records import RunRecord

_NAMED_FINGERPRINT_KEYS = (
    "golden_sha256",
    "retriever",
    "limit",
    "k",
    "metric_version",
    "relevance_level",
)
"""Keys with a purpose-written reason, in the order reasons are listed."""

_MAX_VALUE_CHARS = 60
"""Values quoted in a reason are cut here: they come from files a pull request controls."""


def fingerprint_differences(
    current: Mapping[str, object],
    previous: Mapping[str, object],
    against: str = "the previous run",
) -> list[str]:
    """Why two fingerprints are not equal, one human reason per differing key; empty if equal.

    `against` names the previous run in the reasons ("the previous run", "the baseline").
    Values are quoted as `previous vs current`.
    """
    reasons: list[str] = []
    keys = [key for key in _NAMED_FINGERPRINT_KEYS if key in current or key in previous]
    keys += sorted(key for key in {*current, *previous} if key not in _NAMED_FINGERPRINT_KEYS)
    order = f"({against} vs this run)"
    for key in keys:
        if key == "relevance_level":
            # Absent means trec_eval's default, 1 (the key is recorded only for another level).
            old_level, new_level = previous.get(key, 1), current.get(key, 1)
            if not _same(old_level, new_level):
                reasons.append(f"relevance level differs: {_show(old_level)} vs {_show(new_level)} {order}")
            continue
        if key not in previous:
            reasons.append(f"fingerprint field {_show(key)} is not recorded in {against}")
            continue
        if key not in current:
            reasons.append(f"fingerprint field {_show(key)} is recorded in {against} but not in this run")
            continue
        old, new = previous[key], current[key]
        if _same(old, new):
            continue
        if key == "golden_sha256":
            reasons.append(f"golden changed since {against}")
        elif key == "limit":
            reasons.append(f"limit differs: {_show(old)} vs {_show(new)} {order}")
        elif key == "k":
            reasons.append(f"k values differ: {_show(old)} vs {_show(new)} {order}")
        elif key == "metric_version":
            reasons.append(f"metric version differs: {_show(old)} vs {_show(new)} {order}")
        elif key == "retriever" and isinstance(old, Mapping) and isinstance(new, Mapping):
            for part in sorted({*old, *new}):
                if part not in old or part not in new or not _same(old[part], new[part]):
                    reasons.append(
                        f"retriever differs: {part} {_show(old.get(part))} vs {_show(new.get(part))} {order}"
                    )
        elif key == "retriever":
            reasons.append(f"retriever differs: {_show(old)} vs {_show(new)} {order}")
        else:
            reasons.append(f"fingerprint field {_show(key)} differs: {_show(old)} vs {_show(new)} {order}")
    return reasons


def _same(a: object, b: object) -> bool:
    # JSON equality: 10 == 10.0 is fine, but True must not equal 1.
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    return type(a) is type(b) and a == b or (isinstance(a, (int, float)) and isinstance(b, (int, float)) and a == b)


def _show(value: object) -> str:
    text = json.dumps(value, sort_keys=True, ensure_ascii=True)
    if len(text) > _MAX_VALUE_CHARS:
        text = text[: _MAX_VALUE_CHARS - 3] + "..."
    return text


def pick_comparable(current_fingerprint: Mapping[str, object], runs: Sequence[RunRecord]) -> RunRecord | None:
    """The newest run (runs are newest first) whose fingerprint equals this run's, or None."""
    for run in runs:
        if _same(dict(run.fingerprint), dict(current_fingerprint)):
            return run
    return None
