"""/indices: the list of indices, a chosen index's chart (one point per index day, its band),
a range of days, a day's constituents and their weights; tiers said in words."""

import re
from decimal import ROUND_HALF_UP, Decimal

import pytest
from conftest import DESKTOP, PHONE, PRO, download, enter_key, wait_settled
from playwright.sync_api import expect


def two(value):
    """A level as the page writes it (Intl.NumberFormat, en-US, two decimals: half up on the
    number's exact value)."""
    return f"{Decimal(value).quantize(Decimal('0.01'), ROUND_HALF_UP):,}"


def test_the_list_and_the_chart_of_every_day(open_page, server):
    listed = server.json("/v1/indices", PRO)["indices"]
    series = server.json("/v1/indices/all?coverage=80", PRO)["series"]
    page, rec = open_page()
    enter_key(page, PRO, "/indices")
    wait_settled(page)
    rows = page.locator("#indices-table tbody tr")
    expect(rows).to_have_count(len(listed))
    for i, row in zip(listed, rows.all(), strict=True):
        expect(row).to_have_attribute("data-index", i["index"])
        expect(row.locator("td").first).to_have_text(two(i["latest"]["level"]))
        expect(row.locator("td").nth(2)).to_have_text(str(i["latest"]["constituents"]))
    # "all" by default: one chart point per day of the index, its 80% band.
    expect(page.locator("#index-heading")).to_have_text("All companies")
    line = page.locator("#index-svg polyline.mark-line")
    expect(line).to_have_attribute("data-points", str(len(series)))
    assert len(line.get_attribute("points").split()) == len(series)
    expect(page.locator("#index-svg path.band80")).to_have_count(1)
    # The readout names a day's level, band and companies; Home is the first day.
    page.focus("#index-svg")
    page.keyboard.press("Home")
    first = series[0]
    expect(page.locator("#index-readout")).to_contain_text(
        f"{first['date']}: level {two(first['level'])}; "
        f"80% band {two(first['lower'])} \N{EN DASH} {two(first['upper'])};"
        f" {first['constituents']} companies"
    )
    # The constituents of the last day, by default.
    expect(page.locator("#constituents-heading")).to_contain_text(series[-1]["date"])
    assert all(PRO not in r.url for r in rec.requests)


def test_a_sector_index_over_a_range_with_the_95_band(open_page, server):
    page, rec = open_page()
    enter_key(page, PRO, "/indices")
    wait_settled(page)
    page.locator('#indices-table a[data-index="fintech"]').click()
    wait_settled(page)
    expect(page.locator("#index-heading")).to_have_text("Sector: fintech")
    assert page.url.endswith("/indices?index=fintech")
    page.get_by_label("From", exact=True).fill("2023-01-01")
    page.get_by_label("To", exact=True).fill("2024-06-30")
    page.get_by_label("Band", exact=True).select_option("95")
    page.get_by_role("button", name="Show").first.click()
    wait_settled(page)
    expected = server.json("/v1/indices/fintech?coverage=95&from=2023-01-01&to=2024-06-30", PRO)["series"]
    assert len(expected) == 547
    line = page.locator("#index-svg polyline.mark-line")
    expect(line).to_have_attribute("data-points", str(len(expected)))
    expect(page.locator("#index-svg path.band95")).to_have_count(1)
    expect(page.locator("#band-label")).to_have_text("95% band")
    assert page.url.endswith("/indices?index=fintech&from=2023-01-01&to=2024-06-30&coverage=95")
    assert any("coverage=95&from=2023-01-01&to=2024-06-30" in r.url for r in rec.requests)
    # Quick ranges: one year back from the last day.
    page.get_by_role("button", name="1 year").click()
    wait_settled(page)
    last = server.json("/v1/indices", PRO)["indices"]
    last = next(i for i in last if i["index"] == "fintech")["last_date"]
    expect(line).to_have_attribute("data-points", "365")
    expect(page.locator("#to")).to_have_value(last)


def test_constituents_of_a_day_weigh_one_in_all(open_page, server):
    day = "2024-06-30"
    data = server.json(f"/v1/indices/fintech/constituents?date={day}&coverage=80", PRO)
    page, _ = open_page()
    enter_key(page, PRO, f"/indices?index=fintech&date={day}")
    wait_settled(page)
    rows = page.locator("#constituents-table tbody tr")
    expect(rows).to_have_count(len(data["constituents"]))
    assert rows.evaluate_all("(rs) => rs.map((r) => r.dataset.slug)") == [c["slug"] for c in data["constituents"]]
    weights = page.locator("#constituents-table tbody td[data-weight]").evaluate_all(
        "(tds) => tds.map((td) => Number(td.dataset.weight))"
    )
    assert weights == [c["weight"] for c in data["constituents"]]
    assert sum(weights) == pytest.approx(1, abs=1e-4)
    expect(page.locator("#constituents-table tfoot")).to_contain_text("100.00%")
    expect(page.locator("#constituents-summary")).to_contain_text(f"On {day} the index stood at {two(data['level'])}")
    # A day picked on the chart: the keyboard cursor, then Enter.
    page.focus("#index-svg")
    page.keyboard.press("Home")
    page.keyboard.press("Enter")
    wait_settled(page)
    first = server.json("/v1/indices", PRO)["indices"]
    first = next(i for i in first if i["index"] == "fintech")["first_date"]
    expect(page.locator("#constituents-heading")).to_contain_text(first)
    expect(page.locator("#day")).to_have_value(first)
    assert page.url.endswith(f"date={first}")
    # A day typed in.
    page.get_by_label("Day", exact=True).fill("2025-01-15")
    page.locator("#day-form button").click()
    wait_settled(page)
    other = server.json("/v1/indices/fintech/constituents?date=2025-01-15", PRO)
    expect(rows).to_have_count(len(other["constituents"]))


def test_research_sees_the_80_band_and_is_told_about_the_95(open_page, server):
    key = server.issue_key("research")
    page, _ = open_page()
    enter_key(page, key, "/indices?coverage=95")
    wait_settled(page)
    expect(page.locator('#coverage option[value="95"]')).to_be_disabled()
    expect(page.locator("#series-note")).to_contain_text("The 95% band needs a Pro key or above")
    expect(page.locator("#index-svg path.band80")).to_have_count(1)
    assert "coverage=95" not in page.url


def test_a_free_key_is_told_in_words(open_page, server):
    """In words, without asking /v1/indices, which the free tier is sure to be refused."""
    key = server.issue_key("free")
    _, _, problem = server.get("/v1/indices", key)
    assert problem["code"] == "tier_forbidden"
    page, rec = open_page()
    enter_key(page, key, "/indices")
    wait_settled(page)
    note = page.locator("#indices-error")
    expect(note).to_have_text("Index data needs a Research key or above (scope marks:80); this key's tier is free.")
    expect(note).to_have_class("note")
    assert not [r.url for r in rec.requests if "/v1/indices" in r.url]
    expect(page.locator("#indices-view")).to_be_hidden()
    assert page.locator("#alert").text_content() == ""


def test_an_unknown_index_falls_back_in_words(open_page):
    page, _ = open_page()
    enter_key(page, PRO, "/indices?index=nope")
    wait_settled(page)
    expect(page.locator("#indices-error")).to_contain_text(re.compile(r"No index has the id “nope”"))
    expect(page.locator("#index-heading")).to_have_text("All companies")


def test_indices_download_needs_no_key_in_a_url(open_page, server):
    page, rec = open_page()
    enter_key(page, PRO, "/indices?index=ai&from=2026-01-01")
    wait_settled(page)
    name, text = download(page, "#series-download")
    assert name == "index-ai-80-from-2026-01-01.csv"
    assert text == server.csv("/v1/indices/ai?coverage=80&from=2026-01-01", PRO)
    assert all(PRO not in r.url for r in rec.requests)


@pytest.mark.parametrize("viewport", [DESKTOP, PHONE], ids=["1280", "390"])
def test_weights_show_the_cap_beside_the_value_share(open_page, server, viewport):
    """Beside each constituent, its weight in the index (capped) and its share of the day's
    marks (uncapped); the cap and the roll-up of small sectors into "other" said in one line."""
    data = server.json("/v1/indices/all/constituents", PRO)
    cap = server.json("/v1/scorecard")["index_weight_cap"]
    listed = data["constituents"]
    assert len(listed) >= 10 and max(c["weight"] for c in listed) <= cap + 1e-9
    assert any(c["value_weight"] > c["weight"] for c in listed), "some company is held to the cap"
    page, _ = open_page(viewport=viewport)
    enter_key(page, PRO, "/indices")
    wait_settled(page)
    rule = page.locator("#weights-rule")
    expect(rule).to_be_visible()
    expect(rule).to_contain_text(f"capped at {cap * 100:g}%")
    expect(rule).to_contain_text("fewer than five companies")
    expect(rule).to_contain_text("marked on the latest day")
    expect(rule).to_contain_text("“other”")
    heads = page.locator("#constituents-table thead th")
    expect(heads.nth(1)).to_have_text("Weight capped")
    expect(heads.nth(2)).to_have_text("Value share uncapped")
    expect(heads.nth(1)).to_be_visible()
    expect(heads.nth(2)).to_be_visible()
    shown = page.locator("#constituents-table tbody tr").evaluate_all(
        "(trs) => trs.map((tr) => [tr.dataset.slug, Number(tr.querySelector('[data-weight]').dataset.weight),"
        " Number(tr.querySelector('[data-value-weight]').dataset.valueWeight)])"
    )
    assert shown == [[c["slug"], c["weight"], c["value_weight"]] for c in listed]
    first = page.locator("#constituents-table tbody tr").first.locator("td")
    expect(first.nth(0)).to_have_text(f"{listed[0]['weight'] * 100:.2f}%")
    expect(first.nth(1)).to_have_text(f"{listed[0]['value_weight'] * 100:.2f}%")
    expect(page.locator("#constituents-table tfoot")).to_contain_text("100.00%")
    expect(page.locator("#constituents-summary")).to_contain_text("held to the cap")
    # The constituents' table fits its box.
    width, room = page.locator("#constituents-wrap").evaluate("(d) => [d.scrollWidth, d.clientWidth]")
    assert width <= room
