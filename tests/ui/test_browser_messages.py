"""Messages that say the right thing in a real browser: the Start button's refusal says where the
field is, and an uploaded file is checked as it arrives and named as the user named it."""

from __future__ import annotations

import pytest
from playwright.sync_api import Page, expect

from tests.ui.test_browser import open_tab, set_number

pytestmark = pytest.mark.browser


def test_start_says_where_the_field_to_fix_is(page: Page):
    open_tab(page, "Train")
    set_number(page, "train-training-steps", 0)
    # The summary no longer describes the last valid settings ("100 steps").
    expect(page.locator("#train-summary")).to_contain_text("Not ready to start: training.steps")
    page.locator("#train-start").click()
    expect(page.locator("#train-message")).to_contain_text(
        "the field is marked under Training above"
    )
    set_number(page, "train-training-steps", 5)
    expect(page.locator("#train-summary")).to_contain_text("5 steps")


def test_an_upload_is_checked_as_it_arrives_and_named_as_uploaded(page: Page, tmp_path):
    broken = tmp_path / "broken.csv"
    broken.write_text('prompt,answer\n"1+1?",2\n"2+2?",4,extra,fields\n', encoding="utf-8")
    good = tmp_path / "good.jsonl"
    good.write_text('{"prompt": "1+1?", "answer": "2"}\n', encoding="utf-8")
    open_tab(page, "Train")
    page.get_by_text("Training data", exact=True).click()  # open the accordion
    page.locator("#train-data-source").get_by_text("uploaded file").click()
    upload = page.locator("#train-data-file input[type=file]")
    upload.set_input_files(str(broken))
    check = page.locator("#train-data-file-check")
    expect(check).to_contain_text("'broken.csv' is not readable CSV: row 1 has 4 fields")
    page.locator("#train-start").click()
    expect(page.locator("#train-error-data")).to_contain_text("'broken.csv' is not readable CSV")
    expect(page.locator("#train-message")).to_contain_text("marked under Training data above")
    page.locator("#train-data-file button[aria-label='Clear']").click()
    expect(check).to_have_text("")
    upload = page.locator("#train-data-file input[type=file]")
    upload.set_input_files(str(good))
    expect(check).to_contain_text("good.jsonl: the first 1 rows read; columns: answer, prompt")
    expect(check).not_to_contain_text("broken.csv")
