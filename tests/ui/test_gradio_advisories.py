"""The Gradio we pin is outside every public advisory since 6.0 but those mitigated where they
live (RELIABILITY.md lists them), and a request with a forged ``Host: localhost`` reaches nothing
that spends a server credential, SSR asked for or not: the operator's saved Hugging Face token
never leaves the process.

The Hub is a local recorder (``HF_ENDPOINT``), so any request made with the token is seen."""

from __future__ import annotations

import contextlib
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import gradio
import httpx
import pytest
from packaging.version import Version

pytestmark = pytest.mark.reliability

OPERATOR_TOKEN = "hf_operator_saved_token"
# (first affected, first fixed, what) of each public Gradio advisory since 6.0 (REFERENCE.md);
# None: no fixed release in the registry yet.
ADVISORIES = {
    "CVE-2026-134825": (
        "6.27.0",
        None,
        "SSR forwards Host: run-history routes with the saved token",
    ),
    "CVE-2026-59806": ("6.0.0", "6.20.0", "SSRF and open redirect at /gradio_api/file="),
    "CVE-2026-49119": ("6.0.0", "6.16.0", "FileExplorer path traversal"),
    "CVE-2026-48545": ("6.0.0", "6.15.0", "cookie injection across Spaces via the proxy client"),
    "CVE-2026-28414": ("6.0.0", "6.7.0", "Windows path traversal"),
    "CVE-2026-28416": ("6.0.0", "6.6.0", "SSRF via gr.load proxy_url"),
    "CVE-2026-28415": ("6.0.0", "6.6.0", "OAuth open redirect"),
    "CVE-2026-27167": ("6.0.0", "6.6.0", "mocked-OAuth credential exposure"),
}
# How the app closes each advisory where it lives, for a Gradio inside its range (the pin is in
# none: requirements.txt).
MITIGATED = {
    "CVE-2026-134825": "SSR off on every start; the run-history routes answer 404",
}
# What Gradio 6.27+ serves with the local token to a loopback caller, and the rest of its API.
PROBES = [
    ("GET", "/gradio_api/run-history/buckets"),
    ("GET", "/gradio_api/run-history/records"),
    ("POST", "/gradio_api/run-history/connect"),
    ("GET", "/gradio_api/runs"),
    ("GET", "/gradio_api/info"),
    ("GET", "/config"),
    ("GET", "/gradio_api/workflow/token"),
]


class _Hub(BaseHTTPRequestHandler):
    def _record(self) -> None:
        self.server.seen.append((self.command, self.path, self.headers.get("Authorization")))
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"[]")

    do_GET = do_POST = _record

    def log_message(self, *args) -> None:
        pass


@contextlib.contextmanager
def hub_recorder():
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Hub)
    server.seen = []
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()


def advisories_inside(version: str) -> list[str]:
    """The advisories whose affected range holds ``version``."""
    v = Version(version)
    return [
        cve
        for cve, (first, fixed, _) in ADVISORIES.items()
        if Version(first) <= v and (fixed is None or v < Version(fixed))
    ]


def test_the_pinned_gradio_is_outside_every_advisory_it_does_not_mitigate():
    assert advisories_inside("6.31.0") == ["CVE-2026-134825"]
    assert advisories_inside("6.26.0") == []
    unmitigated = set(advisories_inside(gradio.__version__)) - set(MITIGATED)
    assert not unmitigated, (gradio.__version__, unmitigated)


def test_ssr_is_off_on_every_start(ctx):
    from ui.factory import launch_kwargs

    assert launch_kwargs(ctx)["ssr_mode"] is False  # launch's argument wins over GRADIO_SSR_MODE


def test_a_forged_localhost_host_spends_no_server_credential(start_app, tmp_path):
    data_dir = tmp_path / "data"
    data_dir.mkdir()
    with hub_recorder() as hub:
        env = {
            "STUDIO_PUBLIC": "1",
            "HF_TOKEN": OPERATOR_TOKEN,
            "HF_ENDPOINT": f"http://127.0.0.1:{hub.server_address[1]}",
            "GRADIO_SSR_MODE": "True",  # asked for: the start turns it off all the same
        }
        with start_app(data_dir, env) as app:
            http = httpx.Client(base_url=app.url, timeout=30, headers={"Host": "localhost"})
            answers = {}
            for method, path in PROBES:
                response = http.request(method, path, json={"bucket_id": "victim/history"})
                answers[path] = response.status_code
                assert OPERATOR_TOKEN not in response.text, (path, response.text[:200])
        with_token = [s for s in hub.seen if s[2] and OPERATOR_TOKEN in s[2]]
        assert not with_token, (with_token, answers)
        for path in [p for _, p in PROBES if "run-history" in p]:
            assert answers[path] == 404, answers


def test_the_shield_is_in_the_apps_own_middleware_from_the_first_request(ctx):
    """The server accepts requests before app.py wraps Gradio's stack: the app's own middleware
    (what launch builds the server with) already refuses the credential routes and another
    site's credentialed request, with no request let through to the route behind."""
    from fastapi import FastAPI
    from starlette.testclient import TestClient

    from ui.factory import middleware

    reached = []
    app = FastAPI(middleware=middleware(ctx))

    @app.api_route("/gradio_api/run-history/buckets", methods=["GET", "POST"])
    @app.get("/gradio_api/runs")
    def behind() -> dict:
        reached.append(True)
        return {}

    with TestClient(app, base_url="http://127.0.0.1:7860") as client:
        assert client.post("/gradio_api/run-history/buckets").status_code == 404
        other_site = {"Origin": "https://evil.example", "Sec-Fetch-Site": "cross-site"}
        assert client.get("/gradio_api/runs", headers=other_site).status_code == 403
        assert not reached
        assert client.get("/gradio_api/runs").status_code == 200  # its own page's request
