"""The explorer's search box (suggestions as you type, from /v1/companies?q=) and its sector
menu (from /v1/sectors), against the real API."""

import re
import urllib.parse

import pytest
from conftest import (
    AXE_JS,
    PRO,
    enter_key,
    serious_violations,
    wait_list_loaded,
)
from playwright.sync_api import expect
from test_explore import fate_words, listed_slugs, usd_words


def suggestions(page, text):
    """Types text into the search box as a visitor does; the suggested slugs once they show."""
    box = page.locator("#q")
    box.fill("")
    box.press_sequentially(text, delay=40)
    page.wait_for_function("(text) => document.getElementById('q-status').textContent.includes(text)", arg=text)
    return page.locator("#q-list li[role=option]").evaluate_all("(lis) => lis.map((li) => li.dataset.slug)")


def test_typing_suggests_companies_by_name_and_alias(open_page, server):
    page, rec = open_page()
    enter_key(page, PRO)
    wait_list_loaded(page)
    box = page.get_by_role("combobox", name="Search by name")
    expect(box).to_have_attribute("aria-expanded", "false")

    # "curs" is the start of Cursor, Anysphere's alias: the API's own answer, in its order.
    expected = [c["slug"] for c in server.json("/v1/companies?q=curs&limit=8", PRO)["companies"]]
    assert expected[0] == "anysphere"
    assert suggestions(page, "curs") == expected
    expect(box).to_have_attribute("aria-expanded", "true")
    listbox = page.get_by_role("listbox")
    expect(listbox).to_be_visible()
    expect(listbox.get_by_role("option").first).to_contain_text("Anysphere (Cursor)")
    # Keyboard: Down highlights the first suggestion, Escape closes, Down opens again.
    box.press("ArrowDown")
    first = page.locator("#q-list li").first
    expect(first).to_have_attribute("aria-selected", "true")
    expect(box).to_have_attribute("aria-activedescendant", first.get_attribute("id"))
    box.press("Escape")
    expect(box).to_have_attribute("aria-expanded", "false")
    expect(listbox).to_be_hidden()
    box.press("ArrowDown")
    expect(box).to_have_attribute("aria-expanded", "true")

    # A former name finds the company under its present one.
    assert suggestions(page, "codeium") == ["windsurf"]
    expect(listbox.get_by_role("option")).to_have_text(re.compile(r"^Windsurf \(Codeium\)"))
    # Case and accents do not matter.
    assert suggestions(page, "CODÉIUM") == ["windsurf"]
    assert suggestions(page, "zzzq") == []
    expect(page.locator("#q-status")).to_have_text("No company matches “zzzq”.")

    # Enter on a highlighted suggestion opens the company.
    suggestions(page, "codeium")
    box.press("ArrowDown")
    box.press("Enter")
    page.wait_for_url("**/explore/windsurf")

    asked = [r.url for r in rec.requests if "/v1/companies?" in r.url and "q=" in r.url]
    assert any("q=curs" in url for url in asked)
    assert all(PRO not in url for url in asked)
    # Answers are kept: "codeium" typed twice is asked once.
    assert sum("q=codeium&" in url for url in asked) == 1


def test_a_suggestion_says_what_became_of_the_company(open_page, server):
    """A listed, sold or failed company is suggested with its fate beside its name (its
    outcome's kind and day, from the API's item) and its mark said to be its last private one,
    dated: never shown as a value today. A pending sale says so; a private company has none."""
    page, _ = open_page()
    enter_key(page, PRO)
    wait_list_loaded(page)
    seen = set()
    for text in ["airbnb", "ftx", "celsius", "brex", "stripe"]:
        expected = server.json(f"/v1/companies?q={text}&limit=8", PRO)["companies"]
        assert suggestions(page, text) == [c["slug"] for c in expected]
        for c in expected:
            option = page.locator(f'#q-list li[data-slug="{c["slug"]}"]')
            mark = c["latest_mark"]
            sub = option.locator(".sub")
            if c["outcome"]:
                seen.add(c["outcome"]["kind"])
                expect(option.locator(".fate")).to_have_text(fate_words(c))
                expect(option.locator(".fate")).to_have_attribute("data-kind", c["outcome"]["kind"])
            else:
                expect(option.locator(".fate")).to_have_count(0)
            if c["outcome"] and c["outcome"]["kind"] != "sale_agreed":
                expect(sub).to_contain_text(f"last private mark {usd_words(mark['value_usd'])}, {mark['as_of_date']}")
            else:
                expect(sub).not_to_contain_text("last private mark")
                expect(sub).to_contain_text(usd_words(mark["value_usd"]))
    assert {"listed", "bankrupt", "sale_agreed"} <= seen, seen
    # The fate is part of the option's name, as a screen reader reads it.
    suggestions(page, "airbnb")
    airbnb = server.json("/v1/companies/airbnb", PRO)
    assert airbnb["outcome"]["kind"] == "listed"
    expect(page.get_by_role("option").first).to_contain_text(f"Airbnb Listed {airbnb['outcome']['occurred_on']}")


def test_enter_filters_the_list_by_the_search(open_page, server):
    expected, _ = server.walk_companies(PRO, q="ai")
    page, rec = open_page()
    enter_key(page, PRO)
    wait_list_loaded(page)
    page.locator("#q").fill("ai")
    page.locator("#q").press("Enter")
    page.wait_for_url("**/explore?q=ai")
    assert listed_slugs(page) == expected
    expect(page.locator("#list-count")).to_contain_text("matching “ai”")
    # With a search and no sort, the API orders by relevance: the menu says so.
    expect(page.locator("#sort option").first).to_have_text("Best match")
    assert any("q=ai" in r.url for r in rec.requests if "/v1/companies?" in r.url)


@pytest.mark.parametrize("tier", ["free", "pro"])
def test_sector_menu_lists_the_sectors_of_the_keys_universe(open_page, server, tier):
    key = server.issue_key(tier) if tier == "free" else PRO  # a free key's budget is 10 a minute
    sectors = server.json("/v1/sectors", key)["sectors"]
    page, _ = open_page()
    enter_key(page, key)
    wait_list_loaded(page)
    menu = page.get_by_label("Sector")
    assert menu.evaluate("(s) => s.tagName") == "SELECT", "a menu: no sector can be mistyped"
    options = menu.locator("option")
    values = options.evaluate_all("(os) => os.map((o) => o.value)")
    texts = options.evaluate_all("(os) => os.map((o) => o.textContent)")
    assert values == [""] + [s["sector"] for s in sectors]
    assert texts[0] == "Any sector"
    for s, text in zip(sectors, texts[1:], strict=True):
        assert text.startswith(f"{s['sector']} ({s['companies']}"), text
        if s["private"] != s["companies"]:
            assert f"{s['private']} private" in text
    if tier == "free":
        assert sum(s["companies"] for s in sectors) == 10
        return
    # Choosing one filters the list by it: its companies whose marks are current by default,
    # every one of them with "All companies".
    fintech = next(s for s in sectors if s["sector"] == "fintech")
    menu.select_option("fintech")
    page.get_by_role("button", name="Apply").click()
    page.wait_for_url("**/explore?sector=fintech")
    slugs = listed_slugs(page)
    assert slugs == server.walk_companies(PRO, sector="fintech", outcome="none,sale_agreed,listing_agreed")[0]
    page.get_by_label("Show").select_option("all")
    page.get_by_role("button", name="Apply").click()
    page.wait_for_url("**/explore?sector=fintech&outcome=all")
    slugs = listed_slugs(page)
    assert slugs == server.walk_companies(PRO, sector="fintech")[0]
    assert len(slugs) == fintech["companies"]


def test_a_sector_in_the_address_in_another_case_is_chosen(open_page):
    page, _ = open_page()
    enter_key(page, PRO, "/explore?sector=FinTech")
    wait_list_loaded(page)
    expect(page.get_by_label("Sector")).to_have_value("fintech")


@pytest.mark.skipif(not AXE_JS.is_file(), reason="AXE_JS not set: run through run.sh")
def test_open_suggestions_have_no_serious_accessibility_violation(open_page):
    page, _ = open_page(bypass_csp=True)
    enter_key(page, PRO)
    wait_list_loaded(page)
    suggestions(page, "a")
    page.locator("#q").press("ArrowDown")
    assert serious_violations(page) == []


def test_the_search_is_in_the_address_never_the_key(open_page):
    page, rec = open_page()
    enter_key(page, PRO, "/explore?q=" + urllib.parse.quote("stripe"))
    wait_list_loaded(page)
    expect(page.locator("#q")).to_have_value("stripe")
    expect(page.locator("#company-rows tr")).to_have_count(1)
    assert all(PRO not in url for url in rec.navigations)
