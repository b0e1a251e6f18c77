"""/compare: up to five companies and an index on one chart, rebased to 100 on a chosen date or
in dollars, a table beside it, the selection in the address; every number the API's."""

import csv
import io
import re
from datetime import date

import pytest
from conftest import (
    DESKTOP,
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
# Five companies, two of them gone (listed, sold), and an index: the most labels on one chart.
COMPARED_CROWDED = "/compare?c=stripe,affirm,wiz,revolut,klarna&index=fintech"


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
    """In words, without asking the API for what the free tier is sure to be refused."""
    key = server.issue_key("free")
    page, rec = open_page()
    enter_key(page, key, "/compare?c=anthropic&index=all")
    wait_settled(page)
    expect(page.locator("#compare-error")).to_contain_text(
        "Comparing daily marks needs a Research key or above (scope marks:80); this key's tier is free."
    )
    expect(page.locator("#compare-error")).to_contain_text("Comparing with an index needs a Research key")
    assert not [r.url for r in rec.requests if "/marks" in r.url or "/v1/indices" in r.url]
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


EXITS = "/compare?c=stripe,affirm,wiz"  # still private, listed 2021-01-13 at $12B, sold 2026-03-11 for $32B


def last_point(page, key):
    points = page.locator(f'#compare-svg polyline[data-key="{key}"]').get_attribute("points").split()
    x, y = points[-1].split(",")
    return float(x), float(y)


def exit_centre(page, key):
    d = page.locator(f'#compare-svg g.exit[data-key="{key}"] path.exit-marker').get_attribute("d")
    x, y = re.match(r"M([\d.]+) ([\d.]+)", d).groups()
    return float(x), float(y) + 6  # the path starts at the diamond's top


@pytest.mark.parametrize("viewport", [DESKTOP, PHONE], ids=["1280", "390"])
def test_a_listed_or_sold_company_s_line_stops_at_its_exit_which_is_marked(open_page, server, viewport):
    page, _ = open_page(viewport=viewport)
    enter_key(page, PRO, EXITS)
    wait_settled(page)
    # No day in common: in dollars, each company's whole series, and no more.
    expect(page.locator("#compare-note")).to_contain_text("no day in common")
    right_edge = max(float(p.split(",")[0]) for p in last_points_all(page))
    for slug, words in (("affirm", "Listed 2021-01-13 at $12B"), ("wiz", "Sold 2026-03-11 for $32B")):
        profile = server.json(f"/v1/companies/{slug}", PRO)
        series = series_of(server, slug)
        line = page.locator(f'#compare-svg polyline[data-key="{slug}"]')
        expect(line).to_have_attribute("data-points", str(len(series)))
        assert max(series) == profile["latest_mark"]["as_of_date"] < profile["outcome"]["occurred_on"]
        x, y = last_point(page, slug)
        ex, ey = exit_centre(page, slug)
        assert ex > x, f"{slug}: the exit comes after the line's last day"
        if slug == "affirm":  # listed at $12B, above its last private mark of $3.42B
            assert ey < y - 10
        else:  # sold at $32B, its last private mark
            assert abs(ey - y) < 1
        # The line stops there: no flat line on to the chart's end.
        assert x < right_edge - 10
        row = page.locator(f'#compare-table tr[data-key="{slug}"]')
        expect(row.locator("th .sub")).to_have_text(words)
        expect(row.locator("td").nth(1)).to_contain_text(f"last private mark, {max(series)}")
    expect(page.locator("#compare-svg g.exit")).to_have_count(2)
    expect(page.locator('#compare-svg g.exit[data-key="stripe"]')).to_have_count(0)
    page.focus("#compare-svg")
    page.keyboard.press("End")
    expect(page.locator("#compare-readout")).to_contain_text(
        "Affirm: Listed 2021-01-13 at $12B; no private marks after it"
    )
    assert page.evaluate("document.documentElement.scrollWidth") <= viewport["width"]


def last_points_all(page):
    return page.locator("#compare-svg polyline").evaluate_all(
        "(ls) => ls.flatMap((l) => l.getAttribute('points').split(' ').slice(-1))"
    )


def overlaps(a, b):
    return (
        a["x"] < b["x"] + b["width"]
        and b["x"] < a["x"] + a["width"]
        and a["y"] < b["y"] + b["height"]
        and (b["y"] < a["y"] + a["height"])
    )


@pytest.mark.parametrize(
    "path", [EXITS, "/compare?c=stripe,revolut,anthropic,openai,databricks&index=fintech&scale=usd", COMPARED_CROWDED]
)
def test_line_end_labels_never_overlap(open_page, path):
    page, _ = open_page()
    enter_key(page, PRO, path)
    wait_settled(page)
    lines = page.locator("#compare-svg polyline").count()
    labels = page.locator("#compare-svg text.end-label")
    expect(labels).to_have_count(lines)
    # The boxes of the drawn glyphs, as the page's DOM reports them.
    boxes = labels.evaluate_all(
        "(ts) => ts.map((t) => { const r = t.getBoundingClientRect();"
        " return { x: r.x, y: r.y, width: r.width, height: r.height }; })"
    )
    svg = page.locator("#compare-svg").bounding_box()
    for i, a in enumerate(boxes):
        assert svg["x"] - 1 <= a["x"] and a["x"] + a["width"] <= svg["x"] + svg["width"] + 1, "inside the chart"
        assert svg["y"] - 1 <= a["y"] and a["y"] + a["height"] <= svg["y"] + svg["height"] + 1, "inside the chart"
        for b in boxes[i + 1 :]:
            assert not overlaps(a, b), (labels.nth(i).text_content(), a, b)


@pytest.mark.parametrize(
    "path,title",
    [
        # Airbnb listed at $47B, the chart's highest value, on its first years: by the left title.
        ("/compare?c=airbnb,chipper-cash&scale=usd", "Mark, USD"),
        # Nubank's listing at the top left of a rebased chart.
        ("/compare?c=nubank,chipper-cash", "100 = "),
        # Wiz sold at $32B at the top right, under the index's axis title.
        ("/compare?c=wiz&index=all&scale=usd", "Index level"),
    ],
    ids=["left-usd", "left-rebased", "right"],
)
def test_an_exit_label_never_overprints_an_axis_title(open_page, path, title):
    """An exit's label (a listing or sale named beside its marker, inside the plot) is placed
    where its box does not meet an axis title's (at the plot's top corners): compared as the
    browser lays them out. Charts whose exit sits where its label used to cover a title."""
    page, _ = open_page()
    enter_key(page, PRO, path)
    wait_settled(page)
    boxes = (
        "(ts) => ts.map((t) => { const r = t.getBoundingClientRect();"
        " return { x: r.x, y: r.y, width: r.width, height: r.height, text: t.textContent }; })"
    )
    titles = page.locator("#compare-svg text.axis-title").evaluate_all(boxes)
    assert any(t["text"].startswith(title) for t in titles), titles
    exits = page.locator("#compare-svg g.exit").evaluate_all("(gs) => gs.map((g) => g.dataset.key)")
    assert exits, "the chart has an exit"
    labels = page.locator("#compare-svg text.end-label").evaluate_all(boxes)
    exit_labels = [lb for lb in labels if ": " in lb["text"]]  # "Airbnb: Listed $47B"
    assert len(exit_labels) == len(exits), labels
    for label in labels:
        for t in titles:
            assert not overlaps(label, t), (label, t)
    # And it stays inside the chart.
    svg = page.locator("#compare-svg").bounding_box()
    for label in exit_labels:
        assert svg["y"] <= label["y"] and label["y"] + label["height"] <= svg["y"] + svg["height"]


@pytest.mark.parametrize("path", [EXITS, COMPARED_CROWDED])
def test_the_comparison_table_is_not_clipped_at_1280(open_page, path):
    page, _ = open_page()
    enter_key(page, PRO, path)
    wait_settled(page)
    box = page.locator(".compare-side .table-scroll")
    width, room = box.evaluate("(d) => [d.scrollWidth, d.clientWidth]")
    assert width <= room, f"the table is {width} wide in a box of {room}"
    last = page.locator("#compare-table thead th").last.bounding_box()
    side = box.bounding_box()
    assert last["x"] + last["width"] <= side["x"] + side["width"] + 1, "the last column is in view"
