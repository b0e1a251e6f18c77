"""Every mark explained (last event, days since, outcome, the mark against the last event), the
sorts by them, and a company's backtest in its research and full forms, against the live server
and the sample's own CSV."""

from __future__ import annotations

import csv
import datetime
from collections.abc import Iterator
from typing import Any, Optional

import pandas as pd
import pytest

from valuation_marks import (
    Backtest,
    BacktestTarget,
    Client,
    CompanyListItem,
    CompanyOutcome,
    InvalidSlug,
    InvalidSort,
    LastEvent,
    NotFound,
    TierForbidden,
)

from .conftest import Server, find_sample
from .test_sync import check_frame_meta, check_meta

LISTINGS = ("ipo", "direct_listing")
ENDINGS = (*LISTINGS, "bankruptcy")


@pytest.fixture(scope="module")
def client(server: Server) -> Iterator[Client]:
    with Client(api_key=server.keys["enterprise"], base_url=server.base_url) as client:
        yield client


@pytest.fixture(scope="module")
def items(client: Client) -> list[CompanyListItem]:
    return list(client.companies(limit=200))


@pytest.fixture(scope="module")
def source_events() -> dict[str, list[dict[str, str]]]:
    """Each company's events in the served version: the sample's CSV and the one event the
    conftest's next version adds (e9001, Stripe's tender offer on the as-of day)."""
    by_slug: dict[str, list[dict[str, str]]] = {}
    with open(find_sample() / "events.csv", encoding="utf-8") as events:
        for row in csv.DictReader(events):
            by_slug.setdefault(row["slug"], []).append(row)
    return by_slug


def expected_outcome(events: list[dict[str, str]]) -> Optional[dict[str, str]]:
    """The listing or bankruptcy, else an acquisition that is the last event, else none."""
    ordered = sorted(events, key=lambda e: e["occurred_on"])
    ending = [e for e in ordered if e["event_type"] in ENDINGS]
    if ending:
        return ending[0]
    return ordered[-1] if ordered[-1]["event_type"] == "acquisition" else None


# ---------------------------------------------------------------------------------------------
# The explained mark, on every company item


def test_every_company_item_explains_its_mark(
    items: list[CompanyListItem], source_events: dict[str, list[dict[str, str]]], server: Server
) -> None:
    assert len(items) == len(source_events) > 100
    as_of = items[0].meta.as_of
    outcomes: dict[str, int] = {}
    for item in items:
        events = sorted(source_events[item.slug], key=lambda e: e["occurred_on"])
        last = events[-1]
        if item.slug == "stripe":  # the next version's event
            last = {"event_id": "e9001", "event_type": "tender_offer", "occurred_on": server.version}
            last["valuation_usd"] = "91000000000"
        assert isinstance(item.last_event, LastEvent), item.slug
        assert (item.last_event.event_id, item.last_event.event_type) == (
            last["event_id"],
            last["event_type"],
        )
        assert item.last_event.occurred_on == datetime.date.fromisoformat(last["occurred_on"])
        assert item.last_event.valuation_usd == int(last["valuation_usd"])
        assert not {"source_url", "note"} & set(item.last_event.raw)  # values only
        assert item.days_since_last_event == (as_of - item.last_event.occurred_on).days >= 0
        mark = item.latest_mark
        if item.last_event.valuation_usd == 0:
            assert mark.vs_last_event_pct is None, item.slug
        else:
            assert mark.vs_last_event_pct == pytest.approx(
                (mark.value_usd / item.last_event.valuation_usd - 1) * 100, abs=0.006
            ), item.slug
        outcome = expected_outcome(source_events[item.slug])
        if outcome is None:
            assert item.outcome is None, item.slug
            assert item.status == "private"
            continue
        assert isinstance(item.outcome, CompanyOutcome), item.slug
        assert (item.outcome.event_id, item.outcome.event_type) == (
            outcome["event_id"],
            outcome["event_type"],
        )
        assert item.outcome.occurred_on == datetime.date.fromisoformat(outcome["occurred_on"])
        assert item.outcome.valuation_usd == int(outcome["valuation_usd"])
        outcomes[item.outcome.event_type] = outcomes.get(item.outcome.event_type, 0) + 1
        assert (item.status == "ipo_completed") == (item.outcome.event_type in LISTINGS), item.slug
        if item.outcome.event_type in ENDINGS:
            # The series ended before as_of: no 30-day change.
            assert mark.as_of_date < as_of and item.delta_30d_pct is None, item.slug
        else:  # an agreed sale: marked at its price to as_of
            assert mark.as_of_date == as_of and mark.value_usd == item.outcome.valuation_usd, item.slug
    assert set(outcomes) == {"ipo", "direct_listing", "bankruptcy", "acquisition"}, outcomes


def test_the_profile_and_the_export_carry_what_the_list_does(
    client: Client, items: list[CompanyListItem]
) -> None:
    by_slug = {item.slug: item for item in items}
    for line in client.export():
        item = by_slug[line.slug]
        assert (line.last_event, line.days_since_last_event, line.outcome) == (
            item.last_event,
            item.days_since_last_event,
            item.outcome,
        )
        assert line.latest_mark is not None
        assert line.latest_mark.vs_last_event_pct == item.latest_mark.vs_last_event_pct
    for slug in ("airbnb", "wiz", "stripe", "openai"):
        profile = client.company(slug)
        item = by_slug[slug]
        assert (profile.last_event, profile.days_since_last_event, profile.outcome) == (
            item.last_event,
            item.days_since_last_event,
            item.outcome,
        )
        assert profile.latest_mark == item.latest_mark
        starting = profile.starting_event
        assert starting is not None and profile.last_event is not None
        assert starting.event_id == profile.last_event.event_id or profile.outcome is not None
    airbnb = client.company("airbnb")
    assert airbnb.outcome is not None and (airbnb.outcome.event_id, airbnb.outcome.event_type) == (
        "e0002",
        "ipo",
    )
    assert airbnb.delta_30d_pct is None and airbnb.latest_mark is not None
    assert airbnb.latest_mark.as_of_date == airbnb.outcome.occurred_on - datetime.timedelta(days=1)
    wiz = client.company("wiz")
    assert wiz.outcome is not None and wiz.outcome.event_type == "acquisition"
    assert wiz.latest_mark is not None and wiz.latest_mark.value_usd == wiz.outcome.valuation_usd == 32e9
    assert wiz.latest_mark.vs_last_event_pct == 0.0


def test_companies_frame_has_the_explained_columns(
    client: Client, items: list[CompanyListItem], server: Server
) -> None:
    frame = client.companies_frame()
    assert list(frame.columns)[-7:] == [
        "last_event_on", "last_event_type", "last_event_usd", "days_since_last_event", "outcome_type",
        "outcome_on", "vs_last_event_pct",
    ]  # fmt: skip
    for name in ("last_event_on", "outcome_on"):
        assert pd.api.types.is_datetime64_any_dtype(frame[name]), name
    assert str(frame["days_since_last_event"].dtype) == "Int64"
    assert pd.api.types.is_float_dtype(frame["vs_last_event_pct"])
    for item in items:
        row = frame.loc[item.slug]
        assert item.last_event is not None
        assert row["last_event_on"].date() == item.last_event.occurred_on
        assert (row["last_event_type"], row["last_event_usd"]) == (
            item.last_event.event_type,
            item.last_event.valuation_usd,
        )
        assert row["days_since_last_event"] == item.days_since_last_event
        if item.outcome is None:
            assert row[["outcome_type", "outcome_on"]].isna().all()
        else:
            assert row["outcome_type"] == item.outcome.event_type
            assert row["outcome_on"].date() == item.outcome.occurred_on
        if item.latest_mark.vs_last_event_pct is None:
            assert pd.isna(row["vs_last_event_pct"])
        else:
            assert row["vs_last_event_pct"] == item.latest_mark.vs_last_event_pct
    check_frame_meta(frame, server)


# ---------------------------------------------------------------------------------------------
# Sorts by the last event's day and the outcome's


def _walk(client: Client, sort: str) -> list[CompanyListItem]:
    return list(client.companies(sort=sort, limit=37))  # several pages: the order holds across them


def test_sorted_by_the_last_events_day(client: Client, items: list[CompanyListItem]) -> None:
    def key(item: CompanyListItem) -> datetime.date:
        assert item.last_event is not None
        return item.last_event.occurred_on

    ascending = _walk(client, "last_event_on")
    assert [key(i) for i in ascending] == sorted(key(i) for i in items)
    assert [i.slug for i in ascending] == [i.slug for i in sorted(items, key=lambda i: (key(i), i.slug))]
    descending = _walk(client, "-last_event_on")
    assert [key(i) for i in descending] == sorted((key(i) for i in items), reverse=True)
    assert len({i.slug for i in descending}) == len(items)


def test_sorted_by_the_outcomes_day_with_nulls_last(client: Client, items: list[CompanyListItem]) -> None:
    ended = [i for i in items if i.outcome is not None]
    assert 0 < len(ended) < len(items)
    for sort, reverse in (("outcome_on", False), ("-outcome_on", True)):
        walked = _walk(client, sort)
        head, tail = walked[: len(ended)], walked[len(ended) :]
        assert all(i.outcome is not None for i in head) and all(i.outcome is None for i in tail), sort
        days = [i.outcome.occurred_on for i in head if i.outcome is not None]
        assert days == sorted(days, reverse=reverse), sort
        assert [i.slug for i in tail] == sorted(i.slug for i in tail), sort  # ties by slug
    with pytest.raises(InvalidSort) as refused:
        client.companies_page(sort="outcome")
    assert "last_event_on" in refused.value.detail and "outcome_on" in refused.value.detail
    frame = client.companies_frame(sort="-outcome_on", status="ipo_completed")
    assert frame["outcome_on"].is_monotonic_decreasing and frame["outcome_type"].isin(LISTINGS).all()


# ---------------------------------------------------------------------------------------------
# A company's backtest


@pytest.fixture(scope="module")
def backtests(server: Server, items: list[CompanyListItem]) -> dict[str, dict[str, Backtest]]:
    """Every company's backtest read with a research key and with a pro key."""
    found: dict[str, dict[str, Backtest]] = {}
    for tier in ("research", "pro"):
        with Client(api_key=server.keys[tier], base_url=server.base_url) as keyed:
            found[tier] = {item.slug: keyed.backtest(item.slug) for item in items}
    return found


def _same_everywhere(target: BacktestTarget) -> tuple[object, ...]:
    """What both forms say alike."""
    return (
        target.kind, target.event_type, target.occurred_on, target.marked_on, target.gap_years,
        target.mark_usd, target.band_80, target.confidence, target.above, target.inside_80,
        target.inside_95, target.hit, target.verdict,
    )  # fmt: skip


def test_backtest_in_the_research_and_full_forms(
    backtests: dict[str, dict[str, Backtest]], server: Server
) -> None:
    kinds: dict[str, int] = {}
    for slug, research in backtests["research"].items():
        full = backtests["pro"][slug]
        for form, backtest in (("research", research), ("full", full)):
            check_meta(backtest.meta, server)
            assert (backtest.slug, backtest.disclosure) == (slug, form)
            assert backtest.forecaster == "adaptive_gap_profile"
            assert backtest.methodology_version == backtest.meta.methodology_version
            events = [t for t in backtest if t.kind == "event"]
            summary = backtest.summary
            assert summary.scored_events == len(events)
            assert summary.inside_80 == sum(t.inside_80 for t in events)
            assert summary.inside_95 == sum(t.inside_95 for t in events)
            assert summary.hits == sum(t.hit for t in events)
            days = [t.occurred_on for t in backtest]
            assert days == sorted(days)
        assert [_same_everywhere(t) for t in research] == [_same_everywhere(t) for t in full], slug
        for hidden, shown in zip(research, full):
            kinds[hidden.kind] = kinds.get(hidden.kind, 0) + 1
            assert hidden.band_95 is None and "band_95" not in hidden.raw
            assert shown.band_95 is not None and shown.event_id and shown.observed_usd is not None
            assert shown.band_95.lower <= shown.band_80.lower <= shown.band_80.upper <= shown.band_95.upper
            assert (shown.verdict is None) == (shown.kind == "event")
            if shown.observed_usd:
                assert shown.error_pct == pytest.approx(
                    (shown.mark_usd / shown.observed_usd - 1) * 100, abs=0.051
                )
                assert shown.above == (shown.observed_usd > shown.mark_usd)
                in_80 = shown.band_80.lower <= shown.observed_usd <= shown.band_80.upper
                assert shown.inside_80 == in_80, (slug, shown.occurred_on)
            else:
                assert shown.error_pct is None  # a bankruptcy written off
            if hidden.kind == "event":  # where it fell, not its value
                assert (hidden.event_id, hidden.observed_usd, hidden.error_pct) == (None, None, None)
                assert not {"event_id", "observed_usd", "error_pct"} & set(hidden.raw)
            else:  # an outcome's value is every company item's anyway
                assert (hidden.event_id, hidden.observed_usd, hidden.error_pct) == (
                    shown.event_id,
                    shown.observed_usd,
                    shown.error_pct,
                )
    assert set(kinds) == {"event", "listing", "bankruptcy"}, kinds


def test_backtest_agrees_with_the_scorecards_targets(
    server: Server, backtests: dict[str, dict[str, Backtest]], items: list[CompanyListItem]
) -> None:
    with Client(api_key=server.keys["pro"], base_url=server.base_url) as pro:
        targets = pro.scorecard_targets()
    method = list(targets.forecasters).index("adaptive_gap_profile")
    by_slug: dict[str, list[Any]] = {}
    for target in targets:
        assert target.slug is not None
        by_slug.setdefault(target.slug, []).append(target)
    for item in items:
        full = backtests["pro"][item.slug]
        scored = sorted(by_slug.get(item.slug, []), key=lambda t: (t.occurred_on, t.kind != "event"))
        assert len(full) == len(scored), item.slug
        for mine, theirs in zip(sorted(full, key=lambda t: (t.occurred_on, t.kind != "event")), scored):
            forecast = theirs.forecasts[method]
            assert (mine.kind, mine.event_id, mine.observed_usd) == (
                theirs.kind,
                theirs.event_id,
                theirs.observed_usd,
            )
            assert mine.mark_usd == pytest.approx(forecast.mark_usd, abs=1)
            assert mine.band_80 is not None and forecast.band_80 is not None
            assert (mine.band_80.lower, mine.band_80.upper) == (
                forecast.band_80.lower,
                forecast.band_80.upper,
            )
            assert mine.confidence == pytest.approx(forecast.confidence, abs=5e-5)
            assert (mine.inside_80, mine.inside_95, mine.hit, mine.verdict) == (
                forecast.inside_80,
                forecast.inside_95,
                forecast.hit,
                forecast.verdict,
            )
        # A company item's outcome is its backtest's listing or bankruptcy.
        outcomes = [t for t in full if t.kind != "event"]
        if item.outcome is not None and item.outcome.event_type in ENDINGS:
            assert [t.event_id for t in outcomes] == [item.outcome.event_id], item.slug
        else:
            assert outcomes == [], item.slug


def test_backtest_frames(backtests: dict[str, dict[str, Backtest]], server: Server) -> None:
    stripe_research, stripe_full = backtests["research"]["stripe"], backtests["pro"]["stripe"]
    assert len(stripe_full) >= 3 and stripe_full.targets[-1].event_id == "e9001"  # the as-of day's event
    frames = {form: b.to_pandas() for form, b in (("research", stripe_research), ("full", stripe_full))}
    for form, frame in frames.items():
        assert len(frame) == len(stripe_full)
        assert list(frame.columns) == [
            "kind", "event_type", "occurred_on", "marked_on", "gap_years", "mark_usd", "band_80_lower",
            "band_80_upper", "band_95_lower", "band_95_upper", "confidence", "event_id", "observed_usd",
            "error_pct", "above", "inside_80", "inside_95", "hit", "verdict",
        ]  # fmt: skip
        assert (frame.attrs["slug"], frame.attrs["disclosure"]) == ("stripe", form)
        assert frame.attrs["forecaster"] == "adaptive_gap_profile"
        check_frame_meta(frame, server)
        assert pd.api.types.is_datetime64_any_dtype(frame["occurred_on"])
        for name in ("band_95_lower", "observed_usd", "error_pct"):
            assert pd.api.types.is_float_dtype(frame[name]), (form, name)
    research, full = frames["research"], frames["full"]
    assert research["band_95_lower"].isna().all() and research["event_id"].isna().all()
    assert full["band_95_lower"].notna().all() and list(full["event_id"]) == [t.event_id for t in stripe_full]
    assert (research["mark_usd"] == full["mark_usd"]).all()
    assert (full["band_80_lower"] <= full["mark_usd"]).all() and (
        full["mark_usd"] <= full["band_80_upper"]
    ).all()
    # A listed company's frame ends with its listing, an outcome the research form gives in full.
    airbnb = backtests["research"]["airbnb"].to_pandas()
    listing = airbnb.iloc[-1]
    assert (listing["kind"], listing["event_id"], listing["verdict"]) == ("listing", "e0002", "covered_80")
    assert listing["observed_usd"] == 47e9
    # A company with a single event has nothing scored: an empty frame with the same columns.
    empty = next(b for b in backtests["pro"].values() if len(b) == 0)
    assert empty.summary.scored_events == 0 and list(empty.to_pandas().columns) == list(full.columns)


def test_backtest_needs_research_and_a_company(server: Server) -> None:
    with Client(api_key=server.keys["free_backtest"], base_url=server.base_url, max_retries=0) as free:
        with pytest.raises(TierForbidden) as refused:
            free.backtest("stripe")
        assert "research" in refused.value.detail
    with Client(api_key=server.keys["research"], base_url=server.base_url) as research:
        with pytest.raises(NotFound):
            research.backtest("no-such-company")
        with pytest.raises(InvalidSlug):
            research.backtest("../usage")


# ---------------------------------------------------------------------------------------------
# The scorecard of methodology v0.4.0


def test_the_scorecard_says_its_form_and_compares_with_the_previous_method(server: Server) -> None:
    with Client(base_url=server.base_url, api_key="") as anonymous:
        public, public_targets = anonymous.scorecard(), anonymous.scorecard_targets()
    with Client(api_key=server.keys["pro"], base_url=server.base_url) as pro:
        full, full_targets = pro.scorecard(), pro.scorecard_targets()
    assert (public.disclosure, full.disclosure) == ("public", "full")
    assert (public_targets.disclosure, full_targets.disclosure) == ("public", "full")
    names = [f.name for f in full.forecasters]
    assert names == [
        "adaptive_gap_profile", "gap_profile_drift", "local_linear_trend", "last_event_carried_forward",
        "quality_weighted_step",
    ]  # fmt: skip
    assert list(full_targets.forecasters) == names == [f.name for f in public.forecasters]
    assert full.forecaster("adaptive_gap_profile").methodology_version == full.methodology_version
    assert full.forecaster("gap_profile_drift").methodology_version == "v0.3.0"
    for card in (public, full):
        assert card.methodology_version == card.meta.methodology_version == "v0.4.0"
        for name in ("level80_gamma", "level80_target", "drift_after_agreed_sale"):
            assert name in card.params, name
        bands = card.bands_in_force
        assert bands is not None and 0 < bands.level80 < 1 and bands.q80 < bands.q95
        assert bands.residuals >= bands.conformal_era >= bands.misses >= 0
        assert card.quantiles_in_force is not None and card.quantiles_in_force["q80"] == bands.q80
        assert card.comparison is not None and card.comparison_with_previous is not None
        assert (card.comparison.a, card.comparison.b) == (
            "adaptive_gap_profile",
            "last_event_carried_forward",
        )
        previous = card.comparison_with_previous
        assert (previous.a, previous.b) == ("adaptive_gap_profile", "gap_profile_drift")
        robust = previous.difference("median_abs_log_error")
        assert robust.verdict in ("a_better", "b_better", "tie") and robust.interval_95 is not None
        assert previous["differences"][0]["figure"] == previous.differences[0].figure  # reads as a mapping
    assert public.comparison_with_previous == full.comparison_with_previous
    for targets in (public_targets, full_targets):
        for target in targets:
            for forecast in target.forecasts:
                assert forecast.scale is not None and forecast.scale > 0
                assert forecast.q80 is not None and forecast.q95 is not None and forecast.q80 < forecast.q95
