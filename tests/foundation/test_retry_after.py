"""The one Retry-After reading, against RFC 9110's two forms and the hostile ones."""

from __future__ import annotations

import email.utils

import pytest

from scanner.foundation.retry_after import LONG_WAIT_S, retry_after_seconds

NOW = 1_800_000_000.0


@pytest.mark.parametrize(
    ("value", "seconds"),
    [
        ("120", 120.0),
        (" 7 ", 7.0),
        ("0", 0.0),
        ("9" * 4000, LONG_WAIT_S),  # would overflow float(), and int() has a digit limit
        (email.utils.formatdate(NOW + 30, usegmt=True), 30.0),
        (email.utils.formatdate(NOW - 30, usegmt=True), 0.0),  # a date in the past: go now
    ],
)
def test_both_forms_are_read(value: str, seconds: float) -> None:
    assert retry_after_seconds(value, now=NOW) == pytest.approx(seconds)


@pytest.mark.parametrize("value", [None, "", "soon", "-5", "1.5", "²", "Wed, 99 Foo 2026 99:99:99 GMT"])
def test_an_unusable_value_is_none(value: str | None) -> None:
    assert retry_after_seconds(value, now=NOW) is None


def test_the_clients_use_the_one_parser() -> None:
    from tests.conftest import REPO

    for client in ("scanner/retrievers/http.py", "scanner/github/comment.py"):
        source = (REPO / client).read_text(encoding="utf-8")
        assert "retry_after_seconds(" in source, client
        assert "parsedate" not in source, client
