"""The reward lab in a real browser: A/B and a two-weight sweep in the Preview, and "Re-score
with…" in the Runs view (the app of ``conftest.live_app``; one default-model generation)."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import Page, expect

from rewards.composer import score
from rewards.spec import PRESETS
from tests.ui.test_browser import open_tab, rows, set_number

pytestmark = pytest.mark.browser

# R1-style math negated: every sample with a non-zero advantage under R1 flips sign under it.
NEGATED = """components:
- name: correctness
  weight: -1.0
- name: format
  weight: -0.5
  params: {mode: strict}
"""


def choose(page: Page, elem_id: str, option: str) -> None:
    page.locator(f"#{elem_id} input").click()
    # the list just opened: a list of the previous pick may still be closing
    page.get_by_role("option", name=option, exact=True).last.click()


def plot_data(page: Page, elem_id: str) -> list[dict]:
    """Type and sizes of each trace of a Plotly chart as drawn in the page."""
    return page.evaluate(
        "(id) => { const el = document.querySelector(`#${id} .js-plotly-plot`);"
        " return el && el.data ? el.data.map(d => ({type: d.type, name: d.name,"
        " x: (d.x || []).length, z: d.z ? d.z.length : 0})) : []; }",
        elem_id,
    )


def wait_for_plot(page: Page, elem_id: str, condition: str) -> None:
    """Wait until the chart's traces ``d`` satisfy the JS ``condition`` (over ``data``)."""
    page.wait_for_function(
        "([id, cond]) => { const el = document.querySelector(`#${id} .js-plotly-plot`);"
        " return el && el.data && new Function('data', `return ${cond}`)(el.data); }",
        arg=[elem_id, condition],
        timeout=120_000,
    )


def test_ab_of_two_specs_and_a_two_weight_sweep_on_the_preview(page: Page):
    open_tab(page, "Preview")
    set_number(page, "preview-prompts", 2)
    set_number(page, "preview-samples", 4)
    page.locator("#preview-generate").click()
    expect(rows(page, "preview-table")).to_have_count(8, timeout=240_000)
    page.get_by_text("Reward lab: compare specs and sweep weights").click()

    # The current spec (R1-style math) against "concise answers" and an edited copy.
    choose(page, "lab-source-0", "concise answers")
    expect(page.locator("#lab-text-0")).to_contain_text("conciseness")
    choose(page, "lab-source-1", "copy of the current spec")
    expect(page.locator("#lab-text-1")).to_contain_text("format")
    page.locator("#lab-text-1 .cm-content").fill(NEGATED)
    page.locator("#lab-compare").click()
    expect(rows(page, "lab-ab-table")).to_have_count(8, timeout=120_000)
    summary = page.locator("#lab-ab-summary")
    expect(summary).to_contain_text("spec 3 against the current spec")
    # A verdict per spec pair, above the editors, which have folded away.
    verdicts = page.locator("#lab-verdicts")
    expect(verdicts).to_contain_text("concise answers vs current:")
    # (the shipped model's few answers may all be wrong: then the line says so)
    margin = r"spec 3 vs current: .*(pushes right answers up|no group holds both a right)"
    expect(verdicts).to_contain_text(re.compile(margin))
    expect(verdicts).to_contain_text(re.compile(r"best sample changes in \d+ of 2 groups"))
    expect(page.locator("#lab-text-0")).to_be_hidden()
    assert verdicts.bounding_box()["y"] < page.locator("#lab-editors").bounding_box()["y"]
    heads = page.locator("#lab-ab-table thead th").evaluate_all(
        "(ths) => ths.map(th => th.getAttribute('title'))"
    )
    assert {"total: concise answers", "advantage: spec 3", "flip: spec 3"} <= set(heads)
    flips = int(
        re.search(r"spec 3 against the current spec: (\d+) samples", summary.inner_text())[1]
    )
    assert flips > 0
    page.get_by_label("only samples whose advantage flips").check()
    expect(rows(page, "lab-ab-table")).to_have_count(flips)  # the negated spec flips a superset
    expect(rows(page, "lab-ab-table").first).to_contain_text("flips")

    # Two weights swept: a heatmap over the 5 x 4 grid.
    page.get_by_role("tab", name="Weight sweep").click()
    choose(page, "lab-weight-2", "format")
    set_number(page, "lab-points-1", 5)
    set_number(page, "lab-points-2", 4)
    page.locator("#lab-sweep").click()
    wait_for_plot(page, "lab-sweep-plot", "data[0].type === 'heatmap'")
    heat = plot_data(page, "lab-sweep-plot")[0]
    assert heat["z"] == 5 and heat["x"] == 4
    expect(page.locator("#lab-onsets")).to_contain_text(re.compile("probe|pays"))


def record_scored_run(data_dir, steps: int = 3) -> str:
    """A finished run whose samples R1-style math scored, written as a worker leaves them."""
    from storage import runs as run_store
    from storage.paths import db_path
    from storage.records.samples import add_samples
    from storage.sqlite.db import Database
    from storage.sqlite.schema import RunStatus

    texts = ["<think>2+3=5</think><answer>5</answer>", "5", "<answer>6</answer>", "The sum: 5"]
    scored = score(PRESETS["R1-style math"], None, texts, answers=["5"] * 4)
    with Database(db_path(data_dir)) as db:
        run = run_store.create_run(
            db,
            algorithm="grpo",
            name="lab rescore",
            config={},
            total_steps=steps,
            status=RunStatus.RUNNING,
        )
        for step in range(1, steps + 1):
            rows_ = [
                {
                    "prompt": "2+3?",
                    "completion": t,
                    "answer": "5",
                    "group": i // 2,
                    "total": s.total,
                    "trace": [x.to_dict() for x in s.trace],
                }
                for i, (t, s) in enumerate(zip(texts, scored, strict=True))
            ]
            add_samples(db, run.id, step, rows_)
        run_store.set_status(db, run.id, RunStatus.COMPLETED)
    return run.id


@pytest.mark.opens_a_link
def test_rescore_with_a_preset_draws_both_curves(page: Page, live_app):
    run_id = record_scored_run(live_app.data_dir)
    page.goto(f"{live_app.url}?run={run_id}")
    page.wait_for_selector("#main-tabs")
    page.get_by_text("Re-score with…").click()
    choose(page, "rescore-source", "concise answers")
    page.locator("#rescore-run").click()
    wait_for_plot(page, "rescore-plot", "data.length === 2")
    traces = plot_data(page, "rescore-plot")
    assert [t["x"] for t in traces] == [3, 3]
    assert traces[0]["name"].startswith("stored reward")
    expect(page.locator("#rescore-summary")).to_contain_text("Re-scored 12 samples over 3")
    expect(rows(page, "rescore-table")).to_have_count(10)  # the ten that disagree most
