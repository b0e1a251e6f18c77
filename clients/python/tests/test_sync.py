"""Every method of ``Client`` against the live server."""

from __future__ import annotations

import csv
import dataclasses
import datetime
from collections.abc import Iterator
from pathlib import Path
from typing import Union

import pandas as pd
import pytest

from valuation_marks import (
    API_VERSION,
    BankruptcyOutcome,
    Client,
    CompanyListItem,
    InvalidApiKey,
    InvalidParameter,
    ListingValidation,
    Meta,
    ObservationDrift,
    ObservationEvent,
    Scorecard,
    ScorecardTargets,
    SignatureError,
    SigningKeys,
    UnknownSigningKey,
    read_export,
    read_export_series,
)

from .conftest import DEMO_KEY_THUMBPRINT, Server, find_sample


@pytest.fixture
def client(server: Server) -> Iterator[Client]:
    with Client(api_key=server.keys["enterprise"], base_url=server.base_url) as client:
        yield client


def check_meta(meta: Meta | None, server: Server) -> None:
    assert meta is not None
    assert meta.data_mode in ("illustrative", "live")
    assert meta.provenance in ("backtest", "live")
    assert meta.methodology_version.startswith("v")
    assert meta.dataset_version == server.version
    assert isinstance(meta.as_of, datetime.date)
    assert meta.disclaimer


def check_frame_meta(frame: pd.DataFrame, server: Server) -> None:
    meta = frame.attrs["meta"]
    assert meta["dataset_version"] == server.version
    assert set(meta) == {
        "data_mode",
        "provenance",
        "methodology_version",
        "dataset_version",
        "as_of",
        "disclaimer",
    }


# ---------------------------------------------------------------------------------------------
# Companies


def test_a_full_walk_over_small_pages_equals_the_apis_list(client: Client, server: Server) -> None:
    one_page = client.companies_page(limit=200, sort="-value_usd")
    assert one_page.page.next_cursor is None and not one_page.page.has_more
    walked = list(client.companies(limit=7, sort="-value_usd"))
    assert [c.slug for c in walked] == [c.slug for c in one_page.companies]
    assert walked == list(one_page.companies)
    assert len(walked) > 7 * 2  # several pages
    values = [c.latest_mark.value_usd for c in walked]
    assert values == sorted(values, reverse=True)
    for item in walked:
        check_meta(item.meta, server)


def test_the_list_is_fetched_lazily_page_by_page(client: Client) -> None:
    sent = client.stats.requests
    companies = client.companies(limit=5)
    assert client.stats.requests == sent
    iterator = iter(companies)
    first = [next(iterator) for _ in range(5)]
    assert client.stats.requests == sent + 1
    next(iterator)
    assert client.stats.requests == sent + 2
    assert len({c.slug for c in first}) == 5
    pages = list(companies.pages())  # iterable again, from the first page
    assert pages[0].companies[:5] == tuple(first)
    assert pages[-1].page.next_cursor is None


def test_filters_and_the_documented_fields(client: Client, server: Server) -> None:
    fintech = list(client.companies(sector="fintech", status="private", sort="-value_usd"))
    assert fintech
    for co in fintech:
        assert isinstance(co, CompanyListItem)
        assert (co.sector, co.status) == ("fintech", "private")
        assert co.slug and co.name
        assert co.latest_mark.lower_usd <= co.latest_mark.value_usd <= co.latest_mark.upper_usd
        assert co.delta_30d_pct is None or isinstance(co.delta_30d_pct, float)
        assert isinstance(co.latest_mark.as_of_date, datetime.date)
    assert "stripe" in {co.slug for co in fintech}
    assert list(client.companies(sector="no-such-sector")) == []


def test_pages_by_hand_with_next_cursor(client: Client, server: Server) -> None:
    page = client.companies_page(limit=10, sort="name")
    check_meta(page.meta, server)
    names = [c.name for c in page]
    assert len(page) == 10 and page.page.limit == 10 and page.page.has_more
    following = client.companies_page(limit=10, sort="name", cursor=page.page.next_cursor)
    assert names[-1] <= following.companies[0].name
    assert not {c.slug for c in page} & {c.slug for c in following}


def test_companies_frame_has_one_row_per_company(client: Client, server: Server) -> None:
    frame = client.companies_frame()
    slugs = [c.slug for c in client.companies(limit=200)]
    assert list(frame.index) == slugs
    assert frame.index.name == "slug"
    assert list(frame.columns) == [
        "name", "aliases", "sector", "status", "as_of_date", "value_usd", "lower_usd", "upper_usd",
        "confidence", "delta_30d_pct", "last_event_on", "last_event_type", "last_event_usd",
        "days_since_last_event", "outcome_type", "outcome_on", "vs_last_event_pct",
    ]  # fmt: skip
    stripe = frame.loc["stripe"]
    assert stripe["value_usd"] == client.company("stripe").latest_mark.value_usd  # type: ignore[union-attr]
    assert pd.api.types.is_datetime64_any_dtype(frame["as_of_date"])
    check_frame_meta(frame, server)
    fintech = client.companies_frame(sector="fintech", sort="-value_usd", limit=3)
    assert list(fintech.index) == [c.slug for c in client.companies(sector="fintech", sort="-value_usd")]
    assert (fintech["sector"] == "fintech").all()


def test_company_profile(client: Client, server: Server) -> None:
    stripe = client.company("stripe")
    check_meta(stripe.meta, server)
    assert (stripe.slug, stripe.name, stripe.sector, stripe.status) == (
        "stripe",
        "Stripe",
        "fintech",
        "private",
    )
    assert stripe.latest_mark is not None and stripe.latest_mark.as_of_date == stripe.meta.as_of
    # What the mark rests on: the event it starts from, then the drift since.
    event, drift = stripe.observations
    assert isinstance(event, ObservationEvent) and isinstance(drift, ObservationDrift)
    assert (event.part, drift.part) == ("event", "drift")
    assert event.event_id == "e9001"  # the event the newer version added, on the as-of day
    assert (event.occurred_on, event.event_type, event.weight) == (stripe.meta.as_of, "tender_offer", 1.0)
    assert event.valuation_usd == 91_000_000_000 and event.explanation
    assert drift.days == (stripe.meta.as_of - event.occurred_on).days and drift.explanation
    assert stripe.starting_event == event and stripe.drift == drift
    assert not {"source_url", "note", "gain"} & set(event.raw)


def test_observations_of_a_company_marked_a_while_after_its_event(client: Client) -> None:
    openai = client.company("openai")
    event, drift = openai.observations
    assert isinstance(event, ObservationEvent) and isinstance(drift, ObservationDrift)
    assert drift.days == (openai.meta.as_of - event.occurred_on).days > 0
    assert openai.latest_mark is not None
    # The mark is the event's value moved by the drift (both rounded as published).
    moved = event.valuation_usd * (1 + drift.drift_pct / 100)
    assert abs(openai.latest_mark.value_usd / moved - 1) < 1e-3
    assert f"{drift.drift_pct}%" in drift.explanation and str(drift.days) in drift.explanation


def test_a_bankrupt_companys_mark_rests_on_its_bankruptcy_alone(client: Client) -> None:
    with open(find_sample() / "events.csv", encoding="utf-8") as events:
        bankrupt = sorted(row["slug"] for row in csv.DictReader(events) if row["event_type"] == "bankruptcy")
    assert bankrupt
    company = client.company(bankrupt[0])
    (event,) = company.observations
    assert isinstance(event, ObservationEvent) and event.event_type == "bankruptcy"
    assert company.drift is None and company.starting_event == event
    assert company.latest_mark is not None and company.latest_mark.value_usd == event.valuation_usd


def test_series_dataframe_has_one_row_per_day(client: Client, server: Server) -> None:
    series = client.series("stripe", coverage=95)
    check_meta(series.meta, server)
    assert (series.slug, series.coverage) == ("stripe", 95)
    frame = series.to_pandas()
    assert len(frame) == len(series.points) == len(series)
    assert frame.index.name == "date"
    days = pd.date_range(series.points[0].date, series.points[-1].date, freq="D")
    assert list(frame.index) == list(days)  # one row per day, none missing, none twice
    assert list(frame.columns) == ["mark_usd", "lower_usd", "upper_usd"]
    assert (frame["lower_usd"] <= frame["mark_usd"]).all() and (frame["mark_usd"] <= frame["upper_usd"]).all()
    assert frame.attrs["coverage"] == 95 and frame.attrs["slug"] == "stripe"
    check_frame_meta(frame, server)
    narrow = client.series("stripe")  # coverage defaults to 80: narrower bands
    assert narrow.coverage == 80 and len(narrow) == len(series)
    assert narrow.points[-1].upper_usd < series.points[-1].upper_usd


def test_events(client: Client, server: Server) -> None:
    events = client.events("stripe")
    check_meta(events.meta, server)
    assert [e.event_id for e in events][-1] == "e9001"
    dates = [e.occurred_on for e in events]
    assert dates == sorted(dates)
    frame = events.to_pandas()
    assert len(frame) == len(events) and frame["event_id"].iloc[-1] == "e9001"
    check_frame_meta(frame, server)


def test_resolution_verifies_and_a_tampered_record_does_not(client: Client, server: Server) -> None:
    keys = client.signing_keys()
    record = client.resolution("stripe")
    check_meta(record.meta, server)
    assert record.record_id.startswith(f"stripe/{server.version}/")
    assert record.key_id == DEMO_KEY_THUMBPRINT
    assert record.verify(DEMO_KEY_THUMBPRINT, keys=keys) is True
    assert record.verify(trusted=[DEMO_KEY_THUMBPRINT], keys=keys.raw) is True  # a JWKS document too
    assert record.verify_with_server_keys(keys) is True
    forged = dataclasses.replace(record, raw={**record.raw, "value_usd": record.value_usd + 1})
    with pytest.raises(SignatureError):
        forged.verify(DEMO_KEY_THUMBPRINT, keys=keys)
    with pytest.raises(SignatureError):
        forged.verify_with_server_keys(keys)
    with pytest.raises(SignatureError):  # changing a field and not the JSON is caught as well
        dataclasses.replace(record, value_usd=record.value_usd * 2).verify(DEMO_KEY_THUMBPRINT, keys=keys)
    with pytest.raises(UnknownSigningKey):  # pinned, but no public key given for it
        record.verify(DEMO_KEY_THUMBPRINT, keys=SigningKeys(keys=(), meta=None))
    with pytest.raises(TypeError, match="prove nothing"):  # the server's own keys are not trust
        record.verify(keys)  # type: ignore[arg-type]


def test_usage(client: Client, server: Server) -> None:
    usage = client.usage()
    check_meta(usage.meta, server)
    assert usage.tier == "enterprise" and usage.rate_per_min == 1_000_000
    assert usage.limits.page_size_max == 200 and 95 in usage.limits.coverages
    assert "export:read" in usage.scopes


def test_keys_scorecard_and_openapi_need_no_key(server: Server, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MARKS_API_KEY", raising=False)
    with Client(base_url=server.base_url) as anonymous:
        keys = anonymous.signing_keys()
        assert keys.meta is None and len(keys) >= 1
        key = next(iter(keys))
        assert (key.kty, key.crv, key.alg, key.use) == ("OKP", "Ed25519", "EdDSA", "sig")
        assert keys[key.kid] == key and key.kid in keys
        scorecard = anonymous.scorecard()
        check_meta(scorecard.meta, server)
        names = [f.name for f in scorecard.forecasters]
        assert "gap_profile_drift" in names
        assert scorecard.forecaster("gap_profile_drift").coverage_80.nominal_pct == 80
        targets = anonymous.scorecard_targets()
        check_meta(targets.meta, server)
        assert list(targets.forecasters) == names
        frame = targets.to_pandas()
        assert len(frame) == sum(len(t.forecasts) for t in targets)
        check_frame_meta(frame, server)
        document = anonymous.openapi()
        assert document["info"]["version"] == API_VERSION


def _public_targets(targets: ScorecardTargets) -> None:
    """Relative quantities only: no slug, event id or dollars; the bands as multiples of the mark."""
    assert len(targets) > 0
    for target in targets:
        assert (target.slug, target.event_id, target.observed_usd) == (None, None, None)
        assert not {"slug", "event_id", "observed_usd"} & set(target.raw)
        for forecast in target.forecasts:
            assert (forecast.mark_usd, forecast.band_80, forecast.band_95) == (None, None, None)
            assert forecast.band_95_rel.lower <= forecast.band_80_rel.lower <= 1
            assert 1 <= forecast.band_80_rel.upper <= forecast.band_95_rel.upper
            assert (forecast.verdict is not None) == (target.kind != "event")
    days = [(t.marked_on, t.occurred_on) for t in targets]
    assert days == sorted(days)  # in date order, so one company's targets do not sit together


def _figures(targets: ScorecardTargets) -> list[tuple[object, ...]]:
    """What both forms of the targets say alike, in an order of their own."""
    return sorted(
        (t.kind, t.event_type, t.occurred_on, t.marked_on, t.gap_years, f.forecaster, f.log_error or 0.0,
         f.hit, f.band_80_rel.lower, f.band_95_rel.upper, f.verdict or "")
        for t in targets
        for f in t.forecasts
    )  # fmt: skip


def test_scorecard_targets_without_a_key_and_below_pro_are_the_public_form(
    server: Server, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("MARKS_API_KEY", raising=False)
    with Client(base_url=server.base_url) as anonymous:
        public = anonymous.scorecard_targets()
        assert anonymous.rate_limit is None  # not metered
    _public_targets(public)
    with Client(api_key=server.keys["research"], base_url=server.base_url) as research:
        below_pro = research.scorecard_targets()
        assert research.rate_limit is not None  # a keyed call is metered
    assert below_pro.raw["targets"] == public.raw["targets"]
    frame = public.to_pandas()
    assert frame["slug"].isna().all() and frame["event_id"].isna().all()
    for column in ("observed_usd", "mark_usd", "band_80_lower", "band_95_upper"):
        assert frame[column].isna().all() and pd.api.types.is_float_dtype(frame[column]), column
    assert frame["band_80_rel_lower"].notna().all() and frame["band_95_rel_upper"].notna().all()
    assert (frame["band_95_rel_lower"] <= frame["band_80_rel_lower"]).all()


def test_scorecard_targets_with_a_pro_key_are_the_full_form(server: Server) -> None:
    with Client(base_url=server.base_url, api_key="") as anonymous:
        public = anonymous.scorecard_targets()
    for tier in ("pro", "enterprise"):
        with Client(api_key=server.keys[tier], base_url=server.base_url) as keyed:
            full = keyed.scorecard_targets()
        assert len(full) == len(public) and list(full.forecasters) == list(public.forecasters)
        assert _figures(full) == _figures(public), tier  # the same numbers, and the names besides
        for target in full:
            assert target.slug and target.event_id and isinstance(target.observed_usd, int)
            for forecast in target.forecasts:
                assert forecast.mark_usd is not None and forecast.band_80 is not None
                assert forecast.band_95 is not None
                # The relative band is the dollar band over the mark.
                assert forecast.band_80.lower == pytest.approx(
                    forecast.mark_usd * forecast.band_80_rel.lower, 1e-6, 1
                )
                assert forecast.band_95.upper == pytest.approx(
                    forecast.mark_usd * forecast.band_95_rel.upper, 1e-6, 1
                )
    frame = full.to_pandas()
    assert frame["slug"].notna().all() and (frame["observed_usd"] >= 0).all()
    assert frame["band_80_lower"].notna().all() and frame["band_80_rel_lower"].notna().all()
    assert len(frame) == len(public.to_pandas())


def _outcomes(card: Scorecard) -> list[tuple[object, ...]]:
    outcomes: list[Union[ListingValidation, BankruptcyOutcome]] = [
        *card.listing_validations,
        *card.bankruptcy_outcomes,
    ]
    return [
        (v.slug, v.marked_on, e.forecaster, e.error_pct, e.inside_80, e.inside_95, e.verdict)
        for v in outcomes
        for e in v.estimates
    ]


def test_the_scorecard_without_a_key_and_with_a_pro_key(server: Server) -> None:
    with Client(base_url=server.base_url, api_key="") as anonymous:
        public = anonymous.scorecard()
    with Client(api_key=server.keys["pro"], base_url=server.base_url) as pro:
        full = pro.scorecard()
        assert pro.rate_limit is not None
    assert public.raw["meta"] == full.raw["meta"] and public.params == full.params
    for public_score, full_score in zip(public.forecasters, full.forecasters):
        assert dataclasses.replace(public_score, misses=(), mape_top_contributors=()) == dataclasses.replace(
            full_score, misses=(), mape_top_contributors=()
        )  # the same figures
        assert len(public_score.misses) == len(full_score.misses)
        for hidden, shown in zip(public_score.misses, full_score.misses):
            assert (hidden.slug, hidden.event_id, hidden.valuation_usd, hidden.band_95) == (
                None,
                None,
                None,
                None,
            )
            assert (hidden.event_type, hidden.occurred_on, hidden.log_error) == (
                shown.event_type,
                shown.occurred_on,
                shown.log_error,
            )
            assert hidden.band_95_rel == shown.band_95_rel
            assert shown.slug and shown.event_id and shown.valuation_usd and shown.predicted_usd
            assert shown.band_95 is not None and shown["slug"] == shown.slug  # still reads as a mapping
        for hidden_c, shown_c in zip(public_score.mape_top_contributors, full_score.mape_top_contributors):
            assert (hidden_c.slug, hidden_c.event_id) == (None, None) and shown_c.slug and shown_c.event_id
            assert (hidden_c.event_type, hidden_c.abs_pct_error) == (
                shown_c.event_type,
                shown_c.abs_pct_error,
            )
    assert public.listing_validations and public.bankruptcy_outcomes
    assert _outcomes(public) == _outcomes(full)
    for listing in public.listing_validations:
        assert (listing.event_id, listing.listed_on, listing.listing_value_usd) == (None, None, None)
        assert listing.occurred_on is not None and listing.slug
        assert all(
            e.mark_usd is None and e.band_80 is None and e.band_80_rel is not None for e in listing.estimates
        )
    for listing in full.listing_validations:
        assert listing.event_id and listing.listed_on and listing.listing_value_usd
        assert all(e.mark_usd is not None and e.band_80 is not None for e in listing.estimates)
    for bankruptcy in public.bankruptcy_outcomes:
        assert (bankruptcy.event_type, bankruptcy.event_id, bankruptcy.value_usd) == (
            "bankruptcy",
            None,
            None,
        )
    for bankruptcy in full.bankruptcy_outcomes:
        assert bankruptcy.event_id and bankruptcy.value_usd is not None
        assert all(e.error_pct is None or bankruptcy.value_usd > 0 for e in bankruptcy.estimates)


def test_a_scorecard_call_with_an_unknown_key_is_refused(server: Server) -> None:
    with Client(api_key="vmk_not_a_key_at_all", base_url=server.base_url) as stranger:
        with pytest.raises(InvalidApiKey):
            stranger.scorecard()
        with pytest.raises(InvalidApiKey):
            stranger.scorecard_targets()


def test_changes_since_a_version(client: Client, server: Server) -> None:
    changes = list(client.changes(since=server.previous_version, limit=5))
    stripe = next(c for c in changes if c.slug == "stripe")
    assert "events" in stripe.changes and stripe.events_added == 1
    assert stripe.company.slug == "stripe" and stripe.company.meta.dataset_version == server.version
    check_meta(stripe.meta, server)
    assert [c.slug for c in changes] == sorted(c.slug for c in changes)
    page = client.changes_page(datetime.date.fromisoformat(server.previous_version), limit=200)
    assert (page.since, page.dataset_version) == (server.previous_version, server.version)
    assert list(page.versions) == [server.previous_version, server.version]
    assert [c.slug for c in page] == [c.slug for c in changes]
    assert list(client.changes(since=server.version)) == []
    with pytest.raises(InvalidParameter) as refused:
        list(client.changes(since="2001-01-01"))
    assert "export" in refused.value.detail  # the API says to re-sync from the export


# ---------------------------------------------------------------------------------------------
# Exports


def test_export_streams_every_company_with_verifiable_records(client: Client, server: Server) -> None:
    keys = client.signing_keys()
    stream = client.export()
    before = stream.header
    assert before is None  # nothing is fetched before iterating
    lines = list(stream)
    assert stream.header is not None and stream.header.export == "companies"
    assert len(lines) == stream.header.companies
    check_meta(stream.meta, server)
    assert [line.slug for line in lines] == sorted(c.slug for c in client.companies(limit=200))
    for line in lines:
        assert line.meta == stream.meta
        assert line.resolution.verify(DEMO_KEY_THUMBPRINT, keys=keys)
    stripe = next(line for line in lines if line.slug == "stripe")
    assert (
        stripe.latest_mark is not None and stripe.latest_mark.band_95.upper_usd > stripe.latest_mark.upper_usd
    )
    assert stripe.events[-1].event_id == "e9001"
    assert stream.resumes == 0 and stream.etag and stream.bytes_received > 0
    with pytest.raises(RuntimeError):
        list(stream)  # read once


def test_series_export(client: Client, server: Server) -> None:
    stream = client.export_series(coverage=95)
    by_slug = {line.slug: line for line in stream}
    assert (
        stream.header is not None and stream.header.coverage == 95 and len(by_slug) == stream.header.companies
    )
    stripe = by_slug["stripe"]
    assert stripe.coverage == 95 and stripe.points == client.series("stripe", coverage=95).points
    frame = stripe.to_pandas()
    assert len(frame) == len(stripe.points)
    check_frame_meta(frame, server)
    default = client.export_series()
    assert {line.coverage for line in default} == {80}


def test_download_export_and_read_it_back(client: Client, tmp_path: Path, server: Server) -> None:
    result = client.download_export(tmp_path / "export.ndjson.gz")
    assert result.complete and result.path == tmp_path / "export.ndjson.gz"
    assert result.size == result.total == result.path.stat().st_size
    assert result.encoding == "gzip" and result.resumed_from is None
    copy = read_export(result.path)
    check_meta(copy.meta, server)
    assert [line.raw for line in copy] == [line.raw for line in client.export()]
    series = client.download_export_series(tmp_path / "series.ndjson.gz", coverage=80)
    assert series.complete
    assert sum(1 for _ in read_export_series(series.path)) == read_export_series(series.path).header.companies


# ---------------------------------------------------------------------------------------------
# Caching and the escape hatch


def test_etag_cache_revalidates_with_a_304_that_costs_one_unit(server: Server) -> None:
    with Client(api_key=server.keys["etag_sync"], base_url=server.base_url, cache=True) as cached:
        first = cached.company("stripe")
        assert cached.last_response is not None and cached.last_response.status == 200
        assert cached.rate_limit is not None
        remaining = cached.rate_limit.remaining
        again = cached.company("stripe")
        assert again == first
        assert cached.last_response.status == 304 and cached.last_response.from_cache
        assert cached.stats.not_modified == 1
        assert cached.rate_limit.remaining == remaining - 1  # a 304 costs one unit of the budget
        assert cached.cache is not None and len(cached.cache) == 1


def test_request_reaches_any_path(client: Client) -> None:
    usage = client.request("/v1/usage")
    assert usage["tier"] == "enterprise"
    assert client.request("/v1/usage", method="HEAD") is None
    assert client.last_response is not None and client.last_response.status == 200
    assert client.base_url.startswith("http://127.0.0.1:")
