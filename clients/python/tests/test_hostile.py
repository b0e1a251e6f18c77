"""A broken or hostile server does not exhaust the client: bounded size, decoding, time.

Every test talks to ``HostileServer`` (tests/hostile.py) over real sockets, with both clients:
``Client`` directly and ``AsyncClient`` under ``asyncio.run``. Timings are asserted only as
generous bounds (a call with a 2 s deadline ends within 7 s), never tightly.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from valuation_marks import (
    DEFAULT_MAX_RESPONSE_BYTES,
    ApiError,
    AsyncClient,
    Client,
    DeadlineExceeded,
    InvalidSlug,
    ResponseError,
    ResponseTooLarge,
    RetryEvent,
)

from .hostile import BOMB_SIZE, HostileServer

CLIENTS = ["sync", "async"]


@pytest.fixture(scope="module")
def hostile() -> Iterator[HostileServer]:
    with HostileServer() as other, HostileServer(other_port=other.port) as server:
        server.other = other  # type: ignore[attr-defined]
        yield server


def call(kind: str, base_url: str, method: str, *args: Any, **options: Any) -> Any:
    """``client.<method>(*args)`` with a fresh ``Client`` or ``AsyncClient``."""
    options.setdefault("api_key", "vmk_hostile_test")
    options.setdefault("max_retries", 0)
    if kind == "sync":
        with Client(base_url=base_url, **options) as client:
            return getattr(client, method)(*args)

    async def run() -> Any:
        async with AsyncClient(base_url=base_url, **options) as client:
            return await getattr(client, method)(*args)

    return asyncio.run(run())


def read_export(kind: str, base_url: str, **options: Any) -> int:
    """Reads ``client.export(raw=True)`` to the end; the number of lines."""
    options.setdefault("api_key", "vmk_hostile_test")
    if kind == "sync":
        with Client(base_url=base_url, **options) as client:
            return sum(1 for _ in client.export(raw=True))

    async def run() -> int:
        async with AsyncClient(base_url=base_url, **options) as client:
            return len([line async for line in client.export(raw=True)])

    return asyncio.run(run())


# ---------------------------------------------------------------------------------------------
# Size and decoding


@pytest.mark.parametrize("kind", CLIENTS)
def test_an_endless_body_stops_at_max_response_bytes(kind: str, hostile: HostileServer) -> None:
    with pytest.raises(ResponseTooLarge, match="max_response_bytes"):
        call(kind, hostile.url("big"), "usage", max_response_bytes=2 * 1024 * 1024)


def test_the_default_bound_stops_an_endless_body(hostile: HostileServer) -> None:
    started = time.monotonic()
    with pytest.raises(ResponseTooLarge):
        call("sync", hostile.url("big"), "usage")
    assert DEFAULT_MAX_RESPONSE_BYTES < BOMB_SIZE
    assert time.monotonic() - started < 60  # 64 MiB over loopback, not the 512 MiB sent


@pytest.mark.parametrize("kind", CLIENTS)
def test_a_gzip_bomb_stops_at_max_response_bytes(kind: str, hostile: HostileServer) -> None:
    assert len(hostile.bomb()) < 1024 * 1024 < BOMB_SIZE  # under 1 MiB sent, 256 MiB inflated
    with pytest.raises(ResponseTooLarge, match="decodes to more than"):
        call(kind, hostile.url("bomb"), "scorecard")


@pytest.mark.parametrize("kind", CLIENTS)
def test_an_export_bomb_stops_at_the_longest_line(kind: str, hostile: HostileServer) -> None:
    """The export declares its length (under 1 MiB) and inflates to one line of zeros."""
    with pytest.raises(ResponseTooLarge, match="a line of the export"):
        read_export(kind, hostile.url("export-bomb"), max_response_bytes=4 * 1024 * 1024)


@pytest.mark.parametrize("kind", CLIENTS)
def test_an_export_without_a_declared_length_is_bounded(kind: str, hostile: HostileServer) -> None:
    with pytest.raises(ResponseTooLarge, match="the export sent more than"):
        read_export(kind, hostile.url("export-endless"), max_response_bytes=2 * 1024 * 1024)


@pytest.mark.parametrize("kind", CLIENTS)
@pytest.mark.parametrize("misdeed", ["deep", "deep-problem"])
def test_deeply_nested_json_is_the_sdks_error(kind: str, misdeed: str, hostile: HostileServer) -> None:
    with pytest.raises(ResponseError if misdeed == "deep" else ApiError) as raised:
        call(kind, hostile.url(misdeed), "usage")
    assert not isinstance(raised.value, RecursionError)
    if misdeed == "deep-problem":
        assert raised.value.status == 400  # type: ignore[attr-defined]


# ---------------------------------------------------------------------------------------------
# Time: a trickle is cut off at the deadline, not after every byte has trickled in


@pytest.mark.parametrize("kind", CLIENTS)
@pytest.mark.parametrize("misdeed", ["trickle-head", "trickle-body"])
def test_a_trickle_ends_at_the_deadline(kind: str, misdeed: str, hostile: HostileServer) -> None:
    started = time.monotonic()
    with pytest.raises(DeadlineExceeded):
        call(kind, hostile.url(misdeed), "usage", deadline=2.0, timeout=30.0, max_retries=3)
    assert time.monotonic() - started < 2.0 + 5.0


@pytest.mark.parametrize("kind", CLIENTS)
def test_a_trickling_export_ends_by_its_budget(kind: str, hostile: HostileServer, tmp_path: Path) -> None:
    """200 bytes declared: the deadline plus 200 bytes at 64 KiB/s, then DeadlineExceeded."""
    started = time.monotonic()
    with pytest.raises(DeadlineExceeded):
        read_export(kind, hostile.url("export-trickle"), deadline=2.0)
    assert time.monotonic() - started < 2.0 + 5.0
    started = time.monotonic()
    with pytest.raises(DeadlineExceeded):
        call(kind, hostile.url("export-trickle"), "download_export", tmp_path / "export.gz", deadline=2.0)
    assert time.monotonic() - started < 2.0 + 5.0


def test_deadline_exceeded_is_a_timeout_and_a_connection_failure() -> None:
    from valuation_marks import ConnectionFailed

    assert issubclass(DeadlineExceeded, TimeoutError) and issubclass(DeadlineExceeded, ConnectionFailed)
    with pytest.raises(ValueError, match="deadline"):
        Client(deadline=0)


# ---------------------------------------------------------------------------------------------
# Redirects


@pytest.mark.parametrize("kind", CLIENTS)
def test_a_redirect_with_a_json_body_is_not_an_answer(kind: str, hostile: HostileServer) -> None:
    with pytest.raises(ResponseError, match="302"):
        call(kind, hostile.url("redirect"), "usage")


@pytest.mark.parametrize("kind", CLIENTS)
def test_followed_redirects_keep_the_key_within_the_origin(kind: str, hostile: HostileServer) -> None:
    other: HostileServer = hostile.other  # type: ignore[attr-defined]
    assert call(kind, hostile.url("same"), "request", "/v1/usage", follow_redirects=True) == {"landed": True}
    path, headers = hostile.requests[-1]
    assert path == "/landed/v1/usage" and headers["x-api-key"] == "vmk_hostile_test"
    before = len(other.requests)
    assert call(kind, hostile.url("cross"), "request", "/v1/usage", follow_redirects=True) == {"landed": True}
    assert len(other.requests) == before + 1
    path, headers = other.requests[-1]
    assert path == "/landed/v1/usage" and "x-api-key" not in headers  # another origin: no key


# ---------------------------------------------------------------------------------------------
# Retry-After that is no number of seconds


@pytest.mark.parametrize("kind", CLIENTS)
@pytest.mark.parametrize("value", ["-3", "soon", "0"])
def test_a_junk_retry_after_waits_the_backoff(kind: str, value: str, hostile: HostileServer) -> None:
    events: list[RetryEvent] = []
    misdeed = f"retry-after-{value}"
    base_url = f"{hostile.url(misdeed)}/{kind}"  # a path of its own: two 429s, then 200
    result = call(kind, base_url, "request", "/v1/usage", max_retries=3, backoff=0.2, on_retry=events.append)
    assert result == {}
    assert [event.status for event in events] == [429, 429]
    for event in events:
        assert event.wait >= 0.1  # the backoff (0.2 s, halved by the jitter at most), not "now"
        assert event.retry_after is None or event.retry_after == 0.0


# ---------------------------------------------------------------------------------------------
# Slugs


@pytest.mark.parametrize("kind", CLIENTS)
@pytest.mark.parametrize(
    "slug", [".", "..", "../usage", "Stripe", "", "a/b", "-stripe", "stripe?x=1", "x" * 65]
)
def test_slugs_outside_the_grammar_are_refused_before_any_request(
    kind: str, slug: str, hostile: HostileServer
) -> None:
    before = len(hostile.requests)
    for method in ("company", "series", "events", "resolution"):
        with pytest.raises(InvalidSlug) as refused:
            call(kind, hostile.url("landed"), method, slug)
        assert isinstance(refused.value, ValueError)
    assert len(hostile.requests) == before
