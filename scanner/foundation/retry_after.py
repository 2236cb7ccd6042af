"""The one reading of an HTTP `Retry-After` header, for every client kb-eval has (a search service,
the GitHub API)."""

from __future__ import annotations

import email.utils
import re
import time

_ASCII_NUMBER = re.compile(r"[0-9]+")

LONG_WAIT_S = 86_400.0
"""What a delta past six digits means: "a long time". Thousands of digits would pass int()'s
limit check only to overflow float(); every caller caps the wait far below this anyway."""


def retry_after_seconds(value: str | None, now: float | None = None) -> float | None:
    """Seconds to wait from a Retry-After value (delta-seconds or an HTTP-date, RFC 9110 10.2.3);
    None when absent or unusable. A date in the past is 0. `now` (epoch seconds) is for tests."""
    if value is None:
        return None
    value = value.strip()
    # ASCII digits only: str.isdigit() accepts '²', which int() refuses.
    if _ASCII_NUMBER.fullmatch(value):
        return float(value) if len(value) <= 6 else LONG_WAIT_S
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, OverflowError, IndexError):
        return None
    try:
        return max(0.0, when.timestamp() - (time.time() if now is None else now))
    except (OverflowError, ValueError, OSError):
        return None
