"""Honest figures on the company page and in the list: dollars in three significant figures with
the exact figure one click (or key press) away; a 30-day change that rests on no reported value
said to be the method's drift; a chart whose line ends at the company's exit, marked."""

import re

import pytest
from conftest import DESKTOP, PHONE, PRO, RESEARCH, enter_key, wait_company_loaded, wait_list_loaded
from playwright.sync_api import expect
from test_explore import CURRENT, usd_words

COMPACT = re.compile(r"^\$(\d+(\.\d+)?)([KMBT]?)$")


def significant(text):
    """The significant figures of a compact dollar figure ("$1.14T" -> 3, "$32B" -> 2)."""
    digits = COMPACT.match(text).group(1).replace(".", "").lstrip("0")
    return len(digits)


@pytest.mark.parametrize("viewport", [DESKTOP, PHONE], ids=["1280", "390"])
def test_dollars_show_three_significant_figures_and_the_exact_figure_on_click(open_page, server, viewport):
    profile = server.json("/v1/companies/openai", PRO)
    value = profile["latest_mark"]["value_usd"]
    page, _ = open_page(viewport=viewport)
    enter_key(page, PRO, "/explore/openai")
    wait_company_loaded(page)
    figures = page.locator("#company-view data.usd")
    texts = figures.all_inner_texts()
    assert len(texts) > 20
    for text in texts:
        assert COMPACT.match(text) and significant(text) <= 3, text
    headline = page.locator("#headline-figures .figure-value data.usd").first
    expect(headline).to_have_text(usd_words(value))  # $1.08T
    expect(headline).to_have_attribute("value", str(value))
    # No figure in the API's paragraph has more than three significant figures either.
    for token in re.findall(r"\$[\d.]+[KMBT]?", page.locator("#mark-explained").inner_text()):
        assert significant(token) <= 3, token
    # The exact figure: one press of a button, reached with the keyboard; another brings the
    # three figures back. Every dollar figure on the page follows.
    toggle = page.locator("#company-view button.exact-toggle").first
    expect(toggle).to_have_attribute("aria-pressed", "false")
    toggle.focus()
    page.keyboard.press("Enter")
    expect(toggle).to_have_attribute("aria-pressed", "true")
    expect(headline).to_have_text(f"${value:,}")
    for text in figures.all_inner_texts():
        assert re.fullmatch(r"\$\d{1,3}(,\d{3})*", text), text
    page.keyboard.press("Space")
    expect(toggle).to_have_attribute("aria-pressed", "false")
    expect(headline).to_have_text(usd_words(value))


def test_the_list_shows_three_significant_figures(open_page, server):
    _, first = server.walk_companies(RESEARCH, outcome=CURRENT, sort="-value_usd")
    page, _ = open_page()
    enter_key(page, RESEARCH, "/explore?sort=-value_usd")
    wait_list_loaded(page)
    top = first["companies"][0]
    cell = page.locator("#company-rows tr").first.locator("td data.usd").first
    expect(cell).to_have_text(usd_words(top["latest_mark"]["value_usd"]))
    for text in page.locator("#company-rows data.usd").all_inner_texts():
        assert COMPACT.match(text) and significant(text) <= 3, text
    page.get_by_role("button", name="Exact dollars").click()
    expect(cell).to_have_text(f"${top['latest_mark']['value_usd']:,}")


def test_a_30_day_change_with_no_news_is_said_to_be_the_drift(open_page, server):
    """Every company of the sample had no reported value in its last 30 days
    (delta_30d_basis "profile"): the page and the list say the change is the method's drift
    moving with time, not new evidence."""
    profile = server.json("/v1/companies/stripe", PRO)
    assert profile["delta_30d_basis"] == "profile"
    page, _ = open_page()
    enter_key(page, PRO, "/explore/stripe")
    wait_company_loaded(page)
    change = page.locator("#latest-facts dt", has_text="30-day change").locator("xpath=following-sibling::dd[1]")
    sign = "+" if profile["delta_30d_pct"] > 0 else "\N{MINUS SIGN}"
    expect(change).to_have_text(
        f"{sign}{abs(profile['delta_30d_pct']):.2f}%: no value was reported in these 30 days; this is the method's"
        " drift moving with the days since the last report, not new evidence"
    )
    # In the list, each such change carries its note, and the legend under the list says it.
    _, first = server.walk_companies(PRO, outcome=CURRENT)
    page.goto("/explore")
    wait_list_loaded(page)
    for c, row in zip(first["companies"], page.locator("#company-rows tr").all(), strict=False):
        cell = row.locator("td").last
        if c["delta_30d_basis"] == "profile" and holds_agreed_price(c):
            expect(cell.locator(".sub")).to_have_text("agreed price held")  # no drift: see below
        elif c["delta_30d_basis"] == "profile":
            expect(cell.locator(".sub")).to_have_text("drift, no news")
        else:
            expect(cell.locator(".sub")).not_to_have_text("drift, no news")
    expect(page.locator("#list-legend")).to_contain_text("not new evidence")


def holds_agreed_price(c):
    """A pending sale agreed at a disclosed price: the mark holds that price (nothing drifts)."""
    o = c["outcome"]
    return bool(o and o["kind"] == "sale_agreed" and o["valuation_usd"] > 0)


def test_a_pending_agreed_sale_says_its_price_is_held_not_drift(open_page, server):
    """A company whose sale was agreed at a disclosed price and is pending (Brex, and every other
    such in the sample) has a mark that holds the agreed price: its 30-day change is said to be
    that, on its page and in the list, with no drift line ("drift, no news 0.00%"). A sale
    agreed at a price not disclosed, where the sample has one, holds nothing: its change is
    still the drift."""
    agreed, first = server.walk_companies(PRO, outcome="sale_agreed")
    items = {c["slug"]: c for c in first["companies"]}
    assert sorted(items) == sorted(agreed), "one page holds them all"
    held = [s for s in agreed if holds_agreed_price(items[s]) and items[s]["delta_30d_basis"] == "profile"]
    drifting = [s for s in agreed if not holds_agreed_price(items[s]) and items[s]["delta_30d_basis"] == "profile"]
    assert "brex" in held
    profile = server.json("/v1/companies/brex", PRO)
    o = profile["outcome"]
    assert profile["delta_30d_pct"] == 0 and o["kind"] == "sale_agreed"
    page, _ = open_page()
    enter_key(page, PRO, "/explore/brex")
    wait_company_loaded(page)
    change = page.locator("#latest-facts dt", has_text="30-day change").locator("xpath=following-sibling::dd[1]")
    expect(change).to_have_text(
        f"0.00%: the mark holds the agreed price, {usd_words(o['valuation_usd'])} (a sale agreed on"
        f" {o['occurred_on']}, pending), and adds nothing while the sale is pending"
    )
    expect(change).not_to_contain_text("drift")
    expect(page.locator("#latest-facts")).not_to_contain_text("drift")
    # In the list of pending sales: the price held, said so; no "drift, no news" beside a held price.
    page.goto("/explore?outcome=sale_agreed")
    wait_list_loaded(page)
    for slug in held:
        cell = page.locator(f'#company-rows tr[data-slug="{slug}"] td').last
        expect(cell.locator(".sub")).to_have_text("agreed price held")
        expect(cell).not_to_contain_text("drift")
    for slug in drifting:
        cell = page.locator(f'#company-rows tr[data-slug="{slug}"] td').last
        expect(cell.locator(".sub")).to_have_text("drift, no news")
    expect(page.locator("#list-legend")).to_contain_text("agreed price held")
    # A pending sale at a price not disclosed: its change is the method's drift, as before.
    for slug in drifting:
        page.goto(f"/explore/{slug}")
        wait_company_loaded(page)
        expect(change).to_contain_text("this is the method's drift")


@pytest.mark.parametrize("slug", ["affirm", "wiz", "ftx"])
@pytest.mark.parametrize("viewport", [DESKTOP, PHONE], ids=["1280", "390"])
def test_the_chart_ends_at_the_exit_and_marks_it(open_page, server, slug, viewport):
    """The line ends the day before the outcome (the series does); the outcome is a marker at its
    day and value (0 on the bottom edge), labelled with its kind, day and value."""
    profile = server.json(f"/v1/companies/{slug}", PRO)
    series = server.json(f"/v1/companies/{slug}/marks?coverage=80", PRO)["series"]
    o = profile["outcome"]
    assert series[-1]["date"] == profile["latest_mark"]["as_of_date"] < o["occurred_on"]
    page, _ = open_page(viewport=viewport)
    enter_key(page, PRO, f"/explore/{slug}")
    wait_company_loaded(page)
    exit_mark = page.locator("#chart-svg g.exit")
    expect(exit_mark).to_have_count(1)
    expect(exit_mark).to_have_attribute("data-day", o["occurred_on"])
    kind = {"listed": "Listed", "sold": "Sold", "bankrupt": "Bankrupt"}[o["kind"]]
    expect(exit_mark.locator("text")).to_have_text(f"{kind}{o['occurred_on']}{usd_words(o['valuation_usd'])}")
    line = page.locator("#chart-svg polyline.mark-line")
    expect(line).to_have_attribute("data-points", str(len(series)))
    last_x = float(line.get_attribute("points").split()[-1].split(",")[0])
    diamond = exit_mark.locator("path.exit-marker").bounding_box()
    svg = page.locator("#chart-svg").bounding_box()
    scale = svg["width"] / float(page.locator("#chart-svg").get_attribute("width"))
    assert svg["x"] + last_x * scale < diamond["x"] + diamond["width"] / 2, "the exit comes after the line's end"
    # The line's end is the last point drawn: nothing runs on to today.
    assert max(float(p.split(",")[0]) for p in line.get_attribute("points").split()) == last_x
    label = exit_mark.locator("text").bounding_box()
    assert svg["x"] <= label["x"] and label["x"] + label["width"] <= svg["x"] + svg["width"] + 1, (
        "the label is in the chart"
    )
    if o["valuation_usd"] == 0:
        axis = page.locator("#chart-svg line.axis-line").bounding_box()
        assert abs(diamond["y"] + diamond["height"] / 2 - axis["y"]) < 2, "a value of 0 sits on the bottom edge"
    expect(page.locator("#legend-exit")).to_be_visible()
    page.locator("#chart-svg").focus()
    page.keyboard.press("End")
    expect(page.locator("#chart-readout")).to_contain_text("The last private mark: next day")


def test_a_company_still_private_has_no_exit_marker(open_page):
    page, _ = open_page()
    enter_key(page, PRO, "/explore/stripe")
    wait_company_loaded(page)
    expect(page.locator("#chart-svg polyline.mark-line")).to_have_count(1)
    expect(page.locator("#chart-svg g.exit")).to_have_count(0)
    expect(page.locator("#legend-exit")).to_be_hidden()
