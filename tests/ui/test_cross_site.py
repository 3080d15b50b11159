"""Another site's page cannot act as a visitor: the two-Space attack in Chromium, and every
route Gradio serves refusing a request from a foreign Origin or a cross-site fetch over HTTP.

The app serves ``http://127.0.0.1:A``; the attacker's page is served from
``http://127.0.0.1:B``, another origin of the same site, so the browser sends the victim's
``SameSite=Lax`` cookie with a ``credentials: "include"`` fetch, as it sends a Space's
``SameSite=None; Partitioned`` cookie from any Space's frame on huggingface.co.
"""

from __future__ import annotations

import contextlib
import json
import threading
from concurrent.futures import ThreadPoolExecutor
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx
import pytest

from storage import runs as run_store
from storage.paths import db_path
from storage.sqlite.db import Database
from storage.sqlite.schema import RunStatus
from tests.ui.test_security_http import seed_run
from ui.access.visitor_cookie import COOKIE_NAME, owner_key

pytestmark = pytest.mark.reliability

# Run in the attacker's page: list the victim's runs, then stop the one it names.
ATTACK_JS = """async ([app, runId]) => {
  async function call(name, data) {
    try {
      const r = await fetch(app + "gradio_api/call/" + name, {method: "POST",
        credentials: "include", headers: {"Content-Type": "application/json"},
        body: JSON.stringify({data})});
      const text = await r.text();
      if (!r.ok) return "refused " + r.status + " " + text;
      const id = JSON.parse(text).event_id;
      const s = await fetch(app + "gradio_api/call/" + name + "/" + id, {credentials: "include"});
      return await s.text();
    } catch (e) { return "blocked " + e; }
  }
  return {list: await call("list_runs", []), stop: await call("stop_run", [runId])};
}"""


class _AttackerPage(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        body = b"<html><body>another Space</body></html>"
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args) -> None:
        pass


@contextlib.contextmanager
def attacker_site():
    server = ThreadingHTTPServer(("127.0.0.1", 0), _AttackerPage)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture(scope="module")
def public_app(tmp_path_factory, start_app):
    data_dir = tmp_path_factory.mktemp("cross-site") / "data"
    data_dir.mkdir()
    with start_app(data_dir, {"STUDIO_PUBLIC": "1"}) as app:
        yield app


@pytest.mark.browser
def test_another_sites_page_cannot_list_or_stop_the_victims_runs(
    browser, public_app, record_property
):
    context = browser.new_context()
    page = context.new_page()
    page.goto(public_app.url)
    page.wait_for_selector("#main-tabs", timeout=60_000)
    cookie = next(c for c in context.cookies() if c["name"] == COOKIE_NAME)
    victim = f"anon:{owner_key(cookie['value'].split('.')[0])}"
    seed_run(public_app.data_dir, "victims-run", victim)
    with attacker_site() as attacker:
        page.goto(attacker)  # the victim opens another Space, in the same browser
        seen = page.evaluate(ATTACK_JS, [public_app.url, "victims-run"])
    context.close()
    with Database(db_path(public_app.data_dir)) as db:
        status = run_store.get_run(db, "victims-run").status
    record_property("probes_tried", 2)
    record_property(
        "probes_passed", int("victims-run" not in seen["list"]) + int(status != RunStatus.STOPPED)
    )
    assert seen["list"].startswith(("refused 403", "blocked")), seen
    assert "victims-run" not in seen["list"], seen
    assert seen["stop"].startswith(("refused 403", "blocked")) and status != RunStatus.STOPPED, seen


# Every kind of route Gradio serves: the page's config, an API call, the queue, uploads, files.
ROUTES = [
    ("GET", "/config", None),
    ("GET", "/gradio_api/info", None),
    ("POST", "/gradio_api/call/list_runs", {"data": []}),
    ("POST", "/gradio_api/queue/join", {"data": [], "fn_index": 0, "session_hash": "abc"}),
    ("GET", "/gradio_api/queue/data?session_hash=abc", None),
    ("GET", "/gradio_api/file=/etc/hostname", None),
    ("GET", "/gradio_api/heartbeat/abc", None),
    ("GET", "/logout", None),
]
FOREIGN = [
    {"Origin": "http://evil.example"},
    {"Origin": "null"},
    {"Origin": "http://127.0.0.1:1"},  # the same host, another port: another origin
    {"Sec-Fetch-Site": "cross-site", "Sec-Fetch-Mode": "cors"},
    {"Sec-Fetch-Site": "same-site", "Sec-Fetch-Mode": "no-cors"},
    {"Sec-Fetch-Site": "cross-site", "Sec-Fetch-Mode": "navigate", "_method": "POST"},
]


def test_every_route_refuses_a_foreign_origin_or_a_cross_site_fetch(public_app, record_property):
    http = httpx.Client(base_url=public_app.url, timeout=30)
    assert http.get("/config").status_code == 200  # the visitor's cookie, from their page
    assert COOKIE_NAME in http.cookies
    probes = [(method, path, body, foreign) for method, path, body in ROUTES for foreign in FOREIGN]

    def send(probe: tuple) -> httpx.Response:
        method, path, body, foreign = probe
        headers = {k: v for k, v in foreign.items() if not k.startswith("_")}
        return http.request(foreign.get("_method", method), path, headers=headers, json=body)

    # All at once: each refusal is answered a second late (same_origin.REFUSAL_DELAY_S).
    with ThreadPoolExecutor(max_workers=len(probes)) as pool:
        responses = list(pool.map(send, probes))
    refused = tried = 0
    for (method, path, _, foreign), response in zip(probes, responses, strict=True):
        tried += 1
        ok = response.status_code == 403 and "cross-site request refused" in response.text
        refused += ok
        assert ok, (method, path, foreign, response.status_code, response.text[:200])
        assert "access-control-allow-origin" not in response.headers, (path, foreign)
    # The app's own page, and a navigation from another site (a Space's frame), still load.
    own = http.get("/config", headers={"Origin": public_app.url.rstrip("/")})
    framed = http.get("/", headers={"Sec-Fetch-Site": "cross-site", "Sec-Fetch-Mode": "navigate"})
    same = http.post(
        "/gradio_api/call/list_runs",
        json={"data": []},
        headers={"Sec-Fetch-Site": "same-origin", "Origin": public_app.url.rstrip("/")},
    )
    record_property("probes_tried", tried)
    record_property("probes_passed", refused)
    assert own.status_code == 200 and framed.status_code == 200, (own.text, framed.text)
    assert same.status_code == 200 and "event_id" in json.loads(same.text), same.text


def test_no_answer_vouches_for_another_origin_behind_a_public_host(public_app):
    """Gradio's CORS answers any Origin with credentials when the Host is not local (a
    Space's): neither a preflight nor a request from another origin gets it."""
    foreign = {"Origin": "https://other-space.hf.space", "Host": "studio.hf.space"}
    preflight = httpx.options(
        f"{public_app.url}gradio_api/call/list_runs",
        headers={**foreign, "Access-Control-Request-Method": "POST"},
    )
    call = httpx.post(
        f"{public_app.url}gradio_api/call/list_runs", json={"data": []}, headers=foreign
    )
    for response in (preflight, call):
        assert "access-control-allow-origin" not in response.headers, dict(response.headers)
        assert "access-control-allow-credentials" not in response.headers
        assert response.status_code == 403
