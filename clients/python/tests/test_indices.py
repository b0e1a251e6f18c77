"""The private-market indices against the live server: every number the client hands back equals
the API's own JSON (fetched here with httpx, apart from the client), the frames and the CSV
equal the models, a day's constituents add up to its level's day, and the tiers hold (a free key
gets ``TierForbidden``, a research key no coverage 95)."""

from __future__ import annotations

import csv
import datetime
import io
from collections.abc import Iterator
from typing import Any

import httpx
import pandas as pd
import pytest

from valuation_marks import (
    AsyncClient,
    Client,
    IndexConstituents,
    IndexPoint,
    IndexSeries,
    Indices,
    InvalidParameter,
    InvalidSlug,
    NotFound,
    TierForbidden,
)

from .conftest import Server
from .test_sync import check_frame_meta, check_meta

INDEX_COLUMNS = ["index", "date", "level", "lower", "upper", "constituents"]
CONSTITUENT_COLUMNS = [
    "index", "date", "slug", "name", "weight", "mark_usd", "lower_usd", "upper_usd", "value_weight",
]  # fmt: skip
MEMBER_FIELDS = ("slug", "name", "weight", "mark_usd", "lower_usd", "upper_usd", "value_weight")


@pytest.fixture(scope="module")
def client(server: Server) -> Iterator[Client]:
    with Client(api_key=server.keys["enterprise"], base_url=server.base_url) as made:
        yield made


def api(server: Server, path: str, **params: Any) -> Any:
    """The API's JSON for ``path``, fetched without the client."""
    response = httpx.get(
        server.base_url + path, params=params, headers={"X-API-Key": server.keys["enterprise"]}, timeout=30
    )
    assert response.status_code == 200, (path, response.text[:300])
    return response.json()


def point_json(point: IndexPoint) -> dict[str, Any]:
    return {
        "date": point.date.isoformat(),
        "level": point.level,
        "lower": point.lower,
        "upper": point.upper,
        "constituents": point.constituents,
    }


def read_csv(text: str, columns: list[str]) -> list[list[str]]:
    assert text.endswith("\r\n")
    rows = list(csv.reader(io.StringIO(text, newline="")))
    assert rows[0] == columns
    return rows[1:]


def test_the_list_equals_the_apis(client: Client, server: Server) -> None:
    indices = client.indices()
    raw = api(server, "/v1/indices")
    assert isinstance(indices, Indices) and indices.base_level == raw["base_level"] == 100
    check_meta(indices.meta, server)
    assert [i.index for i in indices] == [i["index"] for i in raw["indices"]]
    assert indices.indices[0].index == "all" and indices.indices[0].sector is None
    # An index for each sector with five companies or more marked on the latest day (the others
    # count in "other"), each holding five or more.
    sectors = {s.sector for s in client.sectors()}
    assert {i.sector for i in indices.indices[1:]} <= sectors | {"other"}
    assert all(i.latest.constituents >= 5 for i in indices.indices[1:])
    for item, expected in zip(indices, raw["indices"]):
        assert [item.index, item.name, item.sector] == [expected[k] for k in ("index", "name", "sector")]
        assert item.first_date.isoformat() == expected["first_date"]
        assert item.last_date.isoformat() == expected["last_date"]
        assert point_json(item.latest) == expected["latest"]
    assert indices["fintech"].sector == "fintech"
    with pytest.raises(KeyError):
        indices["no-such-index"]
    frame = indices.to_pandas()
    check_frame_meta(frame, server)
    assert list(frame.index) == [i.index for i in indices]
    assert list(frame.columns) == [
        "name", "sector", "first_date", "last_date", "date", "level", "lower", "upper", "constituents",
    ]  # fmt: skip
    assert frame.loc["all", "level"] == indices["all"].latest.level
    assert frame.loc["fintech", "last_date"] == pd.Timestamp(indices["fintech"].last_date)


def test_every_index_series_equals_the_apis(client: Client, server: Server) -> None:
    indices = client.indices()
    for item in indices:
        series = client.index(item.index)
        raw = api(server, f"/v1/indices/{item.index}")
        assert isinstance(series, IndexSeries)
        assert (series.index, series.name, series.sector, series.coverage) == (
            raw["index"], raw["name"], raw["sector"], raw["coverage"],
        )  # fmt: skip
        assert [point_json(p) for p in series] == raw["series"]
        assert series.points[0].date == item.first_date and series.points[-1] == item.latest
        assert series.points[0].level == indices.base_level
    wide = client.index("all", 95)
    assert wide.coverage == 95 and len(wide) == len(client.index("all"))
    assert [point_json(p) for p in wide] == api(server, "/v1/indices/all", coverage=95)["series"]
    # The 95% band holds the 80% one, around the same levels.
    for narrow, broad in zip(client.index("all"), wide):
        assert narrow.level == broad.level and broad.lower <= narrow.lower <= narrow.upper <= broad.upper


def test_a_range_cuts_an_index_exactly(client: Client) -> None:
    whole = client.index("fintech", 95)
    start, end = whole.points[100].date, whole.points[130].date
    cut = client.index("fintech", 95, start=start, end=end.isoformat())
    assert list(cut) == [p for p in whole if start <= p.date <= end] and len(cut) == 31
    assert len(client.index("fintech", start="2000-01-01", end="2000-12-31")) == 0
    with pytest.raises(InvalidParameter):
        client.index("fintech", start=end, end=start)


def test_constituents_equal_the_apis_and_make_the_days_level(client: Client, server: Server) -> None:
    latest = client.indices()["fintech"]
    members = client.index_constituents("fintech")
    assert isinstance(members, IndexConstituents)
    check_meta(members.meta, server)
    assert (members.date, members.coverage, members.level) == (latest.last_date, 80, latest.latest.level)
    assert len(members) == latest.latest.constituents
    series = client.index("fintech")
    for day, coverage in [(series.points[-200].date, 95), (series.points[len(series) // 2].date, 80)]:
        members = client.index_constituents("fintech", date=day, coverage=coverage)
        raw = api(server, "/v1/indices/fintech/constituents", date=day.isoformat(), coverage=coverage)
        assert (members.index, members.date.isoformat(), members.coverage, members.level) == (
            raw["index"], raw["date"], raw["coverage"], raw["level"],
        )  # fmt: skip
        assert [{k: getattr(m, k) for k in MEMBER_FIELDS} for m in members] == raw["constituents"]
        # Largest first, weighted by the marks (no weight above 10% with ten companies or more),
        # each one the company's own mark of that day.
        marks = [m.mark_usd for m in members]
        assert marks == sorted(marks, reverse=True)
        assert sum(m.weight for m in members) == pytest.approx(1, abs=1e-5)
        assert sum(m.value_weight or 0 for m in members) == pytest.approx(1, abs=1e-5)
        if len(members) >= 10:
            assert max(m.weight for m in members) <= 0.1 + 1e-6
        stripe = next(m for m in members if m.slug == "stripe")
        own = client.series("stripe", coverage, start=day, end=day).points[0]
        assert [stripe.mark_usd, stripe.lower_usd, stripe.upper_usd] == [
            own.mark_usd,
            own.lower_usd,
            own.upper_usd,
        ]
        level = next(p for p in client.index("fintech", coverage, start=day, end=day))
        assert members.level == level.level and len(members) == level.constituents
        frame = members.to_pandas()
        assert list(frame.index) == [m.slug for m in members]
        assert list(frame.columns) == ["name", "weight", "mark_usd", "lower_usd", "upper_usd", "value_weight"]
        assert frame.attrs["date"] == day.isoformat() and frame.attrs["coverage"] == coverage
        text = client.index_constituents_csv("fintech", date=day, coverage=coverage)
        assert text.meta == members.meta
        rows = read_csv(text, CONSTITUENT_COLUMNS)
        assert [row[2] for row in rows] == [m.slug for m in members]
        assert [float(row[4]) for row in rows] == [m.weight for m in members]
        assert [int(row[5]) for row in rows] == marks


def test_the_frames_and_csv_equal_the_series(client: Client, server: Server) -> None:
    cases = [("all", 80, None), ("fintech", 95, "2026-01-01"), ("ai", None, "2025-06-01")]
    for index, coverage, start in cases:
        from_csv = client.index_frame(index, coverage, start=start)
        from_json = client.index(index, coverage, start=start).to_pandas()
        assert from_csv.equals(from_json), index
        assert from_csv.attrs == from_json.attrs
        assert list(from_json.columns) == ["level", "lower", "upper", "constituents"]
        check_frame_meta(from_json, server)
    series = client.index("crypto", start="2026-11-01")
    text = client.index_csv("crypto", start="2026-11-01")
    rows = read_csv(text, INDEX_COLUMNS)
    assert [(row[0], row[1]) for row in rows] == [("crypto", p.date.isoformat()) for p in series]
    assert [[float(x) for x in row[2:5]] + [int(row[5])] for row in rows] == [
        [p.level, p.lower, p.upper, p.constituents] for p in series
    ]


def test_an_unknown_index_or_day_is_refused(client: Client) -> None:
    with pytest.raises(NotFound):
        client.index("no-such-index")
    with pytest.raises(NotFound):
        client.index_constituents("no-such-index")
    first = client.indices()["fintech"].first_date
    with pytest.raises(InvalidParameter, match="date"):
        client.index_constituents("fintech", date=first - datetime.timedelta(days=1))
    # An id outside the grammar never becomes a request (it would name another path).
    sent = client.stats.requests
    for bad in ["..", "../usage", "Fintech", "", "a/b"]:
        with pytest.raises(InvalidSlug):
            client.index(bad)
        with pytest.raises(InvalidSlug):
            client.index_constituents(bad)
    assert client.stats.requests == sent


def test_the_tiers_hold(server: Server) -> None:
    with Client(api_key=server.keys["free_indices"], base_url=server.base_url, max_retries=0) as free:
        for call in (free.indices, lambda: free.index("all"), lambda: free.index_constituents("all")):
            with pytest.raises(TierForbidden) as refused:
                call()
            assert refused.value.status == 403 and "research" in refused.value.detail
    with Client(api_key=server.keys["research"], base_url=server.base_url) as research:
        assert len(research.indices()) > 1
        assert len(research.index("all")) > 0
        with pytest.raises(TierForbidden):
            research.index("all", 95)
        with pytest.raises(TierForbidden):
            research.index_constituents("all", coverage=95)
        with pytest.raises(TierForbidden):
            research.index_csv("all", 95)


@pytest.mark.anyio
async def test_the_async_client_reads_the_indices(client: Client, server: Server) -> None:
    async with AsyncClient(api_key=server.keys["enterprise"], base_url=server.base_url) as aclient:
        assert await aclient.indices() == client.indices()
        assert await aclient.index("ai", 95, start="2026-06-01") == client.index("ai", 95, start="2026-06-01")
        members = await aclient.index_constituents("all", coverage=95)
        assert members == client.index_constituents("all", coverage=95)
        frame = await aclient.index_frame("ai", start="2026-06-01")
        assert frame.equals(client.index("ai", start="2026-06-01").to_pandas())
        text = await aclient.index_constituents_csv("ai")
        assert text == client.index_constituents_csv("ai")
        with pytest.raises(NotFound):
            await aclient.index("no-such-index")
