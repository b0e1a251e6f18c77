"""Finding companies (``q``, aliases, sectors), date ranges, and the CSV forms of the rows.

Every CSV table is read with Python's ``csv`` module and must equal its JSON row for row: the
list (every page), the series, the events, both exports (whole and cut to dates). Ranges are
checked against the whole series cut by hand, and pandas reads a series URL by itself.
"""

from __future__ import annotations

import csv
import datetime
import gzip
import io
import json
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, Optional, cast

import pandas as pd
import pytest

from valuation_marks import (
    AsyncClient,
    Client,
    CompanyListItem,
    CsvText,
    InvalidParameter,
    ResponseError,
    TierForbidden,
)
from valuation_marks import _calls as calls

from .conftest import Server
from .proxy import CuttingProxy

COMPANY_COLUMNS = [
    "slug", "name", "aliases", "sector", "status", "as_of_date", "value_usd", "lower_80_usd",
    "upper_80_usd", "confidence", "vs_last_event_pct", "delta_30d_pct", "last_event_id",
    "last_event_on", "last_event_type", "last_event_usd", "days_since_last_event", "outcome_type",
    "outcome_on", "outcome_usd", "outcome_kind", "last_event_source_grade", "next_reported_usd",
    "mark_is_current", "delta_30d_basis",
]  # fmt: skip
EXPORT_COLUMNS = [*COMPANY_COLUMNS[:9], "lower_95_usd", "upper_95_usd", *COMPANY_COLUMNS[9:]]
SERIES_COLUMNS = ["slug", "date", "mark_usd", "lower_usd", "upper_usd"]
EVENT_COLUMNS = [
    "slug", "event_id", "occurred_on", "event_type", "valuation_usd", "reported_as", "source_url",
    "source_grade", "note", "supersedes", "superseded_by", "retracted_by",
]  # fmt: skip
# Where a column of a company row comes from in its JSON item, when not from the field of its name.
COMPANY_FIELDS = {
    "as_of_date": ("latest_mark", "as_of_date"),
    "value_usd": ("latest_mark", "value_usd"),
    "lower_80_usd": ("latest_mark", "lower_usd"),
    "upper_80_usd": ("latest_mark", "upper_usd"),
    "lower_95_usd": ("latest_mark", "band_95", "lower_usd"),
    "upper_95_usd": ("latest_mark", "band_95", "upper_usd"),
    "confidence": ("latest_mark", "confidence"),
    "vs_last_event_pct": ("latest_mark", "vs_last_event_pct"),
    "last_event_id": ("last_event", "event_id"),
    "last_event_on": ("last_event", "occurred_on"),
    "last_event_type": ("last_event", "event_type"),
    "last_event_usd": ("last_event", "valuation_usd"),
    "outcome_type": ("outcome", "event_type"),
    "outcome_on": ("outcome", "occurred_on"),
    "outcome_usd": ("outcome", "valuation_usd"),
    "outcome_kind": ("outcome", "kind"),
    "last_event_source_grade": ("last_event", "source_grade"),
    "next_reported_usd": ("latest_mark", "next_reported", "value_usd"),
    "mark_is_current": ("latest_mark", "current"),
}


@pytest.fixture(scope="module")
def client(server: Server) -> Iterator[Client]:
    with Client(api_key=server.keys["enterprise"], base_url=server.base_url) as made:
        yield made


@pytest.fixture(scope="module")
def everyone(client: Client) -> list[CompanyListItem]:
    return list(client.companies(limit=200))


def read_csv(text: str, columns: Sequence[str]) -> list[list[str]]:
    """The rows of a CSV table (Python's csv module), after checking its header and line ends."""
    # Every record ends with CRLF (the sample has no line break inside a cell).
    assert text.endswith("\r\n") and "\n" not in text.replace("\r\n", "")
    rows = list(csv.reader(io.StringIO(text, newline="")))
    assert rows[0] == list(columns)
    return rows[1:]


def cell(value: Any) -> str:
    """A JSON value as its CSV cell: numbers as JSON writes them, null empty, lists joined."""
    if value is None:
        return ""
    if isinstance(value, list):
        value = "; ".join(value)
    if isinstance(value, str):
        return "'" + value if value.startswith(("=", "+", "-", "@", "\t", "\r")) else value
    return json.dumps(value)


def company_row(item: Mapping[str, Any], columns: Sequence[str]) -> list[str]:
    row = []
    for column in columns:
        value: Any = item
        for name in COMPANY_FIELDS.get(column, (column,)):
            value = None if value is None else value.get(name)
        row.append(cell(value))
    return row


def series_rows(slug: str, points: Sequence[Mapping[str, Any]]) -> list[list[str]]:
    return [[slug, *(cell(p[f]) for f in SERIES_COLUMNS[1:])] for p in points]


# ---------------------------------------------------------------------------------------------
# Finding companies


def test_a_brand_or_former_name_finds_its_company(client: Client) -> None:
    for query, slug, alias in [("Cursor", "anysphere", "Cursor"), ("codeium", "windsurf", "Codeium")]:
        found = list(client.companies(q=query))
        assert [c.slug for c in found] == [slug], query
        assert alias in found[0].aliases
        assert client.company(slug).aliases == found[0].aliases
    # Case, accents and the order of prefixes do not matter.
    assert [c.slug for c in client.companies(q="CÜRS any")] == ["anysphere"]
    assert list(client.companies(q="zzzqqq")) == []


def test_every_item_has_aliases(everyone: list[CompanyListItem]) -> None:
    assert all(isinstance(c.aliases, tuple) for c in everyone)
    assert sum(1 for c in everyone if c.aliases) >= 10


def test_a_search_is_in_relevance_order_and_pages_like_the_list(client: Client) -> None:
    found = list(client.companies(q="ai", limit=200))
    paged = list(client.companies(q="ai", limit=3))
    assert [c.slug for c in paged] == [c.slug for c in found]

    def prefix(item: CompanyListItem) -> bool:
        names = [item.name, item.slug, *item.aliases]
        return any(name.lower().startswith("ai") for name in names)

    ranks = [(not prefix(c), -c.latest_mark.value_usd) for c in found]
    assert ranks == sorted(ranks) and ranks[0][0] is False  # Airbnb first: its name starts with "ai"
    by_name = [c.name for c in client.companies(q="ai", sort="name", sector="AI")]
    assert by_name == sorted(by_name) and len(by_name) < len(found)


def test_a_search_without_a_letter_or_too_long_is_refused(client: Client) -> None:
    for query in ("!!", "x" * 101):
        with pytest.raises(InvalidParameter) as refused:
            client.companies_page(q=query)
        assert '"q"' in refused.value.detail


def test_sectors_count_the_companies(client: Client, everyone: list[CompanyListItem]) -> None:
    sectors = client.sectors()
    assert [s.sector for s in sectors] == sorted({c.sector for c in everyone})
    assert sum(s.companies for s in sectors) == len(everyone)
    for sector in sectors:
        members = [c for c in everyone if c.sector == sector.sector]
        assert sector.companies == len(members)
        assert sector.private == sum(1 for c in members if c.status == "private")
    # The filter reads a sector in any case, with spaces for dashes.
    assert len(list(client.companies(sector="Developer Tools"))) == sectors["developer-tools"].companies
    frame = sectors.to_pandas()
    assert frame.loc["ai", "companies"] == sectors["ai"].companies and frame.attrs["meta"]["as_of"]


def test_a_free_key_counts_its_ten(server: Server) -> None:
    with Client(api_key=server.keys["free_find"], base_url=server.base_url) as free:
        sectors = free.sectors()
        assert sum(s.companies for s in sectors) == 10
        universe = list(free.companies())
        assert len(universe) == 10
        first = universe[0]
        assert first.slug in [c.slug for c in free.companies(q=first.name)]
        # Outside its ten, nothing is found.
        assert "windsurf" not in {c.slug for c in universe} and list(free.companies(q="codeium")) == []


# ---------------------------------------------------------------------------------------------
# Date ranges


def test_a_range_cuts_the_series_exactly(client: Client) -> None:
    whole = client.series("stripe", 95)
    dates = [p.date for p in whole]
    start, end = dates[len(dates) // 3], dates[len(dates) // 2]
    for first, last in [(start, end), (start, None), (None, end), (dates[0], dates[0]), (dates[-1], None)]:
        cut = client.series("stripe", 95, start=first, end=last)
        expected = [
            p for p in whole if (first is None or p.date >= first) and (last is None or p.date <= last)
        ]
        assert cut.points == tuple(expected), (first, last)
        assert cut.meta == whole.meta
    assert len(client.series("stripe", start="2100-01-01")) == 0
    as_text = client.series("stripe", start=start.isoformat(), end=end.isoformat())
    assert [p.date for p in as_text] == [d for d in dates if start <= d <= end]
    with pytest.raises(InvalidParameter) as refused:
        client.series("stripe", start=end, end=start)
    assert '"from"' in refused.value.detail
    with pytest.raises(InvalidParameter) as refused:
        client.series("stripe", start="2024-02-30")
    assert '"from"' in refused.value.detail


def test_a_ranged_series_export_is_every_series_cut(client: Client) -> None:
    start, end = datetime.date(2024, 6, 1), datetime.date(2024, 6, 30)
    whole = {line.slug: line for line in client.export_series()}
    stream = client.export_series(start=start, end=end)
    lines = list(stream)
    assert stream.header is not None and (stream.header.start, stream.header.end) == (start, end)
    assert [line.slug for line in lines] == list(whole)
    for line in lines:
        assert line.points == tuple(p for p in whole[line.slug].points if start <= p.date <= end)
    unranged = client.export_series()
    next(iter(unranged))
    assert unranged.header is not None and (unranged.header.start, unranged.header.end) == (None, None)


def test_a_ranged_export_broken_off_is_asked_again_and_skipped_to_where_it_stopped(
    server: Server, client: Client
) -> None:
    start = "2025-01-01"
    expected = [line.raw for line in client.export_series(start=start)]
    with CuttingProxy(server.port, cut_after=50_000) as proxy:
        with Client(api_key=server.keys["enterprise"], base_url=proxy.base_url) as cut:
            stream = cut.export_series(start=start)
            got = [line.raw for line in stream]
        assert proxy.connections == 2 and stream.resumes == 0  # asked again whole, not by range
        assert "range" in proxy.request_headers(1)
    assert got == expected


# ---------------------------------------------------------------------------------------------
# CSV against JSON, row for row


@pytest.mark.parametrize(
    "params",
    [{}, {"sort": "-value_usd", "limit": 40}, {"q": "a", "status": "private", "limit": 5}, {"q": "Cursor"}],
)
def test_the_list_as_csv_equals_its_json(client: Client, params: dict[str, Any]) -> None:
    text = client.companies_csv(**params)
    assert isinstance(text, CsvText) and text.meta is not None
    items = [item.raw for item in client.companies(**params)]
    assert read_csv(text, COMPANY_COLUMNS) == [company_row(item, COMPANY_COLUMNS) for item in items]
    assert text.meta == client.companies_page(limit=1).meta


def test_series_and_events_as_csv_equal_their_json(client: Client, everyone: list[CompanyListItem]) -> None:
    for item in everyone[::7]:
        for coverage in (80, 95):
            series = client.series(item.slug, coverage)
            text = client.series_csv(item.slug, coverage)
            assert read_csv(text, SERIES_COLUMNS) == series_rows(item.slug, series.raw["series"])
            assert text.meta == series.meta
        start, end = "2024-01-01", "2024-12-31"
        cut = client.series(item.slug, start=start, end=end)
        text = client.series_csv(item.slug, start=start, end=end)
        assert read_csv(text, SERIES_COLUMNS) == series_rows(item.slug, cut.raw["series"])
        events = client.events(item.slug)
        expected = [[item.slug, *(cell(e[f]) for f in EVENT_COLUMNS[1:])] for e in events.raw["events"]]
        assert read_csv(client.events_csv(item.slug), EVENT_COLUMNS) == expected


def test_the_exports_as_csv_equal_their_ndjson(client: Client, tmp_path: Path) -> None:
    download = client.download_export(tmp_path / "companies.csv.gz", format="csv")
    assert download.complete and download.format == "csv" and download.encoding == "gzip"
    text = gzip.decompress(download.path.read_bytes()).decode()
    lines = list(client.export(raw=True))
    assert read_csv(text, EXPORT_COLUMNS) == [company_row(line, EXPORT_COLUMNS) for line in lines]
    assert (
        download.meta is not None
        and download.meta.dataset_version == lines[0]["resolution"]["dataset_version"]
    )
    for coverage, start in [(80, None), (95, None), (95, "2025-06-01")]:
        download = client.download_export_series(tmp_path / "series", coverage, start=start, format="csv")
        body = download.path.read_bytes()
        text = (gzip.decompress(body) if download.encoding == "gzip" else body).decode()
        assert (download.encoding is None) == (start is not None)  # a cut export is never gzip
        expected = [
            row
            for line in client.export_series(coverage, start=start, raw=True)
            for row in series_rows(line["slug"], line["series"])
        ]
        assert read_csv(text, SERIES_COLUMNS) == expected, (coverage, start)


def test_an_answer_in_json_is_not_taken_for_csv(client: Client) -> None:
    # What a server older than the CSV forms does: JSON, whatever Accept asks for (as the sectors
    # do, which have no CSV form).
    with pytest.raises(ResponseError, match="text/csv"):
        client._csv(calls.list_sectors())


# ---------------------------------------------------------------------------------------------
# DataFrames


def test_series_frame_from_csv_equals_the_json_frame(client: Client) -> None:
    for slug, coverage, start in [("stripe", 95, None), ("airbnb", 80, None), ("ftx", 80, "2022-01-01")]:
        from_csv = client.series_frame(slug, coverage, start=start)
        from_json = client.series(slug, coverage, start=start).to_pandas()
        assert from_csv.equals(from_json), slug
        assert from_csv.attrs == from_json.attrs


def test_export_series_frame_has_every_day_of_every_company(client: Client) -> None:
    frame = client.export_series_frame(95, start="2026-01-01")
    assert list(frame.index.names) == ["slug", "date"]
    assert list(frame.columns) == ["mark_usd", "lower_usd", "upper_usd"]
    stripe = client.series("stripe", 95, start="2026-01-01").to_pandas()
    assert cast(pd.DataFrame, frame.loc["stripe"]).equals(stripe)
    assert frame.attrs["coverage"] == 95 and frame.attrs["meta"] == stripe.attrs["meta"]
    slugs = {line.slug for line in client.export_series(95, start="2026-01-01") if line.points}
    assert set(frame.index.get_level_values("slug")) == slugs


def test_pandas_reads_a_series_url_with_the_key_as_a_header(client: Client, server: Server) -> None:
    url = f"{server.base_url}/v1/companies/stripe/marks?coverage=95&from=2026-01-01&to=2026-03-31"
    key = server.keys["enterprise"]
    frame = pd.read_csv(url, storage_options={"X-API-Key": key, "Accept": "text/csv"}, parse_dates=["date"])
    expected = client.series("stripe", 95, start="2026-01-01", end="2026-03-31")
    assert list(frame.columns) == SERIES_COLUMNS and len(frame) == len(expected) == 90
    assert frame["mark_usd"].tolist() == [p.mark_usd for p in expected]
    assert frame["date"].dt.date.tolist() == [p.date for p in expected]


def test_companies_frame_searches_and_has_aliases(client: Client) -> None:
    frame = client.companies_frame(q="codeium")
    assert list(frame.index) == ["windsurf"] and frame.loc["windsurf", "aliases"] == "Codeium"
    assert client.companies_frame().loc["stripe", "aliases"] == ""


# ---------------------------------------------------------------------------------------------
# The async client, and the tiers


@pytest.mark.anyio
async def test_the_async_client_finds_cuts_and_reads_csv(server: Server) -> None:
    async with AsyncClient(api_key=server.keys["enterprise"], base_url=server.base_url) as client:
        found = [c.slug async for c in client.companies(q="cursor")]
        assert found == ["anysphere"]
        sectors = await client.sectors()
        assert len(sectors) > 0
        cut = await client.series("stripe", start="2026-01-01", end="2026-01-31")
        assert len(cut) == 31
        text = await client.series_csv("stripe", start="2026-01-01", end="2026-01-31")
        assert len(read_csv(text, SERIES_COLUMNS)) == 31
        frame = await client.series_frame("stripe", start="2026-01-01", end="2026-01-31")
        assert frame.equals(cut.to_pandas())
        listed = await client.companies_csv(q="codeium")
        assert read_csv(listed, COMPANY_COLUMNS)[0][:3] == ["windsurf", "Windsurf (Codeium)", "Codeium"]
        lines = [line async for line in client.export_series(start="2026-11-01", raw=True)]
        assert all(p["date"] >= "2026-11-01" for line in lines for p in line["series"])


def test_the_csv_forms_keep_the_tiers(server: Server) -> None:
    with Client(api_key=server.keys["research"], base_url=server.base_url) as research:
        with pytest.raises(TierForbidden):
            research.events_csv("stripe")
        with pytest.raises(TierForbidden):
            research.series_csv("stripe", 95)
        text: Optional[str] = research.series_csv("stripe", start="2026-11-01")
        assert text is not None
        assert len(read_csv(text, SERIES_COLUMNS)) == len(research.series("stripe", start="2026-11-01"))
