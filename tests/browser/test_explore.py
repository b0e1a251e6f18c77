"""The company explorer (/explore, /explore/{slug}) with keys of each tier, against the real API."""

import base64
import hashlib
import json
import re

import pytest
from conftest import (
    DESKTOP,
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

# The list's default view: the companies whose marks are current (still private, or a sale
# agreed and pending).
CURRENT = "none,sale_agreed,listing_agreed"


def effective(events, profile=None):
    """The records the marks read (not corrected, not withdrawn, not a retraction), less the
    outcome's own record, which the chart draws as the exit."""
    outcome = (profile or {}).get("outcome") or {}
    ended = outcome.get("kind") not in (None, "sale_agreed")
    return [
        e
        for e in events
        if not e["superseded_by"]
        and not e["retracted_by"]
        and e["event_type"] != "retraction"
        and not (ended and e["event_id"] == outcome.get("event_id"))
    ]


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
    """By default the list holds every company of the tier whose marks are current."""
    expected, first = server.walk_companies(key, outcome=CURRENT)
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
    params = {"sort": "-delta_30d_pct", "sector": "fintech", "outcome": "listed"}
    expected, _ = server.walk_companies(PRO, **params)
    page, rec = open_page()
    enter_key(page, PRO)
    wait_list_loaded(page)
    page.get_by_label("Sort by").select_option("-delta_30d_pct")
    page.get_by_label("Sector").select_option("fintech")
    page.get_by_label("Show").select_option("listed")
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
    """One point per series day; one marker per event the marks read (a corrected or withdrawn
    record is in the table, not on the chart; an outcome is the exit marker); the table holds
    every record."""
    series = server.json(f"/v1/companies/{slug}/marks?coverage=80", key)["series"]
    tier_has_events = key != RESEARCH
    records = server.json(f"/v1/companies/{slug}/events", key)["events"] if tier_has_events else []
    events = effective(records, server.json(f"/v1/companies/{slug}", key))
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
        expect(page.locator("#events-table tbody tr")).to_have_count(len(records))
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
    """A free key's company page says in words what needs a higher tier, and never asks the API
    for it (the tier is known from the key check: the list's first answer carries the free
    universe's note), and asks nothing a free key is refused, the key check neither."""
    key = server.issue_key("free")
    page, rec = open_page(viewport=PHONE)
    # Anthropic is in the free top 10: its profile is allowed, its series and events are not.
    enter_key(page, key, "/explore/anthropic")
    wait_company_loaded(page)
    expect(page.locator("#series-error")).to_contain_text("needs a Research key or above (scope marks:80)")
    expect(page.locator("#series-error")).to_contain_text("this key's tier is free")
    expect(page.locator("#events-error")).to_contain_text("needs a Pro key or above (scope events:read)")
    expect(page.locator("#backtest-note")).to_contain_text("needs a Research key or above")
    expect(page.locator("#resolution-note")).to_contain_text("needs an Enterprise key")
    # The latest mark is in the free tier.
    expect(page.locator("#headline-figures")).to_contain_text("$")
    asked = [r.url.split("?")[0].removeprefix(server.base) for r in rec.requests if "/v1/" in r.url]
    assert not [u for u in asked if u.startswith("/v1/companies/anthropic/")], asked
    forbidden = [(r.status, r.url) for r in rec.responses if r.status == 403]
    assert forbidden == [], "nothing is refused, the key check neither"
    assert not [u for u in asked if u == "/v1/usage"], asked
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


OUTCOME_WORDS = {
    "listed": "Listed",
    "sold": "Sold",
    "sale_agreed": "Sale agreed",
    "bankrupt": "Bankrupt",
    "wound_down": "Wound down",
}


def fate_words(c):
    """A company's fate as a suggestion shows it beside its name ("Bankrupt 2022-07-13")."""
    o = c["outcome"]
    if not o:
        return ""
    return f"{OUTCOME_WORDS[o['kind']]} {o['occurred_on']}" + (", pending" if o["kind"] == "sale_agreed" else "")


@pytest.mark.parametrize(
    "slug,query,expected",
    [("celsius", "celsius", "celsius-network"), ("stripe-inc", "stripe", "stripe")],
)
def test_an_address_that_names_no_company_suggests_the_closest(open_page, server, slug, query, expected):
    """/explore/celsius names no company (Celsius is celsius-network): the page says it was not
    found and suggests the companies the search finds for the address's words (the API's
    q= answer, in its order; "stripe-inc" finds none, so its first word alone), each a link to
    its page with its fate beside it."""
    assert server.get(f"/v1/companies/{slug}", RESEARCH)[0] == 404
    found = server.json(f"/v1/companies?q={query}&limit=5", RESEARCH)["companies"]
    assert found and found[0]["slug"] == expected
    page, _ = open_page()
    enter_key(page, RESEARCH, f"/explore/{slug}")
    expect(page.locator("#profile-error")).to_contain_text(f'No company has the slug "{slug}"')
    box = page.locator("#profile-suggest")
    expect(box).to_be_visible()
    expect(page.locator("#profile-suggest-note")).to_contain_text(f"“{query}”")
    items = page.locator("#profile-suggest-list li")
    expect(items).to_have_count(len(found))
    assert items.evaluate_all("(lis) => lis.map((li) => li.dataset.slug)") == [c["slug"] for c in found]
    for c, item in zip(found, items.all(), strict=True):
        link = item.get_by_role("link")
        expect(link).to_have_attribute("href", f"/explore/{c['slug']}")
        expect(link).to_contain_text(c["name"])
        if c["outcome"]:
            expect(item.locator(".fate")).to_have_text(fate_words(c))
    first = items.first.get_by_role("link")
    first.click()
    page.wait_for_url(f"**/explore/{expected}")
    wait_company_loaded(page)
    expect(page.locator("#title")).to_have_text(found[0]["name"])
    expect(page.locator("#profile-suggest")).to_be_hidden()


def usd_words(value):
    """The explorer's compact dollars: $47B, $1.54T, $32B."""
    for scale, unit in ((1e12, "T"), (1e9, "B"), (1e6, "M"), (1e3, "K")):
        if value >= scale:
            text = f"{value / scale:.3g}"
            return f"${text}{unit}"
    return f"${value:.0f}"


# Words of methodology v0.4.0 that no page may say any more.
OLD_WORDS = [
    "estimate of the next reported valuation",
    "estimates the next reported valuation",
    "within ±10%",
    "within +/-10%",
    "the value reported after",
    "is the mark",
    "sits above its last reported value",
    "in 100 forecasts",
]


def confidence_words(confidence):
    """The confidence as its track record, as the pages word it."""
    return (
        f"{confidence * 100:.1f}%: historically about 1 in {round(1 / confidence)} of our marks was within"
        " ±20% of the next reported valuation; not a company-specific probability"
    )


@pytest.mark.parametrize("viewport", [DESKTOP, PHONE], ids=["1280", "390"])
def test_the_mark_is_todays_value_with_the_next_print_forecast_beside_it(open_page, server, viewport):
    """A company still private: today's value estimate, the forecast of the next reported
    valuation beside it (labelled as such), the API's explanation as the paragraph, the last
    reported value with its date, age and grade; none of v0.4.0's words."""
    profile = server.json("/v1/companies/stripe", PRO)
    mark, last = profile["latest_mark"], profile["last_event"]
    page, _ = open_page(viewport=viewport)
    enter_key(page, PRO, "/explore/stripe")
    wait_company_loaded(page)
    expect(page.locator("#latest-heading")).to_have_text("Latest mark")
    cards = page.locator("#headline-figures .figure-card")
    expect(cards).to_have_count(2)
    expect(cards.nth(0).locator(".figure-label")).to_have_text("Today's value estimate")
    expect(cards.nth(0).locator(".figure-value")).to_have_text(usd_words(mark["value_usd"]))
    expect(cards.nth(0)).to_contain_text(mark["as_of_date"])
    expect(cards.nth(1).locator(".figure-label")).to_have_text("Forecast of the next reported valuation")
    expect(cards.nth(1).locator(".figure-value")).to_have_text(usd_words(mark["next_reported"]["value_usd"]))
    expect(cards.nth(1)).to_contain_text(mark["next_reported"]["label"])
    # Beside each other on a wide screen, one under the other on a phone.
    first, second = cards.nth(0).bounding_box(), cards.nth(1).bounding_box()
    if viewport == DESKTOP:
        assert abs(first["y"] - second["y"]) < 2 and second["x"] > first["x"] + first["width"] - 1
    else:
        assert second["y"] >= first["y"] + first["height"] - 1
    # The paragraph is the API's, word for word: nothing the page invents.
    expect(page.locator("#mark-explained p")).to_have_count(1)
    expect(page.locator("#mark-explained p")).to_have_text(profile["explanation"]["summary"])
    facts = page.locator("#latest-facts")
    expect(facts).to_contain_text(
        f"{usd_words(last['valuation_usd'])}, a tender offer on {last['occurred_on']}"
        f" ({profile['days_since_last_event']} days ago); source grade {last['source_grade']}"
    )
    text = page.locator("#company-view").inner_text()
    for words in OLD_WORDS:
        assert words not in text, words


@pytest.mark.parametrize("slug", ["stripe", "wiz", "ftx", "airbnb", "windsurf", "cruise"])
def test_the_paragraph_is_the_apis_explanation_for_every_case(open_page, server, slug):
    """Quiet, sold, bankrupt, listed, sale agreed, wound down: the paragraph beside the figures
    is the API's explanation built for the case, and nothing else."""
    profile = server.json(f"/v1/companies/{slug}", PRO)
    page, _ = open_page()
    enter_key(page, PRO, f"/explore/{slug}")
    wait_company_loaded(page)
    paragraph = page.locator("#mark-explained p")
    expect(paragraph).to_have_text(profile["explanation"]["summary"])
    expect(paragraph).to_have_attribute("data-case", profile["explanation"]["case"])
    text = page.locator("#company-view").inner_text()
    for words in OLD_WORDS:
        assert words not in text, (slug, words)


@pytest.mark.parametrize("slug", ["stripe", "brex"])
def test_confidence_reads_as_its_track_record(open_page, server, slug):
    confidence = server.json(f"/v1/companies/{slug}", PRO)["latest_mark"]["confidence"]
    page, _ = open_page()
    enter_key(page, PRO, f"/explore/{slug}")
    wait_company_loaded(page)
    row = page.locator("#latest-facts dt", has_text="Confidence").locator("xpath=following-sibling::dd[1]")
    expect(row).to_have_text(confidence_words(confidence))


@pytest.mark.parametrize(
    "slug,outcome,card",
    [
        ("affirm", "Listed 2021-01-13 at $12B", "Listed on 2021-01-13"),
        ("airbnb", "Listed 2020-12-10 at $47B", "Listed on 2020-12-10"),
        ("wiz", "Sold 2026-03-11 for $32B", "Sold on 2026-03-11"),
        ("ftx", "Bankrupt 2022-11-11, equity reported at $0", "Bankrupt on 2022-11-11"),
        ("tier-mobility", "Wound down 2024-01-10, equity reported at $0", "Wound down on 2024-01-10"),
        ("cruise", "Sold 2025-02-01, price not disclosed", "Sold on 2025-02-01"),
    ],
)
@pytest.mark.parametrize("viewport", [DESKTOP, PHONE], ids=["1280", "390"])
def test_a_company_whose_private_period_ended_shows_its_last_private_mark(
    open_page, server, slug, outcome, card, viewport
):
    """Listed, sold, bankrupt, wound down: the mark is labelled as the last private mark with its
    day, the outcome is stated with its day and value, there is no next-print forecast and no
    figure "since" anything, and the 30-day change says the private marks ended."""
    profile = server.json(f"/v1/companies/{slug}", PRO)
    mark, o = profile["latest_mark"], profile["outcome"]
    assert mark["current"] is False and o["kind"] != "sale_agreed"
    page, _ = open_page(viewport=viewport)
    enter_key(page, PRO, f"/explore/{slug}")
    wait_company_loaded(page)
    expect(page.locator("#latest-heading")).to_have_text("Last private mark")
    expect(page.locator("#company-facts")).to_contain_text(outcome)
    cards = page.locator("#headline-figures .figure-card")
    expect(cards).to_have_count(2)
    expect(cards.nth(0).locator(".figure-label")).to_have_text(f"Last private mark, {mark['as_of_date']}")
    expect(cards.nth(0).locator(".figure-value")).to_have_text(usd_words(mark["value_usd"]))
    expect(cards.nth(0)).to_contain_text("not a value today")
    expect(cards.nth(1).locator(".figure-label")).to_have_text(card)
    # A failure's equity written off reads $0; a sale at an undisclosed price says so.
    undisclosed = "price not disclosed" if o["kind"] == "sold" else "$0"
    expect(cards.nth(1).locator(".figure-value")).to_have_text(
        usd_words(o["valuation_usd"]) if o["valuation_usd"] else undisclosed
    )
    expect(page.locator("#mark-explained p")).to_have_text(profile["explanation"]["summary"])
    latest = page.locator("#headline-figures, #latest-facts").all_inner_texts()
    assert not any("since" in t for t in latest), latest
    assert not any("Forecast" in t for t in latest), latest
    expect(page.locator("#latest-facts")).to_contain_text(f"none: the private marks ended on {mark['as_of_date']}")


def test_the_list_labels_a_last_private_mark_and_shows_no_since_figure(open_page, server):
    """In the list, a listed company's mark is labelled as its last private mark with its day;
    no percentage sits beside its last reported value (the Affirm "-66.80% since")."""
    affirm = server.json("/v1/companies/affirm", PRO)
    page, _ = open_page()
    enter_key(page, PRO, "/explore?outcome=listed&q=affirm")
    wait_list_loaded(page)
    row = page.locator('#company-rows tr[data-slug="affirm"]')
    expect(row).to_have_class(re.compile(r"\bended\b"))
    cells = row.locator("td")
    expect(cells.nth(2)).to_have_text(
        f"{usd_words(affirm['latest_mark']['value_usd'])}last private mark, {affirm['latest_mark']['as_of_date']}"
    )
    expect(cells.nth(3)).to_have_text(
        f"{usd_words(affirm['last_event']['valuation_usd'])}{affirm['last_event']['occurred_on']}"
    )
    assert "%" not in cells.nth(3).inner_text() and "since" not in row.inner_text()
    expect(cells.nth(1)).to_have_text("Listed 2021-01-13")


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
    _, first = server.walk_companies(PRO, sort="-last_event_on", outcome=CURRENT)
    page, _ = open_page()
    enter_key(page, PRO, "/explore?sort=-last_event_on")
    wait_list_loaded(page)
    assert listed_slugs(page)[: len(first["companies"])] == [c["slug"] for c in first["companies"]]
    row = page.locator("#company-rows tr").first
    top = first["companies"][0]
    expect(row).to_contain_text(top["last_event"]["occurred_on"])
    expect(page.locator("th[data-sort='last_event_on']")).to_have_attribute("aria-sort", "descending")
    page.goto("/explore?sort=outcome_on&outcome=all")
    wait_list_loaded(page)
    expect(page.locator("#company-rows tr").first).to_contain_text(
        re.compile(r"Listed|Sold|Bankrupt|Wound down|Sale agreed")
    )


# The published history: every mark as first published, beside today's recomputed one, and its
# publication log verified in the browser.


def wait_published(page):
    """Waits until the published history has its verdict, or says why it has none."""
    page.wait_for_function(
        "() => document.getElementById('published-verify').dataset.verdict"
        " || document.getElementById('published-note').textContent.trim() !== ''"
    )


def b64url(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def canonical(value):
    """RFC 8785 canonical JSON of an entry (sorted keys, no spaces, integers only)."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


def leaf_hash_b64(entry):
    return base64.b64encode(hashlib.sha256(b"\x00" + canonical(entry)).digest()).decode()


def log_signer(server, note):
    """The RFC 7638 thumbprint of the published key whose C2SP key hash signs the note, found
    here from /v1/signing-keys and the note's signature line."""
    origin = note.split("\n", 1)[0]
    signature = base64.b64decode(note.rstrip("\n").rsplit(" ", 1)[1])
    for jwk in server.json("/v1/signing-keys")["keys"]:
        raw = base64.urlsafe_b64decode(jwk["x"] + "=" * (-len(jwk["x"]) % 4))
        if hashlib.sha256(origin.encode() + b"\n\x01" + raw).digest()[:4] == signature[:4]:
            members = json.dumps({"crv": jwk["crv"], "kty": jwk["kty"], "x": jwk["x"]}, separators=(",", ":"))
            return b64url(hashlib.sha256(members.encode()).digest())
    raise AssertionError("no published key signs the checkpoint")


def revision_words(entry, today):
    """The page's revision column, from the API's figures."""
    if today is None:
        return "no recomputed mark of that day"
    if today["mark_usd"] == entry["value_usd"]:
        same = (today["lower_usd"], today["upper_usd"]) == (entry["lower_80_usd"], entry["upper_80_usd"])
        return "unchanged" if same else "the same mark; its 80% band revised"
    p = (today["mark_usd"] / entry["value_usd"] - 1) * 100
    sign = "\u2212" if p < 0 else "+"
    return f"revised by {sign}{'less than 0.1' if abs(p) < 0.05 else f'{abs(p):.1f}'}%"


@pytest.mark.parametrize("key,viewport", [(RESEARCH, DESKTOP), (PRO, PHONE)], ids=["research-1280", "pro-390"])
def test_published_history_is_shown_beside_the_recomputed_series_and_verified(open_page, server, key, viewport):
    """Stripe's published marks (the sample's three earlier versions and the build's own), each
    beside today's recomputed mark of its day, the revisions said on the chart and in the table,
    and the log verified: leaf hashes, inclusion proofs, the checkpoint's signature."""
    published = server.json("/v1/companies/stripe/published", key)
    series = {p["date"]: p for p in server.json("/v1/companies/stripe/marks?coverage=80", key)["series"]}
    note = server.get("/v1/log/checkpoint", key)[2]
    entries = [item["entry"] for item in published["series"]]
    assert len(published["versions"]) >= 2 and len(entries) == len(published["versions"]), "one entry a version"
    todays = [series.get(e["marked_on"]) for e in entries]
    words = [revision_words(e, t) for e, t in zip(entries, todays, strict=True)]
    revised = [w for w in words if w.startswith("revised by")]
    assert revised, f"stripe's published marks were revised since: {words}"

    page, rec = open_page(viewport=viewport)
    enter_key(page, key, "/explore/stripe")
    wait_company_loaded(page)
    wait_published(page)
    status = page.locator("#published-verify")
    expect(status).to_have_class("ok")
    expect(status).to_have_text(re.compile(rf"^Verified in your browser: {len(entries)} published entries"))
    tree_size = int(note.split("\n")[1])
    expect(status).to_contain_text(f"({tree_size} entries, dataset {published['versions'][-1]['dataset_version']})")
    expect(status).to_contain_text(f"published signing key {log_signer(server, note)}")
    if key == PRO:
        expect(status).to_contain_text(f"the {len(entries)} 95% bands match")
    else:
        expect(status).not_to_contain_text("95% band")

    rows = page.locator("#published-table tbody tr")
    expect(rows).to_have_count(len(entries))
    for i, (item, entry, today, word) in enumerate(zip(published["series"], entries, todays, words, strict=True)):
        row = rows.nth(i)
        expect(row).to_have_attribute("data-leaf", str(item["leaf_index"]))
        cells = row.locator("td")
        expect(cells.nth(0)).to_contain_text(f"{entry['marked_on']}")
        expect(cells.nth(0)).to_contain_text(f"in {entry['dataset_version']}")
        expect(cells.nth(1)).to_contain_text(usd_words(entry["value_usd"]))
        expect(cells.nth(3)).to_contain_text(usd_words(today["mark_usd"]) if today else "n/a")
        # The revision: its own column on a wide screen, under today's mark on a phone.
        expect(cells.nth(3 if viewport == PHONE else 4)).to_contain_text(word)

    # The chart says where they differ: one mark a published entry, a revision line from each
    # revised one to today's mark of its day, and the sentence in its label.
    svg = page.locator("#published-svg")
    expect(svg).to_have_attribute("data-entries", str(len(entries)))
    expect(svg).to_have_attribute("data-revised", str(len(revised)))
    expect(page.locator("#published-svg rect.published-marker")).to_have_count(len(entries))
    expect(page.locator("#published-svg line.revision-link")).to_have_count(len(revised))
    expect(page.locator("#legend-revision")).to_be_visible()
    first = page.locator("#published-svg g.published-entry").first
    expect(first).to_have_attribute(
        "aria-label",
        re.compile(
            rf"^Published {re.escape(usd_words(entries[0]['value_usd']))} for {entries[0]['marked_on']} "
            rf"\(version {entries[0]['dataset_version']}\); recomputed today .*: {re.escape(words[0])}\.$"
        ),
    )
    first.focus()
    expect(page.locator("#published-readout")).to_have_text(first.get_attribute("aria-label"))
    assert_drawn_at_its_box_width(page, "#published-chart", "#published-svg")
    if viewport == PHONE:
        widths = page.locator("#published-wrap").evaluate("(box) => [box.scrollWidth, box.clientWidth]")
        assert widths[0] <= widths[1], f"the published table is {widths[0]} wide in a box of {widths[1]}"
        assert page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]
    page.evaluate("window.scrollTo(0, 0)")  # the clip is measured from the page's top
    top = page.locator("#published-heading").bounding_box()
    bottom = page.locator("#published-facts").bounding_box()
    page.screenshot(
        path=str(SCREENSHOTS / f"explore-stripe-published-{viewport['width']}.png"),
        full_page=True,
        clip={
            "x": 0,
            "y": top["y"] - 8,
            "width": viewport["width"],
            "height": bottom["y"] + bottom["height"] - top["y"] + 16,
        },
    )
    asked = {r.url.removeprefix(server.base) for r in rec.requests}
    assert {"/v1/companies/stripe/published", "/v1/log/checkpoint"} <= asked
    assert not rec.page_errors and not rec.console_errors, (rec.page_errors, rec.console_errors)


def published_page(open_page, routes):
    page, _ = open_page()
    for pattern, handler in routes.items():
        page.route(pattern, handler)
    enter_key(page, PRO, "/explore/stripe")  # Pro: a budget of 600 a minute for the many pages
    wait_published(page)
    return page


def tamper_published(change):
    """A route handler that serves /published as the server sent it, less `change(body)`."""

    def handler(route):
        response = route.fetch()
        body = response.json()
        change(body)
        route.fulfill(response=response, body=json.dumps(body))

    return handler


def middle(body):
    return body["series"][len(body["series"]) // 2]


def _value(body):
    middle(body)["entry"]["value_usd"] += 1_000_000


def _value_and_leaf_hash(body):
    item = middle(body)
    item["entry"]["value_usd"] += 1_000_000
    item["leaf_hash"] = leaf_hash_b64(item["entry"])


def _bounds(body):
    middle(body)["entry"]["lower_80_usd"] -= 1


def _proof(body):
    proof = middle(body)["inclusion_proof"]
    proof[0], proof[-1] = proof[-1], proof[0]


def _moved(body):
    middle(body)["leaf_index"] += 1


def _dropped(body):
    del body["series"][len(body["series"]) // 2]


def _root(body):
    body["log"]["root_hash"] = base64.b64encode(bytes(32)).decode()


def _signed_root(body):
    """The checkpoint's root changed in its note, its signature kept."""
    origin, size, _root_hash, rest = body["log"]["checkpoint"].split("\n", 3)
    body["log"]["checkpoint"] = "\n".join([origin, size, base64.b64encode(bytes(32)).decode(), rest])


TAMPERED = {
    "value": (_value, "leaf_hash", "does not hash to the leaf hash sent with it", True),
    "value-with-its-leaf-hash": (_value_and_leaf_hash, "inclusion", "is not in the log of the signed checkpoint", True),
    "bounds": (_bounds, "leaf_hash", "does not hash to the leaf hash sent with it", True),
    "proof": (_proof, "inclusion", "is not in the log of the signed checkpoint", True),
    "moved": (_moved, "inclusion", "is not in the log of the signed checkpoint", True),
    "dropped": (_dropped, "completeness", "an entry was left out", False),
    "root": (_root, "checkpoint", "is not what its signed checkpoint says", False),
    "signed-root": (_signed_root, "signature", "does not verify with the published key", False),
}


@pytest.mark.parametrize("case", list(TAMPERED))
def test_tampered_published_history_is_not_verified(open_page, case):
    change, check, reason, one_entry = TAMPERED[case]
    page = published_page(open_page, {"**/v1/companies/stripe/published": tamper_published(change)})
    status = page.locator("#published-verify")
    expect(status).to_have_text(re.compile(r"^NOT verified: "))
    expect(status).to_contain_text(reason)
    expect(status).to_contain_text("Do not rely on these published marks")
    expect(status).to_have_class("error")
    expect(status).to_have_attribute("data-check", check)
    # The entry that failed is marked in the table.
    expect(page.locator("#published-table tr.failed")).to_have_count(1 if one_entry else 0)
    expect(page.locator("#published-facts")).to_be_empty()


def test_a_checkpoint_with_a_broken_signature_is_not_verified(open_page):
    """/v1/log/checkpoint with one bit of its signature flipped: its note no longer verifies."""

    def flip(route):
        response = route.fetch()
        text, signature = response.text().rstrip("\n").rsplit(" ", 1)
        raw = bytearray(base64.b64decode(signature))
        raw[-1] ^= 1
        route.fulfill(response=response, body=f"{text} {base64.b64encode(bytes(raw)).decode()}\n")

    page = published_page(open_page, {"**/v1/log/checkpoint": flip})
    status = page.locator("#published-verify")
    expect(status).to_have_text(re.compile(r"^NOT verified: the signature of the log's checkpoint does not verify"))
    expect(status).to_have_attribute("data-check", "signature")


def test_a_log_resigned_by_a_key_that_is_not_published_is_not_verified(open_page, server):
    """A whole log forged consistently (an entry changed, its leaf hash, its proof's root and
    the checkpoint recomputed and signed) with a key of the forger's own: every hash checks out,
    but no published key signed it."""
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
    from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

    forger = Ed25519PrivateKey.generate()
    raw = forger.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)
    note = server.get("/v1/log/checkpoint", PRO)[2]
    origin = note.split("\n", 1)[0]
    text = note.split("\n\n", 1)[0] + "\n"
    key_hash = hashlib.sha256(origin.encode() + b"\n\x01" + raw).digest()[:4]
    forged = f"{text}\n\u2014 {origin} {base64.b64encode(key_hash + forger.sign(text.encode())).decode()}\n"

    def change(body):
        body["log"]["checkpoint"] = forged

    page = published_page(
        open_page,
        {
            "**/v1/companies/stripe/published": tamper_published(change),
            "**/v1/log/checkpoint": lambda route: route.fulfill(status=200, content_type="text/plain", body=forged),
        },
    )
    status = page.locator("#published-verify")
    expect(status).to_have_text(
        re.compile(r"^NOT verified: the checkpoint of the history is signed by no published signing key")
    )
    expect(status).to_contain_text(key_hash.hex())


def test_free_key_sees_that_the_published_history_needs_research(open_page, server):
    key = server.issue_key("free")
    page, rec = open_page()
    enter_key(page, key, "/explore/anthropic")
    wait_company_loaded(page)
    wait_published(page)
    expect(page.locator("#published-note")).to_have_text(
        "The published history (every mark as first published, verified in your browser) needs a Research key"
        " or above (scope marks:80); this key's tier is free."
    )
    expect(page.locator("#published-figure")).to_be_hidden()
    expect(page.locator("#published-wrap")).to_be_hidden()
    asked = [r.url.removeprefix(server.base) for r in rec.requests if "/v1/" in r.url]
    assert not [u for u in asked if "/published" in u or u.startswith("/v1/log/")], asked
