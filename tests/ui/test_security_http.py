"""Outside-user probes over real HTTP against the running app: the data dir is never served
(S2), a user reaches only their own runs, queue calls replayed from another session included
(S3), the login is rate-limited (S7), the per-user run cap holds, and the app starts as a
Space does (sign-in route, storage note).

Two apps serve these tests: one started the way a Hugging Face Space starts it (``SYSTEM`` and
``SPACE_ID`` set, OAuth variables pointing at a local OpenID provider stand-in, data under the
persistent-storage root, no login: visitors are anonymous per browser session), and one with
``STUDIO_AUTH`` users and an admin.
"""

from __future__ import annotations

import contextlib
import json
import secrets
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import quote

import httpx
import pytest
import yaml
from gradio_client import Client

from storage import runs as run_store
from storage.paths import db_path
from storage.records.logs import append_logs
from storage.run_caps import count_active
from storage.sqlite.db import Database
from storage.sqlite.schema import RunStatus
from tests.ui.http_session import Browser, EventRefused
from ui.access.visitor_cookie import COOKIE_NAME, owner_key

pytestmark = pytest.mark.reliability

OAUTH_CLIENT_ID = "studio-test-client"
OPERATOR_JUDGE_KEY = "sk-operator-judge-key"
SPACE_HF_TOKEN = "hf_space_owner_secret"
SMALL_RUN = {"training": {"steps": 1, "prompts_per_step": 2, "eval_samples": 0}}


# ---- helpers -------------------------------------------------------------------------------
def seed_run(data_dir: Path, run_id: str, owner: str, **fields) -> Path:
    """A finished run of ``owner`` with its config file and worker log, as the app writes it."""
    folder = data_dir / "runs" / run_id
    folder.mkdir(parents=True)
    (folder / "config.yaml").write_text(f"name: {run_id}\n")
    (folder / "worker.log").write_text(f"secret log of {run_id}\n")
    with Database(db_path(data_dir)) as db:
        run_store.create_run(
            db,
            run_id=run_id,
            algorithm="grpo",
            config={"name": run_id},
            output_dir=str(folder),
            owner=owner,
            status=fields.pop("status", RunStatus.RUNNING),
        )
        append_logs(db, run_id, [(time.time(), "INFO", f"log line of {run_id}")])
        run_store.update_run(db, run_id, **{"status": RunStatus.COMPLETED, **fields})
    return folder


def visitor_owner(client: Client) -> str:
    """The owner key of the runs a ``gradio_client`` client starts: its visitor cookie's."""
    token = client.cookies[COOKIE_NAME].split(".")[0]
    return f"anon:{owner_key(token)}"


def run_exists(data_dir: Path, run_id: str) -> bool:
    with Database(db_path(data_dir)) as db:
        return run_store.get_run(db, run_id) is not None


def refused_or_missing(call) -> bool:
    """True when a replayed call is refused, or answers that there is no such run."""
    try:
        outputs = call()
    except EventRefused:
        return True
    return any("No run with id" in text_of(o) for o in outputs)


def text_of(update) -> str:
    return update.get("value", "") if isinstance(update, dict) else str(update)


def data_dir_probes(data_dir: Path, run_id: str) -> list[str]:
    """Paths under the data dir an outside user would ask Gradio's file route for."""
    db = db_path(data_dir)
    folder = data_dir / "runs" / run_id
    return [
        str(db),
        f"{db}-wal",
        f"{db}-shm",
        str(folder / "config.yaml"),
        str(folder / "worker.log"),
        f"{folder}/../../{db.name}",
        quote(str(db)),
        str(db).upper() if sys.platform == "darwin" else f"{data_dir}/./{db.name}",
    ]


class _OpenIdProvider(BaseHTTPRequestHandler):
    """Serves the OpenID discovery document that Gradio's HF sign-in reads, as hf.co does."""

    def do_GET(self) -> None:
        base = f"http://127.0.0.1:{self.server.server_address[1]}"
        if self.path != "/.well-known/openid-configuration":
            self.send_error(404)
            return
        body = json.dumps(
            {
                "issuer": base,
                "authorization_endpoint": f"{base}/oauth/authorize",
                "token_endpoint": f"{base}/oauth/token",
                "userinfo_endpoint": f"{base}/oauth/userinfo",
                "jwks_uri": f"{base}/oauth/jwks",
            }
        ).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args) -> None:
        pass


class _JudgeEndpoint(BaseHTTPRequestHandler):
    """An OpenAI-compatible judge that records every request (method, path, Authorization);
    under ``/redirect`` it answers 302 to ``server.redirect_to``, as an open redirect would."""

    def _record(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        self.rfile.read(length)
        self.server.requests.append((self.command, self.path, self.headers.get("Authorization")))

    def do_GET(self) -> None:
        self._record()
        self.send_error(404)

    def do_POST(self) -> None:
        self._record()
        if self.path.startswith("/redirect"):
            self.send_response(302)
            self.send_header("Location", self.server.redirect_to)
            self.end_headers()
            return
        body = json.dumps({"choices": [{"message": {"content": "Score: 9\nReason: ok."}}]})
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body.encode())

    def log_message(self, *args) -> None:
        pass


@contextlib.contextmanager
def judge_endpoint():
    server = ThreadingHTTPServer(("127.0.0.1", 0), _JudgeEndpoint)
    server.requests = []
    server.redirect_to = ""
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()


@contextlib.contextmanager
def openid_provider():
    server = ThreadingHTTPServer(("127.0.0.1", 0), _OpenIdProvider)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()


# ---- the app as a Space runs it --------------------------------------------------------------
@pytest.fixture(scope="module")
def space(tmp_path_factory, start_app):
    root = tmp_path_factory.mktemp("space") / "persistent"
    root.mkdir()
    data_dir = root / "studio"
    with openid_provider() as provider, judge_endpoint() as judge, judge_endpoint() as elsewhere:
        judge.redirect_to = f"http://127.0.0.1:{elsewhere.server_address[1]}/v1/chat/completions"
        env = {
            "SYSTEM": "spaces",
            "SPACE_ID": "team/reward-studio",
            "OAUTH_CLIENT_ID": OAUTH_CLIENT_ID,
            "OAUTH_CLIENT_SECRET": "not-a-real-secret",
            "OAUTH_SCOPES": "openid profile",
            "OPENID_PROVIDER_URL": provider,
            "STUDIO_PERSISTENT_ROOT": str(root),
            "STUDIO_MAX_UPLOAD_MB": "1",
            "STUDIO_MAX_CLIENT_UPLOADS_MB": "2",
            # the operator's judge, written as a bare origin; secrets a Space holds
            "STUDIO_JUDGE_URLS": f"http://127.0.0.1:{judge.server_address[1]}",
            "OPENAI_API_KEY": OPERATOR_JUDGE_KEY,
            "HF_TOKEN": SPACE_HF_TOKEN,
        }
        with start_app(data_dir, env, pass_data_dir=False) as app:
            app.provider = provider
            app.judge, app.elsewhere = judge, elsewhere
            yield app


def test_the_app_starts_as_a_space_with_sign_in_and_its_storage_note(space):
    browser = Browser(space.url)
    assert (space.data_dir / "studio.db").is_file()  # chose the persistent root by itself
    header = browser.component("app-header")["props"]["value"]
    # A visitor is told whether runs outlive a restart, never the server's paths.
    assert "Runs are saved on this server, on this Space's persistent storage." in header.replace(
        "\\", ""
    )
    assert str(space.data_dir) not in header.replace("\\", "")
    assert "Your runs are visible only to you." in header
    assert "Sign in with Hugging Face" in browser.component("login-button")["props"]["value"]
    response = browser.http.get("/login/huggingface", follow_redirects=False)
    assert response.status_code in (302, 307), response.text
    location = response.headers["location"]
    assert location.startswith(f"{space.provider}/oauth/authorize?")
    assert f"client_id={OAUTH_CLIENT_ID}" in location


def test_the_data_dir_is_never_served(space, record_property):
    assert (space.data_dir / "studio.db").is_file()  # the app's own database, made at start
    seed_run(space.data_dir, "probe-run", "local")
    browser = Browser(space.url)
    probes = data_dir_probes(space.data_dir, "probe-run")
    refused = 0
    for path in probes:
        response = browser.http.get(f"/gradio_api/file={path}")
        assert b"secret log" not in response.content and b"SQLite format" not in response.content
        refused += response.status_code in (403, 404)
    record_property("probes_tried", len(probes))
    record_property("probes_passed", refused)
    assert refused == len(probes)


def test_uploads_are_capped_in_size(space, record_property):
    http = Browser(space.url).http
    big = http.post("/gradio_api/upload", files={"files": ("big.jsonl", b"x" * (2 * 2**20))})
    small = http.post("/gradio_api/upload", files={"files": ("small.jsonl", b'{"a": 1}\n')})
    record_property("probes_tried", 1)
    record_property("probes_passed", int(big.status_code >= 400))
    assert big.status_code >= 400, big.text[:200]
    assert small.status_code == 200, small.text[:200]


def test_one_client_cannot_fill_the_disk_through_uploads_or_downloads(space, record_property):
    """Gradio's upload route: at most STUDIO_MAX_CLIENT_UPLOADS_MB (2 here) per client (its
    address: the proxy's X-Forwarded-For hop) within the sweep window, whatever the size of
    each file; "Download config file" writes no client text over its cap."""
    client = Browser(space.url, headers={"X-Forwarded-For": "10.1.0.1"})
    other = Browser(space.url, headers={"X-Forwarded-For": "10.1.0.2"})
    client.config()  # the page's first request: the client now keeps its visitor cookie
    other.config()
    part = b"x" * (900 * 2**10)
    codes = [
        client.http.post("/gradio_api/upload", files={"files": (f"p{i}.jsonl", part)}).status_code
        for i in range(4)
    ]
    assert codes[:2] == [200, 200], codes
    refused = client.http.post("/gradio_api/upload", files={"files": ("p.jsonl", part)})
    assert refused.status_code == 413 and "STUDIO_MAX_CLIENT_UPLOADS_MB" in refused.text
    assert other.http.post("/gradio_api/upload", files={"files": ("o.jsonl", part)}).is_success
    download = next(
        c["id"]
        for c in client.config()["components"]
        if c.get("props", {}).get("value") == "Download config file"
    )
    client.open()
    big = "x" * 2_000_001
    try:
        client._event([download, "click"], [big])
        download_refused = False
    except EventRefused as err:
        download_refused = "over the 1,000,000" in str(err)
    record_property("probes_tried", 3)
    record_property("probes_passed", codes[2:].count(413) + download_refused)
    assert codes[2:] == [413, 413] and download_refused


def test_one_client_cannot_flood_the_queue_or_its_session_state(space, record_property):
    """Session hashes are bounded (none empty, none over 64 characters); one client opening a
    new session per event is held to its event rate, while another client is still served."""
    page = Browser(space.url)
    fn_index = next(
        d.get("id", i)
        for i, d in enumerate(page.config()["dependencies"])
        if d.get("api_name") == "list_runs"
    )
    flood = httpx.Client(base_url=space.url, timeout=60)  # keeps no cookie: a new visitor each

    def join(session_hash: str) -> httpx.Response:
        body = {"data": [], "fn_index": fn_index, "session_hash": session_hash}
        return flood.post("/gradio_api/queue/join", json=body)

    hashes = {"empty": "", "1 MB": "h" * 2**20, "65 chars": "h" * 65}
    bad = {name: join(value) for name, value in hashes.items()}
    long_query = flood.get("/gradio_api/queue/data", params={"session_hash": "q" * 100})
    with ThreadPoolExecutor(max_workers=20) as pool:
        codes = list(pool.map(lambda i: join(f"flood-{i}").status_code, range(100)))
    served = page.call("list_runs", [])  # another client (its cookie) is not held back
    record_property("probes_tried", len(bad) + 2)
    record_property(
        "probes_passed",
        sum(r.status_code == 400 for r in bad.values())
        + (long_query.status_code == 400)
        + (codes.count(429) > 0),
    )
    assert {name: r.status_code for name, r in bad.items()} == dict.fromkeys(hashes, 400)
    assert "session_hash: must be 1 to 64" in bad["1 MB"].text
    assert long_query.status_code == 400
    assert 0 < codes.count(200) < 100 and codes.count(429) == 100 - codes.count(200), codes
    assert served == [[]]


def test_the_design_editors_check_takes_any_json_and_is_bounded(space, record_property):
    """The Design editor's server function (Gradio's ``/component_server``) is an event like
    any other: what it is sent may be anything JSON holds and is an error on the form, never
    a crash; its body is capped; no other method of the component is reachable by it."""
    page = Browser(space.url)
    editor = page.component("design-editor")["id"]

    def call(data, fn_name: str = "check_design") -> httpx.Response:
        body = {"session_hash": page.session_hash, "component_id": editor, "fn_name": fn_name}
        return page.http.post("/gradio_api/component_server", json={**body, "data": data})

    odd = call({"description": {"a": [1]}, "rule#99.enabled": True})
    not_an_object = call(["<script>"])
    private = call({}, fn_name="preprocess")
    huge = call("x" * (9 * 2**20))
    record_property("probes_tried", 4)
    answers = [odd.status_code, not_an_object.status_code, private.status_code, huge.status_code]
    record_property(
        "probes_passed", sum(a == b for a, b in zip(answers, [200, 200, 404, 413], strict=True))
    )
    assert answers == [200, 200, 404, 413]
    assert "do not fit it" in odd.json()["errors"][""]
    assert "must be an object of input keys" in not_an_object.json()["errors"][""]


def test_anonymous_sessions_see_and_touch_only_their_own_runs(space, record_property):
    mine, other = Client(space.url, verbose=False), Client(space.url, verbose=False)
    seed_run(space.data_dir, "anon-run", visitor_owner(mine))
    probes = passed = 0

    def refused(call) -> bool:
        nonlocal probes, passed
        probes += 1
        try:
            call()
        except Exception as exc:  # gradio_client reports the app's gr.Error as an exception
            passed += "no run with id 'anon-run'" in str(exc)
            return True
        return False

    assert [r["run_id"] for r in mine.predict(api_name="/list_runs")] == ["anon-run"]
    assert other.predict(api_name="/list_runs") == []
    for api_name in ("/run_status", "/run_metrics", "/delete_run", "/resume_run", "/stop_run"):
        assert refused(lambda api_name=api_name: other.predict("anon-run", api_name=api_name))
    for args, api_name in ((("anon-run", "hi"), "/generate"), (("anon-run",), "/export_model")):
        assert refused(lambda a=args, n=api_name: other.predict(*a, api_name=n))
    # The Delete button's queue call, replayed from another browser session that opened the
    # page first (as the outside user did), then the config download's.
    stranger = Browser(space.url)
    stranger.open()
    for elem_id in ("run-delete", "run-config", "run-data"):
        probes += 1
        passed += refused_or_missing(lambda e=elem_id: stranger.click(e, ["anon-run"]))
    assert run_exists(space.data_dir, "anon-run")
    record_property("probes_tried", probes)
    record_property("probes_passed", passed)
    assert passed == probes
    assert mine.predict("anon-run", api_name="/delete_run")["run_id"] == "anon-run"
    assert not run_exists(space.data_dir, "anon-run")


def test_a_link_made_by_a_stranger_gives_the_victim_no_identity_of_theirs(space, record_property):
    """Identity fixation, as the outside probe played it: a stranger plants a visitor token of
    their choosing in their own session (the page load's inputs), makes a deep link of that
    session and sends it; the victim opens it and starts a run. The stranger must not see it,
    neither through the link nor by sending the victim's owner key or a forged cookie."""
    planted = secrets.token_urlsafe(32)
    stranger = Browser(space.url)
    stranger.open(fill=lambda component: planted)
    link = stranger.deep_link()

    victim = Browser(space.url)
    # The victim's page takes every value the link's config carries (as the browser does).
    victim.open(fill=lambda c: c.get("props", {}).get("value"), deep_link=link)
    (started,) = victim.call("start_run", [yaml.safe_dump(SMALL_RUN)])
    run_id = started["run_id"]
    try:
        with Database(db_path(space.data_dir)) as db:
            victim_owner = run_store.get_run(db, run_id).owner
        probes = {
            "deep link": stranger,
            "owner header": Browser(space.url, headers={"x-studio-visitor": victim_owner}),
            "forged cookie": Browser(space.url, cookies={"studio_visitor": f"{planted}.x"}),
        }
        seen = {
            name: [r["run_id"] for r in browser.call("list_runs", [])[0]]
            for name, browser in probes.items()
        }
        config = victim.http.get("/config").text
        record_property("probes_tried", len(probes) + 1)
        record_property(
            "probes_passed",
            sum(run_id not in runs for runs in seen.values()) + (planted not in config),
        )
        assert all(run_id not in runs for runs in seen.values()), seen
        assert planted not in config
        assert not link, "deep links stay off"
    finally:
        victim.call("stop_run", [run_id])  # the app fixture ends its worker at the latest


def test_a_visitor_cannot_queue_more_than_the_cap(space):
    visitor = Client(space.url, verbose=False)
    owner = visitor_owner(visitor)
    # A live process stands in for the workers of two running runs (its own session, so the
    # app fixture's clean-up may kill it).
    sleeper = subprocess.Popen(
        [sys.executable, "-c", "import time; time.sleep(300)"], start_new_session=True
    )
    try:
        with Database(db_path(space.data_dir)) as db:
            for run_id in ("busy-1", "busy-2"):
                run_store.create_run(
                    db,
                    run_id=run_id,
                    algorithm="grpo",
                    config={},
                    owner=owner,
                    status=RunStatus.RUNNING,
                )
                run_store.update_run(db, run_id, pid=sleeper.pid)
        with pytest.raises(Exception, match=r"runs: you have 2 queued or running runs"):
            visitor.predict(yaml.safe_dump(SMALL_RUN), api_name="/start_run")
        with Database(db_path(space.data_dir)) as db:
            assert count_active(db, owner) == 2
    finally:
        sleeper.kill()
        sleeper.wait()


# ---- the app with logins --------------------------------------------------------------------
USERS = {
    "alice": "alice-pw",
    "bob": "bob-pw",
    "carol": "carol-pw",
    "dave": "dave-pw",
    "erin": "erin-pw",
}
# Longer than five sequential wrong logins take on a busy machine; the 200-attempt flood runs on
# another name, so its length (over 10 s with three jobs on this machine) is not in the window.
WINDOW_S = 8


@pytest.fixture(scope="module")
def logins(tmp_path_factory, start_app):
    data_dir = tmp_path_factory.mktemp("logins") / "data"
    data_dir.mkdir()
    seed_run(data_dir, "alice-run", "user:alice")
    seed_run(data_dir, "bob-run", "user:bob")
    env = {
        "STUDIO_AUTH": ",".join(f"{u}:{p}" for u, p in USERS.items()),
        "STUDIO_ADMINS": "user:carol",
        "STUDIO_LOGIN_WINDOW_S": str(WINDOW_S),
    }
    with start_app(data_dir, env) as app:
        yield app


def test_logged_in_users_reach_only_their_runs_and_admins_all(logins, record_property):
    bob = Client(logins.url, auth=("bob", USERS["bob"]), verbose=False)
    carol = Client(logins.url, auth=("carol", USERS["carol"]), verbose=False)
    assert [r["run_id"] for r in bob.predict(api_name="/list_runs")] == ["bob-run"]
    assert {r["run_id"] for r in carol.predict(api_name="/list_runs")} == {"alice-run", "bob-run"}
    with pytest.raises(Exception, match="no run with id 'alice-run'"):
        bob.predict("alice-run", api_name="/delete_run")

    browser = Browser(logins.url)
    assert browser.login("bob", USERS["bob"]) == 200
    probes = data_dir_probes(logins.data_dir, "alice-run")
    refused = sum(
        browser.http.get(f"/gradio_api/file={path}").status_code in (403, 404) for path in probes
    )
    browser.open()
    refused += refused_or_missing(lambda: browser.click("run-delete", ["alice-run"]))
    assert run_exists(logins.data_dir, "alice-run")
    record_property("probes_tried", len(probes) + 1)
    record_property("probes_passed", refused)
    assert refused == len(probes) + 1

    # The owner's download is a copy Gradio serves from its cache, fetchable by its URL.
    download, _ = browser.click("run-config", ["bob-run"])
    url = download["value"]["url"]
    assert "/gradio_api/file=" in url and str(logins.data_dir) not in url
    assert browser.http.get(url[url.index("/gradio_api/") :]).text == "name: bob-run\n"


def test_wrong_passwords_are_rate_limited(logins, record_property):
    def attempt(i: int) -> int:
        return Browser(logins.url).login("dave", f"guess-{i}")

    with ThreadPoolExecutor(max_workers=16) as pool:
        codes = list(pool.map(attempt, range(200)))
    assert codes.count(200) == 0
    # The window, on a name the flood did not touch: five wrong passwords lock it...
    browser = Browser(logins.url)
    started = time.monotonic()
    for i in range(5):
        assert browser.login("erin", f"guess-{i}") == 400
    # ...so even the right password is refused until the window has passed
    assert browser.login("erin", USERS["erin"]) == 400
    assert Browser(logins.url).login("alice", USERS["alice"]) == 200  # other names unaffected
    time.sleep(max(0.0, WINDOW_S + 0.5 - (time.monotonic() - started)))
    deadline = time.monotonic() + WINDOW_S + 5
    while browser.login("erin", USERS["erin"]) != 200:
        assert time.monotonic() < deadline, "the right password stayed refused past the window"
        time.sleep(0.5)
    record_property("probes_tried", len(codes))
    record_property("probes_passed", len(codes) - codes.count(200))


def test_a_judge_spec_reaches_only_the_operators_endpoint_with_only_its_key(space, record_property):
    """A visitor's judge spec through /score_preview: no other host (a user part after the
    operator's bare origin, a redirect) is called and no other server secret is sent as the key.
    """
    judge = f"http://127.0.0.1:{space.judge.server_address[1]}"
    elsewhere = f"127.0.0.1:{space.elsewhere.server_address[1]}"
    visitor = Client(space.url, verbose=False)
    probes = [
        {"url": f"{judge}@{elsewhere}/v1"},
        {"url": f"{judge}/redirect/v1"},
        {"url": f"{judge}/v1", "api_key_env": "HF_TOKEN"},
    ]
    passed = 0
    for params in probes:
        component = {"model": "m", "timeout_s": 2.0, "retries": 0, **params}
        spec = json.dumps({"components": [{"name": "judge", "params": component}]})
        try:
            answer = json.dumps(visitor.predict(spec, ["hi"], api_name="/score_preview"))
        except Exception as exc:  # the app's error names the refused field
            answer = str(exc)
        sent = space.judge.requests + space.elsewhere.requests
        passed += (
            not space.elsewhere.requests
            and SPACE_HF_TOKEN not in answer
            and all(SPACE_HF_TOKEN not in str(auth) for _, _, auth in sent)
        )
    # the operator's endpoint with the operator's key still works
    spec = json.dumps({"components": [{"name": "judge", "params": {"model": "m", "url": judge}}]})
    assert visitor.predict(spec, ["hi"], api_name="/score_preview")["totals"] == [0.9]
    assert space.judge.requests[-1][2] == f"Bearer {OPERATOR_JUDGE_KEY}"
    record_property("probes_tried", len(probes))
    record_property("probes_passed", passed)
    assert passed == len(probes), space.judge.requests + space.elsewhere.requests


def test_generate_and_export_refuse_out_of_bounds_input_by_field(space, record_property):
    """The visitor's own run through /generate and /export_model: sizes beyond the public caps
    and names outside the allowed formats are refused naming the input, before any model loads."""
    visitor = Client(space.url, verbose=False)
    seed_run(space.data_dir, "bounds-run", visitor_owner(visitor))
    probes = [
        (("bounds-run", "hi", "latest", {"num_samples": 1000}), "/generate", "num_samples"),
        (("bounds-run", "hi", "latest", {"max_new_tokens": 1000}), "/generate", "max_new_tokens"),
        (("bounds-run", "hi", "latest", {"seed": -1}), "/generate", "seed"),
        (("bounds-run", "x" * 5000, "latest", None), "/generate", "prompt: 5,000 characters"),
        (
            ("bounds-run", "hi", "latest", {"__class__": 1}),
            "/generate",
            "settings.__class__: unknown",
        ),
        (("bounds-run", "../../etc", "F16"), "/export_model", "format: must be one of"),
        (("bounds-run", "gguf", "../F16"), "/export_model", "quant: must be one of"),
    ]
    passed = 0
    for args, api_name, named in probes:
        try:
            visitor.predict(*args, api_name=api_name)
        except Exception as exc:  # the app's gr.Error: its message, no traceback
            passed += named in str(exc) and "Traceback" not in str(exc)
    record_property("probes_tried", len(probes))
    record_property("probes_passed", passed)
    assert passed == len(probes)


def test_similarity_previews_bound_their_work(space, record_property):
    """/score_preview with ROUGE-L on a long completion and a long answer: not scored (its cost
    is the product of both lengths), instead of holding a worker for as long as it takes."""
    words = " ".join(f"w{i % 97}" for i in range(2100))  # 2,100 x 2,100 word pairs
    spec = json.dumps({"components": [{"name": "similarity", "params": {"metric": "rouge_l"}}]})
    got = Client(space.url, verbose=False).predict(
        spec, [words], None, [words], api_name="/score_preview"
    )
    explanation = got["samples"][0]["trace"][0]["explanation"]
    record_property("probes_tried", 1)
    record_property("probes_passed", int(got["totals"] == [None] and "chrf" in explanation))
    assert got["totals"] == [None] and "use chrf" in explanation
