"""Charts that can be lived in, in a real browser: a drag-zoom and a series hidden by a legend
click survive the live redraws of a running run, and each chart downloads its data as CSV."""

from __future__ import annotations

import csv
import io
import re

import pytest
from playwright.sync_api import Page, expect

from tests.ui.test_browser import pick_run, plot_has

pytestmark = pytest.mark.browser


def running_run(data_dir, name: str, steps: int) -> str:
    """A run still running, with ``steps`` logged steps of two reward series."""
    from storage import runs as run_store
    from storage.paths import db_path
    from storage.sqlite.db import Database
    from storage.sqlite.schema import RunStatus

    with Database(db_path(data_dir)) as db:
        run = run_store.create_run(
            db, algorithm="grpo", name=name, config={}, total_steps=50, status=RunStatus.RUNNING
        )
    log_steps(data_dir, run.id, range(1, steps + 1))
    return run.id


def log_steps(data_dir, run_id: str, steps) -> None:
    from storage.paths import db_path
    from storage.records.metrics import MetricWriter
    from storage.sqlite.db import Database

    with Database(db_path(data_dir)) as db, MetricWriter(db, run_id) as writer:
        for step in steps:
            writer.log(step, {"reward/total": step / 10, "rewards/format": 1 - step / 20})


CHART = "document.querySelector('#chart-reward .js-plotly-plot')"


def start_drag(page: Page) -> tuple[dict[str, float], float]:
    """Press the mouse at 30% of the reward chart's plot area, mid-height; its box and that y."""
    drag = page.locator("#chart-reward .nsewdrag").first
    drag.scroll_into_view_if_needed()
    box = drag.bounding_box()
    y = box["y"] + box["height"] / 2
    page.mouse.move(box["x"] + box["width"] * 0.3, y)
    page.mouse.down()
    return box, y


def drag_zoom(page: Page) -> None:
    """A real drag from 30% to 60% of the reward chart's plot area: zooms its x axis in."""
    box, y = start_drag(page)
    page.mouse.move(box["x"] + box["width"] * 0.5, y + 5, steps=8)
    page.mouse.move(box["x"] + box["width"] * 0.6, y + 5, steps=8)
    page.mouse.up()


def x_range(page: Page) -> list[float]:
    return page.evaluate(f"() => {CHART}._fullLayout.xaxis.range")


@pytest.mark.opens_a_link
def test_zoom_and_hidden_series_survive_live_redraws_and_a_chart_downloads_csv(
    page: Page, live_app
):
    run_id = running_run(live_app.data_dir, "live zoom", steps=10)
    page.goto(f"{live_app.url}?run={run_id}")
    page.wait_for_selector("#main-tabs")
    plot_has(page, "chart-reward", "el.data.length === 2 && el.data[0].x.length === 10")
    full = x_range(page)

    # A real drag over the middle of the plot area zooms the x axis in.
    drag_zoom(page)
    page.wait_for_function(f"() => {CHART}.layout.xaxis.autorange === false")
    zoomed = x_range(page)
    assert full[0] < zoomed[0] < zoomed[1] < full[1]

    # A legend click hides the format series.
    page.locator("#chart-reward g.traces", has_text="format").locator(".legendtoggle").click()
    page.wait_for_function(f"() => {CHART}.data[1].visible === 'legendonly'")

    # The run goes on: a new figure (a new plot element) keeps the zoom and the hidden series.
    log_steps(live_app.data_dir, run_id, [11, 12])
    plot_has(page, "chart-reward", "el.data[0].x.length === 12")
    assert x_range(page) == pytest.approx(zoomed)
    assert page.evaluate(f"() => {CHART}.data.map(t => t.visible ?? true)") == [
        True,
        "legendonly",
    ]

    # Each chart downloads its series as CSV from its toolbar.
    page.locator("#chart-reward .js-plotly-plot").hover()
    with page.expect_download() as download:
        page.locator("#chart-reward .modebar-btn[data-title='Download data as CSV']").click()
    assert download.value.suggested_filename == f"{run_id}-chart-reward.csv"
    rows = list(csv.reader(io.StringIO(download.value.path().read_text())))
    assert rows[0] == ["run", "series", "step", "value"]
    assert rows[1] == [run_id, "reward/total", "1", "0.1"]
    assert len(rows) == 1 + 2 * 12
    # By relative time the step stays, beside the minutes.
    page.locator("#chart-x").get_by_text("relative time").click()
    plot_has(page, "chart-reward", "el.layout.meta.x_name === 'minutes'")
    page.locator("#chart-reward .js-plotly-plot").hover()
    with page.expect_download() as download:
        page.locator("#chart-reward .modebar-btn[data-title='Download data as CSV']").click()
    rows = list(csv.reader(io.StringIO(download.value.path().read_text())))
    assert rows[0] == ["run", "series", "step", "minutes", "value"]
    assert rows[1][:3] == [run_id, "reward/total", "1"] and rows[1][4] == "0.1"
    page.locator("#chart-x").get_by_text("step", exact=True).click()
    plot_has(page, "chart-reward", "el.layout.meta.x_name === 'step'")

    # Another run's chart starts from the whole series, not the previous run's zoom.
    running_run(live_app.data_dir, "another run", steps=10)
    pick_run(page, "another run")
    plot_has(page, "chart-reward", "el.data[0].x.length === 10")
    assert page.evaluate(f"() => {CHART}.layout.xaxis.autorange") is not False


@pytest.mark.opens_a_link
def test_any_logged_metric_gets_a_panel_that_follows_the_run(page: Page, live_app):
    run_id = running_run(live_app.data_dir, "extra panel", steps=3)
    page.goto(f"{live_app.url}?run={run_id}")
    page.wait_for_selector("#main-tabs")
    plot_has(page, "chart-reward", "el.data[0].x.length === 3")
    expect(page.locator("#chart-extra")).to_be_hidden()
    page.locator("#chart-extra-metrics input").click()
    page.get_by_role("option", name="rewards/format", exact=True).click()
    page.keyboard.press("Escape")
    plot_has(page, "chart-extra", "el.data.length === 1 && el.data[0].x.length === 3")
    log_steps(live_app.data_dir, run_id, [4])
    plot_has(page, "chart-extra", "el.data[0].x.length === 4")
    assert (
        page.evaluate(
            "() => document.querySelector('#chart-extra .js-plotly-plot').layout.yaxis.title.text"
        )
        == "format"
    )


# Plotly writes the colour back spaced out: "rgba(0, 0, 0, 0)".
DARK = "el.layout.paper_bgcolor.replaceAll(' ', '') === 'rgba(0,0,0,0)'"


@pytest.mark.opens_a_link
def test_charts_follow_the_dark_theme_and_the_choice_is_kept(page: Page, live_app):
    run_id = running_run(live_app.data_dir, "dark charts", steps=3)
    page.goto(f"{live_app.url}?run={run_id}")
    page.wait_for_selector("#main-tabs")
    plot_has(page, "chart-reward", "el.layout.paper_bgcolor === 'white'")
    page.locator("#theme-toggle").click()
    assert page.evaluate("() => document.body.classList.contains('dark')")
    # The chart already drawn turns dark at once, and so does the next one drawn.
    plot_has(page, "chart-reward", DARK)
    log_steps(live_app.data_dir, run_id, [4])
    plot_has(
        page,
        "chart-reward",
        f"el.data[0].x.length === 4 && {DARK} && el.layout.font.color === '#e5e7eb'",
    )
    page.reload()
    page.wait_for_selector("#main-tabs")
    page.wait_for_function("() => document.body.classList.contains('dark')")
    plot_has(page, "chart-reward", DARK)
    page.locator("#theme-toggle").click()
    plot_has(page, "chart-reward", "el.layout.paper_bgcolor === 'white'")


# Each drawn chart's plot width against its box's (px); a chart wider than its box is cut off.
CHART_FITS = """() => [...document.querySelectorAll('.run-chart')].flatMap((box) => {
  const svg = box.querySelector('.js-plotly-plot .main-svg');
  const width = box.getBoundingClientRect().width;
  return svg && width > 0 ? [svg.getBoundingClientRect().width - width] : []; })"""


@pytest.mark.opens_a_link
def test_charts_follow_the_window_when_it_narrows(page: Page, live_app):
    from tests.ui.test_browser import open_tab, record_run

    run_id = record_run(live_app.data_dir, "narrowed", steps=4)
    page.goto(f"{live_app.url}?run={run_id}")
    page.wait_for_selector("#main-tabs")
    plot_has(page, "chart-reward", "el.data.length === 1 && el.data[0].x.length === 4")
    assert all(over <= 1 for over in page.evaluate(CHART_FITS))
    fits = f"() => {{ const o = ({CHART_FITS})(); return o.length > 0 && o.every((v) => v <= 1); }}"
    page.set_viewport_size({"width": 640, "height": 900})  # three to a row become one
    page.wait_for_function(fits)
    # Narrowed while another tab shows (the charts' boxes are hidden then): fitted on return.
    page.set_viewport_size({"width": 1400, "height": 1000})
    open_tab(page, "Design")
    page.set_viewport_size({"width": 640, "height": 900})
    open_tab(page, "Runs")
    page.wait_for_function(fits)


def resumed_run(data_dir, name: str) -> str:
    """A running run stopped after step 5 and resumed from its checkpoint there (two attempts in
    its phase rows), with steps 1-10 of a reward and a loss series: two panels."""
    from storage import runs as run_store
    from storage.paths import db_path
    from storage.records import phases as phase_store
    from storage.sqlite.db import Database
    from storage.sqlite.schema import RunPhase, RunStatus

    with Database(db_path(data_dir)) as db:
        run = run_store.create_run(
            db, algorithm="grpo", name=name, config={}, total_steps=50, status=RunStatus.RUNNING
        )
        for attempt, steps in enumerate((range(1, 6), range(6, 11))):
            phase_store.record_phase(db, run.id, RunPhase.STARTING)
            if attempt:
                phase_store.record_phase(db, run.id, RunPhase.RESUMING, 5)
            log_linked(db, run.id, steps)
            if not attempt:
                phase_store.record_phase(db, run.id, RunPhase.STOPPING, 5)
    return run.id


def log_linked(db, run_id: str, steps) -> None:
    from storage.records.metrics import MetricWriter

    with MetricWriter(db, run_id) as writer:
        for step in steps:
            writer.log(step, {"reward/total": step / 10, "loss/policy": 1 / step})


def log_linked_to(data_dir, run_id: str, steps) -> None:
    from storage.paths import db_path
    from storage.sqlite.db import Database

    with Database(db_path(data_dir)) as db:
        log_linked(db, run_id, steps)


LOSS = "document.querySelector('#chart-loss .js-plotly-plot')"


@pytest.mark.opens_a_link
def test_a_runs_panels_zoom_and_hover_as_one_a_panel_expands_and_a_resume_is_marked(
    page: Page, live_app
):
    run_id = resumed_run(live_app.data_dir, "linked panels")
    page.goto(f"{live_app.url}?run={run_id}")
    page.wait_for_selector("#main-tabs")
    plot_has(page, "chart-reward", "el.data[0].x.length === 10")
    plot_has(page, "chart-loss", "el.data[0].x.length === 10")
    # By step, a dotted line where the run resumed from its checkpoint.
    plot_has(page, "chart-loss", "el.layout.shapes?.length === 1 && el.layout.shapes[0].x0 === 5")

    # Hovering the reward chart: the loss chart shows its label and crosshair at the same step.
    drag = page.locator("#chart-reward .nsewdrag").first
    drag.scroll_into_view_if_needed()
    box = drag.bounding_box()
    page.mouse.move(box["x"] + box["width"] * 0.52, box["y"] + box["height"] / 2)
    page.wait_for_function(
        f"() => {LOSS}.querySelectorAll('.hoverlayer .spikeline').length > 0"
        f" && {LOSS}._hoverdata?.[0]?.x === {CHART}._hoverdata?.[0]?.x"
    )

    # A drag-zoom on the reward chart zooms the loss chart's x axis to the same range.
    drag_zoom(page)
    page.wait_for_function(f"() => {LOSS}.layout.xaxis.autorange === false")
    zoomed = x_range(page)
    assert page.evaluate(f"() => {LOSS}._fullLayout.xaxis.range") == pytest.approx(zoomed)
    # The run goes on: both charts are drawn again, both keep the zoom.
    log_linked_to(live_app.data_dir, run_id, [11, 12])
    plot_has(page, "chart-loss", "el.data[0].x.length === 12")
    plot_has(page, "chart-reward", "el.data[0].x.length === 12")
    assert page.evaluate(f"() => {LOSS}._fullLayout.xaxis.range") == pytest.approx(zoomed)
    assert x_range(page) == pytest.approx(zoomed)

    # The loss chart expands to fill most of the window, stays so across a redraw, and goes
    # back to its place in the grid on Escape.
    page.locator("#chart-loss .js-plotly-plot").hover()
    page.locator("#chart-loss .modebar-btn[data-title='Expand chart']").click()
    wide = f"{LOSS}.querySelector('.main-svg').getBoundingClientRect().width"
    page.wait_for_function(f"() => {wide} > 1000 && {LOSS}._fullLayout.height > 600")
    log_linked_to(live_app.data_dir, run_id, [13])
    plot_has(page, "chart-loss", f"el.data[0].x.length === 13 && {wide} > 1000")
    page.keyboard.press("Escape")
    page.wait_for_function(f"() => {wide} < 700 && {LOSS}._fullLayout.height === 280")
    expect(page.locator("#chart-loss")).not_to_have_class(re.compile("studio-expanded"))

    # By relative time: minutes since the run started, the stop shaded up to the restart.
    page.locator("#chart-x").get_by_text("relative time").click()
    plot_has(
        page,
        "chart-loss",
        "el.layout.xaxis.title?.text === 'minutes since the run started'"
        " && el.layout.shapes?.map((s) => s.type).join() === 'rect,line'",
    )
