"""The lows of issue 40's probe, over real HTTP against a started public app: the app's address
never comes from a request's headers, the downloaded config shows no server path, notes and
run names refuse characters that hide or reorder text, free cookies from one address do not
take every run slot, and a slow endpoint serves one client (its address, whatever its
cookies) one call at a time."""

from __future__ import annotations

import contextlib
import json
import random
import re
import subprocess
import sys
import threading
from collections.abc import Iterator
from urllib.parse import urlsplit

import httpx
import pytest
from gradio_client import Client

from bench.fuzz_endpoints import call, endpoints
from bench.fuzz_values import plausible
from storage import runs as run_store
from storage.paths import db_path
from storage.sqlite.db import Database
from storage.sqlite.schema import RunStatus
from tests.ui.http_session import Browser, EventRefused
from tests.ui.test_security_http import SMALL_RUN, seed_run, text_of
from ui.access.visitor_cookie import COOKIE_NAME, owner_key

pytestmark = pytest.mark.reliability

SPACE_HOST = "team-studio.hf.space"
FORGED = [
    {"Host": "evil.example"},
    {"X-Forwarded-Host": "evil.example"},
    {"X-Gradio-Server": "http://evil.example"},
    {"X-Forwarded-Host": "evil.example", "X-Forwarded-Proto": "https"},
]


@pytest.fixture(scope="module")
def public_app(start_app, tmp_path_factory):
    """A public app that knows its address as a Space does (``SPACE_HOST``)."""
    data_dir = tmp_path_factory.mktemp("lows3") / "data"
    data_dir.mkdir()
    # One worker at a time: a run the slot test seeds keeps the started ones queued.
    env = {"STUDIO_PUBLIC": "1", "SPACE_HOST": SPACE_HOST, "STUDIO_MAX_CONCURRENT_RUNS": "1"}
    with start_app(data_dir, env) as app:
        yield app


def owner_of(browser: Browser) -> str:
    browser.config()  # the first GET /config gives the visitor cookie
    return f"anon:{owner_key(browser.http.cookies[COOKIE_NAME].split('.')[0])}"


def test_config_and_logout_give_the_apps_own_address_whatever_the_headers(
    public_app, record_property
):
    browser = Browser(public_app.url)
    answers = []
    for headers in FORGED:
        root = browser.http.get("/config", headers=headers).json()["root"]
        logout = browser.http.get("/logout", headers=headers, follow_redirects=False)
        answers += [root, logout.headers.get("location", "")]
    record_property("probes_tried", len(answers))
    record_property("probes_passed", answers.count(f"https://{SPACE_HOST}"))
    assert answers == [f"https://{SPACE_HOST}"] * len(answers)


def test_an_app_that_does_not_know_its_address_ignores_forwarded_hosts(live_app):
    browser = Browser(live_app.url)
    own = live_app.url.rstrip("/")
    for headers in FORGED[1:3]:
        assert browser.http.get("/config", headers=headers).json()["root"] == own, headers
        location = browser.http.get("/logout", headers=headers, follow_redirects=False)
        assert location.headers["location"] == own, headers


def test_the_downloaded_config_names_an_upload_without_the_servers_folders(public_app):
    browser = Browser(public_app.url)
    owner = owner_of(browser)
    stored = public_app.data_dir / "uploads" / ("a" * 24) / ("b" * 32 + ".parquet")
    seed_run(public_app.data_dir, "upload-run", owner)
    with Database(db_path(public_app.data_dir)) as db:
        config = {"name": "upload-run", "data": {"source": "file", "path": str(stored)}}
        run_store.update_run(db, "upload-run", config=config)
    browser.open()  # the page's load fills the run list it may pick from
    update, message = browser.click("run-config", ["upload-run"])
    assert not message, message
    served = urlsplit(update["value"]["url"])
    text = browser.http.get(served.path + (f"?{served.query}" if served.query else "")).text
    assert f"path: {stored.name}" in text
    assert str(public_app.data_dir) not in text and "uploads/" not in text, text


@pytest.mark.parametrize(
    "note",
    ["before\x00after", "price \u202e0.01\u202c", "isolate \u2066x\u2069", "line\u2028break"],
)
def test_a_note_that_hides_or_reorders_text_is_refused_naming_the_character(public_app, note):
    browser = Browser(public_app.url)
    run_id = f"note-{abs(hash(note)) % 10**8}"
    seed_run(public_app.data_dir, run_id, owner_of(browser))
    browser.open()
    _, stored_note, message = browser.click("run-labels-save", [run_id, "", note, None])
    shown = text_of(message).replace("\\", "")  # the page's Markdown escapes
    assert re.search(r"note: holds a [a-z ]+ \(U\+[0-9A-F]{4}\)", shown), shown
    assert not isinstance(stored_note, str) or stored_note != note
    _, _, ok = browser.click("run-labels-save", [run_id, "", "two\nlines\tand a tab", None])
    assert "Saved" in text_of(ok), ok


def test_a_run_name_with_a_bidirectional_control_is_a_field_error(public_app):
    client = Client(public_app.url, verbose=False)
    config = json.dumps({"name": "gpt\u202etxt.exe", "training": {"steps": 1}})
    with pytest.raises(Exception, match=r"config\.name: holds a bidirectional control \(U\+202E"):
        client.predict(config, api_name="/start_run")


@contextlib.contextmanager
def worker_slot_held(app, run_id: str) -> Iterator[list[str]]:
    """The app's one worker slot taken by a sleeper recorded as running ``run_id``, so started
    runs only queue; yields a list to put them in, stopped when the block ends."""
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)"])
    started: list[str] = []
    try:
        with Database(db_path(app.data_dir)) as db:
            run_store.create_run(
                db, run_id=run_id, algorithm="grpo", config={}, status=RunStatus.RUNNING
            )
            run_store.update_run(db, run_id, pid=sleeper.pid)
        yield started
    finally:
        with Database(db_path(app.data_dir)) as db:  # no worker starts after the test
            for started_id in started:
                run_store.update_run(db, started_id, status=RunStatus.STOPPED)
        sleeper.kill()
        sleeper.wait()


def stop_recorded(app, run_id: str) -> None:
    with Database(db_path(app.data_dir)) as db:
        run_store.update_run(db, run_id, status=RunStatus.STOPPED)


def test_free_cookies_from_one_address_take_at_most_its_run_slots(public_app):
    """A new cookie per run (each a new anonymous owner under its own cap of 2): the third run
    from one address is refused; a visitor at another address still starts one."""
    config = json.dumps(SMALL_RUN)
    here = {"X-Forwarded-For": "203.0.113.20"}
    with worker_slot_held(public_app, "busy-slot") as started:
        for _ in range(2):
            client = Client(public_app.url, headers=here, verbose=False)
            started.append(client.predict(config, api_name="/start_run")["run_id"])
        with pytest.raises(Exception, match=r"runs: 2 queued or running runs were started from"):
            Client(public_app.url, headers=here, verbose=False).predict(
                config, api_name="/start_run"
            )
        elsewhere = Client(public_app.url, headers={"X-Forwarded-For": "198.51.100.20"})
        started.append(elsewhere.predict(config, api_name="/start_run")["run_id"])


def test_a_resume_counts_against_the_address_as_a_start_does(public_app):
    """Two runs started and stopped, two more started, then the first two resumed (each by its
    own cookie, under its own cap): the address is at its cap, so the resumes are refused, until
    one of its runs stops."""
    config = json.dumps(SMALL_RUN)
    here = {"X-Forwarded-For": "203.0.113.30"}
    clients = [Client(public_app.url, headers=here, verbose=False) for _ in range(4)]
    with worker_slot_held(public_app, "busy-slot-resume") as started:
        for client in clients:
            started.append(client.predict(config, api_name="/start_run")["run_id"])
            if len(started) <= 2:
                stop_recorded(public_app, started[-1])
        first, _, third, _ = started
        with pytest.raises(Exception, match=r"Cannot resume .*runs: 2 queued or running runs"):
            clients[0].predict(first, api_name="/resume_run")
        stop_recorded(public_app, third)
        resumed = clients[0].predict(first, api_name="/resume_run")
        assert resumed["message"].startswith(f"Resuming {first}"), resumed


def test_a_lone_surrogate_for_a_run_id_reads_like_a_missing_run_on_every_endpoint(public_app):
    """The fuzz's finding: SQLite could not bind the id, and the answer was the generic "could
    not be handled" (for the actions, naming no endpoint)."""
    http = httpx.Client(base_url=public_app.url.rstrip("/"), timeout=60)
    named = endpoints(http)
    takes_run = sorted(
        n
        for n, (_, params) in named.items()
        if params[:1] and params[0]["parameter_name"] == "run_id"
    )
    assert len(takes_run) >= 8, takes_run
    answers = {}
    for name in takes_run:
        args = ["\ud800"] + [
            plausible(random.Random(0), p["parameter_name"], "") for p in named[name][1][1:]
        ]
        answers[name] = call(http, named[name][0], args, "surrogate-ids")
    assert all(outcome == "refused" for outcome, _ in answers.values()), answers
    assert all("could not be handled" not in detail for _, detail in answers.values()), answers


def _compare_args(n: int) -> list:
    """A comparison of four math specs on ``n`` completions: seconds of scoring at n=256."""
    spec = json.dumps(
        {"components": [{"name": "correctness", "params": {"mode": "math"}}, {"name": "format"}]}
    )
    texts = [
        "<think>" + "step " * 20 + f"</think><answer>{i * 7 / 3} + \\frac{{{i}}}{{3}}</answer>"
        for i in range(n)
    ]
    return [
        [spec] * 4,
        texts,
        [i // 8 for i in range(n)],
        None,
        [str(i) for i in range(n)],
        "group",
    ]


def test_a_slow_endpoint_takes_one_call_at_a_time_per_address_not_per_cookie(public_app):
    """Two cookies from one address: the second call, sent while the first runs, is refused at
    once; a client at another address is served meanwhile; the first call still answers."""
    here = {"X-Forwarded-For": "203.0.113.7"}  # the app runs behind this machine's "proxy"
    first, second = Browser(public_app.url, headers=here), Browser(public_app.url, headers=here)
    other = Browser(public_app.url, headers={"X-Forwarded-For": "198.51.100.9"})
    started, result = threading.Event(), {}

    def long_call() -> None:
        try:
            result["first"] = first.call("compare_specs", _compare_args(256), on_start=started)
        except EventRefused as exc:
            result["first"] = exc
        finally:
            started.set()

    thread = threading.Thread(target=long_call)
    thread.start()
    assert started.wait(120), "the first call never started"
    with pytest.raises(EventRefused, match=r"compare_specs: you have a call of it running"):
        second.call("compare_specs", _compare_args(2))
    assert "specs" in json.dumps(other.call("compare_specs", _compare_args(2)))
    thread.join(180)
    assert not isinstance(result.get("first"), Exception | type(None)), result


def call_over_http(app_url: str, name: str, data: list, address: str) -> str:
    """The stream of one ``/gradio_api/call/<name>`` call, as a raw HTTP client makes it."""
    url = f"{app_url.rstrip('/')}/gradio_api/call/{name}"
    headers = {"X-Forwarded-For": address}  # an address of its own: no other test's call budget
    event = httpx.post(url, json={"data": data}, headers=headers, timeout=60)
    assert event.status_code == 200, event.text
    with httpx.stream(
        "GET", f"{url}/{event.json()['event_id']}", headers=headers, timeout=60
    ) as stream:
        return "".join(stream.iter_text())


def test_a_call_that_leaves_arguments_out_gets_defaults_or_names_what_is_missing(public_app):
    # run_metrics(run_id, cursor=0, names=None): the optional two left out, as gradio_client does.
    partial = call_over_http(public_app.url, "run_metrics", ["no-such-run"], "10.40.0.1")
    assert "event: error" in partial and "no-such-run" in partial, partial
    assert '"error": null' not in partial
    none = call_over_http(public_app.url, "run_status", [], "10.40.0.2")
    assert "run_status: run_id missing (it takes run_id; got 0 of 1 values)" in none, none
    short = call_over_http(public_app.url, "score_preview", [], "10.40.0.3")
    assert "score_preview: spec, completions missing" in short, short
