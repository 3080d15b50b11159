"""The Train form's data in a real browser (issue 45, bugs 3 and 4): a reload keeps the built-in
task, and picking the agent model brings the agent run's task, tool and completion length, as
the Preview does."""

from __future__ import annotations

import pytest
from playwright.sync_api import Page, expect

from engine.config.agent import agent_config
from engine.config.run_config import RunConfig, documented_yaml
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


def test_a_config_file_fills_the_form_and_its_reward_the_design(page: Page, tmp_path):
    """``export-config --task agent``'s file, renamed and set to 7 steps, brought into the form;
    a bad file is refused naming the field (issue 45, deliverable 5)."""
    config = RunConfig.from_dict(
        {**agent_config().to_dict(), "name": "loaded run", "training": {"steps": 7}}
    )
    good = tmp_path / "agent-run.yaml"
    good.write_text(documented_yaml(config), encoding="utf-8")
    bad = tmp_path / "bad-run.yaml"
    bad.write_text("training:\n  steps: -3\n", encoding="utf-8")
    open_tab(page, "Train")
    message = page.locator("#train-load-message")
    for path in (bad, good):
        with page.expect_file_chooser() as chooser:
            page.locator("#train-load-config").click()
        chooser.value.set_files(str(path))
        if path == bad:
            expect(message).to_contain_text("Not loaded: config file: training.steps")
    expect(message).to_contain_text("Loaded agent-run.yaml into the form")
    expect(page.locator("#train-name input, #train-name textarea").first).to_have_value(
        "loaded run"
    )
    expect(page.locator("#train-training-steps input").first).to_have_value("7")
    open_data(page)
    expect(task_box(page, "calculator")).to_be_checked()
    max_len = page.locator("#train-generation-max-completion-length input").first
    expect(max_len).to_have_value("192")
    expect(page.locator("#train-summary")).to_contain_text("7 steps")
    open_tab(page, "Design")
    expect(page.locator("#spec-status")).to_contain_text("tool_answer × 1", timeout=60_000)
