"""The company explorer (/explore, /explore/{slug}) with keys of each tier, against the real API."""

import json
import re

import pytest
from conftest import (
    ENTERPRISE,
    FREE,
    PHONE,
    PRO,
    RESEARCH,
    ROOT,
    SCREENSHOTS,
    enter_key,
    wait_company_loaded,
    wait_list_loaded,
)
from playwright.sync_api import expect


def listed_slugs(page):
    """Walks every page of the list in the UI (Load more until it is gone); the slugs shown."""
    wait_list_loaded(page)
    more = page.locator("#load-more")
    while more.is_visible():
        rows = page.locator("#company-rows tr").count()
        more.click()
        page.wait_for_function(
            "(n) => document.querySelectorAll('#company-rows tr').length > n"
            " || document.getElementById('alert').textContent !== ''",
            arg=rows,
        )
        wait_list_loaded(page)
    assert page.locator("#alert").text_content() == ""
    hrefs = page.locator("#company-rows th a").evaluate_all("(links) => links.map((a) => a.getAttribute('href'))")
    assert all(h.startswith("/explore/") for h in hrefs)
    return [h.removeprefix("/explore/") for h in hrefs]


@pytest.mark.parametrize("key", [FREE, RESEARCH])
def test_list_holds_every_company_of_the_tier(open_page, server, key):
    expected, first = server.walk_companies(key)
    page, _ = open_page()
    enter_key(page, key)
    assert listed_slugs(page) == expected
    if key == FREE:
        assert len(expected) == 10
        expect(page.locator("#universe-note")).to_have_text(first["universe_note"])
        expect(page.locator("#universe-note")).to_be_visible()
    else:
        assert len(expected) > 50, "the research list takes more than one page"
    # Each row links to its company page.
    page.locator("#company-rows th a").first.click()
    page.wait_for_url(f"**/explore/{expected[0]}")


def test_sort_and_filters_are_the_apis(open_page, server):
    params = {"sort": "-delta_30d_pct", "sector": "fintech", "status": "private"}
    expected, _ = server.walk_companies(PRO, **params)
    page, rec = open_page()
    enter_key(page, PRO)
    wait_list_loaded(page)
    page.get_by_label("Sort by").select_option("-delta_30d_pct")
    page.get_by_label("Sector").select_option("fintech")
    page.get_by_label("Status").select_option("private")
    page.get_by_role("button", name="Apply").click()
    page.wait_for_url("**/explore?*")
    assert listed_slugs(page) == expected
    asked = [r.url for r in rec.requests if "/v1/companies?" in r.url]
    assert any(all(f"{k}={v}" in url for k, v in params.items()) for url in asked)
    expect(page.locator("th[aria-sort]")).to_have_attribute("aria-sort", "descending")


def test_bad_sort_shows_the_apis_words(open_page, server):
    page, _ = open_page()
    enter_key(page, RESEARCH, "/explore?sort=value")
    _, _, problem = server.get("/v1/companies?sort=value", RESEARCH)
    expect(page.locator("#list-error")).to_contain_text(problem["detail"])


@pytest.mark.parametrize("key,slug", [(PRO, "stripe"), (ENTERPRISE, "openai"), (RESEARCH, "ftx")])
def test_chart_has_a_point_per_day_and_a_marker_per_event(open_page, server, key, slug):
    series = server.json(f"/v1/companies/{slug}/marks?coverage=80", key)["series"]
    tier_has_events = key != RESEARCH
    events = server.json(f"/v1/companies/{slug}/events", key)["events"] if tier_has_events else []
    page, _ = open_page()
    enter_key(page, key, f"/explore/{slug}")
    wait_company_loaded(page)
    svg = page.locator("#chart-svg")
    expect(svg).to_have_attribute("data-days", str(len(series)))
    line = page.locator("#chart-svg polyline.mark-line")
    expect(line).to_have_attribute("data-points", str(len(series)))
    assert len(line.get_attribute("points").split()) == len(series)
    expect(page.locator("#chart-svg circle.event-marker")).to_have_count(len(events))
    expect(page.locator("#chart-svg path.band80")).to_have_count(1)
    if tier_has_events:
        expect(page.locator("#chart-svg path.band95")).to_have_count(1)
        expect(page.locator("#events-table tbody tr")).to_have_count(len(events))
        marker_links = page.locator("#chart-svg a").evaluate_all("(as) => as.map((a) => a.getAttribute('href'))")
        assert marker_links == [e["source_url"] for e in events]
    else:
        expect(page.locator("#chart-svg path.band95")).to_have_count(0)
        expect(page.locator("#series-note")).to_contain_text("95% band needs a Pro key")
        expect(page.locator("#events-error")).to_contain_text("needs a Pro key")
    # Hover and keyboard readouts name the day, the mark and the bands.
    svg.focus()
    page.keyboard.press("Home")
    first = series[0]
    expect(page.locator("#chart-readout")).to_contain_text(first["date"])
    page.keyboard.press("ArrowRight")
    expect(page.locator("#chart-readout")).to_contain_text(series[1]["date"])
    page.keyboard.press("End")
    expect(page.locator("#chart-readout")).to_contain_text(series[-1]["date"])
    expect(page.locator("#chart-readout")).to_contain_text("80% band")
    box = svg.bounding_box()
    page.mouse.move(box["x"] + box["width"] - 20, box["y"] + box["height"] / 2)
    expect(page.locator("#chart-readout")).to_contain_text("mark $")
    # The text alternative: a summary and a table of the numbers.
    expect(page.locator("#chart-summary")).to_contain_text(f"{len(series)} daily marks")
    assert page.locator("#series-table tbody tr").count() >= 1


def test_free_key_limits_show_in_words(open_page, server):
    key = server.issue_key("free")
    page, rec = open_page(viewport=PHONE)
    # Anthropic is in the free top 10: its profile is allowed, its series and events are not.
    enter_key(page, key, "/explore/anthropic")
    wait_company_loaded(page)
    _, _, series_problem = server.get("/v1/companies/anthropic/marks?coverage=80", key)
    _, _, events_problem = server.get("/v1/companies/anthropic/events", key)
    assert series_problem["code"] == events_problem["code"] == "tier_forbidden"
    expect(page.locator("#series-error")).to_contain_text(series_problem["detail"])
    expect(page.locator("#series-error")).to_contain_text("not included in this key's tier")
    expect(page.locator("#events-error")).to_contain_text(events_problem["detail"])
    expect(page.locator("#resolution-note")).to_contain_text("needs an Enterprise key")
    # The latest mark is in the free tier.
    expect(page.locator("#latest-facts")).to_contain_text("$")
    forbidden = {(r.status, r.url.split("?")[0].removeprefix(server.base)) for r in rec.responses if r.status == 403}
    assert (403, "/v1/companies/anthropic/marks") in forbidden
    assert (403, "/v1/companies/anthropic/events") in forbidden
    page.screenshot(path=str(SCREENSHOTS / "explore-anthropic-free-390x844.png"), full_page=True)


def test_rate_limit_shows_when_to_retry(open_page, server):
    key = server.issue_key("free")
    page, _ = open_page()
    enter_key(page, key)
    wait_list_loaded(page)
    for _attempt in range(3):
        # Spend the key's budget directly until the API refuses it, then ask again in the page.
        # (Should a token refill in between, the page answers with data: spend again.)
        for _ in range(40):
            status, headers, _ = server.get("/v1/companies?limit=1", key)
            if status == 429:
                break
        assert status == 429 and int(headers["Retry-After"]) >= 1
        page.reload()
        page.wait_for_function(
            "() => document.getElementById('alert').textContent !== ''"
            " || document.getElementById('list-count').textContent.startsWith('Showing')"
        )
        if page.locator("#alert").text_content():
            break
    alert = page.locator("#alert")
    expect(alert).to_contain_text("Too many requests")
    assert re.search(r"Retry after \d+ seconds?", alert.text_content())
    expect(page.get_by_role("button", name="Retry")).to_be_visible()


def resolution_page(open_page, route=None):
    page, rec = open_page()
    if route:
        for pattern, handler in route.items():
            page.route(pattern, handler)
    enter_key(page, ENTERPRISE, "/explore/stripe")
    wait_company_loaded(page)
    return page, rec


def test_resolution_record_is_verified_in_the_browser(open_page, server):
    kid = server.json("/v1/signing-keys")["keys"][0]["kid"]
    page, _ = resolution_page(open_page)
    expect(page.locator("#verify-status")).to_have_text(re.compile(rf"^Signature verified with key {re.escape(kid)}"))
    expect(page.locator("#verify-status")).to_have_class("ok")


@pytest.mark.parametrize("change", ["value_usd", "band_80.lower", "basis", "meta.as_of"])
def test_tampered_resolution_record_is_not_verified(open_page, change):
    def tamper(route):
        response = route.fetch()
        record = response.json()
        *parents, name = change.split(".")
        target = record
        for p in parents:
            target = target[p]
        target[name] = target[name] + 1 if isinstance(target[name], int) else target[name] + "x"
        route.fulfill(response=response, body=json.dumps(record))

    page, _ = resolution_page(open_page, {"**/v1/companies/stripe/resolution": tamper})
    expect(page.locator("#verify-status")).to_have_text(re.compile(r"^NOT verified"))
    expect(page.locator("#verify-status")).to_have_class("error")


def test_forged_record_under_the_real_key_id_is_not_verified(open_page, server):
    """A server that publishes the real key id with a key of its own, and a record (value 1)
    signed with that key: the signature checks out against the key served, but the id is not
    that key's thumbprint, so the page refuses it."""
    import base64

    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
    from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

    real_kid = server.json("/v1/signing-keys")["keys"][0]["kid"]
    forger = Ed25519PrivateKey.generate()
    raw = forger.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)
    b64url = lambda b: base64.urlsafe_b64encode(b).rstrip(b"=").decode()  # noqa: E731
    jwks = {"keys": [{"kty": "OKP", "crv": "Ed25519", "x": b64url(raw), "kid": real_kid}]}

    def forge(route):
        response = route.fetch()
        record = response.json()
        record.pop("signature")
        record["value_usd"] = 1
        canonical = json.dumps(record, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
        record["signature"] = b64url(forger.sign(canonical.encode()))
        route.fulfill(response=response, body=json.dumps(record))

    page, _ = resolution_page(
        open_page,
        {
            "**/v1/companies/stripe/resolution": forge,
            "**/v1/signing-keys": lambda route: route.fulfill(json=jwks),
        },
    )
    status = page.locator("#verify-status")
    expect(status).to_have_text(re.compile(r"^NOT verified: the key published under the id"))
    expect(status).to_have_class("error")


def test_canonical_json_matches_the_published_test_vector(open_page):
    """The vector's record (signed with the demo key) verifies only if the page reproduces its
    canonical bytes exactly; the same record with one nested change does not."""
    vector = json.loads((ROOT / "examples" / "python" / "test_vector.json").read_text())

    def serve(record):
        def handler(route):
            route.fulfill(status=200, content_type="application/json", body=json.dumps(record))

        return handler

    jwks = {"keys": [vector["jwk"]]}
    keys_route = {"**/v1/signing-keys": lambda route: route.fulfill(json=jwks)}
    page, _ = resolution_page(
        open_page,
        {"**/v1/companies/stripe/resolution": serve(vector["record"]), **keys_route},
    )
    expect(page.locator("#verify-status")).to_have_text(
        re.compile(rf"^Signature verified with key {re.escape(vector['jwk']['kid'])}")
    )
    changed = json.loads(json.dumps(vector["record"]))
    changed["meta"]["disclaimer"] += " "
    page, _ = resolution_page(open_page, {"**/v1/companies/stripe/resolution": serve(changed), **keys_route})
    expect(page.locator("#verify-status")).to_have_text(re.compile(r"^NOT verified"))


def test_key_stays_in_session_storage_and_headers(open_page, server):
    key = ENTERPRISE
    page, rec = open_page()
    enter_key(page, key)
    wait_list_loaded(page)
    page.locator("#company-rows th a", has_text="Anthropic").click()
    wait_company_loaded(page)
    page.go_back()
    wait_list_loaded(page)
    page.get_by_label("Sort by").select_option("-value_usd")
    page.get_by_role("button", name="Apply").click()
    wait_list_loaded(page)

    assert rec.requests, "requests were recorded"
    for request in rec.requests:
        headers = request.all_headers()
        assert key not in request.url, request.url
        assert not headers.get("referer"), f"no-referrer, yet {request.url} had a Referer"
        if headers.get("x-api-key"):
            assert headers["x-api-key"] == key
            assert request.url.startswith(server.base + "/v1/"), "the key goes only to the API"
    api_calls = [r for r in rec.requests if r.url.startswith(server.base + "/v1/companies")]
    assert api_calls and all(r.all_headers().get("x-api-key") == key for r in api_calls)
    assert not any(key in url for url in rec.navigations)
    assert key not in page.url
    assert key not in page.evaluate("document.cookie")
    assert all(key not in c["value"] for c in page.context.cookies())
    local = page.evaluate("JSON.stringify(Object.assign({}, localStorage))")
    assert key not in local
    session = page.evaluate("Object.assign({}, sessionStorage)")
    assert [k for k, v in session.items() if key in v] == ["marks.apiKey"]
    assert session["marks.apiKey"] == key
    # The key field is never a named form field, so no form submission can carry it.
    assert page.locator("#api-key").get_attribute("name") is None
    # Forgetting the key empties the tab's storage of it.
    page.get_by_role("button", name="Forget key").click()
    assert key not in page.evaluate("JSON.stringify(Object.assign({}, sessionStorage))")


def test_unknown_key_is_refused_in_words(open_page, server):
    _, _, problem = server.get("/v1/usage", "vmk_not_a_key")
    page, _ = open_page()
    page.goto("/explore")
    page.get_by_label("API key").fill("vmk_not_a_key")
    page.get_by_role("button", name="Use key").click()
    expect(page.locator("#alert")).to_contain_text(problem["detail"])
    # The form is open again for another key.
    expect(page.get_by_label("API key")).to_be_visible()


def test_malformed_address_shows_not_found(open_page):
    """A company address with a broken percent-escape is a company the API does not know, said
    in words, not a blank page."""
    page, _ = open_page()
    enter_key(page, PRO, "/explore/%E0%A4%A")
    expect(page.locator("#profile-error")).to_contain_text("No company has the slug")
    expect(page.locator("#title")).to_have_text("%E0%A4%A")


def usd_words(value):
    """The explorer's compact dollars: $47B, $1.54T, $32B."""
    for scale, unit in ((1e12, "T"), (1e9, "B"), (1e6, "M"), (1e3, "K")):
        if value >= scale:
            text = f"{value / scale:.3g}"
            return f"${text}{unit}"
    return f"${value:.0f}"


def test_the_mark_is_explained_beside_the_last_reported_value(open_page, server):
    """Beside the mark, in words: the last reported value with its date and age, what the
    mark adds and why, the confidence as a percent with what it means, what the bands mean."""
    profile = server.json("/v1/companies/stripe", RESEARCH)
    last, mark = profile["last_event"], profile["latest_mark"]
    drift = next(o for o in profile["observations"] if o["part"] == "drift")
    page, _ = open_page()
    enter_key(page, RESEARCH, "/explore/stripe")
    wait_company_loaded(page)
    facts = page.locator("#latest-facts")
    expect(facts).to_contain_text(f"on {last['occurred_on']} ({profile['days_since_last_event']} days ago)")
    expect(facts).to_contain_text(f"{mark['confidence'] * 100:.1f}%")
    explained = page.locator("#mark-explained")
    expect(explained).to_contain_text(
        f"The mark starts from the last reported valuation: {usd_words(last['valuation_usd'])}"
    )
    expect(explained).to_contain_text(drift["explanation"])
    expect(explained).to_contain_text("within ±10% of the value next reported")
    expect(explained).to_contain_text("about 4 times in 5")
    expect(page.locator("#outcome-note")).to_be_hidden()


@pytest.mark.parametrize(
    "slug,words",
    [
        ("wiz", r"Agreed to be sold for \$32B on 2025-03-18\. The mark holds the agreed price"),
        ("airbnb", r"Listed on 2020-12-10 at \$47B; private marks end the day before, at \$[\d.]+B on 2020-12-09"),
        ("ftx", r"Bankrupt on 2022-11-11; the value reported after it, \$0, is the mark"),
    ],
)
def test_a_listed_sold_or_bankrupt_company_says_what_happened(open_page, slug, words):
    page, _ = open_page()
    enter_key(page, PRO, f"/explore/{slug}")
    wait_company_loaded(page)
    expect(page.locator("#outcome-note")).to_have_text(re.compile(words))
    expect(page.locator("#company-facts")).to_contain_text(
        {"wiz": "Sale agreed 2025-03-18", "airbnb": "Listed 2020-12-10", "ftx": "Bankrupt 2022-11-11"}[slug]
    )


def assert_drawn_at_its_box_width(page, box, svg):
    """The chart's SVG is drawn at its box's width (not scaled from another width, which would
    shrink its labels on a phone)."""
    widths = page.locator(box).evaluate(
        "(box, svg) => [box.clientWidth, Number(document.querySelector(svg).getAttribute('width'))]", svg
    )
    assert abs(max(280, widths[0]) - widths[1]) <= 2, f"{svg} drawn {widths[1]} wide in a box {widths[0]} wide"


def test_the_backtest_chart_is_drawn_at_phone_width(open_page):
    page, _ = open_page(viewport=PHONE)
    enter_key(page, PRO, "/explore/stripe")
    wait_company_loaded(page)
    page.wait_for_function("() => !document.getElementById('backtest-figure').hidden")
    assert_drawn_at_its_box_width(page, "#backtest-chart", "#backtest-svg")
    assert_drawn_at_its_box_width(page, "#chart", "#chart-svg")


def test_the_backtest_and_events_tables_fit_a_phone(open_page, server):
    """At 390 pixels the tables need no sideways scroll: what a wide screen shows in its own
    columns (the band, what happened, the note and source) goes under the cells beside it."""
    targets = server.json("/v1/companies/stripe/backtest", PRO)["targets"]
    page, _ = open_page(viewport=PHONE)
    enter_key(page, PRO, "/explore/stripe")
    wait_company_loaded(page)
    page.wait_for_function("() => !document.getElementById('backtest-wrap').hidden")
    for region in ("#backtest-wrap", "#events-wrap"):
        widths = page.locator(region).evaluate("(box) => [box.scrollWidth, box.clientWidth]")
        assert widths[0] <= widths[1], f"{region} is {widths[0]} wide in a box of {widths[1]}"
    first_row = page.locator("#backtest-table tbody tr").first
    expect(first_row.locator("td").nth(1)).to_contain_text(usd_words(targets[0]["observed_usd"]))
    band = targets[0]["band_80"]
    expect(first_row.locator("td").nth(2)).to_contain_text(
        f"80%: {usd_words(band['lower'])} \u2013 {usd_words(band['upper'])}"
    )
    expect(page.locator("#backtest-table thead th", has_text="What happened")).to_be_hidden()


@pytest.mark.parametrize("key", [PRO, RESEARCH])
def test_the_company_page_shows_how_the_method_did_on_it(open_page, server, key):
    backtest = server.json("/v1/companies/stripe/backtest", key)
    targets = backtest["targets"]
    assert targets, "stripe has scored events"
    page, _ = open_page()
    enter_key(page, key, "/explore/stripe")
    wait_company_loaded(page)
    page.wait_for_function("() => !document.getElementById('backtest-wrap').hidden")
    expect(page.locator("#backtest-table tbody tr")).to_have_count(len(targets))
    expect(page.locator("#backtest-svg")).to_have_attribute("data-targets", str(len(targets)))
    expect(page.locator("#backtest-svg g.target")).to_have_count(len(targets))
    assert_drawn_at_its_box_width(page, "#backtest-chart", "#backtest-svg")
    summary = backtest["summary"]
    expect(page.locator("#backtest-summary")).to_contain_text(
        f"{summary['scored_events']} scored events: {summary['inside_80']} inside the 80% band"
    )
    first_row = page.locator("#backtest-table tbody tr").first
    expect(first_row).to_contain_text(targets[0]["occurred_on"])
    if key == PRO:
        expect(page.locator("#backtest-svg path.outcome-marker")).to_have_count(len(targets))
        expect(first_row).to_contain_text(usd_words(targets[0]["observed_usd"]))
        expect(page.locator("#backtest-note")).to_be_hidden()
    else:
        events = [t for t in targets if t["kind"] == "event"]
        expect(page.locator("#backtest-svg path.outcome-marker")).to_have_count(len(targets) - len(events))
        expect(page.locator("#backtest-note")).to_contain_text("without its value")
        # Where each event fell, in words, and never its value.
        assert "$" not in first_row.locator("td").last.inner_text()


def test_the_list_shows_last_reported_and_outcome_and_sorts_by_them(open_page, server):
    _, first = server.walk_companies(PRO, sort="-last_event_on")
    page, _ = open_page()
    enter_key(page, PRO, "/explore?sort=-last_event_on")
    wait_list_loaded(page)
    assert listed_slugs(page)[: len(first["companies"])] == [c["slug"] for c in first["companies"]]
    row = page.locator("#company-rows tr").first
    top = first["companies"][0]
    expect(row).to_contain_text(top["last_event"]["occurred_on"])
    expect(page.locator("th[data-sort='last_event_on']")).to_have_attribute("aria-sort", "descending")
    page.goto("/explore?sort=outcome_on")
    wait_list_loaded(page)
    expect(page.locator("#company-rows tr").first).to_contain_text(re.compile(r"Listed|Bankrupt|Sale agreed"))
