"""Download CSV on every table and chart: the browser's saved file is, byte for byte, the API's
CSV (fetched with the key, Accept: text/csv, every page followed), or for what the API has no
CSV of (a company's backtest, a comparison, the list of indices), the API's JSON rows written
with the API's CSV rules. The key never appears in a URL."""

import csv
import io

import pytest
from conftest import (
    PRO,
    RESEARCH,
    ROOT,
    download,
    enter_key,
    wait_company_loaded,
    wait_list_loaded,
    wait_settled,
)
from playwright.sync_api import expect


def rows(text):
    """The records of a CSV text, header first (RFC 4180, CRLF line ends)."""
    assert text.endswith("\r\n")
    return list(csv.reader(io.StringIO(text, newline="")))


def no_key_in_urls(rec, key):
    assert all(key not in r.url for r in rec.requests)
    assert all(key not in url for url in rec.navigations)


# Every company of the bundled sample, counted from its source (not a number that goes stale).
SAMPLE_COMPANIES = sum(1 for _ in csv.DictReader((ROOT / "sample" / "companies.csv").open(encoding="utf-8")))


def test_the_list_downloads_every_page_as_filtered_and_sorted(open_page, server):
    page, rec = open_page()
    enter_key(page, PRO, "/explore?outcome=all&sort=-value_usd")
    wait_list_loaded(page)
    name, text = download(page, "#list-download")
    assert name == "companies-by-value-usd-desc.csv"
    expected = server.csv("/v1/companies?sort=-value_usd&limit=100", PRO, follow=True)
    assert text == expected
    table = rows(text)
    slugs, _ = server.walk_companies(PRO, sort="-value_usd")
    assert [r[0] for r in table[1:]] == slugs, "every company, not only the 50 shown"
    assert len(table) - 1 == SAMPLE_COMPANIES
    # The pages were followed by X-Next-Cursor, with the key in the header only.
    asked = [r for r in rec.requests if r.headers.get("accept") == "text/csv"]
    assert len(asked) == -(-SAMPLE_COMPANIES // 100) and all("cursor=" in r.url for r in asked[1:])
    assert all(r.all_headers().get("x-api-key") == PRO for r in asked)
    no_key_in_urls(rec, PRO)
    expect(page.locator("#list-download-status")).to_have_text(f"Saved {name} ({SAMPLE_COMPANIES} rows).")


def test_the_default_list_downloads_the_current_marks(open_page, server):
    page, _ = open_page()
    enter_key(page, PRO, "/explore?sort=-value_usd")
    wait_list_loaded(page)
    name, text = download(page, "#list-download")
    assert name == "companies-current-by-value-usd-desc.csv"
    current = "none,sale_agreed,listing_agreed"
    assert text == server.csv(f"/v1/companies?sort=-value_usd&outcome={current}&limit=100", PRO, follow=True)
    slugs, _ = server.walk_companies(PRO, sort="-value_usd", outcome=current)
    assert [r[0] for r in rows(text)[1:]] == slugs


def test_a_searched_and_filtered_list_downloads_as_shown(open_page, server):
    page, _ = open_page()
    enter_key(page, PRO, "/explore?q=ai&sector=ai&status=private")
    wait_list_loaded(page)
    name, text = download(page, "#list-download")
    assert name == "companies-ai-private-ai.csv"
    assert text == server.csv("/v1/companies?q=ai&sector=ai&status=private&limit=100", PRO)
    shown = page.locator("#company-rows th a").evaluate_all(
        "(links) => links.map((a) => a.getAttribute('href').slice(9))"
    )
    assert [r[0] for r in rows(text)[1:]] == shown


def test_the_company_page_downloads_its_series_and_events(open_page, server):
    page, rec = open_page()
    enter_key(page, PRO, "/explore/stripe")
    wait_company_loaded(page)
    name, text = download(page, "#series-download")
    assert name == "stripe-marks-80.csv"
    assert text == server.csv("/v1/companies/stripe/marks?coverage=80", PRO)
    series = server.json("/v1/companies/stripe/marks?coverage=80", PRO)["series"]
    table = rows(text)
    assert table[0] == ["slug", "date", "mark_usd", "lower_usd", "upper_usd"]
    assert [(r[1], int(r[2])) for r in table[1:]] == [(p["date"], p["mark_usd"]) for p in series]
    name, text = download(page, "#series95-download")
    assert name == "stripe-marks-95.csv"
    assert text == server.csv("/v1/companies/stripe/marks?coverage=95", PRO)
    name, text = download(page, "#events-download")
    assert name == "stripe-events.csv"
    assert text == server.csv("/v1/companies/stripe/events", PRO)
    events = server.json("/v1/companies/stripe/events", PRO)["events"]
    assert [r[1] for r in rows(text)[1:]] == [e["event_id"] for e in events]
    no_key_in_urls(rec, PRO)


@pytest.mark.parametrize("key", [PRO, RESEARCH])
def test_the_backtest_downloads_as_the_apis_rows(open_page, server, key):
    """The API has no CSV of a backtest: the page writes its JSON rows with the same rules."""
    targets = server.json("/v1/companies/stripe/backtest", key)["targets"]
    page, _ = open_page()
    enter_key(page, key, "/explore/stripe")
    wait_company_loaded(page)
    page.wait_for_function("() => !document.getElementById('backtest-download-box').hidden")
    name, text = download(page, "#backtest-download")
    assert name == "stripe-backtest.csv"
    table = rows(text)
    header, body = table[0], table[1:]
    assert len(body) == len(targets)

    def cell(value):
        if value is None:
            return ""
        if isinstance(value, bool):
            return "true" if value else "false"
        return str(value)

    for t, row in zip(targets, body, strict=True):
        got = dict(zip(header, row, strict=True))
        assert got["slug"] == "stripe"
        for field in ("kind", "event_id", "event_type", "occurred_on", "marked_on", "mark_usd",
                      "confidence", "observed_usd", "error_pct", "above", "inside_80", "inside_95", "hit"):  # fmt: skip
            if field in ("mark_usd", "confidence", "error_pct", "observed_usd") and t.get(field) is not None:
                assert float(got[field]) == t[field], field
            else:
                assert got[field] == cell(t.get(field)), field
        assert int(got["lower_80_usd"]) == t["band_80"]["lower"]
        assert int(got["upper_80_usd"]) == t["band_80"]["upper"]


def test_csv_cells_follow_the_apis_rules(open_page):
    """Text quoted with quotes doubled, numbers and booleans bare, a missing value empty, and a
    text a spreadsheet would run as a formula neutralised with a leading apostrophe (as the API
    does, format/src/rules/table.rs), CRLF line ends."""
    page, _ = open_page()
    page.goto("/explore")
    text = page.evaluate(
        """async () => (await import('/assets/common.js')).toCsv(['a', 'b', 'c'], [
             ['=HYPERLINK("x")', -3.25, null], ['+1', true, 'say "hi", then go'],
             ['-2+3', 12, '@SUM(A1)'], ['\\tx', 0, '\\rx'], ['a-b', false, '']])"""
    )
    assert text == (
        "a,b,c\r\n"
        '"\'=HYPERLINK(""x"")",-3.25,\r\n'
        '"\'+1",true,"say ""hi"", then go"\r\n'
        '"\'-2+3",12,"\'@SUM(A1)"\r\n'
        '"\'\tx",0,"\'\rx"\r\n'
        '"a-b",false,""\r\n'
    )


def test_a_refused_download_is_said_in_words(open_page, server):
    """A download the API refuses (here: the key was forgotten in another tab) says why beside
    the button, and saves nothing."""
    page, _ = open_page()
    enter_key(page, PRO, "/explore/stripe")
    wait_company_loaded(page)
    page.evaluate("sessionStorage.setItem('marks.apiKey', 'vmk_not_a_key')")
    page.locator("#events-download").click()
    expect(page.locator("#events-download-status")).to_contain_text("The API did not accept this key")


def test_the_index_page_downloads_its_tables_and_chart(open_page, server):
    page, rec = open_page()
    enter_key(page, PRO, "/indices?index=fintech&from=2024-01-01&to=2024-12-31&coverage=95&date=2024-06-30")
    wait_settled(page)
    name, text = download(page, "#series-download")
    assert name == "index-fintech-95-from-2024-01-01-to-2024-12-31.csv"
    assert text == server.csv("/v1/indices/fintech?coverage=95&from=2024-01-01&to=2024-12-31", PRO)
    assert len(rows(text)) - 1 == 366
    name, text = download(page, "#constituents-download")
    assert name == "index-fintech-constituents-2024-06-30-95.csv"
    assert text == server.csv("/v1/indices/fintech/constituents?date=2024-06-30&coverage=95", PRO)
    name, text = download(page, "#indices-download")
    assert name == "indices.csv"
    indices = server.json("/v1/indices", PRO)["indices"]
    table = rows(text)
    assert table[0] == [
        "index",
        "name",
        "sector",
        "first_date",
        "last_date",
        "date",
        "level",
        "lower",
        "upper",
        "constituents",
    ]
    for i, row in zip(indices, table[1:], strict=True):
        latest = i["latest"]
        assert row[:5] == [i["index"], i["name"], i["sector"] or "", i["first_date"], i["last_date"]]
        assert row[5] == latest["date"]
        assert [float(v) for v in row[6:9]] == [latest["level"], latest["lower"], latest["upper"]]
        assert int(row[9]) == latest["constituents"]
    assert len(table) - 1 == len(indices)
    no_key_in_urls(rec, PRO)
