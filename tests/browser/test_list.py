"""The company list (/explore): by default the companies whose marks are current, ranked and said
so; every company, or those of one outcome, a choice away; on a phone, the first company row
on the first screen."""

import csv

import pytest
from conftest import DESKTOP, PHONE, PRO, RESEARCH, ROOT, enter_key, wait_list_loaded
from playwright.sync_api import expect
from test_explore import CURRENT, listed_slugs

SAMPLE_COMPANIES = sum(1 for _ in csv.DictReader((ROOT / "sample" / "companies.csv").open(encoding="utf-8")))


@pytest.mark.parametrize("tier", ["pro", "free"])
def test_a_company_row_is_above_the_fold_on_a_phone(open_page, server, tier):
    key = PRO if tier == "pro" else server.issue_key("free")
    page, _ = open_page(viewport=PHONE)
    enter_key(page, key)
    wait_list_loaded(page)
    page.evaluate("window.scrollTo(0, 0)")
    row = page.locator("#company-rows tr").first.bounding_box()
    assert row["y"] >= 0 and row["y"] + row["height"] <= PHONE["height"], (
        f"the first row ends at {row['y'] + row['height']}"
    )
    # Its name and mark are readable there, and nothing is wider than the screen.
    name = page.locator("#company-rows tr").first.locator("th a").bounding_box()
    assert name["y"] + name["height"] <= PHONE["height"]
    assert page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]


@pytest.mark.parametrize("viewport", [DESKTOP, PHONE], ids=["1280", "390"])
def test_the_default_list_ranks_current_marks_and_says_so(open_page, server, viewport):
    expected, _ = server.walk_companies(RESEARCH, outcome=CURRENT, sort="-value_usd")
    page, rec = open_page(viewport=viewport)
    enter_key(page, RESEARCH, "/explore?sort=-value_usd")
    wait_list_loaded(page)
    expect(page.locator("#scope-note")).to_contain_text("Companies whose marks are current")
    expect(page.locator("#scope-note")).to_be_visible()
    expect(page.get_by_label("Show")).to_have_value("")
    expect(page.get_by_label("Show").locator("option:checked")).to_have_text("Current marks")
    assert listed_slugs(page) == expected
    outcomes = page.locator("#company-rows tr th .sub.narrow-only").all_text_contents()
    assert not [o for o in outcomes if any(w in o for w in ("Listed", "Sold", "Bankrupt", "Wound down"))]
    assert any("outcome=none%2Csale_agreed" in r.url for r in rec.requests if "/v1/companies?" in r.url)


def test_every_company_or_one_outcome_is_a_choice_away(open_page, server):
    page, _ = open_page()
    enter_key(page, RESEARCH)
    wait_list_loaded(page)
    show = page.get_by_label("Show")
    values = show.locator("option").evaluate_all("(os) => os.map((o) => o.value)")
    assert values == [
        "",
        "all",
        "none",
        "sale_agreed",
        "listing_agreed",
        "listed,sold,bankrupt,wound_down",
        "listed",
        "sold",
        "bankrupt",
        "wound_down",
    ]
    show.select_option("all")
    page.get_by_role("button", name="Apply").click()
    page.wait_for_url("**/explore?outcome=all")
    slugs = listed_slugs(page)
    assert slugs == server.walk_companies(RESEARCH)[0]
    assert len(slugs) == SAMPLE_COMPANIES, "every company of the sample"
    expect(page.locator("#scope-note")).to_contain_text("Showing every company")
    for kind in ("listed", "sold", "sale_agreed", "bankrupt", "wound_down"):
        page.goto(f"/explore?outcome={kind}")
        expected = server.walk_companies(RESEARCH, outcome=kind)[0]
        assert expected, kind
        assert listed_slugs(page) == expected, kind
        expect(show).to_have_value(kind)
