"""The dashboard driven in a real browser (Debian's chromium through Playwright).

One app (see ``conftest.live_app``) serves the whole module. Slow tests generate with the
shipped default model or train it for 3 GRPO steps.
"""

from __future__ import annotations

import re
import time

import pytest
from playwright.sync_api import Page, expect

pytestmark = pytest.mark.browser

TABS = ("Design", "Preview", "Train", "Runs", "Compare")


def open_tab(page: Page, name: str) -> None:
    page.get_by_role("tab", name=name, exact=True).click()


def set_number(page: Page, elem_id: str, value) -> None:
    box = page.locator(f"#{elem_id} input").first
    box.fill(str(value))
    box.press("Tab")


def rows(page: Page, table_id: str):
    """The body rows of a Gradio dataframe (drawn as ``div[role=row]``)."""
    return page.locator(f"#{table_id} div[role=row]")


def headers(page: Page, table_id: str) -> list[str]:
    return page.locator(f"#{table_id} thead th").evaluate_all(
        "(ths) => ths.map(th => th.getAttribute('title'))"
    )


def column(page: Page, table_id: str, index: int) -> list[str]:
    cells = rows(page, table_id).evaluate_all(
        "(rows, i) => rows.map(r => r.querySelectorAll('[role=gridcell]')[i]?.innerText.trim())",
        index,
    )
    return list(cells)


def chart_points(page: Page, chart: str) -> list[int]:
    """Points per trace of a Plotly chart as drawn in the page (empty: no trace yet)."""
    return page.evaluate(
        "(id) => { const el = document.querySelector(`#${id} .js-plotly-plot`);"
        " return el && el.data ? el.data.map(d => d.x.length) : []; }",
        f"chart-{chart}",
    )


def test_app_opens_with_every_tab(page: Page):
    expect(page.locator("#spec-status")).to_contain_text("Valid reward")
    for name in TABS:
        open_tab(page, name)
    expect(page.locator("#run-status")).to_contain_text("No run selected")
    open_tab(page, "Train")
    expect(page.locator("#train-yaml")).to_contain_text("algorithm: grpo")


def test_a_bad_parameter_is_reported_next_to_it(page: Page):
    set_number(page, "correctness-abs-tol", -1)
    error = page.locator("#error-correctness-abs-tol")
    expect(error).to_contain_text("must be a number in [0.0")
    expect(page.locator("#spec-status")).to_contain_text("1 field to fix")
    set_number(page, "correctness-abs-tol", 0)
    expect(error).to_be_hidden()
    expect(page.locator("#spec-status")).to_contain_text("Valid reward")


def test_a_weight_change_rescores_the_try_it_completion(page: Page):
    expect(page.locator("#try-total")).to_contain_text("Total reward: 1.5")
    set_number(page, "format-weight", 2)
    expect(page.locator("#try-total")).to_contain_text("Total reward: 3")
    expect(page.locator("#spec-code")).to_contain_text('"weight": 2.0')


def test_a_train_form_error_is_shown_on_its_field(page: Page):
    open_tab(page, "Train")
    set_number(page, "train-training-steps", 0)
    expect(page.locator("#train-error-training-steps")).to_contain_text("[1, 1e+06]")
    set_number(page, "train-training-steps", 5)
    expect(page.locator("#train-error-training-steps")).to_be_hidden()
    expect(page.locator("#train-summary")).to_contain_text("5 steps")


def test_a_pretrained_model_gets_suggested_settings(page: Page):
    open_tab(page, "Train")
    page.locator("#train-model input").click()
    page.get_by_role("option", name=re.compile("Hugging Face id")).click()
    expect(page.locator("#train-model-note")).to_contain_text("Suggested for a pretrained model")
    expect(page.locator("#train-lora input")).to_be_checked()
    expect(page.locator("#train-generation-max-completion-length input")).to_have_value("256")


@pytest.mark.slow
def test_preview_generates_and_follows_the_weights_without_generating_again(page: Page):
    open_tab(page, "Preview")
    set_number(page, "preview-prompts", 2)
    set_number(page, "preview-samples", 2)
    page.locator("#preview-generate").click()
    expect(rows(page, "preview-table")).to_have_count(4, timeout=240_000)
    names = headers(page, "preview-table")
    assert names[-3:] == ["correctness", "format", "total"]
    total_col = len(names) - 1
    before = column(page, "preview-table", total_col)
    completions = column(page, "preview-table", 3)
    assert all(completions), "every completion is shown"

    open_tab(page, "Design")
    set_number(page, "format-weight", 5)
    open_tab(page, "Preview")
    deadline = time.monotonic() + 30
    after = before
    while after == before and time.monotonic() < deadline:
        time.sleep(0.5)
        after = column(page, "preview-table", total_col)
    assert column(page, "preview-table", 3) == completions, "no new generation"
    formats = column(page, "preview-table", names.index("format"))
    for b, a, f in zip(before, after, formats, strict=True):
        gained = 4.5 * float(f)  # the format weight went from 0.5 to 5
        assert float(a) == pytest.approx(float(b) + gained, abs=1e-6)
    assert after != before or all(float(f) == 0 for f in formats)

    rows(page, "preview-table").first.locator("[role=gridcell]").nth(2).click()
    expect(rows(page, "preview-trace")).to_have_count(2)
    expect(rows(page, "preview-probes").first).to_contain_text("strip tags")


@pytest.mark.slow
def test_a_three_step_grpo_run_streams_live_and_survives_a_reload(page: Page, browser, live_app):
    open_tab(page, "Train")
    page.locator("#train-name textarea, #train-name input").first.fill("browser run")
    for elem_id, value in (
        ("train-training-steps", 3),
        ("train-training-prompts-per-step", 2),
        ("train-generation-num-generations", 4),
        ("train-generation-max-completion-length", 32),
        ("train-training-eval-samples", 4),
        ("train-training-save-steps", 0),
    ):
        set_number(page, elem_id, value)
    expect(page.locator("#train-summary")).to_contain_text(
        "3 steps × 2 prompts × 4 generations = 8 completions"
    )
    expect(page.locator("#train-summary")).to_contain_text("held-out eval on 4 prompts")
    page.locator("#train-start").click()

    # Start takes the user to the new run.
    expect(page.get_by_role("tab", name="Runs", exact=True)).to_have_attribute(
        "aria-selected", "true", timeout=30_000
    )
    status = page.locator("#run-status")
    expect(status).to_contain_text("browser run", timeout=30_000)
    run_id = re.search(r"id (\S+)", status.inner_text()).group(1)

    seen: list[int] = []
    deadline = time.monotonic() + 420
    while time.monotonic() < deadline:
        points = chart_points(page, "reward")
        seen.append(points[0] if points else 0)
        text = status.inner_text()
        if "completed" in text or "failed" in text:
            break
        time.sleep(1)
    assert "completed" in status.inner_text(), page.locator("#run-error").inner_text()
    expect(page.locator("#run-status")).to_contain_text("step 3/3")
    time.sleep(2)  # the tick after the last write
    assert chart_points(page, "reward")[0] == 3
    assert len(set(seen)) >= 2 and seen == sorted(seen), f"points grew live: {seen}"
    assert chart_points(page, "eval")  # held-out accuracy before and after
    expect(rows(page, "run-samples").first).to_be_visible()

    # A reload re-attaches: the run is listed, selected, and its charts are drawn again.
    page.reload()
    page.wait_for_selector("#main-tabs")
    open_tab(page, "Runs")
    expect(page.locator("#runs-table")).to_contain_text(run_id)
    expect(page.locator("#run-status")).to_contain_text("completed")
    page.wait_for_function(
        "() => { const el = document.querySelector('#chart-reward .js-plotly-plot');"
        " return el && el.data && el.data.length && el.data[0].x.length === 3; }"
    )

    # A second browser tab shows the same run the same way.
    other = browser.new_page()
    try:
        other.goto(f"{live_app.url}?run={run_id}")
        other.wait_for_selector("#main-tabs")
        open_tab(other, "Runs")
        expect(other.locator("#run-status")).to_contain_text("completed")
        expect(other.locator("#run-status")).to_contain_text(run_id)
    finally:
        other.close()
