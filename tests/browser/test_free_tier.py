"""A free key's pages ask only for what it may read, the key check too: it asks the list first
(/v1/companies?limit=1, which every tier may read), whose answer to a free key carries the
free universe's note, so a free key is never asked /v1/usage (Research and above) and no answer
to it is a 403. From then on a company page is one request (its profile), so ten companies fit
the free tier's ten requests a minute. Counted, not timed."""

import re

from conftest import FREE, PHONE, enter_key, wait_company_loaded, wait_list_loaded, wait_settled
from playwright.sync_api import expect


def api_paths(rec, server):
    """The /v1 paths the page asked, in order (query strings dropped)."""
    return [
        r.url.removeprefix(server.base).split("?")[0] for r in rec.requests if r.url.startswith(server.base + "/v1/")
    ]


def test_a_free_company_page_costs_one_request(open_page, server):
    key = server.issue_key("free")
    _, headers, problem = server.get("/v1/usage", key)
    assert problem["code"] == "tier_forbidden" and "q=10" in headers["RateLimit-Policy"]
    page, rec = open_page(viewport=PHONE)
    enter_key(page, key)
    wait_list_loaded(page)  # the key form closes before the list is asked for
    # The list: the key check (the list's first company), the sector menu and the list.
    assert api_paths(rec, server) == ["/v1/companies", "/v1/sectors", "/v1/companies"]
    expect(page.locator("#key-status")).to_have_text(re.compile(r"^Using a free key \(10 requests a minute\)"))
    before = len(rec.requests)
    page.goto("/explore/anthropic")
    wait_company_loaded(page)
    asked = [r.url.removeprefix(server.base).split("?")[0] for r in rec.requests[before:] if "/v1/" in r.url]
    assert asked == ["/v1/companies/anthropic"], asked
    expect(page.locator("#headline-figures .figure-value").first).to_contain_text("$")
    expect(page.locator("#series-error")).to_contain_text("needs a Research key or above")
    assert [r.status for r in rec.responses if r.status >= 400] == [], "nothing was refused, the key check neither"


def test_a_free_key_can_look_at_ten_companies_a_minute(open_page, server):
    """Ten company pages, one after another: ten requests, all answered, plus the one key check.
    The key is issued with a budget of 12 (the check the test harness spends to see the key is
    live, the key check, ten pages), so no answer depends on the clock; and since 12 is no
    tier's default budget, the page cannot have told the tier from it."""
    key = server.issue_key("free", rate_per_min=12)
    slugs, _ = server.walk_companies(FREE)  # the demo key: the same ten
    assert len(slugs) == 10
    page, rec = open_page()
    page.goto(f"/explore/{slugs[0]}")
    page.get_by_label("API key").fill(key)
    page.get_by_role("button", name="Use key").click()
    wait_company_loaded(page)
    for slug in slugs[1:]:
        page.goto(f"/explore/{slug}")
        wait_company_loaded(page)
        expect(page.locator("#title")).not_to_have_text(slug)  # the profile came: its name
    asked = api_paths(rec, server)
    assert asked == ["/v1/companies"] + [f"/v1/companies/{s}" for s in slugs], asked
    statuses = [r.status for r in rec.responses if r.url.startswith(server.base + "/v1/")]
    assert statuses == [200] * 11
    assert page.locator("#alert").text_content() == ""


def test_a_free_key_on_compare_and_indices_asks_nothing_it_cannot_have(open_page, server):
    key = server.issue_key("free")
    page, rec = open_page()
    enter_key(page, key, "/compare?c=anthropic&index=all")
    wait_settled(page)
    expect(page.locator("#compare-error")).to_contain_text("needs a Research key or above (scope marks:80)")
    page.goto("/indices")
    wait_settled(page)
    expect(page.locator("#indices-error")).to_contain_text("needs a Research key or above (scope marks:80)")
    asked = api_paths(rec, server)
    assert not [p for p in asked if p.endswith(("/marks", "/events")) or p.startswith("/v1/indices")], asked
    assert "/v1/usage" not in asked
    assert [r.status for r in rec.responses if r.status == 403] == []


def test_a_free_keys_walk_of_its_company_pages_is_never_refused(open_page, server):
    """A free key opens the list, follows its first company's link, then opens each of its other
    companies' pages: no answer to any request of the pages is a 403, not even the key check's
    (the page learns the tier from the list's first answer, not from /v1/usage). Every answer
    the page received is listened to, not only /v1's."""
    slugs, _ = server.walk_companies(FREE)
    assert len(slugs) == 10
    # The harness's check, the key check, the sector menu, the list, ten pages: 14.
    key = server.issue_key("free", rate_per_min=14)
    page, rec = open_page()
    heard = []
    page.on("response", lambda r: heard.append((r.status, r.url)))
    enter_key(page, key)
    wait_list_loaded(page)
    expect(page.locator("#key-status")).to_have_text(re.compile(r"^Using a free key \(14 requests a minute\)"))
    for k, slug in enumerate(slugs):
        if k == 0:
            page.locator(f'#company-rows tr[data-slug="{slug}"] th a').click()
            page.wait_for_url(f"**/explore/{slug}")
        else:
            page.goto(f"/explore/{slug}")
        wait_company_loaded(page)
        expect(page.locator("#headline-figures .figure-value").first).to_contain_text("$")
        expect(page.locator("#series-error")).to_contain_text("needs a Research key or above")
    refused = [(status, url) for status, url in heard if status == 403]
    assert refused == [], refused
    assert [(r.status, r.url) for r in rec.responses if r.status == 403] == []
    assert "/v1/usage" not in api_paths(rec, server)
    assert not [(s, u) for s, u in heard if s >= 400], "every answer was given"
