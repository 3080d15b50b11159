"""The Design form names each section by the metric it logs under, in a real browser: after a
remove, the third conciseness section logs as ``conciseness_4`` and says so (issue 25 item 9)."""

from __future__ import annotations

import pytest
from playwright.sync_api import Page, expect

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
