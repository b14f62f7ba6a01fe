#!/usr/bin/env python3
"""Drives the sightings panel of `weir serve`'s page in the system's headless Chromium
(Playwright) and prints what it saw as one JSON object.

    sightings.py URL SCREENSHOT

1. opens URL and waits for its first search and for the panel to list sightings: `ids` (the
   sightings' own IDs, in the panel's order), `texts` (each entry's text), `types` (the
   `#type` cells of the first tab, the timeline across schemas);
2. clicks the first entry's evidence link and waits for that search: `query` (the box),
   `rows` (the rows of the first tab: the evidence);
3. clicks "all" (every sighting as a search): `all_query`, `all_tabs` (the tabs' labels);
and saves a screenshot after 1. Used by tests/it/sightings_delivery.rs.
"""
import json
import sys

from playwright.sync_api import sync_playwright

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from page import ARGS, CHROMIUM, WAIT_MS, searches_done, table  # noqa: E402


def main():
    url, shot = sys.argv[1:3]
    errors = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.goto(url)
        searches_done(page, 1)
        page.wait_for_function(
            "() => (document.getElementById('sightings').dataset.ids || '') !== ''",
            timeout=WAIT_MS,
        )
        out = {
            "ids": [int(x) for x in page.locator("#sightings").get_attribute("data-ids").split(",")],
            "texts": page.evaluate(
                "() => [...document.querySelectorAll('#sightings > div')].map(d => d.textContent)"
            ),
        }
        t = table(page)
        at = t["columns"].index("#type") if "#type" in t["columns"] else None
        out["types"] = sorted({r[at] for r in t["rows"]}) if at is not None else []
        page.screenshot(path=shot, full_page=True)
        page.locator("#sightings a").first.click()
        searches_done(page, 2)
        out["query"] = page.input_value("#q")
        out["rows"] = table(page)["rows"]
        page.locator("#sightings-all").click()
        searches_done(page, 3)
        out["all_query"] = page.input_value("#q")
        out["all_tabs"] = [b.text_content() for b in page.locator("#tabs button").all()]
        out["errors"] = errors
        browser.close()
    print(json.dumps(out))


if __name__ == "__main__":
    main()
