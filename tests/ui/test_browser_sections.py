"""The Design form names each section by the metric it logs under, in a real browser: after a
remove, the third conciseness section logs as ``conciseness_4`` and says so (issue 25 item 9)."""

from __future__ import annotations

import pytest
from playwright.sync_api import Page, expect

from tests.ui.test_browser import record_run

pytestmark = pytest.mark.browser


def test_a_section_header_names_its_metric(page: Page):
    page.locator("#spec-code .cm-content").fill(
        '{"components": [{"name": "conciseness"},'
        ' {"name": "conciseness", "label": "conciseness_3"},'
        ' {"name": "conciseness", "label": "conciseness_4"}]}'
    )
    page.get_by_role("button", name="Apply this spec").click()
    expect(page.locator("#spec-status")).to_contain_text("conciseness_4 × 1")
    third = page.locator("#slot-conciseness-3")
    expect(third).to_contain_text("conciseness · conciseness_4")
    expect(third).not_to_contain_text("#3")
    expect(page.locator("#slot-conciseness")).not_to_contain_text("·")


def cut_headers(page: Page, table_id: str) -> list[str]:
    """The column headers of a table drawn cut off ("contribu"): wider than their cell."""
    return page.locator(f"#{table_id} thead th").evaluate_all(
        "(ths) => ths.map(th => th.querySelector('.header') || th)"
        ".filter(h => h.scrollWidth > h.clientWidth + 1).map(h => h.innerText.trim())"
    )


def test_table_headers_are_whole(page: Page, live_app):
    expect(page.locator("#try-trace thead th")).to_have_count(5)
    assert cut_headers(page, "try-trace") == []
    run_id = record_run(live_app.data_dir, "whole headers", steps=1, samples=True)
    page.goto(f"{live_app.url}?run={run_id}")
    page.wait_for_selector("#main-tabs")
    expect(page.locator("#run-samples")).to_contain_text("q1")
    assert cut_headers(page, "run-samples") == []
