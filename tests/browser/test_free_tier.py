"""A free key's pages ask only for what it may read. The key check (/v1/usage) answers a free key
403 tier_forbidden, once a tab; from then on a company page is one request (its profile), so
ten companies fit the free tier's ten requests a minute. Counted, not timed."""

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
    # The list: the key check, the sector menu and the list.
    assert api_paths(rec, server) == ["/v1/usage", "/v1/sectors", "/v1/companies"]
    expect(page.locator("#key-status")).to_have_text(re.compile(r"^Using a free key \(10 requests a minute\)"))
    before = len(rec.requests)
    page.goto("/explore/anthropic")
    wait_company_loaded(page)
    asked = [r.url.removeprefix(server.base).split("?")[0] for r in rec.requests[before:] if "/v1/" in r.url]
    assert asked == ["/v1/companies/anthropic"], asked
    expect(page.locator("#headline-figures .figure-value").first).to_contain_text("$")
    expect(page.locator("#series-error")).to_contain_text("needs a Research key or above")
    assert [r.status for r in rec.responses if r.status >= 400] == [403], "only the key check was refused"


def test_a_free_key_can_look_at_ten_companies_a_minute(open_page, server):
    """Ten company pages, one after another: ten requests, all answered, plus the one key check.
    The key is issued with a budget of 12 (the check the test harness spends to see the key is
    live, the key check, ten pages), so no answer depends on the clock."""
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
    assert asked == ["/v1/usage"] + [f"/v1/companies/{s}" for s in slugs], asked
    statuses = [r.status for r in rec.responses if r.url.startswith(server.base + "/v1/")]
    assert statuses == [403] + [200] * 10
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
    assert asked.count("/v1/usage") == 1
