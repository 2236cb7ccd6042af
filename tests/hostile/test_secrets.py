"""Secrets never print, not even in part: every message is scrubbed before it is cut."""

from __future__ import annotations

import shlex
import sys

import pytest

from scanner.foundation.errors import InputError
from scanner.retrievers.base import SearchRequest
from scanner.retrievers.command import STDERR_TAIL_BYTES, CommandRetriever, CommandSettings
from scanner.retrievers.http import HttpRetriever
from scanner.retrievers.http_settings import SNIPPET_CHARS, HeaderSpec, HttpSettings
from scanner.retrievers.mapping import ResponseMapping, scrub_and_cut
from tests.support.loopback_server import Reply, running

TOKEN = "tok_0123456789SECRETabcdef"
REQUEST = [SearchRequest("q1", "alpha", 5)]


def pieces(secret: str, size: int = 5) -> list[str]:
    """Every run of `size` characters of the secret: none may appear in a message."""
    return [secret[i : i + size] for i in range(len(secret) - size + 1)]


def assert_no_piece(message: str, secret: str = TOKEN) -> None:
    leaked = [piece for piece in pieces(secret) if piece in message]
    assert leaked == [], message


@pytest.mark.parametrize("offset", [SNIPPET_CHARS - 5, SNIPPET_CHARS - len(TOKEN) + 3, 0, SNIPPET_CHARS - 1])
def test_a_token_echoed_across_the_cut_of_an_error_body_is_not_shown_in_part(offset: int) -> None:
    body = ("x" * offset + TOKEN + "y" * 300).encode()
    with running(lambda _: Reply(status=400, body=body)) as server:
        settings = HttpSettings(url=server.url, headers=(HeaderSpec("Authorization", "Bearer ${KB_TOKEN}"),), retries=0)
        retriever = HttpRetriever(settings, ResponseMapping(), {"KB_TOKEN": TOKEN})
        with pytest.raises(InputError) as caught:
            retriever.search_all(REQUEST)
    assert_no_piece(str(caught.value))
    assert "HTTP 400" in str(caught.value) and "***" in str(caught.value)


def test_an_error_body_without_a_secret_is_shown() -> None:
    with running(lambda _: Reply(status=400, body=b"bad field 'q'")) as server:
        retriever = HttpRetriever(HttpSettings(url=server.url, retries=0), ResponseMapping(), {})
        with pytest.raises(InputError, match="bad field 'q'"):
            retriever.search_all(REQUEST)


def _command(code: str) -> CommandRetriever:
    template = f"{shlex.quote(sys.executable)} -c {shlex.quote(code)} {{query}}"
    settings = CommandSettings(template, 10.0, 1, ("KB_TOKEN",))
    return CommandRetriever(settings, ResponseMapping(), {"PATH": "/usr/bin:/bin", "KB_TOKEN": TOKEN})


@pytest.mark.parametrize("before_end", [STDERR_TAIL_BYTES + 5, STDERR_TAIL_BYTES - 3, 40])
def test_a_token_echoed_on_stderr_across_the_tail_cut_is_not_shown_in_part(before_end: int) -> None:
    # The token starts `before_end` bytes before the end of stderr: across the cut, or well inside.
    code = (
        "import os, sys; t = os.environ['KB_TOKEN']; "
        f"sys.stderr.write('e' * 5000 + t + 'z' * ({before_end} - len(t))); sys.exit(1)"
    )
    with pytest.raises(InputError) as caught:
        _command(code).search_all(REQUEST)
    assert_no_piece(str(caught.value))
    assert "zzzz" in str(caught.value)


@pytest.mark.parametrize("offset", [SNIPPET_CHARS - 5, 10])
def test_a_token_on_stdout_that_is_not_json_is_not_shown_in_part(offset: int) -> None:
    code = f"import os; print('<' * {offset} + os.environ['KB_TOKEN'] + '>' * 300)"
    with pytest.raises(InputError, match="not JSON") as caught:
        _command(code).search_all(REQUEST)
    assert_no_piece(str(caught.value))


def test_scrub_and_cut_masks_a_secret_on_both_sides_of_the_cut() -> None:
    assert scrub_and_cut("abcSECRETdef", ["SECRET"], 5) == "abc***"
    assert scrub_and_cut("abcSECRETdef", ["SECRET"], 5, keep_end=True) == "***def"
    assert scrub_and_cut("abcdef", ["SECRET"], 5) == "abcde"  # the near miss: plain text is cut as is
