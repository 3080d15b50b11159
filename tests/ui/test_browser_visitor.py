"""An anonymous visitor of a public app keeps their runs across a reload, and a link a stranger
made takes none of them, in a real browser."""

from __future__ import annotations

import re
import secrets

import pytest
from playwright.sync_api import Page, expect

from storage import runs as run_store
from storage.paths import db_path
from storage.sqlite.db import Database
from tests.ui.http_session import Browser

pytestmark = [pytest.mark.browser, pytest.mark.reliability]


def open_page(browser, url: str) -> Page:
    page = browser.new_context(viewport={"width": 1400, "height": 1000}).new_page()
    page.set_default_timeout(30_000)
    page.goto(url)
    page.wait_for_selector("#main-tabs", timeout=60_000)
    return page


def test_an_anonymous_visitor_keeps_their_runs_and_a_strangers_link_takes_none(
    browser, start_app, tmp_path, record_property
):
    data_dir = tmp_path / "data"
    data_dir.mkdir()
    with start_app(data_dir, {"STUDIO_PUBLIC": "1"}) as app:
        page = open_page(browser, app.url)  # the victim, a returning visitor from now on
        expect(page.locator("#app-header")).to_contain_text("They belong to this browser")
        # The stranger plants a visitor token of their choosing in their own session (the
        # page load's inputs), makes a deep link of it and sends the victim the app with it.
        planted = secrets.token_urlsafe(32)
        stranger = Browser(app.url)
        stranger.open(fill=lambda component: planted)
        link = stranger.deep_link() or "made-up-link"
        page.goto(f"{app.url}?deep_link={link}")
        page.wait_for_selector("#main-tabs")
        # The page's scripts never see the visitor cookie (HttpOnly).
        assert "studio_visitor" not in page.evaluate("document.cookie")
        page.get_by_role("tab", name="Train", exact=True).click()
        for elem_id, value in (("train-training-steps", 1), ("train-training-eval-samples", 0)):
            box = page.locator(f"#{elem_id} input").first
            box.fill(str(value))
            box.press("Tab")
        page.locator("#train-start").click()
        status = page.locator("#run-status")
        expect(status).to_contain_text("id ", timeout=30_000)
        run_id = re.search(r"id (\S+)", status.inner_text()).group(1)
        seen_by_stranger = [r["run_id"] for r in stranger.call("list_runs", [])[0]]
        record_property("probes_tried", 1)
        record_property("probes_passed", int(run_id not in seen_by_stranger))
        assert run_id not in seen_by_stranger

        page.reload()
        page.wait_for_selector("#main-tabs")
        page.get_by_role("tab", name="Runs", exact=True).click()
        expect(page.locator("#runs-table")).to_contain_text(run_id)

        stranger = open_page(browser, app.url)  # another browser profile: another visitor
        stranger.get_by_role("tab", name="Runs", exact=True).click()
        expect(stranger.locator("#run-status")).to_contain_text("No run selected")
        expect(stranger.locator("#runs-table")).not_to_contain_text(run_id)

        with Database(db_path(data_dir)) as db:
            owner = run_store.get_run(db, run_id).owner
        # A hash of the browser's token: the database never holds the secret itself.
        assert re.fullmatch(r"anon:[0-9a-f]{32}", owner), owner
