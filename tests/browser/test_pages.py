"""Every page: its headers, a clean load (no console error, no failed request, nothing from
another origin), screenshots at desktop and phone widths, and axe-core's accessibility check."""

import re

import pytest
from conftest import (
    AXE_JS,
    DESKTOP,
    ENTERPRISE,
    PHONE,
    PRO,
    RESEARCH,
    SCREENSHOTS,
    enter_key,
    serious_violations,
    wait_company_loaded,
    wait_list_loaded,
    wait_settled,
)
from playwright.sync_api import expect

COMPARED = "/compare?c=stripe,revolut,anthropic,openai,databricks&index=fintech"
EXITS = "/compare?c=stripe,affirm,wiz"  # still private, listed, sold
PAGES = [
    "/", "/docs", "/scorecard", "/explore", "/explore/stripe", "/explore/wiz", "/explore/airbnb", "/explore/affirm",
    "/explore/ftx", "/explore/windsurf", "/compare", COMPARED, EXITS, "/indices", "/indices?index=ai",
]  # fmt: skip


def shot_name(path):
    """The screenshot's name: / is overview, /explore/stripe explore-stripe, /compare?c=a,b compare-c-a-b."""
    return re.sub(r"[^a-z0-9]+", "-", path.strip("/")).strip("-") or "overview"


STRICT_CSP = {
    "default-src": ["'self'"],
    "script-src": ["'self'"],
    "style-src": ["'self'"],
    "img-src": ["'self'", "data:"],
    "connect-src": ["'self'"],
    "font-src": ["'self'"],
    "object-src": ["'none'"],
    "base-uri": ["'none'"],
    "form-action": ["'self'"],
    "frame-ancestors": ["'none'"],
}


def csp_directives(header):
    directives = {}
    for part in header.split(";"):
        words = part.split()
        if words:
            directives[words[0].lower()] = words[1:]
    return directives


def open_settled(page, path, key=None):
    """Opens a page as a visitor would (typing the key first for the explorer) and waits until
    it has finished loading its data."""
    if (path.startswith(("/explore", "/compare", "/indices"))) and key:
        enter_key(page, key, path)
    else:
        page.goto(path)
    if path.startswith(("/compare", "/indices")):
        wait_settled(page)
    elif path == "/explore" and key:
        wait_list_loaded(page)
    elif path.startswith("/explore/") and key:
        wait_company_loaded(page)
    elif path == "/docs":
        summary = "List companies with their latest mark"
        page.locator("rapi-doc").get_by_text(summary).filter(visible=True).first.wait_for()
    page.wait_for_load_state("networkidle")


@pytest.mark.parametrize("path", PAGES)
def test_page_headers_and_markup(server, path):
    status, headers, body = server.get(path)
    assert status == 200, f"{path}: {status}"
    assert headers["Content-Type"].startswith("text/html")
    assert headers["X-Content-Type-Options"] == "nosniff"
    assert headers["Referrer-Policy"] == "no-referrer"
    csp = csp_directives(headers["Content-Security-Policy"])
    assert "'unsafe-eval'" not in headers["Content-Security-Policy"]
    assert csp["script-src"] == ["'self'"], "never inline script"
    if path == "/docs":
        # The reference may relax styles (RapiDoc's style attributes and its theme <style>), nothing else.
        relaxed = {k: v for k, v in csp.items() if k not in ("style-src", "style-src-attr", "style-src-elem")}
        assert relaxed == {k: v for k, v in STRICT_CSP.items() if k != "style-src"}
        assert csp["style-src"][0] == "'self'"
    else:
        assert csp == STRICT_CSP
    # Nothing the CSP would refuse: inline script, inline handlers, style attributes or elements.
    body = re.sub(r"<!--.*?-->", "", body, flags=re.DOTALL)
    for script in re.findall(r"<script\b[^>]*>", body, re.IGNORECASE):
        assert re.search(r"\bsrc=", script), f"{path}: inline script {script}"
    assert not re.search(r"<style\b", body, re.IGNORECASE), f"{path}: a <style> element"
    assert not re.search(r"\sstyle\s*=", body, re.IGNORECASE), f"{path}: a style attribute"
    assert not re.search(r"\son[a-z]+\s*=", body, re.IGNORECASE), f"{path}: an inline event handler"
    assert "{{asset:" not in body


@pytest.mark.parametrize("path", ["/explore", "/compare", "/indices", "/docs"])
def test_assets_are_fingerprinted_and_cached(server, path):
    _, _, body = server.get(path)
    urls = re.findall(r'(?:src|href)="(/assets/[^"]+)"', body)
    assert urls, "the page names its assets"
    for url in urls:
        status, headers, _ = server.get(url)
        assert status == 200, url
        assert "immutable" in headers.get("Cache-Control", ""), url
        plain = "/assets/" + url.split("/", 3)[3]  # /assets/HASH/NAME -> /assets/NAME
        status, headers, _ = server.get(plain)
        assert status == 200, plain
        assert headers.get("ETag"), plain
        assert "no-cache" in headers.get("Cache-Control", ""), plain


@pytest.mark.parametrize("viewport", [DESKTOP, PHONE], ids=["desktop", "phone"])
@pytest.mark.parametrize("path", PAGES)
def test_page_loads_clean_and_is_photographed(open_page, server, path, viewport):
    page, rec = open_page(viewport=viewport)
    open_settled(page, path, ENTERPRISE)
    assert rec.console_errors == []
    assert rec.page_errors == []
    assert rec.failed == []
    assert rec.bad_responses() == []
    others = [r.url for r in rec.requests if not (r.url.startswith(server.base + "/") or r.url.startswith("data:"))]
    assert others == [], "requests to another origin"
    name = shot_name(path)
    page.screenshot(
        path=str(SCREENSHOTS / f"{name}-{viewport['width']}x{viewport['height']}.png"),
        full_page=True,
    )


A11Y_CASES = [
    ("/", None, DESKTOP),
    ("/docs", None, DESKTOP),
    ("/docs", None, PHONE),
    ("/scorecard", None, DESKTOP),
    ("/explore", None, DESKTOP),
    ("/explore", ENTERPRISE, DESKTOP),
    ("/explore", ENTERPRISE, PHONE),
    ("/explore/stripe", ENTERPRISE, DESKTOP),
    ("/explore/stripe", RESEARCH, PHONE),
    ("/explore/wiz", PRO, DESKTOP),
    ("/explore/affirm", PRO, PHONE),
    ("/explore/ftx", ENTERPRISE, DESKTOP),
    (EXITS, PRO, DESKTOP),
    ("/indices", PRO, PHONE),
    ("/compare", None, DESKTOP),
    (COMPARED, ENTERPRISE, DESKTOP),
    (COMPARED, PRO, PHONE),
    (COMPARED + "&scale=usd", PRO, DESKTOP),
    ("/indices", None, PHONE),
    ("/indices?index=fintech&coverage=95", PRO, DESKTOP),
    ("/indices?index=ai", RESEARCH, PHONE),
]


def a11y_id(case):
    path, key, viewport = case
    return f"{path}-{key or 'nokey'}-{viewport['width']}"


@pytest.mark.skipif(not AXE_JS.is_file(), reason="AXE_JS not set: run through run.sh")
@pytest.mark.parametrize("case", A11Y_CASES, ids=[a11y_id(c) for c in A11Y_CASES])
def test_no_serious_accessibility_violations(open_page, case):
    path, key, viewport = case
    # axe is injected as an inline script, which the pages' CSP forbids:
    # this context alone bypasses the CSP.
    page, _ = open_page(viewport=viewport, bypass_csp=True)
    open_settled(page, path, key)
    page.evaluate("document.querySelectorAll('details').forEach((d) => { d.open = true; })")
    if path.startswith("/explore/") and key:
        # The keyboard cursor and its readout are part of what is checked.
        page.focus("#chart-svg")
        page.keyboard.press("Home")
    for chart in ("#compare-svg", "#index-svg"):
        if key and page.locator(chart).count():
            page.focus(chart)
            page.keyboard.press("Home")
    violations = serious_violations(page)
    if path == "/docs" and viewport == DESKTOP:
        # Also an operation and a schema, opened from the reference's navigation.
        for link in ["link-get-/v1/companies", "link-cmp--schemas-companiesresponse"]:
            page.locator(f'rapi-doc [id="{link}"]').click()
            page.locator(f'rapi-doc [id="{link.removeprefix("link-")}"]').wait_for()
            violations += serious_violations(page)
    assert violations == []


def test_quickstart_names_the_server_it_was_loaded_from(open_page, server):
    """The home page's quickstart uses the address the page came from, whatever the port."""
    page, _ = open_page()
    page.goto("/")
    expect(page.locator("[data-origin]")).to_have_text(server.base)
