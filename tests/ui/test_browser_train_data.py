"""The Train form's data in a real browser (issue 45, bugs 3 and 4): a reload keeps the built-in
task, and picking the agent model brings the agent run's task, tool and completion length, as
the Preview does."""

from __future__ import annotations

import pytest
from playwright.sync_api import Page, expect

from tests.ui.test_browser import open_tab
from tests.ui.test_browser_agent import AGENT_MODEL
from tests.ui.test_browser_memory import stored_change
from ui.shared.data_inputs import TASK_LABELS

pytestmark = pytest.mark.browser


def task_box(page: Page, task: str):
    return page.locator("#train-data-task").get_by_label(TASK_LABELS[task])


def open_data(page: Page) -> None:
    page.get_by_text("Training data", exact=True).click()


def test_a_reload_keeps_the_train_forms_data_task(page: Page):
    open_tab(page, "Train")
    open_data(page)
    with stored_change(page, "reward-studio-train"):
        task_box(page, "calculator").check()
    expect(page.locator("#train-yaml")).to_contain_text("task: calculator")

    page.reload()
    page.wait_for_selector("#main-tabs")
    open_tab(page, "Train")
    open_data(page)
    expect(task_box(page, "calculator")).to_be_checked()
    # What Start would train on: the config built from the restored form.
    expect(page.locator("#train-yaml")).to_contain_text("task: calculator")


def test_picking_the_agent_model_sets_up_the_agent_run(page: Page):
    open_tab(page, "Train")
    page.locator("#train-model input").click()
    page.get_by_role("option", name=AGENT_MODEL, exact=True).click()
    open_data(page)
    expect(task_box(page, "calculator")).to_be_checked()
    expect(page.locator("#train-tools-builtin").get_by_label("calculator")).to_be_checked()
    max_len = page.locator("#train-generation-max-completion-length input").first
    expect(max_len).to_have_value("192")
    expect(page.locator("#train-model-note")).to_contain_text("calculator agent")
    # The config Start would launch (the file view draws only its first lines).
    expect(page.locator("#train-yaml")).to_contain_text("task: calculator")
    expect(page.locator("#train-summary")).to_contain_text("up to 192 new tokens")
