"""Fixtures of the browser tests: the real server, Debian's chromium, recorded pages.

The session starts `$MARKS_BIN serve` on a freshly built sample snapshot and a copy of the demo
keys (so keys issued here never touch sample/), and one chromium. Each test gets its own browser
context: a fresh tab with empty storage. Run through tests/browser/run.sh.
"""

import json
import os
import shutil
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from playwright.sync_api import sync_playwright

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "harness"))
from marks_server import serve  # noqa: E402  (the one way a harness starts the server)

SCREENSHOTS = ROOT / "target" / "browser-screenshots"
DESKTOP = {"width": 1280, "height": 800}
PHONE = {"width": 390, "height": 844}

FREE = "vmk_demo_free"
RESEARCH = "vmk_demo_research"
PRO = "vmk_demo_pro"
ENTERPRISE = "vmk_demo_enterprise"


def _binary():
    path = Path(os.environ.get("MARKS_BIN", "target/debug/marks"))
    path = path if path.is_absolute() else ROOT / path
    if not path.exists():
        pytest.exit(f"no server binary at {path}: build it, or set MARKS_BIN", returncode=2)
    return path


@dataclass
class Server:
    base: str
    binary: Path
    keys: Path
    proc: subprocess.Popen

    def issue_key(self, tier, rate_per_min=None):
        """A fresh key of the tier (the server picks the keys file up within half a second)."""
        cmd = [
            str(self.binary),
            "keys",
            "issue",
            "--keys",
            str(self.keys),
            "--tier",
            tier,
            "--tenant",
            "t",
        ]
        if rate_per_min is not None:
            cmd += ["--rate-per-min", str(rate_per_min)]
        key = subprocess.run(cmd, cwd=ROOT, check=True, capture_output=True, text=True).stdout.strip()
        # Wait until the server has it; this spends one request of the key's budget.
        deadline = time.monotonic() + 10
        while self.get("/v1/companies?limit=1", key=key)[0] == 401:
            if time.monotonic() > deadline:
                raise AssertionError("the server did not pick up the issued key")
            time.sleep(0.25)
        return key

    def get(self, path, key=None):
        """(status, headers, body) of a GET; body parsed as JSON when it is JSON."""
        req = urllib.request.Request(self.base + path, headers={"X-API-Key": key} if key else {})
        try:
            with urllib.request.urlopen(req, timeout=30) as res:
                status, headers, raw = res.status, res.headers, res.read()
        except urllib.error.HTTPError as err:
            status, headers, raw = err.code, err.headers, err.read()
        ctype = headers.get("Content-Type", "")
        body = json.loads(raw) if "json" in ctype else raw.decode("utf-8", "replace")
        return status, headers, body

    def csv(self, path, key, follow=False):
        """The CSV form of a route (Accept: text/csv) as text; with follow, every page joined
        under one header row (the next page's cursor is in X-Next-Cursor)."""
        text, url = "", path
        while url:
            req = urllib.request.Request(self.base + url, headers={"X-API-Key": key, "Accept": "text/csv"})
            with urllib.request.urlopen(req, timeout=30) as res:
                assert res.headers["Content-Type"].startswith("text/csv"), url
                body = res.read().decode("utf-8")
                cursor = res.headers.get("X-Next-Cursor") if follow else None
            text += body if not text else body.split("\r\n", 1)[1]
            url = None
            if cursor:
                parts = urllib.parse.urlsplit(path)
                query = dict(urllib.parse.parse_qsl(parts.query), cursor=cursor)
                url = parts.path + "?" + urllib.parse.urlencode(query)
        return text

    def json(self, path, key=None):
        status, _, body = self.get(path, key)
        assert status == 200, f"GET {path}: {status} {body}"
        return body

    def walk_companies(self, key, **params):
        """Every company the API lists for the key, page by page (slugs in order) and the first page."""
        slugs, cursor, first = [], None, None
        while True:
            query = dict(params, limit="50")
            if cursor:
                query["cursor"] = cursor
            page = self.json("/v1/companies?" + urllib.parse.urlencode(query), key)
            first = first or page
            slugs += [c["slug"] for c in page["companies"]]
            cursor = page["page"]["next_cursor"] if page["page"]["has_more"] else None
            if not cursor:
                return slugs, first


@pytest.fixture(scope="session")
def server(tmp_path_factory):
    binary = _binary()
    work = tmp_path_factory.mktemp("marks")
    snap, keys = work / "sample.snap", work / "keys.toml"
    subprocess.run(
        [
            str(binary),
            "build",
            "--source",
            "sample",
            "--out",
            str(snap),
            "--signing-key",
            "sample/demo-signing-key.pem",
            "--quiet",
        ],
        cwd=ROOT,
        check=True,
    )
    shutil.copy(ROOT / "sample" / "demo-keys.toml", keys)
    with serve(binary, "--snapshot", snap, "--keys", keys, "--no-access-log", cwd=ROOT) as running:
        srv = Server(base=running.url, binary=binary, keys=keys, proc=running.process)
        deadline = time.monotonic() + 60
        while srv.get("/readyz")[0] != 200:
            if time.monotonic() > deadline:
                pytest.exit("the server never became ready", returncode=2)
            time.sleep(0.1)
        yield srv
    shutil.rmtree(work, ignore_errors=True)  # the snapshot is some 30 MB


@pytest.fixture(scope="session")
def browser():
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=os.environ.get("CHROMIUM", "/usr/bin/chromium"))
        yield b
        b.close()


@dataclass
class Recorded:
    """What a page did: console errors, uncaught errors, failed requests, every request."""

    requests: list = field(default_factory=list)
    console_errors: list = field(default_factory=list)
    page_errors: list = field(default_factory=list)
    failed: list = field(default_factory=list)
    responses: list = field(default_factory=list)
    navigations: list = field(default_factory=list)

    def bad_responses(self):
        return [(r.status, r.url) for r in self.responses if r.status >= 400]


@pytest.fixture
def open_page(browser, server):
    """open_page(viewport=DESKTOP, bypass_csp=False) -> (page, Recorded); the page is at about:blank."""
    contexts = []

    def make(viewport=DESKTOP, bypass_csp=False):
        context = browser.new_context(viewport=viewport, base_url=server.base, bypass_csp=bypass_csp)
        contexts.append(context)
        rec = Recorded()
        context.on("request", lambda r: rec.requests.append(r))
        context.on("response", lambda r: rec.responses.append(r))
        context.on("requestfailed", lambda r: rec.failed.append(f"{r.url}: {r.failure}"))
        page = context.new_page()

        def console(message):
            if message.type == "error":  # with the URL it is about (a 404 names none in its text)
                rec.console_errors.append(f"{message.text} [{message.location.get('url', '')}]")

        page.on("console", console)
        page.on("pageerror", lambda e: rec.page_errors.append(str(e)))
        page.on(
            "framenavigated",
            lambda f: rec.navigations.append(f.url) if f == page.main_frame else None,
        )
        return page, rec

    yield make
    for context in contexts:
        context.close()


def enter_key(page, key, path="/explore"):
    """Types the key into the explorer's form the way a visitor does, then opens path."""
    page.goto("/explore")
    page.get_by_label("API key").fill(key)
    page.get_by_role("button", name="Use key").click()
    page.wait_for_function("() => document.getElementById('key-form').hidden")
    if path != "/explore":
        wait_list_loaded(page)  # leaving mid-request would abort it (a failed request)
        page.goto(path)


# Predicates are functions, never expression strings: Playwright evaluates a string with eval,
# which the pages' CSP (rightly) refuses.


def wait_list_loaded(page):
    page.wait_for_function(
        "() => { const t = document.getElementById('list-count').textContent;"
        " return (t && t !== 'Loading…') || document.getElementById('alert').textContent"
        " || document.getElementById('list-error').textContent; }"
    )


def wait_settled(page):
    """/compare and /indices: main is aria-busy until the page has loaded what it shows."""
    page.wait_for_function("() => !document.getElementById('main').hasAttribute('aria-busy')")


def download(page, button):
    """Clicks a Download CSV button; (suggested file name, the saved file's text)."""
    with page.expect_download() as info:
        page.locator(button).click()
    saved = info.value
    return saved.suggested_filename, Path(saved.path()).read_bytes().decode("utf-8")


AXE_JS = Path(os.environ.get("AXE_JS", ""))


def serious_violations(page):
    """axe-core's serious and critical violations on the page as it is now (the page's context
    must bypass the CSP: axe is injected as an inline script)."""
    if not page.evaluate("typeof axe !== 'undefined'"):
        page.add_script_tag(path=str(AXE_JS))
    return page.evaluate(
        """async () => (await axe.run(document, { resultTypes: ['violations'] })).violations
             .filter((v) => v.impact === 'serious' || v.impact === 'critical')
             .map((v) => `${v.impact} ${v.id}: ${v.help} at `
               + v.nodes.slice(0, 5).map((n) => n.target.join(' ')).join(' | '))"""
    )


def wait_company_loaded(page):
    """Waits until every section of a company page has settled (data, a note or an error)."""
    page.wait_for_function(
        "() => { const done = (id) => document.getElementById(id).textContent.trim() !== '';"
        " const res = done('resolution-note')"
        " || /verified/i.test(document.getElementById('verify-status').textContent);"
        " const series = done('series-error') || !document.getElementById('chart-text').hidden;"
        " return (res && series) || done('alert'); }"
    )
