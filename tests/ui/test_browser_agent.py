"""The agent preset in a real browser (issue 24): its Preview runs the tool loop with the
shipped agent model and shows each rollout as turns with its calls' trace lines."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import Page, expect

from ui.shared.data_inputs import TASK_LABELS

pytestmark = [pytest.mark.browser, pytest.mark.slow]

AGENT_MODEL = "Reward Studio agent (0.7M, calls the calculator, character-level)"


def test_the_preview_of_the_agent_preset_shows_a_tool_call_and_its_trace_line(page: Page):
    page.locator("#preset input").click()
    page.get_by_role("option", name="calculator agent").click()
    page.locator("#load-preset").click()
    expect(page.locator("#slot-tool-answer")).to_contain_text("● on")

    page.get_by_role("tab", name="Preview", exact=True).click()
    page.locator("#preview-model input").click()
    page.get_by_role("option", name=AGENT_MODEL, exact=True).click()
    # The agent model brings its tool, its task and the room a call and its result need.
    expect(page.locator("#preview-tools").get_by_label("calculator")).to_be_checked()
    task = page.locator("#preview-data-task").get_by_label(TASK_LABELS["calculator"])
    expect(task).to_be_checked()
    expect(page.locator("#preview-max-tokens input")).to_have_value("192")
    for elem_id, value in (("preview-prompts", 3), ("preview-samples", 2)):
        box = page.locator(f"#{elem_id} input").first
        box.fill(str(value))
        box.press("Tab")
    page.locator("#preview-generate").click()
    table = page.locator("#preview-table div.virtual-row")
    expect(table).to_have_count(6, timeout=240_000)
    expect(page.locator("#preview-summary")).to_contain_text("tools: calculator")

    called = table.filter(has_text="tool result")
    expect(called.first).to_contain_text("tool call")
    called.first.locator(".body-cell").nth(2).click()
    trace = page.locator("#preview-trace")
    expect(trace).to_contain_text(re.compile(r"call 1: calculator\('\d+ ?\* ?\d+'\) -> \d+"))
