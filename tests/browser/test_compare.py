"""/compare: up to five companies and an index on one chart, rebased to 100 on a chosen date or
in dollars, a table beside it, the selection in the address; every number the API's."""

import csv
import io
import re
from datetime import date

from conftest import (
    FREE,
    PHONE,
    PRO,
    SCREENSHOTS,
    download,
    enter_key,
    wait_settled,
)
from playwright.sync_api import expect

FIVE = ["stripe", "revolut", "anthropic", "openai", "databricks"]


def series_of(server, slug):
    if slug.startswith("index:"):
        data = server.json(f"/v1/indices/{slug[6:]}", PRO)["series"]
        return {p["date"]: p["level"] for p in data}
    data = server.json(f"/v1/companies/{slug}/marks?coverage=80", PRO)["series"]
    return {p["date"]: p["mark_usd"] for p in data}


def add(page, text, slug, how="click"):
    """Adds a company through the search box: by mouse, by keyboard, or Enter on the first."""
    chips = page.locator("#chosen li").count()
    box = page.locator("#add-company")
    box.press_sequentially(text, delay=30)
    option = page.locator(f'#add-list li[data-slug="{slug}"]')
    option.wait_for()
    if how == "click":
        option.click()
    elif how == "keys":
        while option.get_attribute("aria-selected") != "true":
            box.press("ArrowDown")
        box.press("Enter")
    else:  # Enter with none highlighted takes the first suggestion
        assert page.locator("#add-list li").first.get_attribute("data-slug") == slug
        box.press("Enter")
    expect(page.locator("#chosen li")).to_have_count(chips + 1)
    wait_settled(page)


def test_five_companies_and_an_index_rebased_to_a_chosen_date(open_page, server):
    page, rec = open_page()
    enter_key(page, PRO, "/compare")
    wait_settled(page)
    expect(page.locator("#compare-note")).to_contain_text("Add up to five companies")
    add(page, "stri", "stripe", "keys")
    add(page, "revol", "revolut")
    add(page, "anthropic", "anthropic", "enter")
    add(page, "openai", "openai")
    add(page, "databr", "databricks")
    expect(page.locator("#add-company")).to_be_disabled()
    page.get_by_label("Index", exact=True).select_option("fintech")
    wait_settled(page)
    lines = page.locator("#compare-svg polyline")
    expect(lines).to_have_count(6)
    assert re.search(r"/compare\?c=stripe,revolut,anthropic,openai,databricks&index=fintech$", page.url)

    keys = [*FIVE, "index:fintech"]
    values = {k: series_of(server, k) for k in keys}
    # By default, the first day every series has.
    common_first = max(min(v) for v in values.values())
    expect(page.locator("#at")).to_have_value(common_first)

    chosen = "2024-06-30"
    page.locator("#at").fill(chosen)
    expect(page.locator("#compare-table caption")).to_contain_text(chosen)
    assert page.url.endswith(f"&at={chosen}")
    for k in keys:
        row = page.locator(f'#compare-table tr[data-key="{k}"]')
        at = row.locator(f'td[data-date="{chosen}"]')
        assert float(at.get_attribute("data-value")) == values[k][chosen], k
        assert float(at.get_attribute("data-rebased")) == 100, k
        last_day = max(values[k])
        last = row.locator("td[data-value]").nth(1)
        assert last.get_attribute("data-date") == last_day
        assert float(last.get_attribute("data-value")) == values[k][last_day]
        rebased = float(last.get_attribute("data-rebased"))
        assert abs(rebased - values[k][last_day] / values[k][chosen] * 100) < 1e-3
        # One chart point per day from the chosen date on.
        points = page.locator(f'#compare-svg polyline[data-key="{k}"]')
        assert int(points.get_attribute("data-points")) == sum(d >= chosen for d in values[k])

    # The download is the chart's daily values: the API's, and 100 on the chosen date.
    name, text = download(page, "#compare-download")
    assert name == f"compare-{'-'.join(FIVE)}-index-fintech-rebased-{chosen}.csv"
    table = list(csv.reader(io.StringIO(text, newline="")))
    header = table[0]
    assert header[:3] == ["date", "stripe_mark_usd", f"stripe_rebased_{chosen}"]
    assert header[-2:] == ["index_fintech_level", f"index_fintech_rebased_{chosen}"]
    last_day = max(max(v) for v in values.values())
    days = (date.fromisoformat(last_day) - date.fromisoformat(chosen)).days + 1
    assert len(table) - 1 == days
    by_date = {r[0]: r for r in table[1:]}
    assert table[1][0] == chosen
    for k, col in zip(keys, range(1, len(header), 2), strict=True):
        assert float(by_date[chosen][col + 1]) == 100
        for d in (chosen, "2025-01-31", last_day):
            cell = by_date[d][col]
            assert (float(cell) if cell else None) == values[k].get(d), (k, d)
    assert all(PRO not in r.url for r in rec.requests)

    # Removing one, then sharing the address: the same comparison comes back.
    page.get_by_role("button", name="Remove OpenAI").click()
    expect(page.locator("#chosen li")).to_have_count(4)
    assert "c=stripe,revolut,anthropic,databricks&" in page.url
    expect(page.locator("#add-company")).to_be_enabled()
    shared = page.url
    page.goto("about:blank")
    page.goto(shared)
    wait_settled(page)
    expect(page.locator("#compare-svg polyline")).to_have_count(5)
    expect(page.locator("#at")).to_have_value(chosen)
    expect(page.get_by_label("Index", exact=True)).to_have_value("fintech")
    expect(page.locator("#compare-readout")).to_contain_text(last_day)
    # The keyboard cursor reads every series on a day.
    page.focus("#compare-svg")
    page.keyboard.press("Home")
    expect(page.locator("#compare-readout")).to_contain_text(f"{chosen}: Stripe: 100.00")
    page.screenshot(path=str(SCREENSHOTS / "compare-four-and-fintech-1280x800.png"), full_page=True)


def test_dollars_put_the_index_on_its_own_axis(open_page, server):
    page, _ = open_page()
    enter_key(page, PRO, "/compare?c=stripe,revolut&index=fintech&scale=usd")
    wait_settled(page)
    expect(page.get_by_role("radio", name="US dollars")).to_be_checked()
    expect(page.locator("#compare-svg polyline")).to_have_count(3)
    assert page.locator("#compare-svg text.axis-right").count() >= 2
    expect(page.locator("#compare-svg .axis-title")).to_have_text(["Mark, USD", "Index level"])
    expect(page.locator("#compare-legend")).to_contain_text("Index: fintech (right axis)")
    expect(page.locator("#compare-svg line.date-marker")).to_have_count(1)
    stripe = series_of(server, "stripe")
    # In dollars each company's whole series is drawn.
    points = page.locator('#compare-svg polyline[data-key="stripe"]')
    expect(points).to_have_attribute("data-points", str(len(stripe)))
    at = page.locator("#at").input_value()
    cell = page.locator(f'#compare-table tr[data-key="stripe"] td[data-date="{at}"]')
    assert float(cell.get_attribute("data-value")) == stripe[at]
    assert cell.get_attribute("data-rebased") is None
    # Back to rebased: the lines start on the rebase date.
    page.get_by_role("radio", name="Rebased to 100").check()
    expect(points).to_have_attribute("data-points", str(sum(d >= at for d in stripe)))
    assert "scale=usd" not in page.url


def test_a_date_no_series_has_in_common_falls_back_in_words(open_page):
    page, _ = open_page()
    enter_key(page, PRO, "/compare?c=stripe,openai&at=1999-01-01")
    wait_settled(page)
    expect(page.locator("#compare-note")).to_contain_text("1999-01-01 is not a day every series has")
    first = page.locator("#at").get_attribute("min")
    expect(page.locator("#at")).to_have_value(first)


def test_an_unknown_slug_is_said_in_words(open_page):
    page, _ = open_page()
    enter_key(page, PRO, "/compare?c=stripe,no-such-company")
    wait_settled(page)
    expect(page.locator("#compare-error")).to_contain_text("no-such-company")
    expect(page.locator("#chosen li")).to_have_count(1)
    assert "no-such-company" not in page.url


def test_a_free_key_is_told_what_the_comparison_needs(open_page, server):
    key = server.issue_key("free")
    _, _, problem = server.get("/v1/companies/anthropic/marks?coverage=80", key)
    assert problem["code"] == "tier_forbidden"
    page, rec = open_page()
    enter_key(page, key, "/compare?c=anthropic&index=all")
    wait_settled(page)
    expect(page.locator("#compare-error")).to_contain_text(problem["detail"])
    expect(page.locator("#compare-error")).to_contain_text("not included in this key's tier")
    expect(page.get_by_label("Index", exact=True)).to_be_disabled()
    expect(page.locator("#compare-result")).to_be_hidden()
    assert page.locator("#alert").text_content() == ""
    assert {r.status for r in rec.responses if "/v1/" in r.url} <= {200, 403}
    assert FREE not in page.url


def test_the_phone_layout_stacks_the_table_under_the_chart(open_page):
    page, _ = open_page(viewport=PHONE)
    enter_key(page, PRO, "/compare?c=stripe,revolut,anthropic&index=all")
    wait_settled(page)
    chart = page.locator("#compare-figure").bounding_box()
    table = page.locator("#compare-table").bounding_box()
    assert table["y"] > chart["y"] + chart["height"] - 1
    assert chart["width"] <= PHONE["width"]
    # Nothing wider than the screen (the table scrolls inside its own box if it must).
    assert page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]


def test_beside_on_a_wide_screen(open_page):
    page, _ = open_page()
    enter_key(page, PRO, "/compare?c=stripe,revolut&index=all")
    wait_settled(page)
    chart = page.locator("#compare-figure").bounding_box()
    side = page.locator("#compare-table").bounding_box()
    assert side["x"] > chart["x"] + chart["width"] - 1
    # The table fits its column: no sideways scroll needed.
    assert page.locator(".compare-side .table-scroll").evaluate("(d) => d.scrollWidth <= d.clientWidth")
