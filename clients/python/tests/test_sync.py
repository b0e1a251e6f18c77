"""Every method of ``Client`` against the live server."""

from __future__ import annotations

import dataclasses
import datetime
from collections.abc import Iterator
from pathlib import Path

import pandas as pd
import pytest

from valuation_marks import (
    API_VERSION,
    Client,
    CompanyListItem,
    InvalidApiKey,
    InvalidParameter,
    Meta,
    ObservationDrift,
    ObservationEvent,
    ObservationOutcome,
    ScorecardTargets,
    SignatureError,
    SigningKeys,
    UnknownSigningKey,
    read_export,
    read_export_series,
)

from .conftest import (
    DEMO_KEY_THUMBPRINT,
    OUTCOME_KINDS,
    Server,
    effective_view,
    retraction_target,
    served_events,
)


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
    big_pages = list(client.companies(limit=200, sort="-value_usd").pages())
    assert big_pages[-1].page.next_cursor is None and not big_pages[-1].page.has_more
    walked = list(client.companies(limit=7, sort="-value_usd"))
    assert [c.slug for c in walked] == [c.slug for page in big_pages for c in page.companies]
    assert walked == [c for page in big_pages for c in page.companies]
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
        "days_since_last_event", "outcome_type", "outcome_on", "vs_last_event_pct", "outcome_kind",
        "last_event_source_grade", "next_reported_usd",
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
    assert stripe.starting_event == event and stripe.drift == drift and stripe.ending is None
    assert not {"source_url", "note", "gain"} & set(event.raw)
    assert event.source_grade is None  # the appended record is not graded
    # Today's value estimate, with the next-print forecast beside it, labelled as what it is.
    forecast = stripe.latest_mark.next_reported
    assert forecast is not None and forecast.value_usd > 0 and "not today's value estimate" in forecast.label


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


def test_a_company_whose_private_period_ended_is_marked_the_day_before(
    client: Client, server: Server
) -> None:
    """For each kind of ending in the source data, a company's last private mark (the day before
    its outcome), no next print, and the outcome as the last part of its observations."""
    ended: dict[str, tuple[str, dict[str, str]]] = {}
    for slug, events in sorted(effective_view(served_events(server.events_csv)).items()):
        # A listing ends the private period once closed (one in talks is a filing: data v6).
        closed = (row for row in events if row["reported_as"] != "in_talks")
        outcome = next((row for row in closed if row["event_type"] in OUTCOME_KINDS), None)
        if outcome is not None:
            ended.setdefault(OUTCOME_KINDS[outcome["event_type"]], (slug, outcome))
    assert set(ended) == set(OUTCOME_KINDS.values()), ended  # every kind the data holds is read
    for kind, (slug, outcome) in ended.items():
        company = client.company(slug)
        event, drift, ending = company.observations
        assert isinstance(event, ObservationEvent) and isinstance(drift, ObservationDrift), slug
        assert isinstance(ending, ObservationOutcome) and company.ending == ending, slug
        assert (ending.kind, ending.event_id, ending.event_type) == (
            kind,
            outcome["event_id"],
            outcome["event_type"],
        )
        assert (
            ending.valuation_usd == int(outcome["valuation_usd"])
            and "not a value today" in ending.explanation
        )
        assert company.outcome is not None and company.outcome.ended and company.outcome.kind == kind
        day = datetime.date.fromisoformat(outcome["occurred_on"])
        assert company.latest_mark is not None and company.latest_mark.as_of_date == day - datetime.timedelta(
            days=1
        )
        assert company.latest_mark.next_reported is None and company.delta_30d_pct is None, slug
        assert event.occurred_on <= company.latest_mark.as_of_date and event.occurred_on < day, slug


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


def _or_none(text: str) -> str | None:
    return text or None


def test_events_are_every_record_of_the_source(client: Client, server: Server) -> None:
    rows = [row for row in served_events(server.events_csv) if row["slug"] == "stripe"]
    events = client.events("stripe")
    check_meta(events.meta, server)
    assert [e.event_id for e in events][-1] == "e9001"
    dates = [e.occurred_on for e in events]
    assert dates == sorted(dates)
    by_id = {row["event_id"]: row for row in rows}
    assert sorted(e.event_id for e in events) == sorted(by_id)  # every record, corrected ones too
    for event in events:
        row = by_id[event.event_id]
        assert (event.event_type, event.occurred_on.isoformat(), event.valuation_usd) == (
            row["event_type"],
            row["occurred_on"],
            int(row["valuation_usd"]),
        )
        assert (event.reported_as, event.source_grade, event.supersedes) == (
            _or_none(row["reported_as"]),
            _or_none(row["source_grade"]),
            _or_none(row["supersedes"]),
        )
    frame = events.to_pandas()
    assert len(frame) == len(events) and frame["event_id"].iloc[-1] == "e9001"
    assert list(frame.columns) == [
        "event_id", "event_type", "valuation_usd", "reported_as", "source_url", "source_grade", "note",
        "supersedes", "superseded_by", "retracted_by",
    ]  # fmt: skip
    check_frame_meta(frame, server)


def test_a_correction_and_a_retraction_are_linked_both_ways(client: Client, server: Server) -> None:
    """The first correction of the source data, and the successor's retraction: the record
    corrected or withdrawn stays, names what replaced it, and leaves the effective view."""
    rows = served_events(server.events_csv)
    correction = next(row for row in rows if row["supersedes"] and row["event_type"] != "retraction")
    # The successor's retraction: the last (the sample has retractions of its own before it).
    retraction = [row for row in rows if row["event_type"] == "retraction"][-1]
    withdrawn = retraction_target([row for row in rows if row["event_id"] != retraction["event_id"]])
    assert retraction["supersedes"] == withdrawn["event_id"]
    for record, link in ((correction, "superseded_by"), (retraction, "retracted_by")):
        events = client.events(record["slug"])
        earlier = events[record["supersedes"]]
        assert getattr(earlier, link) == record["event_id"] and not earlier.effective, (record, earlier)
        later = events[record["event_id"]]
        expected = [row["event_id"] for row in effective_view(rows)[record["slug"]]]
        assert later.supersedes == earlier.event_id and later.effective == (later.event_id in expected)
        assert [e.event_id for e in events.effective] == expected, record["slug"]
        frame = events.to_pandas()
        assert frame.set_index("event_id").loc[earlier.event_id, link] == record["event_id"]
    # The withdrawn record no longer moves the mark: the company's last event is the one before.
    item = client.company(withdrawn["slug"])
    assert item.last_event is not None and item.last_event.event_id != withdrawn["event_id"]
    assert item.starting_event is not None and item.starting_event.event_id == item.last_event.event_id


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
        assert [n.name for n in scorecard.numbers] == ["mark", "next_print", "last_print"]
        assert scorecard.number("mark").methodology_version == scorecard.methodology_version
        assert scorecard.number("last_print").methodology_version is None
        targets = anonymous.scorecard_targets()
        check_meta(targets.meta, server)
        assert list(targets.numbers) == [n.name for n in scorecard.numbers]
        frame = targets.to_pandas()
        assert len(frame) == len(targets) == scorecard.event_day.n
        check_frame_meta(frame, server)
        months = targets.month_ends_to_pandas()
        assert (
            scorecard.month_end is not None
            and len(months) == len(targets.month_ends) == scorecard.month_end.n
        )
        check_frame_meta(months, server)
        document = anonymous.openapi()
        assert document["info"]["version"] == API_VERSION


def _public_rows(targets: ScorecardTargets) -> None:
    """Relative quantities only: no company, event id, dollars or logs; in date order."""
    assert len(targets) > 0 and len(targets.month_ends) > 0
    for target in targets:
        assert (target.slug, target.event_id, target.observed_usd, target.mark_usd) == (
            None,
            None,
            None,
            None,
        )
        private = {"slug", "event_id", "observed_usd", "scored_usd", "mark_log", "mark_usd"}
        assert not private & set(target.raw)
        offsets = target.band_offsets
        assert offsets.q025 <= offsets.q10 <= offsets.q90 <= offsets.q975
        assert target.inside_80 == (offsets.q10 <= target.log_error.mark <= offsets.q90)
    for month_end in targets.month_ends:
        assert (month_end.slug, month_end.anchor_event_id, month_end.mark_log) == (None, None, None)
        assert month_end.next_on > month_end.day
    days = [(t.marked_on, t.occurred_on) for t in targets]
    assert days == sorted(days)  # in date order, so one company's targets do not sit together
    assert [m.day for m in targets.month_ends] == sorted(m.day for m in targets.month_ends)


def _figures(targets: ScorecardTargets) -> list[tuple[object, ...]]:
    """What both forms of the rows say alike, in an order of their own."""
    return sorted(
        (t.kind, t.event_type, t.occurred_on, t.marked_on, t.gap_years, t.log_error.mark,
         t.log_error.next_print, t.log_error.last_print, t.band_offsets.q10, t.band_offsets.q975,
         t.confidence, t.hit, t.inside_80)
        for t in targets
    )  # fmt: skip


def test_scorecard_targets_without_a_key_and_below_pro_are_the_public_form(
    server: Server, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("MARKS_API_KEY", raising=False)
    with Client(base_url=server.base_url) as anonymous:
        public = anonymous.scorecard_targets()
        assert anonymous.rate_limit is None  # not metered
    _public_rows(public)
    assert public.disclosure == "public"
    with Client(api_key=server.keys["research"], base_url=server.base_url) as research:
        below_pro = research.scorecard_targets()
        assert research.rate_limit is not None  # a keyed call is metered
    assert (
        below_pro.raw["targets"] == public.raw["targets"]
        and below_pro.raw["month_ends"] == public.raw["month_ends"]
    )
    frame = public.to_pandas()
    assert frame["slug"].isna().all() and frame["event_id"].isna().all()
    for column in ("observed_usd", "mark_usd", "next_print_usd", "last_print_usd"):
        assert frame[column].isna().all() and pd.api.types.is_float_dtype(frame[column]), column
    assert frame["log_error_mark"].notna().all() and (frame["band_q025"] <= frame["band_q10"]).all()
    months = public.month_ends_to_pandas()
    assert months["slug"].isna().all() and months["mark_log"].isna().all()
    assert (months["next_on"] > months["day"]).all() and months["bridged_error_mark"].notna().all()


def test_scorecard_targets_with_a_pro_key_are_the_full_form(server: Server) -> None:
    with Client(base_url=server.base_url, api_key="") as anonymous:
        public = anonymous.scorecard_targets()
    for tier in ("pro", "enterprise"):
        with Client(api_key=server.keys[tier], base_url=server.base_url) as keyed:
            full = keyed.scorecard_targets()
        assert full.disclosure == "full"
        assert len(full) == len(public) and list(full.numbers) == list(public.numbers)
        assert len(full.month_ends) == len(public.month_ends)
        assert _figures(full) == _figures(public), tier  # the same numbers, and the names besides
        for target in full:
            assert target.slug and target.event_id and isinstance(target.observed_usd, int)
            assert target.observed_log is not None and target.mark_log is not None and target.mark_usd
            # The log error is the observed value against the number, both in logs.
            assert target.log_error.mark == pytest.approx(target.observed_log - target.mark_log, abs=1e-9)
            assert target.next_print_log is not None and target.last_print_log is not None
            assert target.log_error.next_print == pytest.approx(
                target.observed_log - target.next_print_log, abs=1e-9
            )
        for month_end in full.month_ends:
            assert month_end.slug and month_end.anchor_event_id and month_end.anchor_type
            assert month_end.mark_log is not None and month_end.next_log is not None
            assert month_end.next_reported_error.mark == pytest.approx(
                month_end.next_log - month_end.mark_log, abs=1e-9
            )
    frame = full.to_pandas()
    # observed_usd as reported (0 for a write-off), scored_usd as scored: never 0.
    assert (
        frame["slug"].notna().all() and (frame["observed_usd"] >= 0).all() and (frame["scored_usd"] > 0).all()
    )
    assert frame["mark_usd"].notna().all() and len(frame) == len(public.to_pandas())
    assert full.month_ends_to_pandas()["bridged_log"].notna().all()


def test_the_scorecard_is_the_same_for_everyone_and_recomputes_from_its_rows(server: Server) -> None:
    with Client(base_url=server.base_url, api_key="") as anonymous:
        public, rows = anonymous.scorecard(), anonymous.scorecard_targets()
    with Client(api_key=server.keys["pro"], base_url=server.base_url) as pro:
        full = pro.scorecard()
        assert pro.rate_limit is not None
    assert (public.disclosure, full.disclosure) == ("public", "full")
    assert dataclasses.replace(public, disclosure="full") == full  # the same figures
    assert public.methodology_version == public.meta.methodology_version
    # Each index as published (weights capped) beside its value-weighted twin, on its last day.
    with Client(api_key=server.keys["research"], base_url=server.base_url) as research:
        indices = research.indices()
    assert public.index_weight_cap == 0.1 and [i.index for i in public.indices] == [i.index for i in indices]
    for summary in public.indices:
        latest = indices[summary.index]
        assert (summary.date, summary.level) == (latest.last_date, latest.latest.level), summary.index
        assert summary.constituents == latest.latest.constituents and summary.uncapped_level > 0
        assert 0 < summary.largest_share_uncapped <= 1
    # The event-day score of each kind is its rows'.
    for kind in ("event", "listing", "failure", "sale"):
        of_kind = [t for t in rows if t.kind == kind]
        score = public.event_day.get(kind)
        if not of_kind:
            assert score is None, kind
            continue
        assert score is not None and score.n == len(of_kind), kind
        assert score.coverage_80.inside == sum(t.inside_80 for t in of_kind)
        assert score.coverage_95.inside == sum(t.inside_95 for t in of_kind)
        for number in ("mark", "next_print", "last_print"):
            errors = sorted(abs(t.log_error.get(number)) for t in of_kind)
            mean = sum(errors) / len(errors)
            assert score.errors.get(number).mean_abs_log_error == pytest.approx(mean, abs=5e-5), (
                kind,
                number,
            )
    # The month-end scores, and the confidence as a track record: the share of month-ends whose
    # next reported value came within +/-20% of the mark.
    month_end, in_force = public.month_end, public.in_force
    assert month_end is not None and in_force is not None and month_end.n == len(rows.month_ends)
    assert month_end.coverage_80.inside == sum(m.inside_80 for m in rows.month_ends)
    hits = sum(m.hit for m in rows.month_ends)
    assert month_end.confidence.base_rate == pytest.approx(hits / month_end.n, abs=5e-5)
    assert month_end.confidence.tolerance_pct == rows.tolerance_pct == 20
    known = [m for m in rows.month_ends if m.next_on < in_force.day]
    assert in_force.residuals_known == len(known)
    assert in_force.confidence_track_record == pytest.approx(
        sum(m.hit for m in known) / len(known), abs=1e-12
    )
    assert {g.bucket for g in month_end.coverage_by_gap} == {
        "under 6 months", "6-12 months", "1-2 years", "over 2 years",
    }  # fmt: skip
    assert sum(g.n for g in month_end.coverage_by_gap) == month_end.n
    # The comparisons: on each score, the mark against the other numbers, with bootstrap intervals.
    scores = {c.score for c in public.comparisons}
    assert scores == {"event_day", "month_end_next_reported", "month_end_bridged"}
    bridged = public.comparison("month_end_bridged", "mark", "last_print")
    assert bridged.difference("median_abs_log_error").verdict in ("a_better", "b_better", "tie")
    assert bridged["differences"][0]["figure"] == bridged.differences[0].figure  # reads as a mapping
    assert public.findings and public.latest_private is not None
    assert public.params["confidence_tolerance"] * 100 == rows.tolerance_pct


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
