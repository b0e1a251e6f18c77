"""Every problem+json answer raises the ``ApiError`` subclass named for its ``code``."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Callable

import httpx
import pytest

import valuation_marks as vm
from valuation_marks import ApiError, Client
from valuation_marks._core import api_error

from .conftest import Server

CODES = {
    "missing_api_key": (401, vm.MissingApiKey),
    "invalid_api_key": (401, vm.InvalidApiKey),
    "tier_forbidden": (403, vm.TierForbidden),
    "not_found": (404, vm.NotFound),
    "invalid_coverage": (422, vm.InvalidCoverage),
    "invalid_sort": (422, vm.InvalidSort),
    "bad_cursor": (422, vm.BadCursor),
    "invalid_parameter": (422, vm.InvalidParameter),
    "rate_limited": (429, vm.RateLimited),
    "method_not_allowed": (405, vm.MethodNotAllowed),
    "range_not_satisfiable": (416, vm.RangeNotSatisfiable),
    "internal_error": (500, vm.InternalError),
    "unavailable": (503, vm.Unavailable),
}


@pytest.fixture
def clients(server: Server) -> Iterator[dict[str, Client]]:
    made = {
        name: Client(api_key=server.keys.get(name, name), base_url=server.base_url, max_retries=0)
        for name in ("enterprise", "pro", "research", "vmk_demo_revoked", "vmk_not_a_key", "")
    }
    yield made
    for client in made.values():
        client.close()


# code -> (which client, what it does); rate_limited is in test_retries.py, and the two 5xx
# codes cannot be provoked from a healthy server (their parsing is checked below).
PROVOKE: dict[str, tuple[str, Callable[[Client], Any]]] = {
    "missing_api_key": ("", lambda c: c.usage()),
    "invalid_api_key": ("vmk_not_a_key", lambda c: c.company("stripe")),
    "tier_forbidden": ("pro", lambda c: c.resolution("stripe")),
    "not_found": ("enterprise", lambda c: c.company("no-such-company")),
    "invalid_coverage": ("enterprise", lambda c: c.series("stripe", coverage=90)),
    "invalid_sort": ("enterprise", lambda c: c.companies_page(sort="valuation")),
    "bad_cursor": ("enterprise", lambda c: c.companies_page(cursor="not-a-cursor")),
    "invalid_parameter": ("enterprise", lambda c: c.companies_page(limit=500)),
    "method_not_allowed": ("enterprise", lambda c: c.request("/v1/usage", method="POST")),
    "range_not_satisfiable": (
        "enterprise",
        lambda c: c.request("/v1/export", headers={"Range": "bytes=999999999-", "Accept-Encoding": "gzip"}),
    ),
}


@pytest.mark.parametrize("code", sorted(PROVOKE))
def test_each_code_raises_its_class(code: str, clients: dict[str, Client]) -> None:
    who, provoke = PROVOKE[code]
    status, cls = CODES[code]
    with pytest.raises(cls) as raised:
        provoke(clients[who])
    error = raised.value
    assert isinstance(error, ApiError) and isinstance(error, vm.MarksError)
    assert (error.status, error.code) == (status, code)
    assert error.detail and error.title and error.instance and error.type
    assert error.request_id and error.request_id.startswith("req_")
    assert error.problem["code"] == code
    assert code in str(error) and error.request_id in str(error)


def test_more_refusals(clients: dict[str, Client]) -> None:
    with pytest.raises(vm.InvalidApiKey):
        clients["vmk_demo_revoked"].usage()
    with pytest.raises(vm.TierForbidden):  # research: coverage 80 only
        clients["research"].series("stripe", coverage=95)
    with pytest.raises(vm.TierForbidden):
        clients["research"].events("stripe")
    with pytest.raises(vm.TierForbidden):
        clients["pro"].export_series().__iter__().__next__()
    assert clients["pro"].events("stripe").events  # pro reads events


def test_a_416_carries_the_length_in_its_headers(clients: dict[str, Client]) -> None:
    with pytest.raises(vm.RangeNotSatisfiable) as refused:
        clients["enterprise"].request(
            "/v1/export", headers={"Range": "bytes=999999999-", "Accept-Encoding": "gzip"}
        )
    assert refused.value.headers["content-range"].startswith("bytes */")


def _response(status: int, body: bytes, content_type: str, **headers: str) -> httpx.Response:
    request = httpx.Request("GET", "http://127.0.0.1/v1/usage")
    return httpx.Response(
        status, content=body, headers={"content-type": content_type, **headers}, request=request
    )


@pytest.mark.parametrize("code", sorted(CODES))
def test_every_code_of_the_enum_maps_to_its_class(code: str) -> None:
    status, cls = CODES[code]
    body = (
        f'{{"type":"about:blank","title":"t","status":{status},"detail":"d","instance":"/v1/usage",'
        f'"code":"{code}","request_id":"req_1","added_later":true}}'
    ).encode()
    error = api_error(_response(status, body, "application/problem+json", **{"Retry-After": "7"}))
    assert type(error) is cls and error.code == code and error.status == status
    assert error.request_id == "req_1" and error.retry_after == 7.0 and error.problem["added_later"] is True


def test_unknown_codes_and_bodies_fall_back_on_the_status() -> None:
    unknown = api_error(_response(429, b'{"code":"slow_down","detail":"later"}', "application/problem+json"))
    assert type(unknown) is vm.RateLimited and unknown.code == "slow_down"
    html = api_error(_response(502, b"<html>bad gateway</html>", "text/html", **{"X-Request-ID": "req_2"}))
    assert type(html) is vm.ServerError and html.code == "http_502" and html.request_id == "req_2"
    assert type(api_error(_response(422, b"{}", "application/json"))) is vm.InvalidRequest
    assert type(api_error(_response(418, b"", "text/plain"))) is vm.ApiError
