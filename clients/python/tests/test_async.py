"""Every method of ``AsyncClient`` against the live server (anyio's pytest plugin, asyncio)."""

from __future__ import annotations

import asyncio
import dataclasses
import datetime
from collections.abc import AsyncIterator
from pathlib import Path

import pandas as pd
import pytest

from valuation_marks import (
    API_VERSION,
    AsyncClient,
    Client,
    InvalidParameter,
    NotFound,
    SignatureError,
    TierForbidden,
    read_export,
)

from .conftest import DEMO_KEY_THUMBPRINT, Server
from .test_sync import check_frame_meta, check_meta

pytestmark = pytest.mark.anyio


@pytest.fixture
async def aclient(server: Server) -> AsyncIterator[AsyncClient]:
    async with AsyncClient(api_key=server.keys["enterprise"], base_url=server.base_url) as client:
        yield client


async def test_a_full_walk_equals_the_apis_list(aclient: AsyncClient, server: Server) -> None:
    big_pages = [page async for page in aclient.companies(limit=200, sort="-value_usd").pages()]
    walked = [co async for co in aclient.companies(limit=7, sort="-value_usd")]
    assert walked == [co for page in big_pages for co in page.companies] and len(walked) > 14
    check_meta(walked[0].meta, server)
    assert await aclient.companies(sector="fintech").to_list() == [
        co async for co in aclient.companies(sector="fintech", limit=2)
    ]
    pages = [page async for page in aclient.companies(limit=50).pages()]
    full, rest = divmod(len(walked), 50)
    assert [len(page) for page in pages] == [50] * full + ([rest] if rest else [])


async def test_lists_are_fetched_lazily(aclient: AsyncClient) -> None:
    sent = aclient.stats.requests
    companies = aclient.companies(limit=5)
    assert aclient.stats.requests == sent
    iterator = companies.__aiter__()
    for _ in range(5):
        await iterator.__anext__()
    assert aclient.stats.requests == sent + 1
    await iterator.__anext__()
    assert aclient.stats.requests == sent + 2


async def test_companies_frame(aclient: AsyncClient, server: Server) -> None:
    frame = await aclient.companies_frame(sort="-value_usd", limit=20)
    walked = [co.slug async for co in aclient.companies(sort="-value_usd")]
    assert list(frame.index) == walked
    check_frame_meta(frame, server)


async def test_company_series_events(aclient: AsyncClient, server: Server) -> None:
    stripe, series, events = await asyncio.gather(
        aclient.company("stripe"), aclient.series("stripe", coverage=95), aclient.events("stripe")
    )
    check_meta(stripe.meta, server)
    assert stripe.latest_mark is not None and stripe.starting_event is not None
    assert stripe.starting_event.event_id == "e9001" and stripe.drift is not None
    frame = series.to_pandas()
    days = pd.date_range(series.points[0].date, series.points[-1].date, freq="D")
    assert list(frame.index) == list(days) and frame.attrs["coverage"] == 95
    assert events.events[-1].event_id == "e9001" and len(events.to_pandas()) == len(events)
    assert (await aclient.series("stripe")).coverage == 80


async def test_resolution_verifies_and_a_tampered_one_does_not(aclient: AsyncClient, server: Server) -> None:
    keys = await aclient.signing_keys()
    record = await aclient.resolution("openai")
    check_meta(record.meta, server)
    assert record.verify(DEMO_KEY_THUMBPRINT, keys=keys)
    with pytest.raises(SignatureError):
        dataclasses.replace(record, raw={**record.raw, "as_of": "2001-01-01"}).verify(
            DEMO_KEY_THUMBPRINT, keys=keys
        )


async def test_usage_scorecard_targets_openapi(aclient: AsyncClient, server: Server) -> None:
    usage, scorecard, targets, document = await asyncio.gather(
        aclient.usage(), aclient.scorecard(), aclient.scorecard_targets(), aclient.openapi()
    )
    assert usage.tier == "enterprise"
    check_meta(scorecard.meta, server)
    assert [n.name for n in scorecard.numbers] == list(targets.numbers)
    assert len(targets) == scorecard.event_day.n > 0
    assert targets.to_pandas().attrs["meta"]["dataset_version"] == server.version
    # An enterprise key reads the full form: the company and dollars of every row.
    assert (scorecard.disclosure, targets.disclosure) == ("full", "full")
    assert all(t.slug and t.observed_usd is not None and t.mark_usd for t in targets)
    assert all(m.slug and m.anchor_event_id for m in targets.month_ends)
    assert document["info"]["version"] == API_VERSION
    assert (await aclient.request("/v1/usage"))["tier"] == "enterprise"


async def test_backtest(server: Server) -> None:
    async with AsyncClient(api_key=server.keys["research"], base_url=server.base_url) as research:
        below_pro, profile = await asyncio.gather(research.backtest("airbnb"), research.company("airbnb"))
    async with AsyncClient(api_key=server.keys["pro"], base_url=server.base_url) as pro:
        full = await pro.backtest("stripe")
    check_meta(below_pro.meta, server)
    assert (below_pro.disclosure, full.disclosure) == ("research", "full")
    (listing,) = [t for t in below_pro if t.kind == "listing"]
    assert profile.outcome is not None and listing.event_id == profile.outcome.event_id
    assert listing.observed_usd == profile.outcome.valuation_usd and listing.band_95 is None
    assert full.summary.scored_events == len(full) and all(t.band_95 is not None for t in full)
    assert len(full.to_pandas()) == len(full)


async def test_changes(aclient: AsyncClient, server: Server) -> None:
    changes = [c async for c in aclient.changes(since=server.previous_version, limit=3)]
    assert any(c.slug == "stripe" and "events" in c.changes for c in changes)
    page = await aclient.changes_page(server.previous_version, limit=200)
    assert [c.slug for c in page] == [c.slug for c in changes]
    assert await aclient.changes(since=server.version).to_list() == []
    with pytest.raises(InvalidParameter):
        await aclient.changes(since="2001-01-01").to_list()


async def test_exports(aclient: AsyncClient, server: Server, tmp_path: Path) -> None:
    keys = await aclient.signing_keys()
    stream = aclient.export()
    lines = [line async for line in stream]
    assert stream.header is not None and len(lines) == stream.header.companies
    check_meta(stream.meta, server)
    assert all(line.resolution.verify(DEMO_KEY_THUMBPRINT, keys=keys) for line in lines)
    series = aclient.export_series(coverage=80)
    stripe = [line async for line in series if line.slug == "stripe"]
    assert stripe[0].points == (await aclient.series("stripe")).points
    done = await aclient.download_export(tmp_path / "export.ndjson.gz")
    assert done.complete
    assert [line.raw for line in read_export(done.path)] == [line.raw for line in lines]
    part = await aclient.download_export_series(tmp_path / "series.ndjson.gz", coverage=95, max_bytes=5000)
    assert not part.complete and part.size == 5000
    rest = await aclient.download_export_series(tmp_path / "series.ndjson.gz", coverage=95)
    assert rest.complete and rest.resumed_from == 5000
    with Client(api_key=server.keys["enterprise"], base_url=server.base_url) as sync:
        whole = sync.download_export_series(tmp_path / "whole.ndjson.gz", coverage=95)
    assert rest.path.read_bytes() == whole.path.read_bytes()


async def test_errors_and_the_etag_cache(server: Server) -> None:
    async with AsyncClient(api_key=server.keys["research"], base_url=server.base_url) as research:
        with pytest.raises(TierForbidden) as forbidden:
            await research.series("stripe", coverage=95)
        assert forbidden.value.status == 403 and forbidden.value.request_id
        with pytest.raises(NotFound):
            await research.company("no-such-company")
    async with AsyncClient(api_key=server.keys["etag_async"], base_url=server.base_url, cache=True) as cached:
        first = await cached.company("stripe")
        assert cached.rate_limit is not None
        remaining = cached.rate_limit.remaining
        assert await cached.company("stripe") == first
        assert cached.stats.not_modified == 1 and cached.rate_limit.remaining == remaining - 1
        assert cached.last_response is not None and cached.last_response.status == 304


async def test_date_objects_are_accepted_for_since(aclient: AsyncClient, server: Server) -> None:
    since = datetime.date.fromisoformat(server.previous_version)
    assert (await aclient.changes_page(since)).since == server.previous_version
