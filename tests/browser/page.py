#!/usr/bin/env python3
"""Drives the page of `weir serve` in the system's headless Chromium (Playwright, never its own
browsers) as a person would, and prints what it saw as one JSON object.

    page.py URL QUERY FIELD SCREENSHOT [SIGMA_RULE]

1. opens URL (the page without a query) and waits for its first search;
2. types QUERY into the query box and presses Enter: `typed`;
3. clicks the first row's FIELD value in the first tab (adds `FIELD == value`): `value`;
4. clicks the first row's uid (the events of that uid): `uid`;
5. goes Back (`back`, with `back_url_q`: the URL's query), then Forward (`forward`);
6. presses `/` with the focus elsewhere (`slash_focus`: the focused element's id after it,
   `slash_query`: the box's text, which the `/` must not have changed);
7. downloads the result as CSV and JSON lines (`download_csv`, `download_json`: name, text)
   and Parquet (`download_parquet`: name, and the path it is saved at, beside SCREENSHOT);
8. clears the query (`cleared`, `outside_text`), then includes the outliers (`all`);
9. clicks the id.orig_p header (`sorted`), and again (`sorted_desc`);
10. clears the query, asks the field panel for proto's top values (`top`: value and count
    per row) and leaves the first out with its "-" button (`dropped`);
11. opens the first row's detail pane (`detail`: fields and related events; `detail_row`,
    `detail_columns`: that row as the table shows it);
12. hides the `query` column with the column chooser (`hidden_columns`: the header then) and
    shows it again (`shown_columns`);
13. chooses the second row with ArrowDown twice and opens it with Enter (`selected_uid`,
    `keyboard_detail_uid`, `second_row_uid`);
14. with SIGMA_RULE (a file), pastes it into the Sigma box and searches with it (`sigma`: the
    state then, `sigma_said`: what the page says of the rule);
15. resizes the window to 1280x800 (`overflow_1280`: how much wider the document is);
and saves screenshots after 2 (SCREENSHOT) and 4 (SCREENSHOT with `-pivot` before `.png`), and
of the outliers left out (`-outliers`), a sorted list (`-sorted`), the field panel (`-fields`)
the detail pane (`-detail`) and the first screen at 1280x800 (`-1280x800`).

Each state is {query, total, error, tabs: [{label, columns, rows}]}: the query box, the
histogram's total (`data-total`, null when absent), the error shown, and of every tab of the
results its label, its header and the cells of its first page of rows. Used by
tests/it/serve.rs (the_page_in_a_browser_shows_what_the_cli_counts).
"""
import json
import sys
import time

from playwright.sync_api import sync_playwright

CHROMIUM = "/usr/bin/chromium"
# No network but the server's: no updates, no sync, no QUIC probes.
ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
WAIT_MS = 60_000


def searches_done(page, n):
    """Waits until the page has finished its n-th search (body's data-searches)."""
    page.wait_for_function(
        "n => Number(document.body.dataset.searches || 0) >= n", arg=n, timeout=WAIT_MS
    )


def table(page):
    return page.evaluate(
        """() => ({
            columns: [...document.querySelectorAll('#table thead th')].map(th => th.textContent),
            rows: [...document.querySelectorAll('#table tbody tr')].map(tr =>
                [...tr.querySelectorAll('td')].map(td => td.textContent)),
        })"""
    )


def state(page):
    tabs = []
    buttons = page.locator("#tabs button")
    for i in range(buttons.count()):
        b = buttons.nth(i)
        b.click()  # a tab renders at once, nothing is fetched
        tabs.append({"label": b.text_content(), **table(page)})
    if buttons.count():
        buttons.nth(0).click()
    total = page.locator("#hist").get_attribute("data-total")
    outside = page.locator("#hist").get_attribute("data-outside")
    bars = page.locator("#hist").get_attribute("data-bars")
    return {
        "bars": None if bars is None else json.loads(bars),
        "res": page.locator("#hist").get_attribute("data-res"),
        "query": page.input_value("#q"),
        "total": None if total is None else int(total),
        "outside": None if outside is None else int(outside),
        "chart_from": page.locator("#hist").get_attribute("data-from"),
        "error": page.text_content("#error"),
        "tabs": tabs,
    }


def cell(page, field, cls):
    """The first row's cell of column `field` in the shown tab, which must carry class cls."""
    columns = table(page)["columns"]
    if field not in columns:
        raise SystemExit(f"no column {field!r} in {columns}")
    td = page.locator("#table tbody tr").first.locator("td").nth(columns.index(field))
    if cls not in (td.get_attribute("class") or "").split():
        raise SystemExit(f"the {field} cell is not clickable: {td.get_attribute('class')!r}")
    return td


def main():
    url, query, field, shot = sys.argv[1:5]
    sigma = sys.argv[5] if len(sys.argv) > 5 else None

    def view(name):
        """A screenshot of the page as it is now: SCREENSHOT with `-NAME` before `.png`."""
        page.screenshot(path=shot.removesuffix(".png") + f"-{name}.png", full_page=True)
    errors = []
    timings = {}
    start = time.monotonic()

    def took(step):
        timings[step] = round(time.monotonic() - start, 2)

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        page.on("pageerror", lambda e: errors.append(str(e)))
        took("launched")
        page.goto(url)
        searches_done(page, 1)
        took("loaded")
        out = {"initial": state(page)}

        box = page.locator("#q")
        box.fill("")
        box.press_sequentially(query)
        box.press("Enter")
        searches_done(page, 2)
        took("typed")
        out["typed"] = state(page)
        page.screenshot(path=shot, full_page=True)

        td = cell(page, field, "v")
        out["value_clicked"] = td.text_content()
        td.click()
        searches_done(page, 3)
        took("value")
        out["value"] = state(page)

        td = cell(page, "uid", "pivot")
        out["uid_clicked"] = td.text_content()
        td.click()
        searches_done(page, 4)
        took("uid")
        out["uid"] = state(page)
        page.screenshot(path=shot.removesuffix(".png") + "-pivot.png", full_page=True)

        # Back to the value's search, then Forward to the uid's: each search is a history
        # entry, and going back or forward runs it again.
        page.go_back()
        searches_done(page, 5)
        took("back")
        out["back"] = state(page)
        out["back_url_q"] = page.evaluate("() => new URL(location.href).searchParams.get('q')")
        page.go_forward()
        searches_done(page, 6)
        took("forward")
        out["forward"] = state(page)

        # `/` puts the cursor in the query box, from anywhere else on the page.
        page.locator("#run").focus()
        page.keyboard.press("/")
        out["slash_focus"] = page.evaluate("() => document.activeElement.id")
        out["slash_query"] = page.input_value("#q")

        # The download buttons: every event of the query, as the API streams it; the Parquet
        # file is saved beside the screenshots for the test to read.
        for fmt in ("csv", "json"):
            with page.expect_download(timeout=WAIT_MS) as d:
                page.click(f"#dl-{fmt}")
            out[f"download_{fmt}"] = {
                "name": d.value.suggested_filename,
                "text": open(d.value.path(), encoding="utf-8").read(),
            }
        with page.expect_download(timeout=WAIT_MS) as d:
            page.click("#dl-parquet")
        saved = shot.removesuffix(".png") + "-download.parquet"
        d.value.save_as(saved)
        out["download_parquet"] = {"name": d.value.suggested_filename, "path": saved}

        # The whole archive again: an outlier is left out of the chart and said; then included.
        box.fill("")
        box.press("Enter")
        searches_done(page, 7)
        out["cleared"] = state(page)
        out["outside_text"] = page.text_content("#outside")
        view("outliers")
        page.click("#outliers")
        searches_done(page, 8)
        out["all"] = state(page)

        # A click on a column's header sorts by it (the query says so); a second, descending.
        page.locator("#table thead th", has_text="id.orig_p").first.click()
        searches_done(page, 9)
        out["sorted"] = state(page)
        view("sorted")
        page.locator("#table thead th", has_text="id.orig_p").first.click()
        searches_done(page, 10)
        out["sorted_desc"] = state(page)

        # The field panel: the whole archive's first tab (the timeline of every schema), the
        # top values of proto; then its first value left out with "-".
        box.fill("")
        box.press("Enter")
        searches_done(page, 11)
        page.locator("#field-names button", has_text="proto").first.click()
        page.wait_for_function(
            "() => { const b = document.getElementById('field-top');"
            " return b.dataset.field === 'proto' && b.dataset.done !== undefined; }",
            timeout=WAIT_MS,
        )
        out["top"] = page.evaluate(
            """() => [...document.querySelectorAll('#top-table tr')].map(tr =>
                [...tr.querySelectorAll('td')].slice(0, 2).map(td => td.textContent))"""
        )
        view("fields")
        page.locator("#top-table button.drop").first.click()
        searches_done(page, 12)
        out["dropped"] = state(page)

        # The detail pane of the first row shown: its fields, and the events of its uid.
        page.locator("#table tbody tr").first.locator("button.open").click()
        page.wait_for_function(
            "() => document.getElementById('detail').dataset.done !== undefined", timeout=WAIT_MS
        )
        out["detail"] = page.evaluate(
            """() => ({
                fields: Object.fromEntries([...document.querySelectorAll('#detail-fields tr')]
                    .map(tr => [tr.querySelector('th').textContent, tr.querySelectorAll('td')[0].textContent])),
                related: [...document.querySelectorAll('#related tr')].map(tr =>
                    [...tr.querySelectorAll('td')].slice(0, 3).map(td => td.textContent)),
            })"""
        )
        view("detail")
        out["detail_row"] = table(page)["rows"][0]
        out["detail_columns"] = table(page)["columns"]

        # The column chooser: hide `query` in the shown tab, then show it again.
        page.click("#chooser summary")
        page.uncheck("#column-boxes input[data-column='query']")
        out["hidden_columns"] = table(page)["columns"]
        page.check("#column-boxes input[data-column='query']")
        out["shown_columns"] = table(page)["columns"]

        # Keyboard only: with the focus off any field, two ArrowDowns choose the second row,
        # Enter opens its detail.
        page.locator("#results-title").click()
        page.keyboard.press("ArrowDown")
        page.keyboard.press("ArrowDown")
        out["selected_uid"] = page.evaluate(
            """() => { const tr = document.querySelector('#table tbody tr.sel');
                const cols = [...document.querySelectorAll('#table thead th')].map(th => th.textContent);
                return tr ? tr.querySelectorAll('td')[cols.indexOf('uid')].textContent : null; }"""
        )
        page.evaluate("() => { delete document.getElementById('detail').dataset.done; }")
        page.keyboard.press("Enter")
        page.wait_for_function(
            "() => document.getElementById('detail').dataset.done !== undefined", timeout=WAIT_MS
        )
        out["keyboard_detail_uid"] = page.evaluate(
            """() => [...document.querySelectorAll('#detail-fields tr')]
                .filter(tr => tr.querySelector('th').textContent === 'uid')
                .map(tr => tr.querySelectorAll('td')[0].textContent)[0]"""
        )
        out["second_row_uid"] = table(page)["rows"][1][table(page)["columns"].index("uid")]

        # A Sigma rule pasted and searched with: its expression in the box, searched as any.
        if sigma:
            page.click("#sigma summary")
            page.fill("#sigma-text", open(sigma, encoding="utf-8").read())
            done = int(page.evaluate("() => document.body.dataset.searches || 0"))
            page.click("#sigma-run")
            searches_done(page, done + 1)
            out["sigma"] = state(page)
            out["sigma_said"] = page.text_content("#sigma-said")

        # A 13" laptop's screen (1280x800): nothing wider than the window (the table scrolls
        # in its own box), and the first screen as such a user sees it.
        page.set_viewport_size({"width": 1280, "height": 800})
        page.evaluate("() => { window.dispatchEvent(new Event('resize')); window.scrollTo(0, 0); }")
        out["overflow_1280"] = page.evaluate(
            "() => document.documentElement.scrollWidth - document.documentElement.clientWidth"
        )
        page.screenshot(path=shot.removesuffix(".png") + "-1280x800.png")

        out["page_errors"] = errors
        browser.close()
    took("closed")
    out["seconds"] = timings
    print(json.dumps(out))


if __name__ == "__main__":
    main()
