"""The http retriever against a real server on 127.0.0.1 (tests/support/loopback_server.py).

Timeouts, retries and backoff are kept small so the whole file runs in a few seconds.
"""

from __future__ import annotations

import base64
import json
import socket
import time

import pytest

from scanner.foundation.errors import InputError
from scanner.retrievers import http as http_module
from scanner.retrievers.base import Hit, SearchRequest
from scanner.retrievers.http import HttpRetriever
from scanner.retrievers.http_settings import HeaderSpec, HttpMethod, HttpSettings, parse_header
from scanner.retrievers.mapping import ResponseMapping
from tests.support.loopback_server import (
    Received,
    Reply,
    running,
    sequence_per_query,
    serve_rankings,
)

FAST = {"timeout_s": 2.0, "retries": 2, "backoff_s": 0.01, "backoff_cap_s": 0.05}
TOKEN = "tok-7f3a9c-SECRET"
ENV = {"KB_TOKEN": TOKEN}

RANKINGS = {
    f"query {n}": [
        {"path": f"docs/d{(n + i) % 7}.md", "heading": f"H{i}", "score": 10.0 - i} for i in range(5)
    ]
    for n in range(20)
}
REQUESTS = [SearchRequest(query_id=f"q{n}", text=f"query {n}", limit=3) for n in range(20)]


def settings(url: str, **overrides: object) -> HttpSettings:
    values: dict[str, object] = {"url": url, **FAST, **overrides}
    return HttpSettings(**values)  # type: ignore[arg-type]


def retriever(url: str, mapping: ResponseMapping | None = None, **overrides: object) -> HttpRetriever:
    return HttpRetriever(settings(url, **overrides), mapping or ResponseMapping(), ENV)


def one(query_id: str = "q1", text: str = "query 1", limit: int = 3) -> list[SearchRequest]:
    return [SearchRequest(query_id=query_id, text=text, limit=limit)]


def ok_results(_request: Received) -> Reply:
    return Reply(body={"results": [{"path": "a.md", "heading": "Intro", "score": 2.5}]})


def test_hits_from_a_kb_mcp_style_answer_are_ranked_in_list_order_and_cut_to_the_limit() -> None:
    with running(serve_rankings(RANKINGS)) as server:
        results = retriever(server.url + "/search").search_all(one(limit=2))
    assert results == [[Hit(1, "docs/d1.md", "H0", 10.0), Hit(2, "docs/d2.md", "H1", 9.0)]]
    assert server.received[0].json() == {"query": "query 1", "limit": 2}
    assert server.received[0].path == "/search"


def test_a_query_with_quotes_and_backslashes_reaches_the_server_as_the_exact_json_string() -> None:
    hostile = 'he said "stop" \\ then {limit} ${HOME} \n next'
    with running(ok_results) as server:
        retriever(server.url).search_all(one(text=hostile, limit=4))
    assert server.received[0].json() == {"query": hostile, "limit": 4}


def test_a_body_template_fills_placeholders_inside_strings_and_nested_values() -> None:
    template = '{"q": {"text": "find: {query}"}, "size": {limit}, "opts": ["{limit}", "{query}"]}'
    with running(ok_results) as server:
        retriever(server.url, body_template=template).search_all(one(text="x y", limit=5))
    assert server.received[0].json() == {"q": {"text": "find: x y"}, "size": 5, "opts": [5, "x y"]}


def test_get_sends_the_template_as_query_parameters() -> None:
    with running(ok_results) as server:
        retriever(
            server.url + "/s?index=kb", method=HttpMethod.GET, body_template='{"query": "{query}", "limit": {limit}, "all": true}'
        ).search_all(one(text="a&b=c", limit=7))
    received = server.received[0]
    assert received.method == "GET"
    assert received.params == {"index": ["kb"], "query": ["a&b=c"], "limit": ["7"], "all": ["true"]}
    assert received.body == b""


def test_a_get_template_that_is_not_flat_is_refused() -> None:
    with pytest.raises(InputError, match="flat JSON object"):
        retriever("http://127.0.0.1:9", method=HttpMethod.GET, body_template='{"q": {"text": "{query}"}}')


def test_a_body_template_without_query_is_refused() -> None:
    with pytest.raises(InputError, match="never uses"):
        retriever("http://127.0.0.1:9", body_template='{"limit": {limit}}')


def test_a_body_template_that_is_not_json_is_refused() -> None:
    with pytest.raises(InputError, match="not valid JSON"):
        retriever("http://127.0.0.1:9", body_template='{"query": {query}')


def test_an_elasticsearch_style_answer_is_read_through_the_mapping() -> None:
    def elastic(_request: Received) -> Reply:
        return Reply(body={"took": 3, "hits": {"total": {"value": 2}, "hits": [
            {"_id": "1", "_score": 4.5, "_source": {"path": "/srv/kb/guide.md", "title": "Setup"}},
            {"_id": "2", "_score": 1.0, "_source": {"path": "/srv/kb/faq.md"}},
        ]}})

    mapping = ResponseMapping(
        hits_path="hits.hits", path_field="_source.path", heading_field="_source.title",
        score_field="_score", path_prefix_strip=("/srv/kb",),
    )
    # The README's Elasticsearch example, body template as written there.
    body = '{"size": {limit}, "query": {"multi_match": {"query": "{query}", "fields": ["title^2", "body"]}}}'
    with running(elastic) as server:
        results = retriever(server.url + "/kb/_search", mapping, body_template=body).search_all(one(text='a "b"'))
    assert results == [[Hit(1, "guide.md", "Setup", 4.5), Hit(2, "faq.md", "", 1.0)]]
    assert server.received[0].json() == {
        "size": 3, "query": {"multi_match": {"query": 'a "b"', "fields": ["title^2", "body"]}}
    }


def test_a_hit_without_a_path_names_the_query_and_the_hit_index() -> None:
    def pathless(_request: Received) -> Reply:
        return Reply(body={"results": [{"path": "a.md"}, {"heading": "lost"}]})

    with running(pathless) as server, pytest.raises(InputError) as caught:
        retriever(server.url).search_all(one(query_id="q-pathless"))
    assert "'q-pathless', hit 1 has no path" in str(caught.value)


def test_a_slow_endpoint_times_out_and_fails_the_run_naming_the_query() -> None:
    def slow(_request: Received) -> Reply:
        return Reply(body={"results": []}, delay_s=3.0)

    started = time.monotonic()
    with running(slow) as server, pytest.raises(InputError) as caught:
        retriever(server.url, timeout_s=0.2, retries=1).search_all(one(query_id="q-slow"))
    elapsed = time.monotonic() - started
    assert "'q-slow' failed after 2 attempt(s)" in str(caught.value)
    assert "Timeout" in str(caught.value) or "not complete within 0.2 s" in str(caught.value)
    assert len(server.received) == 2
    assert elapsed < 2.5


def test_a_503_then_200_is_retried_and_answers() -> None:
    replies = [Reply(status=503, body={"error": "warming up"}), Reply(body={"results": [{"path": "a.md"}]})]
    with running(sequence_per_query(replies)) as server:
        results = retriever(server.url).search_all(one())
    assert results == [[Hit(1, "a.md", "", None)]]
    assert [r.query_text() for r in server.received] == ["query 1", "query 1"]


def test_a_5xx_that_outlasts_the_retries_fails_naming_the_query_and_the_status() -> None:
    with running(lambda _r: Reply(status=502, body=b"bad gateway")) as server, pytest.raises(InputError) as caught:
        retriever(server.url, retries=2).search_all(one(query_id="q-down"))
    assert "query 'q-down' failed after 3 attempt(s): HTTP 502: 'bad gateway'" in str(caught.value)
    assert len(server.received) == 3


def test_a_5xx_shows_the_services_own_words_like_a_4xx_never_a_token() -> None:
    # Elasticsearch answers a broken index with 500 and the reason deep in `root_cause`.
    body = {"error": {"root_cause": [{"type": "x" * 300, "reason": f"no shard available, key {TOKEN}"}]},
            "status": 500}
    headers = [HeaderSpec("Authorization", "Bearer ${KB_TOKEN}")]
    with running(lambda _r: Reply(status=500, body=body)) as server, pytest.raises(InputError) as caught:
        retriever(server.url, retries=1, headers=headers).search_all(one())
    shown = str(caught.value)
    assert "failed after 2 attempt(s): HTTP 500: the service says 'no shard available, key ***'" in shown
    assert TOKEN not in shown


def test_a_5xx_with_an_empty_body_names_the_status_alone() -> None:
    with running(lambda _r: Reply(status=503, body=b"")) as server, pytest.raises(InputError) as caught:
        retriever(server.url, retries=0).search_all(one(query_id="q-empty"))
    assert str(caught.value).splitlines()[0].endswith("query 'q-empty' failed after 1 attempt(s): HTTP 503")


def test_a_5xx_body_over_the_cap_is_not_shown_and_the_status_is() -> None:
    huge = b"e" * 5000
    with running(lambda _r: Reply(status=500, body=huge)) as server, pytest.raises(InputError) as caught:
        retriever(server.url, retries=0, max_response_bytes=1000).search_all(one(query_id="q-big"))
    assert str(caught.value).splitlines()[0].endswith("query 'q-big' failed after 1 attempt(s): HTTP 500")


def test_an_error_answered_with_http_200_and_no_hits_is_refused_in_the_services_words() -> None:
    body = {"results": [], "error": "Search failed: no such table: search_index"}
    with running(lambda _r: Reply(body=body)) as server, pytest.raises(InputError) as caught:
        retriever(server.url).search_all(one(query_id="q-200"))
    assert "query 'q-200': the service answered with an error: 'Search failed: no such table" in str(caught.value)


def test_a_404_is_not_retried() -> None:
    with running(lambda _r: Reply(status=404, body=b"no such index")) as server, pytest.raises(InputError) as caught:
        retriever(server.url, retries=3).search_all(one(query_id="q-404"))
    assert "query 'q-404': HTTP 404: 'no such index'" in str(caught.value)
    assert len(server.received) == 1


class Sleeps:
    """Stands in for the retriever's `time` module: records each wait instead of sleeping, so
    what a retry waits is read exactly, not timed on a busy machine."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.waits: list[float] = []
        monkeypatch.setattr(http_module, "time", self)

    def sleep(self, seconds: float) -> None:
        self.waits.append(seconds)


def test_a_429_waits_as_long_as_retry_after_says(monkeypatch: pytest.MonkeyPatch) -> None:
    replies = [Reply(status=429, headers={"Retry-After": "1"}), Reply(body={"results": []})]
    sleeps = Sleeps(monkeypatch)
    with running(sequence_per_query(replies)) as server:
        results = retriever(server.url, backoff_s=0.01).search_all(one())
    assert results == [[]]
    assert len(server.received) == 2
    assert sleeps.waits == [1.0]  # the server's second, not the 0.01 s backoff


def test_a_429_retry_after_longer_than_the_cap_waits_only_the_cap(monkeypatch: pytest.MonkeyPatch) -> None:
    replies = [Reply(status=429, headers={"Retry-After": "3600"}), Reply(body={"results": []})]
    sleeps = Sleeps(monkeypatch)
    with running(sequence_per_query(replies)) as server:
        retriever(server.url, retry_after_cap_s=0.1).search_all(one())
    assert sleeps.waits == [0.1]
    assert len(server.received) == 2


def test_a_malformed_body_fails_naming_the_query() -> None:
    with running(lambda _r: Reply(body=b"<html>oops</html>")) as server, pytest.raises(InputError) as caught:
        retriever(server.url).search_all(one(query_id="q-html"))
    assert "query 'q-html': HTTP 200 answer is not JSON" in str(caught.value)
    assert "<html>oops" in str(caught.value)
    assert len(server.received) == 1


@pytest.mark.parametrize("send_length", [True, False], ids=["content-length", "streamed-until-close"])
def test_an_oversized_body_is_refused_past_the_cap(send_length: bool) -> None:
    huge = json.dumps({"results": [{"path": "a.md", "heading": "x" * 5000}]}).encode()
    with running(lambda _r: Reply(body=huge, send_length=send_length)) as server, pytest.raises(InputError) as caught:
        retriever(server.url, max_response_bytes=1024).search_all(one(query_id="q-big"))
    assert "query 'q-big'" in str(caught.value)
    assert "1024-byte cap" in str(caught.value)


def test_a_body_just_under_the_cap_is_accepted() -> None:
    body = json.dumps({"results": [{"path": "a.md"}]}).encode()
    with running(lambda _r: Reply(body=body, send_length=False)) as server:
        results = retriever(server.url, max_response_bytes=len(body)).search_all(one())
    assert results == [[Hit(1, "a.md", "", None)]]


def test_a_refused_connection_is_retried_then_fails_naming_the_query() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with pytest.raises(InputError) as caught:
        retriever(f"http://127.0.0.1:{port}/search", retries=1).search_all(one(query_id="q-closed"))
    assert "'q-closed' failed after 2 attempt(s): ConnectionError" in str(caught.value)


def test_a_redirect_is_not_followed() -> None:
    with running(lambda _r: Reply(status=302, headers={"Location": "http://elsewhere.invalid/x?key=1"})) as server, pytest.raises(InputError) as caught:
        retriever(server.url).search_all(one())
    assert "HTTP 302 redirect" in str(caught.value)
    assert len(server.received) == 1


def test_concurrency_8_gives_the_same_results_as_1_in_golden_order() -> None:
    # Earlier queries answer slower, so with 8 in flight they finish last.
    def slow_first(request: Received) -> Reply:
        n = int(request.query_text().split()[1])
        reply = serve_rankings(RANKINGS)(request)
        return Reply(body=reply.body, delay_s=0.005 * (20 - n))

    with running(slow_first) as server:
        sequential = retriever(server.url, concurrency=1).search_all(REQUESTS)
        assert server.max_in_flight == 1
        parallel = retriever(server.url, concurrency=8).search_all(REQUESTS)
    assert parallel == sequential
    assert sequential[5] == [Hit(1, "docs/d5.md", "H0", 10.0), Hit(2, "docs/d6.md", "H1", 9.0), Hit(3, "docs/d0.md", "H2", 8.0)]
    assert server.max_in_flight > 1, "the parallel run never had two requests in flight"


def test_with_concurrency_the_error_is_the_earliest_failing_query_in_golden_order() -> None:
    def fail_some(request: Received) -> Reply:
        n = int(request.query_text().split()[1])
        if n in (4, 11):
            return Reply(status=400, body=b"bad", delay_s=0.2 if n == 4 else 0.0)
        return serve_rankings(RANKINGS)(request)

    with running(fail_some) as server, pytest.raises(InputError) as caught:
        retriever(server.url, concurrency=8).search_all(REQUESTS)
    assert "query 'q4'" in str(caught.value)


def test_a_token_from_the_environment_reaches_the_server_but_no_record_or_message() -> None:
    def echo_auth(request: Received) -> Reply:
        # A careless server echoing the credential in its error page.
        return Reply(status=401, body=f"denied for {request.headers.get('Authorization')}".encode())

    header = parse_header("Authorization: Bearer ${KB_TOKEN}")
    with running(echo_auth) as server:
        http = retriever(
            server.url + "/search?key=${KB_TOKEN}&index=kb",
            headers=(header, HeaderSpec("X-Api-Key", TOKEN)),
        )
        with pytest.raises(InputError) as caught:
            http.search_all(one())
    received = server.received[0]
    assert received.headers["Authorization"] == f"Bearer {TOKEN}"
    assert received.headers["X-Api-Key"] == TOKEN
    assert received.params["key"] == [TOKEN]
    assert "HTTP 401: 'denied for ***'" in str(caught.value)  # the whole header value is secret
    description = json.dumps(http.describe())
    for text in (description, str(caught.value), repr(caught.value), repr(header)):
        assert TOKEN not in text
    assert http.describe()["header_names"] == ["Authorization", "X-Api-Key"]
    assert http.describe()["url"] == server.url + "/search?key=REDACTED&index=REDACTED"


def test_url_credentials_are_sent_as_basic_auth_and_never_recorded() -> None:
    def echo_auth(request: Received) -> Reply:
        return Reply(status=403, body=f"denied for {request.headers.get('Authorization')}".encode())

    with running(echo_auth) as server:
        http = retriever(server.url.replace("http://", f"http://reader:{TOKEN}@") + "/search")
        with pytest.raises(InputError) as caught:
            http.search_all(one())
    basic = base64.b64encode(f"reader:{TOKEN}".encode()).decode()
    assert server.received[0].headers["Authorization"] == f"Basic {basic}"
    for text in (json.dumps(http.describe()), str(caught.value)):
        assert TOKEN not in text and basic not in text and "reader" not in text
    assert http.describe()["url"] == server.url + "/search"


def test_url_credentials_together_with_an_authorization_header_are_refused() -> None:
    # requests would silently let the URL's credentials replace the header.
    with pytest.raises(InputError, match="one way only"):
        retriever(
            f"http://reader:{TOKEN}@127.0.0.1:9/search",
            headers=(parse_header("authorization: Bearer ${KB_TOKEN}"),),
        )


def test_a_token_never_appears_in_a_connection_error_message() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with pytest.raises(InputError) as caught:
        retriever(f"http://127.0.0.1:{port}/s?key=${{KB_TOKEN}}", retries=0).search_all(one())
    assert "ConnectionError" in str(caught.value)
    assert TOKEN not in str(caught.value)


def test_a_missing_environment_variable_is_refused_by_name_only() -> None:
    with pytest.raises(InputError) as caught:
        HttpRetriever(
            settings("http://127.0.0.1:9", headers=(parse_header("Authorization: Bearer ${NOT_SET_HERE}"),)),
            ResponseMapping(),
            {},
        )
    assert "NOT_SET_HERE is not set" in str(caught.value)


@pytest.mark.parametrize("text", ["no colon here", ": value", "Bad Name: v"])
def test_a_header_that_is_not_name_colon_value_is_refused(text: str) -> None:
    with pytest.raises(InputError, match="Name: value"):
        parse_header(text)


def test_describe_records_url_method_template_and_mapping() -> None:
    http = retriever("http://127.0.0.1:9/search", body_template='{"q": "{query}", "n": {limit}, "k": "${KB_TOKEN}"}')
    assert http.describe() == {
        "name": "http",
        "url": "http://127.0.0.1:9/search",
        "method": "POST",
        "body_template": {"q": "{query}", "n": "{limit}", "k": "${KB_TOKEN}"},
        "header_names": [],
        "mapping": ResponseMapping().describe(),
    }


# --- the service's own words ------------------------------------------------------------------


def test_an_error_status_shows_the_services_reason_even_past_the_snippet() -> None:
    # Elasticsearch puts the reason after a long `root_cause` entry: a 200-character snippet ends before it.
    body = {"error": {"root_cause": [{"type": "x" * 300, "reason": "Failed to parse query [a AND]"}],
                      "type": "search_phase_execution_exception"}, "status": 400}
    with running(lambda _r: Reply(status=400, body=body)) as server, pytest.raises(InputError) as caught:
        retriever(server.url).search_all(one())
    assert "HTTP 400: the service says" in str(caught.value)
    assert "Failed to parse query [a AND]" in str(caught.value)


def test_an_error_status_without_error_fields_shows_the_snippet() -> None:
    with running(lambda _r: Reply(status=400, body=b"plain words")) as server, pytest.raises(InputError) as caught:
        retriever(server.url).search_all(one())
    assert "HTTP 400: 'plain words'" in str(caught.value)


def test_a_graphql_error_with_status_200_is_shown_in_the_services_words() -> None:
    body = {"errors": [{"message": "syntax error in tsquery: \"it's\"", "locations": [{"line": 1}]}], "data": None}
    with running(lambda _r: Reply(body=body)) as server, pytest.raises(InputError) as caught:
        retriever(server.url, ResponseMapping(hits_path="data.search.nodes")).search_all(one())
    assert "the service answered with an error" in str(caught.value)
    assert "syntax error in tsquery" in str(caught.value)
    assert "--hits-path" not in str(caught.value)


def test_the_services_words_never_show_a_token() -> None:
    body = {"error": {"reason": f"bad key {TOKEN}"}}
    headers = [HeaderSpec("Authorization", "Bearer ${KB_TOKEN}")]
    with running(lambda _r: Reply(status=401, body=body)) as server, pytest.raises(InputError) as caught:
        retriever(server.url, headers=headers).search_all(one())
    assert TOKEN not in str(caught.value) and "bad key ***" in str(caught.value)


def test_partial_results_reach_the_retrievers_notes() -> None:
    body = {"timed_out": True, "results": [{"path": "a.md"}]}
    with running(lambda _r: Reply(body=body)) as server:
        search = retriever(server.url)
        assert search.search_all(one(query_id="slow")) == [[Hit(1, "a.md", "", None)]]
    assert [(note.query_id, note.detail) for note in search.notes()] == [("slow", "timed_out is true")]
