"""Empty views say why and what to do, in a real browser (issue 45, bug 8): a runs search that
matches nothing, and the reward lab's A/B table before its first Compare."""

from __future__ import annotations

import pytest
from playwright.sync_api import Page, expect

from tests.ui.test_browser import headers, open_tab, record_run, rows

pytestmark = pytest.mark.browser


def test_a_search_that_matches_no_run_says_so(page: Page, live_app):
    record_run(live_app.data_dir, "empty state run", steps=1)
    page.reload()
    page.wait_for_selector("#main-tabs")
    open_tab(page, "Runs")
    note = page.locator("#runs-table-empty")
    search = page.locator("#runs-search textarea, #runs-search input").first
    search.fill("empty state run")
    expect(rows(page, "runs-table")).to_have_count(1)
    expect(note).not_to_contain_text("No run")
    search.fill("zzz-no-such-run")
    expect(rows(page, "runs-table")).to_have_count(0)
    expect(note).to_contain_text("matches “zzz-no-such-run”: clear the search")


def test_the_ab_table_names_its_columns_before_the_first_compare(page: Page):
    open_tab(page, "Preview")
    page.get_by_text("Reward lab: compare specs and sweep weights").click()
    expect(page.locator("#lab-ab-summary")).to_contain_text("press Compare")
    assert headers(page, "lab-ab-table")[:3] == ["#", "group", "completion"]
