"""A reload keeps the work, in a real browser: the reward design, the Train form, the chart
settings and the open tab come back from the browser's storage (issue 25 item 6)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from playwright.sync_api import Page, expect

from tests.ui.test_browser import column, open_tab, rows, set_number

pytestmark = pytest.mark.browser


@contextmanager
def stored_change(page: Page, key: str) -> Iterator[None]:
    """Waits, after the block, until the browser has written a new value under ``key``."""
    before = page.evaluate("(key) => localStorage.getItem(key)", key)
    yield
    page.wait_for_function(
        "([key, before]) => localStorage.getItem(key) !== before", arg=[key, before], timeout=60_000
    )


def test_a_reload_restores_the_design_the_train_form_chart_settings_and_the_tab(page: Page):
    with stored_change(page, "reward-studio-design"):
        set_number(page, "format-weight", 2)
        expect(page.locator("#spec-status")).to_contain_text("format × 2")
    open_tab(page, "Train")
    page.locator("#train-name input, #train-name textarea").first.fill("kept run")
    page.locator("#train-algorithm").get_by_text("RLOO", exact=True).click()
    set_number(page, "train-training-steps", 7)
    page.locator("#train-model input").click()
    page.get_by_role("option", name=re.compile("Hugging Face id")).click()
    custom = page.locator("#train-custom-model input, #train-custom-model textarea").first
    custom.fill("Qwen/Qwen2.5-0.5B-Instruct")
    custom.press("Tab")
    expect(page.locator("#train-summary")).to_contain_text("7 steps")
    open_tab(page, "Runs")
    # Each change writes the chart settings once, seconds later on a busy machine: wait for each
    # write (the stored text is encrypted with a fresh salt, so every write differs).
    with stored_change(page, "reward-studio-charts"):
        page.locator("#chart-log input").check()
    box = page.locator("#chart-smoothing input[type=number]")
    with stored_change(page, "reward-studio-charts"):
        box.fill("0.5")
        box.press("Enter")

    page.reload()
    page.wait_for_selector("#main-tabs")
    expect(page.get_by_role("tab", name="Runs", exact=True)).to_have_attribute(
        "aria-selected", "true"
    )
    expect(page.locator("#chart-smoothing input[type=number]")).to_have_value("0.5")
    expect(page.locator("#chart-log input")).to_be_checked()
    open_tab(page, "Design")
    # The restore queues behind the page's other loads: a minute on a loaded two-core machine.
    expect(page.locator("#spec-status")).to_contain_text("format × 2", timeout=60_000)
    expect(page.locator("#format-weight input").first).to_have_value("2")
    expect(page.locator("#import-message")).to_contain_text("Restored the design")
    open_tab(page, "Train")
    expect(page.locator("#train-name input, #train-name textarea").first).to_have_value("kept run")
    expect(page.locator("#train-training-steps input").first).to_have_value("7")
    expect(page.locator("#train-algorithm input[value=rloo]")).to_be_checked()
    expect(custom).to_be_visible()
    expect(custom).to_have_value("Qwen/Qwen2.5-0.5B-Instruct")
    # The pretrained model's suggestions did not overwrite the restored values.
    expect(page.locator("#train-summary")).to_contain_text("7 steps")
    stored = page.evaluate("() => Object.keys(localStorage).filter(k => k.startsWith('reward'))")
    assert sorted(stored) == [
        "reward-studio-charts",
        "reward-studio-design",
        "reward-studio-tab",
        "reward-studio-train",
    ]


@pytest.mark.slow
def test_a_reload_draws_the_last_preview_again_while_its_cache_is_kept(page: Page):
    open_tab(page, "Preview")
    set_number(page, "preview-prompts", 1)
    set_number(page, "preview-samples", 2)
    page.locator("#preview-generate").click()
    expect(rows(page, "preview-table")).to_have_count(2, timeout=240_000)
    completions = column(page, "preview-table", 3)
    # The browser writes the preview's token after the event (seconds later on a busy machine).
    page.wait_for_function("() => localStorage.getItem('reward-studio-preview') !== null")

    page.reload()
    page.wait_for_selector("#main-tabs")
    open_tab(page, "Preview")
    expect(rows(page, "preview-table")).to_have_count(2)
    assert column(page, "preview-table", 3) == completions  # the same, not generated again
    # (Its token opens it for its owner only: tests/ui/test_kept_preview.py; this local app
    # has one owner.)
