"""One browser session over plain HTTP, as the security probes drive the app: its cookie jar,
its session hash, the page's load events and queue calls by button ``elem_id`` (private events
included) or by API name."""

from __future__ import annotations

import json
import secrets
import threading
from collections.abc import Callable
from typing import Any

import httpx


class Browser:
    """One browser session over plain HTTP: its cookies and session hash, and the page's queue
    calls by the ``elem_id`` of the button that triggers them (private events included)."""

    def __init__(self, url: str, **client: Any) -> None:
        self.http = httpx.Client(base_url=url, timeout=60, **client)
        self.session_hash = secrets.token_hex(6)
        self._config: dict | None = None

    def login(self, username: str, password: str) -> int:
        response = self.http.post("/login", data={"username": username, "password": password})
        return response.status_code

    def config(self) -> dict:
        if self._config is None:
            response = self.http.get("/config")
            response.raise_for_status()
            self._config = response.json()
        return self._config

    def component(self, elem_id: str) -> dict:
        found = [
            c for c in self.config()["components"] if c.get("props", {}).get("elem_id") == elem_id
        ]
        assert found, f"no component #{elem_id}"
        return found[0]

    def click(self, elem_id: str, data: list) -> list:
        """The outputs of the click event of button ``#elem_id`` sent with ``data``."""
        target = self.component(elem_id)["id"]
        return self._event([target, "click"], data)

    def open(self, fill: Callable[[dict], Any] | None = None, deep_link: str = "") -> None:
        """Run the page's load events in order, as a browser opening the page does (one of them
        fills the run lists of this session). ``fill(component)`` gives each load input's value
        (default: none, as a fresh browser has nothing in local storage); ``deep_link`` opens
        the page's config with that link, as ``/?deep_link=ID`` does."""
        if deep_link:
            response = self.http.get("/config", params={"deep_link": deep_link})
            response.raise_for_status()
            self._config = response.json()
        components = {c["id"]: c for c in self.config()["components"]}
        loads = [
            d for d in self.config()["dependencies"] if any(t[1] == "load" for t in d["targets"])
        ]
        assert loads, "the page has no load event"
        for i, load in enumerate(loads):
            trigger = next(t for t in load["targets"] if t[1] == "load")
            values = [fill(components[c]) if fill else None for c in load["inputs"]]
            self._event(trigger, values, index=i)

    def deep_link(self) -> str:
        """The id of a deep link to this session's component values, as Gradio's
        ``gr.DeepLinkButton`` asks for it; ``""`` when the app refuses to make one."""
        response = self.http.get(
            "/gradio_api/deep_link", params={"session_hash": self.session_hash}
        )
        return response.json() if response.status_code == 200 else ""

    def call(self, api_name: str, data: list, on_start: threading.Event | None = None) -> list:
        """The outputs of the named endpoint ``api_name`` sent with ``data`` in this session;
        ``on_start`` is set when the app starts processing it (it has left the queue)."""
        deps = [
            (i, d)
            for i, d in enumerate(self.config()["dependencies"])
            if d.get("api_name") == api_name
        ]
        assert deps, f"no endpoint {api_name}"
        return self._join(deps[0][1].get("id", deps[0][0]), None, data, on_start)

    def _event(self, trigger: list, data: list, index: int = 0) -> list:
        """The outputs of the ``index``-th event listening to ``trigger``."""
        deps = [
            (i, d) for i, d in enumerate(self.config()["dependencies"]) if trigger in d["targets"]
        ]
        assert deps, f"no event for {trigger}"
        return self._join(deps[index][1].get("id", deps[index][0]), trigger[0], data)

    def _join(
        self,
        fn_index: int,
        trigger_id: int | None,
        data: list,
        on_start: threading.Event | None = None,
    ) -> list:
        joined = self.http.post(
            "/gradio_api/queue/join",
            json={
                "data": data,
                "event_data": None,
                "fn_index": fn_index,
                "trigger_id": trigger_id,
                "session_hash": self.session_hash,
            },
        )
        joined.raise_for_status()
        with self.http.stream(
            "GET", "/gradio_api/queue/data", params={"session_hash": self.session_hash}
        ) as stream:
            for line in stream.iter_lines():
                if not line.startswith("data:"):
                    continue
                message = json.loads(line[5:])
                if message.get("msg") == "process_starts" and on_start is not None:
                    on_start.set()
                if message.get("msg") == "process_completed":
                    output = message.get("output", {})
                    if not message.get("success"):
                        raise EventRefused(output.get("error") or str(output))
                    return output["data"]
        raise AssertionError("the queue stream ended without a result")


class EventRefused(Exception):
    """The app answered a queue call with an error."""
