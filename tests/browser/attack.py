#!/usr/bin/env python3
"""Attacks a loopback `weir serve` from web pages in the system's headless Chromium
(Playwright, never its own browsers), as the pages of issue 55 did, and prints what each
attack achieved as one JSON object.

    attack.py PORT

PORT is the server's, on 127.0.0.1. The attacker's pages come from a server of this script
on another loopback port; Chromium resolves the attacker's name `attacker.test` to
127.0.0.1 (--host-resolver-rules).

1. `rebinding`: DNS rebinding. The attacker's page is loaded as http://attacker.test:PORT/
   (the name first pointing at the attacker's server: the document is fetched from it), then
   its script's requests to its own origin reach 127.0.0.1:PORT (the name rebound): a
   same-origin POST /api/v1/query and GET /api/v1/info, whose answers it reads. `status` and
   `body` of each.
2. `no_cors`: a page of another origin POSTs queries with `mode: "no-cors"`, as text/plain
   and as a form; the server's `queries.started` (GET /api/v1/status) before and after.
3. `framed`: whether the server's page rendered inside an iframe of the attacker's page.
4. `opened`: the attacker's page navigates the browser to the server's page with a query of
   its choosing (`?q=`): whether that query ran (`started` before and after, the page's
   `searches`), what the query box holds, and the note shown; then the person presses
   Search (`searches_after_click`).
5. `page`: the server's own page, opened normally, runs its first search (`searched`)
   without being blocked by its Content-Security-Policy (`csp_errors`: console messages
   about it; `page_errors`).
Used by tests/it/serve_guard.rs (web_pages_cannot_drive_the_server).
"""
import http.server
import json
import sys
import threading
import urllib.request

from playwright.sync_api import sync_playwright

CHROMIUM = "/usr/bin/chromium"
ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--host-resolver-rules=MAP attacker.test 127.0.0.1",
]
WAIT_MS = 30_000

# The attacker's script: reads the API of whatever its origin now resolves to.
REBIND = """<!doctype html><title>rebinding</title><script>
async function go() {
  const out = {};
  for (const [name, opt] of [
    ["query", {method: "POST", headers: {"Content-Type": "application/json"},
               body: JSON.stringify({query: "", limit: 3})}],
    ["info", {method: "GET"}],
  ]) {
    try {
      const r = await fetch(name === "query" ? "/api/v1/query" : "/api/v1/info", opt);
      out[name] = {status: r.status, body: await r.text()};
    } catch (e) {
      out[name] = {status: 0, body: String(e)};
    }
  }
  window.result = out;
}
go();
</script>"""

# Another origin's page: fire-and-forget POSTs that a browser sends without a preflight,
# and the server's page in a frame.
NO_CORS = """<!doctype html><title>no-cors</title>
<iframe id="f" src="http://127.0.0.1:%(port)d/" width="800" height="600"></iframe>
<script>
async function go() {
  const url = "http://127.0.0.1:%(port)d/api/v1/query";
  const sent = [];
  for (const [type, body] of [
    ["text/plain", JSON.stringify({query: "summarize count() by uid"})],
    ["application/x-www-form-urlencoded", JSON.stringify({query: "summarize count() by uid"})],
  ]) {
    try {
      await fetch(url, {method: "POST", mode: "no-cors", headers: {"Content-Type": type}, body});
      sent.push(type);
    } catch (e) {
      sent.push(type + ": " + e);
    }
  }
  window.result = sent;
}
go();
</script>"""


# Another site's page that sends the browser to the server's page with its own query.
OPEN = """<!doctype html><title>open</title><script>
location.href = "http://127.0.0.1:%(port)d/?q=" + encodeURIComponent("summarize count() by uid");
</script>"""


def attacker_server(port):
    pages = {
        "/rebind": REBIND,
        "/no-cors": NO_CORS % {"port": port},
        "/open": OPEN % {"port": port},
    }

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            page = pages.get(self.path)
            body = (page or "not found").encode()
            self.send_response(200 if page else 404)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def started(port):
    """The server's queries.started, asked as a script (not a browser) asks."""
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/v1/status", timeout=30) as r:
        return json.load(r)["queries"].get("started")


def main():
    port = int(sys.argv[1])
    evil = attacker_server(port)
    evil_port = evil.server_address[1]
    out = {}
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)

        # 1. DNS rebinding: the document from the attacker's server, the rest from weir.
        page = browser.new_page()
        page.route(
            f"http://attacker.test:{port}/",
            lambda route: route.continue_(url=f"http://127.0.0.1:{evil_port}/rebind"),
        )
        page.goto(f"http://attacker.test:{port}/")
        page.wait_for_function("() => window.result", timeout=WAIT_MS)
        out["rebinding"] = page.evaluate("() => window.result")
        page.close()

        # 2 and 3. Another origin's page: no-cors POSTs and a frame.
        before = started(port)
        page = browser.new_page()
        page.goto(f"http://attacker.test:{evil_port}/no-cors")
        page.wait_for_function("() => window.result", timeout=WAIT_MS)
        sent = page.evaluate("() => window.result")
        page.wait_for_timeout(1000)  # let the frame load or fail
        framed = False
        for frame in page.frames:
            if frame == page.main_frame:
                continue
            try:
                framed |= frame.evaluate("() => !!document.getElementById('q')")
            except Exception:  # an error page that cannot be evaluated: not rendered
                pass
        out["no_cors"] = {"sent": sent, "started_before": before, "started_after": started(port)}
        out["framed"] = framed
        page.close()

        # 4. Another site opens the server's page with its query.
        before = started(port)
        page = browser.new_page()
        page.goto(f"http://attacker.test:{evil_port}/open")
        page.wait_for_url(f"http://127.0.0.1:{port}/**", timeout=WAIT_MS)
        page.wait_for_load_state("load")
        page.wait_for_timeout(1500)  # time for a search it should not start
        held = {
            "started_before": before,
            "started_after": started(port),
            "searches": page.evaluate("() => document.body.dataset.searches || '0'"),
            "query": page.input_value("#q"),
            "note": page.text_content("#error"),
        }
        page.click("#run")
        page.wait_for_function(
            "() => Number(document.body.dataset.searches || 0) >= 1", timeout=WAIT_MS
        )
        held["searches_after_click"] = page.evaluate("() => document.body.dataset.searches")
        out["opened"] = held
        page.close()

        # 5. The server's own page under its policy.
        page = browser.new_page()
        csp, errors = [], []
        page.on(
            "console",
            lambda m: csp.append(m.text) if "Content Security Policy" in m.text else None,
        )
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.goto(f"http://127.0.0.1:{port}/")
        page.wait_for_function(
            "() => Number(document.body.dataset.searches || 0) >= 1", timeout=WAIT_MS
        )
        out["page"] = {
            "searched": page.locator("#hist").get_attribute("data-total"),
            "legend": page.locator("#legend i").count(),
            "legend_colored": page.evaluate(
                "() => [...document.querySelectorAll('#legend i')]"
                ".every(i => getComputedStyle(i).backgroundColor !== 'rgba(0, 0, 0, 0)')"
            ),
            "csp_errors": csp,
            "page_errors": errors,
        }
        browser.close()
    evil.shutdown()
    print(json.dumps(out))


if __name__ == "__main__":
    main()
