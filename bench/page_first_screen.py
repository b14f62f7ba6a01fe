#!/usr/bin/env python3
"""The first screen of `weir serve`'s page: how long from navigation to the first results.

    bench/page_first_screen.py URL [REPS]

Opens URL REPS times (default 7), each in a fresh browser context (no cache, no storage), in
the system's headless Chromium (Playwright, as tests/browser/page.py), and measures, in the
page's own clock (`performance.now()`, from the navigation's start), when the first search has
finished and its results are drawn (body's `data-searches` becomes 1: the histogram, the
timeline and the tabs are on the screen). Prints each time and the median, in milliseconds.
bench/page.sh runs it against the W1000 archive.
"""
import statistics
import sys

from playwright.sync_api import sync_playwright

CHROMIUM = "/usr/bin/chromium"
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync"]


def main():
    url = sys.argv[1]
    reps = int(sys.argv[2]) if len(sys.argv) > 2 else 7
    times = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        for _ in range(reps):
            context = browser.new_context(viewport={"width": 1280, "height": 800})
            page = context.new_page()
            page.goto(url)
            ms = page.wait_for_function(
                "() => Number(document.body.dataset.searches || 0) >= 1 && performance.now()",
                timeout=60_000,
            ).json_value()
            rows = page.evaluate("() => document.querySelectorAll('#table tbody tr').length")
            tabs = page.evaluate("() => [...document.querySelectorAll('#tabs button')].map(b => b.textContent)")
            times.append(ms)
            print(f"first screen: {ms:8.1f} ms  ({rows} rows shown; tabs: {', '.join(tabs)})")
            context.close()
        browser.close()
    print(f"median of {reps}: {statistics.median(times):.1f} ms")


if __name__ == "__main__":
    main()
