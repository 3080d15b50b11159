"""One client cannot starve the others: ``/gradio_api/call/*`` is held to the new-session
rate, new cookies buy no new limits (an address has :data:`ADDRESS_SHARE` clients' worth),
and Gradio's dev-mode reload stream is not served on a public app. Real HTTP against a
running public app; addresses are told apart by the loopback proxy's ``X-Forwarded-For``."""

from __future__ import annotations

import secrets
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest

from ui.access.client_limits import ADDRESS_SHARE, NEW_SESSIONS_BURST

pytestmark = pytest.mark.reliability


@pytest.fixture(scope="module")
def app(tmp_path_factory, start_app):
    data_dir = tmp_path_factory.mktemp("starve") / "data"
    data_dir.mkdir()
    with start_app(data_dir, {"STUDIO_PUBLIC": "1"}) as app:
        yield app


def fn_index(url: str, api_name: str) -> int:
    config = httpx.get(f"{url}config", timeout=30).json()
    return next(
        d.get("id", i)
        for i, d in enumerate(config["dependencies"])
        if d.get("api_name") == api_name
    )


def test_api_calls_are_held_to_the_new_session_rate(app, record_property):
    address = {"X-Forwarded-For": "10.3.0.1"}

    def call(_: int) -> int:
        response = httpx.post(
            f"{app.url}gradio_api/call/list_runs", json={"data": []}, headers=address, timeout=60
        )
        return response.status_code

    with ThreadPoolExecutor(8) as pool:
        codes = list(pool.map(call, range(3 * NEW_SESSIONS_BURST)))
    other = httpx.post(
        f"{app.url}gradio_api/call/list_runs",
        json={"data": []},
        headers={"X-Forwarded-For": "10.3.0.2"},
        timeout=60,
    )
    record_property("probes_tried", len(codes))
    record_property("probes_passed", codes.count(429))
    assert codes.count(429) >= NEW_SESSIONS_BURST, codes
    assert other.status_code == 200, other.text


def test_new_cookies_buy_no_new_limits(app, record_property):
    index = fn_index(app.url, "list_runs")
    address = {"X-Forwarded-For": "10.3.1.1"}

    def fresh_cookie(_: int) -> httpx.Cookies:
        # Any request gives a new visitor cookie; the theme is the cheapest.
        return httpx.get(f"{app.url}theme.css", headers=address, timeout=60).cookies

    def join(cookies: httpx.Cookies) -> int:
        body = {"data": [], "fn_index": index, "session_hash": secrets.token_hex(8)}
        return httpx.post(
            f"{app.url}gradio_api/queue/join",
            json=body,
            headers=address,
            cookies=cookies,
            timeout=60,
        ).status_code

    sessions = 3 * NEW_SESSIONS_BURST * ADDRESS_SHARE
    with ThreadPoolExecutor(8) as pool:
        jars = list(pool.map(fresh_cookie, range(sessions)))
        codes = list(pool.map(join, jars))
    record_property("probes_tried", len(codes))
    record_property("probes_passed", codes.count(429))
    assert codes.count(429) >= NEW_SESSIONS_BURST, codes


def test_the_dev_reload_stream_is_not_served_on_a_public_app(app):
    with httpx.stream("GET", f"{app.url}gradio_api/dev/reload", timeout=10) as response:
        assert response.status_code == 404
