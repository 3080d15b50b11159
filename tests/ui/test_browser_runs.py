"""Managing many runs in a real browser: the whole runs table, tags and a note per run saved from
the Runs tab and shown in the table and in Compare, search and filter of the table."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import Page, expect

from tests.ui.test_browser import column, headers, open_tab, pick_run, record_run, rows

pytestmark = pytest.mark.browser


def test_runs_get_tags_and_a_note_and_are_found_by_them(page: Page, live_app):
    # The app serves every browser test: other modules' runs are in the table too.
    record_run(live_app.data_dir, "managed plain run", steps=2)
    record_run(live_app.data_dir, "managed tagged run", steps=3, failed=True)
    page.reload()
    page.wait_for_selector("#main-tabs")
    open_tab(page, "Runs")
    expect(page.locator("#runs-table")).to_contain_text("managed tagged run")
    # Every column of the runs table is inside its box (the last one was cut off).
    assert headers(page, "runs-table")[-1] == "duration"
    overflow = page.evaluate(
        "() => { const t = document.querySelector('#runs-table');"
        " const ths = [...t.querySelectorAll('thead th')];"
        " return ths.at(-1).getBoundingClientRect().right - t.getBoundingClientRect().right; }"
    )
    assert overflow <= 1, overflow

    pick_run(page, "managed tagged run")
    expect(page.locator("#run-status")).to_contain_text("managed tagged run")
    page.locator("#run-tags textarea, #run-tags input").first.fill("ablation, <b>lr</b>")
    page.locator("#run-note textarea").fill("x" * 2001)
    page.locator("button#run-labels-save").click()
    expect(page.locator("#run-labels-message")).to_contain_text("note: 2,001 characters")
    page.locator("#run-note textarea").fill("diverged after *step 2*")
    page.locator("button#run-labels-save").click()
    expect(page.locator("#run-labels-message")).to_contain_text("Saved the tags and note")
    tags_at = headers(page, "runs-table").index("tags")
    expect(page.locator("#runs-table")).to_contain_text("ablation, <b>lr</b>")  # as typed
    # The note has its own column (its first line), as docs/dashboard.md says.
    note_at = headers(page, "runs-table").index("note")
    expect(page.locator("#runs-table")).to_contain_text("diverged after *step 2*")
    assert "diverged after *step 2*" in column(page, "runs-table", note_at)

    search = page.locator("#runs-search textarea, #runs-search input").first
    # A word no other module's run carries (test_browser_baseline names its runs "baseline ...").
    search.fill("ablation")
    expect(rows(page, "runs-table")).to_have_count(1)
    assert column(page, "runs-table", tags_at) == ["ablation, <b>lr</b>"]
    search.fill("managed")
    expect(rows(page, "runs-table")).to_have_count(2)
    page.locator("#runs-status-filter input").click()
    page.get_by_role("option", name="completed", exact=True).click()
    expect(rows(page, "runs-table")).to_have_count(1)
    assert column(page, "runs-table", 1) == ["managed plain run"]

    open_tab(page, "Compare")
    page.locator("#compare-runs input").click()
    page.get_by_role("option", name=re.compile("managed tagged run")).click()
    page.keyboard.press("Escape")
    summary = page.locator("#compare-summary")
    expect(summary).to_contain_text("note: diverged after *step 2*")  # not emphasis
    expect(summary).to_contain_text("<b>lr</b>")  # not bold
