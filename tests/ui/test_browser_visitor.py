"""An anonymous visitor of a public app keeps their runs across a reload, in a real browser."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import Page, expect

from storage import runs as run_store
from storage.db import Database
from storage.paths import db_path

pytestmark = pytest.mark.browser


def open_page(browser, url: str) -> Page:
    page = browser.new_context(viewport={"width": 1400, "height": 1000}).new_page()
    page.set_default_timeout(30_000)
    page.goto(url)
    page.wait_for_selector("#main-tabs", timeout=60_000)
    return page


def test_an_anonymous_visitor_keeps_their_runs_across_a_reload(browser, start_app, tmp_path):
    data_dir = tmp_path / "data"
    data_dir.mkdir()
    with start_app(data_dir, {"STUDIO_PUBLIC": "1"}) as app:
        page = open_page(browser, app.url)
        expect(page.locator("#app-header")).to_contain_text("They belong to this browser")
        page.get_by_role("tab", name="Train", exact=True).click()
        for elem_id, value in (("train-training-steps", 1), ("train-training-eval-samples", 0)):
            box = page.locator(f"#{elem_id} input").first
            box.fill(str(value))
            box.press("Tab")
        page.locator("#train-start").click()
        status = page.locator("#run-status")
        expect(status).to_contain_text("id ", timeout=30_000)
        run_id = re.search(r"id (\S+)", status.inner_text()).group(1)

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
