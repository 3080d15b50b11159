"""A baseline run under the live Runs charts, in a real browser (issue 45, deliverable 2)."""

from __future__ import annotations

import re
import time

import pytest
from playwright.sync_api import Page, expect

from tests.ui.test_browser import record_run

pytestmark = pytest.mark.browser

TRACES = """() => { const el = document.querySelector('#chart-reward .js-plotly-plot');
  return el && el.data ? el.data.map((d) => d.name) : []; }"""


@pytest.mark.opens_a_link
def test_a_baseline_run_is_drawn_under_the_open_runs_charts_and_stays(page: Page, live_app):
    run = record_run(live_app.data_dir, "baseline new", steps=2)
    record_run(live_app.data_dir, "baseline old", steps=4)
    page.goto(f"{live_app.url}?run={run}")
    page.wait_for_selector("#main-tabs")
    expect(page.locator("#run-status")).to_contain_text("baseline new")
    page.locator("#chart-baseline input").click()
    page.get_by_role("option", name=re.compile("baseline old")).click()
    page.wait_for_function(f"() => ({TRACES})().includes('reward/total · baseline baseline old')")
    assert page.evaluate(TRACES)[-1] == "reward/total"  # the run's own line on top
    time.sleep(3)  # ticks keep it
    assert "reward/total · baseline baseline old" in page.evaluate(TRACES)
    page.locator("#chart-baseline input").click()
    page.get_by_role("option", name="no baseline").click()
    page.wait_for_function(f"() => ({TRACES})().length === 1")
