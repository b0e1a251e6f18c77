"""Time to first render of each page in headless Chromium, and its weight over the wire, cold.

    target/browser-venv/bin/python benches/lab/first-render.py BASE_URL [RUNS]

Each run is a new browser context (an empty cache), so every byte comes over the wire. Prints,
per page, the median over RUNS of the first contentful paint (the browser's own
`performance.getEntriesByType("paint")`) and of the load event, and the bytes transferred
(every response's encoded body: gzip where the page and its assets are served so). Uses
Debian's chromium, as the browser tests do. The server should run with --no-access-log.
"""

import statistics
import sys

from playwright.sync_api import sync_playwright

PAGES = ["/", "/scorecard", "/explore", "/docs"]


def measure(browser, url):
    context = browser.new_context()
    page = context.new_page()
    sizes = []
    page.on("requestfinished", lambda request: sizes.append(request.sizes()["responseBodySize"]))
    page.goto(url, wait_until="networkidle")
    paint = page.evaluate("() => (performance.getEntriesByName('first-contentful-paint')[0] || {}).startTime || null")
    load = page.evaluate("() => performance.getEntriesByType('navigation')[0].loadEventEnd")
    context.close()
    return paint, load, sum(sizes)


def main():
    base = sys.argv[1].rstrip("/")
    runs = int(sys.argv[2]) if len(sys.argv) > 2 else 5
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path="/usr/bin/chromium", args=["--no-sandbox"])
        print("| page | first contentful paint, ms (median) | load event, ms (median) | bytes over the wire, cold |")
        print("|---|---:|---:|---:|")
        for path in PAGES:
            results = [measure(browser, base + path) for _ in range(runs)]
            paints = [r[0] for r in results if r[0] is not None]
            print(
                f"| {path} | {statistics.median(paints):.0f} | {statistics.median(r[1] for r in results):.0f} "
                f"| {results[-1][2]} |"
            )
        browser.close()


if __name__ == "__main__":
    main()
