"""Distributions over each step's whole batch and the groups' spread, in a real browser
(issue 45, deliverable 3)."""

from __future__ import annotations

import pytest
from playwright.sync_api import Page, expect

from engine.tracking import metric_names as m

pytestmark = pytest.mark.browser

TRACES = """() => { const el = document.querySelector('#chart-dist .js-plotly-plot');
  return el && el.data ? el.data.map((d) => [d.type, d.yaxis || 'y', d.x.length]) : []; }"""


def correct(raw: float) -> list[dict]:
    return [{"name": "correctness", "component": "correctness", "raw": raw, "explanation": ""}]


def record_run(data_dir, name: str) -> str:
    """A finished GRPO run with 3 steps of distributions and, at step 3, two groups of samples:
    one that scored the same on both (zero variance, both right, one cut at the 16-token limit)
    and one with a right and a wrong answer."""
    from storage import runs as run_store
    from storage.paths import db_path
    from storage.records.distributions import add_distributions
    from storage.records.metrics import MetricWriter
    from storage.records.samples import add_samples
    from storage.sqlite.db import Database
    from storage.sqlite.schema import RunStatus

    config = {"training": {"steps": 3}, "generation": {"max_completion_length": 16}}
    with Database(db_path(data_dir)) as db:
        run = run_store.create_run(
            db, algorithm="grpo", name=name, config=config, total_steps=3, status=RunStatus.RUNNING
        )
        with MetricWriter(db, run.id) as writer:
            for step in (1, 2, 3):
                writer.log(step, {"reward/total": step / 10})
        for step in (1, 2, 3):
            add_distributions(
                db,
                run.id,
                step,
                {
                    m.DIST_REWARD: [0.0, 0.0, 1.0, 1.0],
                    m.DIST_LENGTH_CORRECT: [4, 5],
                    m.DIST_LENGTH_WRONG: [8 + step, 12 + step],
                },
            )
        samples = [
            ("flat one", 1.0, 1.0, 16),
            ("flat two", 1.0, 1.0, 9),
            ("mixed right", 1.0, 1.0, 5),
            ("mixed wrong", 0.0, 0.0, 14),
        ]
        add_samples(
            db,
            run.id,
            3,
            [
                {"prompt": "p", "completion": text, "total": total, "trace": correct(raw),
                 "group": i // 2, "tokens": tokens}
                for i, (text, total, raw, tokens) in enumerate(samples)
            ],
        )  # fmt: skip
        run_store.set_status(db, run.id, RunStatus.COMPLETED)
    return run.id


@pytest.mark.opens_a_link
def test_the_whole_batch_is_a_heat_map_over_steps_and_lengths_split_right_vs_wrong(
    page: Page, live_app
):
    run = record_run(live_app.data_dir, "dist heat")
    page.goto(f"{live_app.url}?run={run}")
    expect(page.locator("#run-status")).to_contain_text("dist heat")
    page.wait_for_function(f"() => ({TRACES})().length === 2")
    assert page.evaluate(TRACES) == [["heatmap", "y", 3], ["scatter", "y", 3]]
    expect(page.locator("#dist-note")).to_contain_text("whole batch")
    page.locator("#dist-quantity").get_by_label("length: right vs wrong").check()
    page.wait_for_function(f"() => ({TRACES})().filter((t) => t[0] === 'heatmap').length === 2")
    heat = [t for t in page.evaluate(TRACES) if t[0] == "heatmap"]
    assert heat == [["heatmap", "y", 3], ["heatmap", "y2", 3]]
    page.locator("#dist-quantity").get_by_label("advantage").check()  # none recorded
    expect(page.locator("#chart-dist")).to_be_hidden()
    expect(page.locator("#dist-note")).to_contain_text("No distributions for this run yet")


@pytest.mark.opens_a_link
def test_the_groups_spread_flags_zero_variance_and_the_filters_pick_samples(page: Page, live_app):
    run = record_run(live_app.data_dir, "dist groups")
    page.goto(f"{live_app.url}?run={run}")
    expect(page.locator("#run-status")).to_contain_text("dist groups")
    note, groups, samples = (
        page.locator("#sample-groups-note"),
        page.locator("#run-groups"),
        page.locator("#run-samples"),
    )
    expect(note).to_contain_text("2 groups stored at this step, 1 with zero variance")
    expect(groups).to_contain_text("zero variance: teaches nothing")
    expect(samples).to_contain_text("mixed wrong")
    show = page.locator("#sample-filter")
    show.get_by_label("zero-variance groups").check()
    expect(note).to_contain_text("Showing 2 of 4 samples (zero-variance groups)")
    expect(samples).not_to_contain_text("mixed")
    show.get_by_label("wrong answers").check()
    expect(note).to_contain_text("Showing 1 of 4 samples (wrong answers)")
    expect(samples).to_contain_text("mixed wrong")
    expect(samples).not_to_contain_text("flat one")
    show.get_by_label("truncated").check()
    expect(note).to_contain_text("Showing 1 of 4 samples (truncated)")
    expect(samples).to_contain_text("flat one")
    expect(samples).not_to_contain_text("mixed wrong")
