"""Budgets and retries against the live server: 403 and 429 as exceptions, 429 waited out, caps.

Budgets are spent with keys issued for these tests (never the shared demo keys), and spending
loops until the API refuses (bounded by a count, not by time), so nothing depends on how fast
the machine is. No timing is asserted: the retry events say what was waited and why.
"""

from __future__ import annotations

import datetime
import email.utils

import httpx
import pytest

from valuation_marks import (
    AsyncClient,
    Client,
    ConnectionFailed,
    RateLimited,
    RetryEvent,
    RetryPolicy,
    TierForbidden,
)
from valuation_marks._core import parse_retry_after

from .conftest import Server
from .proxy import CuttingProxy

SPEND_AT_MOST = 500  # requests; any budget here is spent long before


def spend(client: Client, slug: str = "stripe") -> RateLimited:
    """Requests until the budget is gone; the refusal (``max_retries=0``: raised at once)."""
    for _ in range(SPEND_AT_MOST):
        try:
            client.company(slug)
        except RateLimited as refused:
            return refused
    raise AssertionError(f"no 429 after {SPEND_AT_MOST} requests")


async def aspend(client: AsyncClient, slug: str = "stripe") -> RateLimited:
    for _ in range(SPEND_AT_MOST):
        try:
            await client.company(slug)
        except RateLimited as refused:
            return refused
    raise AssertionError(f"no 429 after {SPEND_AT_MOST} requests")


def check_refusal(refused: RateLimited, limit: int) -> None:
    assert (refused.status, refused.code) == (429, "rate_limited")
    assert refused.retry_after is not None and refused.retry_after >= 1
    assert refused.request_id and refused.headers["x-ratelimit-limit"] == str(limit)
    assert refused.headers["x-ratelimit-remaining"] == "0"


def check_retry(events: list[RetryEvent], refused: RateLimited) -> None:
    assert events, "the 429 was not retried"
    first = events[0]
    assert (first.reason, first.status, first.attempt) == ("rate_limited", 429, 1)
    assert first.retry_after is not None and first.retry_after >= 1
    assert first.wait >= first.retry_after  # never sooner than the server said
    assert isinstance(first.error, RateLimited)


# ---------------------------------------------------------------------------------------------
# The free tier: 403 on what it lacks, 429 once its 10 a minute are spent


def test_free_key_gets_403_and_429_as_exceptions(server: Server) -> None:
    with Client(api_key=server.keys["free_sync"], base_url=server.base_url, max_retries=0) as free:
        top = free.companies_page(limit=1).companies[0].slug  # the free universe: the top 10
        with pytest.raises(TierForbidden) as forbidden:
            free.usage()
        assert (forbidden.value.status, forbidden.value.code) == (403, "tier_forbidden")
        assert free.rate_limit is not None and free.rate_limit.limit == 10  # the refusal carries the budget
        check_refusal(spend(free, top), limit=10)


@pytest.mark.anyio
async def test_free_key_gets_403_and_429_as_exceptions_async(server: Server) -> None:
    async with AsyncClient(
        api_key=server.keys["free_async"], base_url=server.base_url, max_retries=0
    ) as free:
        top = (await free.companies_page(limit=1)).companies[0].slug
        with pytest.raises(TierForbidden):
            await free.usage()
        check_refusal(await aspend(free, top), limit=10)


# ---------------------------------------------------------------------------------------------
# A 429 waited out: a research key with 30 a minute refills one request every 2 s


@pytest.mark.slow
def test_a_429_is_retried_after_retry_after(server: Server) -> None:
    key = server.keys["slow_sync"]
    with Client(api_key=key, base_url=server.base_url, max_retries=0) as impatient:
        refused = spend(impatient)
    check_refusal(refused, limit=30)
    events: list[RetryEvent] = []
    with Client(api_key=key, base_url=server.base_url, max_retries=3, on_retry=events.append) as patient:
        assert patient.usage().tier == "research"  # answered, after waiting
        assert patient.stats.retries == len(events) >= 1
    check_retry(events, refused)


@pytest.mark.slow
@pytest.mark.anyio
async def test_a_429_is_retried_after_retry_after_async(server: Server) -> None:
    key = server.keys["slow_async"]
    async with AsyncClient(api_key=key, base_url=server.base_url, max_retries=0) as impatient:
        refused = await aspend(impatient)
    events: list[RetryEvent] = []
    async with AsyncClient(api_key=key, base_url=server.base_url, on_retry=events.append) as patient:
        assert (await patient.usage()).tier == "research"
    check_retry(events, refused)


def test_a_wait_longer_than_max_retry_wait_raises_at_once(server: Server) -> None:
    """2 a minute: the next request is 30 s away, more than the 5 s this client will wait."""
    events: list[RetryEvent] = []
    key = server.keys["cap_sync"]
    with Client(api_key=key, base_url=server.base_url, max_retry_wait=5, on_retry=events.append) as capped:
        refused = spend(capped)  # max_retries is 3, but the wait asked for is longer than 5 s
        assert capped.stats.retries == 0
    assert refused.retry_after is not None and refused.retry_after > 5
    assert events == []


@pytest.mark.anyio
async def test_a_wait_longer_than_max_retry_wait_raises_at_once_async(server: Server) -> None:
    events: list[RetryEvent] = []
    key = server.keys["cap_async"]
    async with AsyncClient(
        api_key=key, base_url=server.base_url, max_retry_wait=5, on_retry=events.append
    ) as capped:
        refused = await aspend(capped)
    assert refused.retry_after is not None and refused.retry_after > 5
    assert events == []


# ---------------------------------------------------------------------------------------------
# Connection errors: retried with backoff, then ConnectionFailed


def test_a_dropped_connection_is_retried(server: Server) -> None:
    events: list[RetryEvent] = []
    key = server.keys["enterprise"]
    with (
        CuttingProxy(server.port, cut_after=0, cuts=2) as proxy,
        Client(api_key=key, base_url=proxy.base_url, backoff=0.01, on_retry=events.append) as client,
    ):
        assert client.usage().tier == "enterprise"
        assert proxy.connections == 3
    assert [e.reason for e in events] == ["connection", "connection"]
    assert all(isinstance(e.error, httpx.TransportError) and e.status is None for e in events)


@pytest.mark.anyio
async def test_a_dropped_connection_is_retried_async(server: Server) -> None:
    events: list[RetryEvent] = []
    with CuttingProxy(server.port, cut_after=0, cuts=1) as proxy:
        async with AsyncClient(
            api_key=server.keys["enterprise"], base_url=proxy.base_url, backoff=0.01, on_retry=events.append
        ) as client:
            assert (await client.company("stripe")).slug == "stripe"
    assert [e.reason for e in events] == ["connection"]


def test_connection_errors_give_up_after_max_retries(server: Server) -> None:
    with (
        CuttingProxy(server.port, cut_after=0, cuts=100) as proxy,
        Client(base_url=proxy.base_url, max_retries=2, backoff=0.01) as client,
    ):
        with pytest.raises(ConnectionFailed) as failed:
            client.signing_keys()
        assert proxy.connections == 3
    assert isinstance(failed.value.__cause__, httpx.TransportError)
    with Client(base_url="http://127.0.0.1:9", max_retries=0) as nowhere, pytest.raises(ConnectionFailed):
        nowhere.scorecard()


def test_nothing_else_is_retried(server: Server) -> None:
    events: list[RetryEvent] = []
    with Client(api_key=server.keys["research"], base_url=server.base_url, on_retry=events.append) as client:
        with pytest.raises(TierForbidden):
            client.events("stripe")
        assert client.stats.requests == 1 and events == []


def test_retry_decisions() -> None:
    """The shared policy, as both clients consult it (503 cannot be provoked from a healthy server)."""
    policy = RetryPolicy(max_retries=2, backoff=1.0, max_backoff=4.0, max_retry_wait=30)
    for status in (400, 401, 403, 404, 405, 416, 422, 500, 502):
        assert policy.wait_for_status(0, status, None) is None
    wait = policy.wait_for_status(0, 503, None)
    assert wait is not None and 0.5 <= wait <= 1.0
    wait = policy.wait_for_status(1, 503, 3.0)
    assert wait is not None and wait >= 3.0  # a 503's Retry-After is honoured too
    wait = policy.wait_for_status(0, 429, 2.0)
    assert wait is not None and 2.0 <= wait <= 2.2
    assert policy.wait_for_status(0, 429, 31.0) is None  # longer than max_retry_wait
    assert policy.wait_for_status(2, 429, 1.0) is None  # retries used up
    assert policy.wait_for_status(2, 503, None) is None
    request = httpx.Request("GET", "http://127.0.0.1/")
    assert policy.wait_for_error(0, httpx.ConnectError("refused", request=request)) is not None
    assert policy.wait_for_error(0, httpx.ReadTimeout("slow", request=request)) is not None
    assert policy.wait_for_error(0, httpx.UnsupportedProtocol("ftp", request=request)) is None
    assert RetryPolicy(max_retries=0).wait_for_status(0, 429, 1.0) is None
    for attempt in range(2):  # "retry now" still waits the backoff
        wait = policy.wait_for_status(attempt, 429, 0.0)
        assert wait is not None and wait >= 0.5 * 2**attempt


def test_retry_after_forms() -> None:
    assert parse_retry_after("7") == 7.0
    assert parse_retry_after(" 0.5 ") == 0.5
    assert parse_retry_after(None) is None
    for junk in ("-3", "soon", "nan", "inf", "1e3", "-0", "", "+5"):  # not delta-seconds: absent
        assert parse_retry_after(junk) is None, junk
    later = email.utils.format_datetime(
        datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(seconds=90)
    )
    seconds = parse_retry_after(later)
    assert seconds is not None and 80 < seconds <= 90
    assert parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT") == 0.0  # in the past: now
