"""Compare's picks in the address, in a real browser (issue 45, deliverable 2): a pick writes
?compare=ID,ID; a reload or a link opens Compare on those runs; back/forward go through them."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import Page, expect

from tests.ui.test_browser import open_tab, record_run
from ui.compare.tab import linked_runs

pytestmark = pytest.mark.browser


def pick(page: Page, name: str) -> None:
    page.locator("#compare-runs input").click()
    page.get_by_role("option", name=re.compile(name)).click()


def test_the_runs_picked_in_compare_are_in_the_address(page: Page, live_app):
    first = record_run(live_app.data_dir, "linked first", steps=2)
    second = record_run(live_app.data_dir, "linked second", steps=3)
    page.reload()
    page.wait_for_selector("#main-tabs")
    open_tab(page, "Compare")
    summary = page.locator("#compare-summary")
    pick(page, "linked first")
    page.wait_for_url(f"**?compare={first}")
    pick(page, "linked second")
    page.wait_for_url(f"**?compare={first}%2C{second}")
    page.keyboard.press("Escape")
    expect(summary).to_contain_text("linked second")
    page.reload()
    page.wait_for_selector("#main-tabs")
    compare = page.get_by_role("tab", name="Compare", exact=True)
    expect(compare).to_have_attribute("aria-selected", "true")  # a link opens on Compare
    # A page load runs several events: seconds each at load 7 on the 2-core machine.
    expect(summary).to_contain_text("linked first", timeout=60_000)
    expect(summary).to_contain_text("linked second")
    page.go_back()
    page.wait_for_url(f"**?compare={first}")
    expect(summary).to_contain_text("linked first", timeout=60_000)
    expect(summary).not_to_contain_text("linked second")
    page.go_forward()
    page.wait_for_url(f"**?compare={first}%2C{second}")
    expect(summary).to_contain_text("linked second", timeout=60_000)


def test_a_compare_address_picks_only_the_viewers_runs_once_each():
    choices = [("a · completed", "grpo-a"), ("b · completed", "grpo-b")]
    assert linked_runs(choices, "grpo-b,nope,grpo-a,grpo-b") == ["grpo-b", "grpo-a"]
    assert linked_runs(choices, None) == []
    assert linked_runs(choices, ",".join(["grpo-a"] * 500)) == ["grpo-a"]
