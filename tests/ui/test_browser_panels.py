"""No panel stays from another run or another spec, in a real browser: the export message and
download and the action message go when another run is opened, Design's prepared downloads go
when the spec changes, and a list redraw (not a new run opened) takes nothing away."""

from __future__ import annotations

import pytest
from playwright.sync_api import Page, expect

from tests.ui.test_browser import open_tab, pick_run, record_run, set_number

pytestmark = pytest.mark.browser


@pytest.mark.opens_a_link
def test_another_runs_messages_and_exports_do_not_stay(page: Page, live_app):
    first = record_run(live_app.data_dir, "first panel run", steps=2)
    record_run(live_app.data_dir, "second panel run", steps=2)
    page.goto(f"{live_app.url}?run={first}")
    page.wait_for_selector("#main-tabs")
    open_tab(page, "Runs")
    expect(page.locator("#run-status")).to_contain_text("first panel run")  # the link's run
    page.locator("button#run-config").click()
    action = page.locator("#run-action-message")
    expect(action).to_contain_text(f"Run {first} has no output folder")
    page.get_by_text("Export the model (Hugging Face, merged, GGUF, Ollama)").click()
    page.locator("button#export-model").click()
    export = page.locator("#export-message")
    expect(export).to_contain_text(f"Run {first} has no output folder")
    page.locator("#run-tags input, #run-tags textarea").first.fill("typed, not saved")
    # A new run elsewhere redraws the list and the picker's choices: the open run's panels stay.
    record_run(live_app.data_dir, "third panel run", steps=1)
    expect(page.locator("#runs-table")).to_contain_text("third panel run")
    page.wait_for_timeout(2000)
    expect(action).to_contain_text("has no output folder")
    expect(export).to_contain_text("has no output folder")
    expect(page.locator("#run-tags input, #run-tags textarea").first).to_have_value(
        "typed, not saved"
    )
    pick_run(page, "second panel run")
    expect(page.locator("#run-status")).to_contain_text("second panel run")
    expect(export).to_have_text("")
    expect(action).to_have_text("")
    expect(page.locator("#run-tags input, #run-tags textarea").first).to_have_value("")


def test_prepared_spec_downloads_go_when_the_spec_changes(page: Page):
    page.locator("#export-spec").click()
    link = page.locator("a[download][href*='reward_spec.yaml']")
    expect(link).to_have_count(1)
    set_number(page, "format-weight", 2)
    expect(page.locator("#spec-code")).to_contain_text('"weight": 2.0')
    expect(link).to_have_count(0)
    page.locator("#export-spec").click()
    expect(link).to_have_count(1)  # prepared again, for the spec as it is now
