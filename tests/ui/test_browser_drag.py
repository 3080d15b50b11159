"""A drag-zoom in progress when a live redraw comes is not cut, in a real browser (issue 25
item 5: "two of three drags failed because the chart redrew mid-drag")."""

from __future__ import annotations

import pytest
from playwright.sync_api import Page

from tests.ui.test_browser import plot_has
from tests.ui.test_browser_charts import CHART, log_steps, running_run, start_drag, x_range

pytestmark = pytest.mark.browser


@pytest.mark.opens_a_link
def test_a_drag_zoom_held_across_a_live_redraw_lands_on_the_new_chart(page: Page, live_app):
    run_id = running_run(live_app.data_dir, "drag through a step", steps=10)
    page.goto(f"{live_app.url}?run={run_id}")
    page.wait_for_selector("#main-tabs")
    plot_has(page, "chart-reward", "el.data.length === 2 && el.data[0].x.length === 10")
    full = x_range(page)
    page.evaluate(f"() => {{ window.firstChart = {CHART}; }}")

    box, y = start_drag(page)
    page.mouse.move(box["x"] + box["width"] * 0.45, y + 5, steps=8)
    # A step arrives mid-drag: the page draws the chart again, on a new plot element.
    log_steps(live_app.data_dir, run_id, [11, 12])
    plot_has(page, "chart-reward", "el.data[0].x.length === 12 && el !== window.firstChart")
    page.mouse.move(box["x"] + box["width"] * 0.6, y + 5, steps=8)
    page.mouse.up()
    page.wait_for_function(f"() => {CHART}.layout.xaxis.autorange === false")
    zoomed = x_range(page)
    assert full[0] < zoomed[0] < zoomed[1] < full[1] + 2  # the new chart holds 2 more steps
