"""Every mark explained (last event and its grade, days since, outcome by kind, the mark against
the last event, the next-print forecast beside it, the confidence track record), the sorts by
them, a company's backtest in its research and full forms, and the scorecard's comparisons,
against the live server and the served version's own CSV (the sample's, and the two records the
conftest's successor appends)."""

from __future__ import annotations

import datetime
import math
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
    InvalidParameter,
    InvalidSlug,
    InvalidSort,
    LastEvent,
    NextReported,
    NotFound,
    TierForbidden,
)

from .conftest import ANCHOR_TYPES, OUTCOME_KINDS, Server, effective_view, served_events
from .test_sync import check_frame_meta, check_meta

LISTINGS = tuple(event_type for event_type, kind in OUTCOME_KINDS.items() if kind == "listed")
#: The backtest's kind of target for each outcome kind that ended the private period.
TARGET_KINDS = {"listed": "listing", "sold": "sale", "bankrupt": "failure", "wound_down": "failure"}

Row = dict[str, str]


@pytest.fixture(scope="module")
def client(server: Server) -> Iterator[Client]:
    with Client(api_key=server.keys["enterprise"], base_url=server.base_url) as client:
        yield client


@pytest.fixture(scope="module")
def items(client: Client) -> list[CompanyListItem]:
    return list(client.companies(limit=200))


@pytest.fixture(scope="module")
def source_events(server: Server) -> dict[str, list[Row]]:
    """Each company's effective view in the served version: corrected and withdrawn records
    left out, in date order."""
    return effective_view(served_events(server.events_csv))


def ends_private_period(event: Row) -> bool:
    """An outcome record: a listing only once closed (one announced is an agreed deal, one in talks
    a filing: data v6), a closed sale, a bankruptcy or a wind-down."""
    agreed_or_filed = event["reported_as"] in ("announced", "in_talks")
    return event["event_type"] in OUTCOME_KINDS and not (event["event_type"] in LISTINGS and agreed_or_filed)


def expected_outcome(events: list[Row]) -> Optional[tuple[str, Row]]:
    """The first listing, closed sale, bankruptcy or wind-down; else the last acquisition, if no
    later acquisition_terminated undid it and no value was reported after it (sale_agreed: a
    company that raised again after an agreement, as Flipkart after Walmart's, is no longer
    waiting on it); else none."""
    ending = next((e for e in events if ends_private_period(e)), None)
    if ending is not None:
        return OUTCOME_KINDS[ending["event_type"]], ending
    deals = [
        e
        for e in events
        if e["event_type"] in ("acquisition", "acquisition_terminated")
        or (e["event_type"] in ANCHOR_TYPES and int(e["valuation_usd"]) > 0)
    ]
    if deals and deals[-1]["event_type"] == "acquisition":
        return "sale_agreed", deals[-1]
    return None


def expected_last_event(events: list[Row]) -> Optional[Row]:
    """The last observation of value before the outcome's day (a sale agreed on its closing day
    is no part of it): a terminated sale removes the agreed sale (unless nothing else is left),
    a value of 0 observes nothing (a fund's mark of 0 after an earlier value excepted)."""
    ending = next((e["occurred_on"] for e in events if ends_private_period(e)), None)
    anchors: list[Row] = []
    for event in events:
        kind = event["event_type"]
        if ends_private_period(event) or (ending is not None and event["occurred_on"] >= ending):
            break
        if kind in LISTINGS:  # a listing in talks (a filing) observes no value; none is announced here
            continue
        if kind == "acquisition_terminated":
            if any(a["event_type"] != "acquisition" for a in anchors):
                anchors = [a for a in anchors if a["event_type"] != "acquisition"]
            continue
        if kind not in ANCHOR_TYPES:
            continue
        if int(event["valuation_usd"]) > 0 or (kind == "fund_mark" and anchors):
            anchors.append(event)
    return anchors[-1] if anchors else None


def _or_none(text: str) -> Optional[str]:
    return text or None


# ---------------------------------------------------------------------------------------------
# The explained mark, on every company item


def test_every_company_item_explains_its_mark(
    items: list[CompanyListItem], source_events: dict[str, list[Row]]
) -> None:
    assert len(items) == len(source_events) > 100
    as_of = items[0].meta.as_of
    kinds: dict[str, int] = {}
    track_records = set()
    for item in items:
        events = source_events[item.slug]
        last = expected_last_event(events)
        assert last is not None and isinstance(item.last_event, LastEvent), item.slug
        assert (item.last_event.event_id, item.last_event.event_type) == (
            last["event_id"],
            last["event_type"],
        )
        assert item.last_event.occurred_on == datetime.date.fromisoformat(last["occurred_on"])
        assert item.last_event.valuation_usd == int(last["valuation_usd"])
        assert item.last_event.source_grade == _or_none(last["source_grade"]), item.slug
        assert not {"source_url", "note"} & set(item.last_event.raw)  # values and grades only
        assert item.days_since_last_event == (as_of - item.last_event.occurred_on).days >= 0
        mark = item.latest_mark
        if item.last_event.valuation_usd == 0:
            assert mark.vs_last_event_pct is None, item.slug
        else:
            assert mark.vs_last_event_pct == pytest.approx(
                (mark.value_usd / item.last_event.valuation_usd - 1) * 100, abs=0.006
            ), item.slug
        expected = expected_outcome(events)
        if expected is None:
            assert item.outcome is None and item.status == "private", item.slug
        else:
            kind, outcome = expected
            assert isinstance(item.outcome, CompanyOutcome), item.slug
            assert (item.outcome.kind, item.outcome.event_id, item.outcome.event_type) == (
                kind,
                outcome["event_id"],
                outcome["event_type"],
            )
            assert item.outcome.occurred_on == datetime.date.fromisoformat(outcome["occurred_on"])
            assert item.outcome.valuation_usd == int(outcome["valuation_usd"])
            kinds[kind] = kinds.get(kind, 0) + 1
            assert (item.status == "ipo_completed") == (kind == "listed"), item.slug
        if item.outcome is not None and item.outcome.ended:
            # The series ended the day before the outcome: no 30-day change, no next print.
            assert mark.as_of_date == item.outcome.occurred_on - datetime.timedelta(days=1), item.slug
            assert item.delta_30d_pct is None and mark.next_reported is None, item.slug
        else:
            # Marked to as_of, with the next-print forecast beside today's value estimate.
            assert mark.as_of_date == as_of, item.slug
            assert isinstance(mark.next_reported, NextReported) and mark.next_reported.value_usd > 0, (
                item.slug
            )
            assert "not today's value estimate" in mark.next_reported.label
            track_records.add(mark.confidence)
            if item.outcome is not None and item.last_event.event_id == item.outcome.event_id:
                # An agreed sale pending holds its price.
                assert mark.value_usd == item.outcome.valuation_usd, item.slug
    expected_kinds = {e[0] for e in map(expected_outcome, source_events.values()) if e is not None}
    assert set(kinds) == expected_kinds and len(expected_kinds) >= 4, kinds
    # confidence is a track record: the same for every company marked on as_of.
    assert len(track_records) == 1 and 0 < track_records.pop() < 1


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
        assert line.latest_mark.next_reported == item.latest_mark.next_reported
        assert line.latest_mark.confidence == item.latest_mark.confidence
    # A company of each outcome kind (and one without), by its profile.
    one_of_each: dict[Optional[str], CompanyListItem] = {}
    for item in items:
        one_of_each.setdefault(item.outcome.kind if item.outcome else None, item)
    for kind, item in one_of_each.items():
        profile = client.company(item.slug)
        assert (profile.last_event, profile.days_since_last_event, profile.outcome) == (
            item.last_event,
            item.days_since_last_event,
            item.outcome,
        )
        assert profile.latest_mark == item.latest_mark
        starting = profile.starting_event
        assert starting is not None and profile.last_event is not None and profile.drift is not None
        ended = profile.outcome is not None and profile.outcome.ended
        assert (profile.ending is not None) == ended, kind
        if not ended:
            assert starting.event_id == profile.last_event.event_id, kind
            assert starting.source_grade == profile.last_event.source_grade
        if kind == "sale_agreed":
            assert profile.drift.drift_pct == 0.0 and "agreed" in profile.drift.explanation


def test_what_a_mark_is_and_the_outcome_filter(client: Client, items: list[CompanyListItem]) -> None:
    """latest_mark.current, delta_30d_basis, the profile's explanation, and outcome= on the list."""
    cases = {None: {"recently_priced", "quiet"}, "sale_agreed": {"sale_agreed"}}
    for item in items:
        kind = item.outcome.kind if item.outcome else None
        assert item.latest_mark.current == (kind in (None, "sale_agreed")), item.slug
        assert item.delta_30d_basis in ("events", "profile", None)
        assert (item.delta_30d_basis is None) == (item.delta_30d_pct is None), item.slug
    one_of_each: dict[Optional[str], CompanyListItem] = {}
    for item in items:
        one_of_each.setdefault(item.outcome.kind if item.outcome else None, item)
    for kind, item in one_of_each.items():
        profile = client.company(item.slug)
        assert profile.delta_30d_basis == item.delta_30d_basis and profile.explanation is not None
        assert profile.explanation.case in cases.get(kind, {kind}) and profile.explanation.summary, kind
    current = client.companies(outcome=["none", "sale_agreed"], limit=200).to_list()
    assert [i.slug for i in current] == [i.slug for i in items if i.latest_mark.current]
    for kind in {item.outcome.kind for item in items if item.outcome}:
        chosen = client.companies_page(outcome=kind, limit=200).companies
        assert [i.slug for i in chosen] == [i.slug for i in items if i.outcome and i.outcome.kind == kind]
    both = client.companies_csv(outcome="listed,sold")
    listed_or_sold = [i.slug for i in items if i.outcome and i.outcome.kind in ("listed", "sold")]
    assert [row.split(",")[0].strip('"') for row in both.splitlines()[1:]] == listed_or_sold
    with pytest.raises(InvalidParameter):
        client.companies_page(outcome="private")


def test_companies_frame_has_the_explained_columns(
    client: Client, items: list[CompanyListItem], server: Server
) -> None:
    frame = client.companies_frame()
    assert list(frame.columns)[-10:] == [
        "last_event_on", "last_event_type", "last_event_usd", "days_since_last_event", "outcome_type",
        "outcome_on", "vs_last_event_pct", "outcome_kind", "last_event_source_grade", "next_reported_usd",
    ]  # fmt: skip
    for name in ("last_event_on", "outcome_on"):
        assert pd.api.types.is_datetime64_any_dtype(frame[name]), name
    assert str(frame["days_since_last_event"].dtype) == "Int64"
    for name in ("vs_last_event_pct", "next_reported_usd"):
        assert pd.api.types.is_float_dtype(frame[name]), name
    for item in items:
        row = frame.loc[item.slug]
        assert item.last_event is not None
        assert row["last_event_on"].date() == item.last_event.occurred_on
        assert (row["last_event_type"], row["last_event_usd"]) == (
            item.last_event.event_type,
            item.last_event.valuation_usd,
        )
        assert row["days_since_last_event"] == item.days_since_last_event
        if item.last_event.source_grade is None:
            assert pd.isna(row["last_event_source_grade"])
        else:
            assert row["last_event_source_grade"] == item.last_event.source_grade
        if item.outcome is None:
            assert row[["outcome_type", "outcome_on", "outcome_kind"]].isna().all()
        else:
            assert (row["outcome_type"], row["outcome_kind"]) == (item.outcome.event_type, item.outcome.kind)
            assert row["outcome_on"].date() == item.outcome.occurred_on
        if item.latest_mark.vs_last_event_pct is None:
            assert pd.isna(row["vs_last_event_pct"])
        else:
            assert row["vs_last_event_pct"] == item.latest_mark.vs_last_event_pct
        if item.latest_mark.next_reported is None:
            assert pd.isna(row["next_reported_usd"])
        else:
            assert row["next_reported_usd"] == item.latest_mark.next_reported.value_usd
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
    assert (frame["outcome_kind"] == "listed").all()


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
        target.mark_usd, target.band_80, target.confidence, target.next_print_usd, target.above,
        target.inside_80, target.inside_95, target.hit,
    )  # fmt: skip


def test_backtest_in_the_research_and_full_forms(
    backtests: dict[str, dict[str, Backtest]], items: list[CompanyListItem], server: Server
) -> None:
    kinds: dict[str, int] = {}
    for slug, research in backtests["research"].items():
        full = backtests["pro"][slug]
        for form, backtest in (("research", research), ("full", full)):
            check_meta(backtest.meta, server)
            assert (backtest.slug, backtest.disclosure, backtest.tolerance_pct) == (slug, form, 20)
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
            assert hidden.band_95 is None and hidden.last_print_usd is None
            assert not {"band_95", "last_print_usd"} & set(hidden.raw)
            assert shown.band_95 is not None and shown.event_id and shown.observed_usd is not None
            # Scored as reported, but a failure and a fund's mark of 0 at 1% of the last value.
            floored = shown.kind == "failure" or (shown.event_type == "fund_mark" and shown.observed_usd == 0)
            assert shown.scored_usd and (shown.scored_usd == shown.observed_usd or floored)
            assert shown.last_print_usd is not None and shown.last_print_usd > 0 and shown.next_print_usd > 0
            assert shown.band_95.lower <= shown.band_80.lower <= shown.band_80.upper <= shown.band_95.upper
            # The value as scored (a failure's floored) is never 0: every target has its error.
            assert shown.error_pct == pytest.approx((shown.mark_usd / shown.scored_usd - 1) * 100, abs=0.051)
            ratio = shown.scored_usd / shown.mark_usd  # a hit: within +/-20% of the mark
            if min(abs(ratio - 0.8), abs(ratio - 1.2)) > 1e-6:  # not on the edge, where rounding decides
                assert shown.hit == (0.8 < ratio < 1.2), (slug, shown.occurred_on, ratio)
            in_80 = shown.band_80.lower <= shown.scored_usd <= shown.band_80.upper
            assert shown.inside_80 == in_80, (slug, shown.occurred_on)
            if hidden.kind == "event":  # where it fell, not its value
                assert (hidden.event_id, hidden.observed_usd, hidden.error_pct) == (None, None, None)
                assert not {"event_id", "observed_usd", "scored_usd", "error_pct"} & set(hidden.raw)
            else:  # an outcome's value is every company item's anyway
                assert (hidden.event_id, hidden.observed_usd, hidden.error_pct) == (
                    shown.event_id,
                    shown.observed_usd,
                    shown.error_pct,
                )
    ended = {item.outcome.kind for item in items if item.outcome is not None and item.outcome.ended}
    assert set(kinds) == {"event"} | {TARGET_KINDS[kind] for kind in ended}, kinds


def test_backtest_agrees_with_the_scorecards_targets(
    server: Server, backtests: dict[str, dict[str, Backtest]], items: list[CompanyListItem]
) -> None:
    with Client(api_key=server.keys["pro"], base_url=server.base_url) as pro:
        targets = pro.scorecard_targets()
    by_slug: dict[str, list[Any]] = {}
    for target in targets:
        assert target.slug is not None
        by_slug.setdefault(target.slug, []).append(target)
    for item in items:
        full = backtests["pro"][item.slug]
        scored = sorted(by_slug.get(item.slug, []), key=lambda t: (t.occurred_on, t.kind != "event"))
        assert len(full) == len(scored), item.slug
        for mine, theirs in zip(sorted(full, key=lambda t: (t.occurred_on, t.kind != "event")), scored):
            assert (mine.kind, mine.event_id, mine.observed_usd) == (
                theirs.kind,
                theirs.event_id,
                theirs.observed_usd,
            )
            assert (mine.mark_usd, mine.next_print_usd, mine.last_print_usd) == (
                theirs.mark_usd,
                theirs.next_print_usd,
                theirs.last_print_usd,
            )
            # The dollar bands are the mark moved by the row's band offsets.
            assert theirs.mark_log is not None and mine.band_95 is not None
            assert mine.band_80.lower == pytest.approx(
                math.exp(theirs.mark_log + theirs.band_offsets.q10), abs=1
            )
            assert mine.band_95.upper == pytest.approx(
                math.exp(theirs.mark_log + theirs.band_offsets.q975), abs=1
            )
            assert mine.confidence == pytest.approx(theirs.confidence, abs=5e-5)
            assert (mine.inside_80, mine.inside_95, mine.hit) == (
                theirs.inside_80,
                theirs.inside_95,
                theirs.hit,
            )
        # A company item's outcome that ended its private period is its backtest's last target
        # (a sale at an undisclosed price observes no value, and is not scored).
        outcomes = [t for t in full if t.kind != "event"]
        if (
            item.outcome is not None
            and item.outcome.ended
            and (item.outcome.valuation_usd > 0 or TARGET_KINDS[item.outcome.kind] == "failure")
        ):
            assert [(t.kind, t.event_id) for t in outcomes] == [
                (TARGET_KINDS[item.outcome.kind], item.outcome.event_id)
            ], item.slug
        else:
            assert outcomes == [], item.slug


def test_backtest_frames(
    backtests: dict[str, dict[str, Backtest]], items: list[CompanyListItem], server: Server
) -> None:
    stripe_research, stripe_full = backtests["research"]["stripe"], backtests["pro"]["stripe"]
    assert len(stripe_full) >= 3 and stripe_full.targets[-1].event_id == "e9001"  # the as-of day's event
    frames = {form: b.to_pandas() for form, b in (("research", stripe_research), ("full", stripe_full))}
    for form, frame in frames.items():
        assert len(frame) == len(stripe_full)
        assert list(frame.columns) == [
            "kind", "event_type", "occurred_on", "marked_on", "gap_years", "mark_usd", "band_80_lower",
            "band_80_upper", "band_95_lower", "band_95_upper", "confidence", "next_print_usd",
            "last_print_usd", "event_id", "observed_usd", "scored_usd", "error_pct", "above", "inside_80",
            "inside_95", "hit",
        ]  # fmt: skip
        assert (frame.attrs["slug"], frame.attrs["disclosure"], frame.attrs["tolerance_pct"]) == (
            "stripe",
            form,
            20,
        )
        check_frame_meta(frame, server)
        assert pd.api.types.is_datetime64_any_dtype(frame["occurred_on"])
        for name in ("band_95_lower", "last_print_usd", "observed_usd", "scored_usd", "error_pct"):
            assert pd.api.types.is_float_dtype(frame[name]), (form, name)
    research, full = frames["research"], frames["full"]
    assert research["band_95_lower"].isna().all() and research["event_id"].isna().all()
    assert research["last_print_usd"].isna().all() and full["last_print_usd"].notna().all()
    assert full["band_95_lower"].notna().all() and list(full["event_id"]) == [t.event_id for t in stripe_full]
    assert (research["mark_usd"] == full["mark_usd"]).all()
    assert (research["next_print_usd"] == full["next_print_usd"]).all()
    assert (full["band_80_lower"] <= full["mark_usd"]).all() and (
        full["mark_usd"] <= full["band_80_upper"]
    ).all()
    # A listed company's frame ends with its listing, an outcome the research form gives in full.
    listed = next(i for i in items if i.outcome is not None and i.outcome.kind == "listed")
    assert listed.outcome is not None
    listing = backtests["research"][listed.slug].to_pandas().iloc[-1]
    assert (listing["kind"], listing["event_id"]) == ("listing", listed.outcome.event_id)
    assert listing["observed_usd"] == listed.outcome.valuation_usd
    # A company with nothing scored: an empty frame with the same columns.
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
# The scorecard's comparisons


def test_the_comparisons_are_differences_of_the_scores_figures(server: Server) -> None:
    with Client(base_url=server.base_url, api_key="") as anonymous:
        card = anonymous.scorecard()
    assert card.month_end is not None and card.event_day.event is not None
    scores = {
        "event_day": card.event_day.event.errors,
        "month_end_next_reported": card.month_end.next_reported,
        "month_end_bridged": card.month_end.bridged,
    }
    for comparison in card.comparisons:
        errors = scores[comparison.score]
        assert comparison.draws > 0 and comparison.companies > 0
        for difference in comparison.differences:
            a = getattr(errors.get(comparison.a), difference.figure)
            b = getattr(errors.get(comparison.b), difference.figure)
            assert (difference.a, difference.b) == (a, b), (comparison.score, comparison.a, comparison.b)
            assert difference.difference == pytest.approx(a - b, abs=1.5e-4)
            assert difference.interval_95 is not None
            low, high = difference.interval_95
            verdict = "a_better" if high < 0 else "b_better" if low > 0 else "tie"
            assert difference.verdict == verdict, (comparison.score, difference)
    # The findings say it in words: the mark is built for the value on the day, the next-print
    # forecast for the next reported value, and confidence is a track record.
    words = " ".join(card.findings)
    assert "next-print forecast" in words and "track record" in words
