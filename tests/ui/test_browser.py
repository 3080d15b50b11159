"""The dashboard driven in a real browser (Debian's chromium through Playwright).

One app (see ``conftest.live_app``) serves the whole module. Slow tests generate with the
shipped default model or train it for 3 GRPO steps.
"""

from __future__ import annotations

import json
import re
import time

import pytest
from playwright.sync_api import Page, expect
from playwright.sync_api import TimeoutError as PlaywrightTimeout

from engine.config.pretrained import CPU_LORA_LAST_LAYERS, CPU_SETTINGS
from storage.sqlite.schema import RunPhase
from ui.design.spec_form import MAX_INSTANCES
from ui.runs import progress as run_progress

pytestmark = pytest.mark.browser

TABS = ("Design", "Preview", "Train", "Runs", "Compare")


def open_tab(page: Page, name: str) -> None:
    page.get_by_role("tab", name=name, exact=True).click()


def pick_new_choice(page: Page, box, name: str) -> None:
    """Open the dropdown ``box`` and pick the option ``name``, a choice the opened tab's
    refresh adds: a list opened before the refresh lands is closed and opened again."""
    option = page.get_by_role("option", name=re.compile(re.escape(name)))
    for _ in range(15):
        box.click()
        try:
            option.click(timeout=3_000)
            return
        except PlaywrightTimeout:
            page.keyboard.press("Escape")
    option.click()


def set_number(page: Page, elem_id: str, value) -> None:
    box = page.locator(f"#{elem_id} input").first
    box.fill(str(value))
    box.press("Tab")


def rows(page: Page, table_id: str):
    """The body rows of a Gradio dataframe: ``div.virtual-row`` of ``div.body-cell`` in both
    6.26 and 6.31 (6.31 adds grid roles to them, 6.26 has none)."""
    return page.locator(f"#{table_id} div.virtual-row")


def headers(page: Page, table_id: str) -> list[str]:
    return page.locator(f"#{table_id} thead th").evaluate_all(
        "(ths) => ths.map(th => th.getAttribute('title'))"
    )


def column(page: Page, table_id: str, index: int) -> list[str]:
    cells = rows(page, table_id).evaluate_all(
        "(rows, i) => rows.map(r => r.querySelectorAll('.body-cell')[i]?.innerText.trim())",
        index,
    )
    return list(cells)


def chart_points(page: Page, elem_id: str) -> list[int]:
    """Points per trace of a Plotly chart as drawn in the page (empty: no trace yet)."""
    return page.evaluate(
        "(id) => { const el = document.querySelector(`#${id} .js-plotly-plot`);"
        " return el && el.data ? el.data.map(d => d.x.length) : []; }",
        elem_id,
    )


def test_app_opens_with_every_tab(page: Page):
    expect(page.locator("#spec-status")).to_contain_text("Valid reward")
    for name in TABS:
        open_tab(page, name)
    expect(page.locator("#run-status")).to_contain_text("No run selected")
    open_tab(page, "Train")
    expect(page.locator("#train-yaml")).to_contain_text("algorithm: grpo")
    # Estimated when the tab opens, not while the app starts (its first read imports the
    # model's code), with no edit needed.
    expect(page.locator("#train-summary")).to_contain_text("Estimated peak memory per device")


def test_a_bad_parameter_is_reported_next_to_it(page: Page):
    error = page.locator("#error-correctness-abs-tol")
    expect(page.locator("#correctness-abs-tol")).to_be_visible()
    expect(page.locator(".field-error:visible")).to_have_count(0)  # a valid form shows none
    set_number(page, "correctness-abs-tol", -1)
    expect(error).to_contain_text("must be a number in [0.0")
    expect(page.locator("#spec-status")).to_contain_text("1 field to fix")
    open_tab(page, "Train")  # no run starts on an older reward while Design has errors
    expect(page.locator("#train-reward")).to_contain_text("the Design tab has fields to fix")
    page.locator("#train-start").click()
    expect(page.locator("#train-message")).to_contain_text("Not started")
    expect(page.locator("#train-error-reward")).to_contain_text("fields to fix")
    open_tab(page, "Design")
    set_number(page, "correctness-abs-tol", 0)
    expect(error).to_be_hidden()
    expect(page.locator("#spec-status")).to_contain_text("Valid reward")
    open_tab(page, "Train")
    expect(page.locator("#train-reward")).to_contain_text("correctness × 1")


def test_a_weight_change_rescores_the_try_it_completion(page: Page):
    expect(page.locator("#try-total")).to_contain_text("Total reward: 1.5")
    set_number(page, "format-weight", 2)
    expect(page.locator("#try-total")).to_contain_text("Total reward: 3")
    expect(page.locator("#spec-code")).to_contain_text('"weight": 2.0')


def test_a_loaded_preset_opens_and_badges_the_components_it_turns_on(page: Page):
    steps = page.locator("#slot-reasoning-steps")
    expect(page.locator("#slot-correctness")).to_contain_text("● on")
    expect(steps).to_be_hidden()  # not in the spec: waits to be added
    page.locator("#preset input").click()
    page.get_by_role("option", name="hand-tuned GRPO script").click()
    page.locator("#load-preset").click()
    expect(steps).to_contain_text("● on")
    expect(page.locator("#reasoning-steps-weight")).to_be_visible()  # opened
    page.locator("#reasoning-steps-enabled input").uncheck()
    expect(steps).not_to_contain_text("● on")
    # A negative weight on a penalty pays for the failure: said under the weight, still valid.
    set_number(page, "repetition-weight", -0.1)
    expect(page.locator("#error-repetition-weight")).to_contain_text("a reward for it")
    expect(page.locator("#spec-status")).to_contain_text("Valid reward")


def add_component(page: Page, name: str) -> None:
    """Pick ``name`` in the editor's "Add component" list and click Add."""
    page.locator("#add-component-name").select_option(name)
    page.locator("#add-component").click()


def test_components_are_added_on_demand_and_removed(page: Page):
    status = page.locator("#spec-status")
    for slot in ("#slot-conciseness", "#slot-conciseness-2"):
        expect(page.locator(slot)).to_be_hidden()
    add_component(page, "conciseness")
    expect(page.locator("#slot-conciseness")).to_contain_text("● on")
    expect(status).to_contain_text("conciseness × 1")
    page.locator("#add-component").click()  # a second instance of the same component
    expect(page.locator("#slot-conciseness-2")).to_contain_text("● on")
    expect(status).to_contain_text("conciseness_2 × 1")
    # A component a spec holds once cannot be picked again, and the list says why.
    expect(page.locator("#add-component-name option[value=format]")).to_be_disabled()
    expect(page.locator("#add-component-name option[value=format]")).to_have_text(
        "format (in the form: a spec holds one)"
    )
    page.locator("#remove-conciseness-2").click()
    expect(page.locator("#slot-conciseness-2")).to_be_hidden()
    expect(page.locator("#design-editor-message")).to_have_text(
        "Removed conciseness #2 from the reward."
    )
    expect(status).not_to_contain_text("conciseness_2")
    expect(status).to_contain_text("conciseness × 1")


def exported_spec(page: Page) -> dict:
    """The spec the app builds, as its "Prepare downloads" JSON file."""
    page.locator("#export-spec").click()
    link = page.locator("a[download][href*='reward_spec.json']")
    expect(link).to_have_count(1)
    return json.loads(page.request.get(link.get_attribute("href")).text())


def test_any_number_of_one_component_is_added_set_and_removed(page: Page):
    page.locator("#add-component-name").select_option("conciseness")
    for n in range(1, 7):  # more than the five slots the form once had
        page.locator("#add-component").click()  # the list stays on the component: one click
        slot = "conciseness" if n == 1 else f"conciseness-{n}"
        expect(page.locator(f"#slot-{slot}")).to_contain_text("● on")
    set_number(page, "conciseness-4-max-len", 321)
    expect(page.locator("#spec-status")).to_contain_text("conciseness_6 × 1")
    page.locator("#remove-conciseness-2").click()
    expect(page.locator("#slot-conciseness-2")).to_be_hidden()
    expect(page.locator("#spec-status")).not_to_contain_text("conciseness_2")
    expect(page.locator("#conciseness-4-max-len input")).to_have_value("321")  # kept
    # The third section logs as conciseness_3 whatever its neighbours: titled so.
    expect(page.locator("#slot-conciseness-3 summary")).to_contain_text(
        "conciseness · conciseness_3"
    )
    components = exported_spec(page)["components"]
    assert [c["name"] for c in components] == ["correctness", "format"] + ["conciseness"] * 5
    added = components[2:]
    assert [c.get("label") for c in added] == [None] + [f"conciseness_{i}" for i in (3, 4, 5, 6)]
    assert [c["params"]["max_len"] for c in added] == [1000, 1000, 321, 1000, 1000]


def test_clicks_faster_than_the_redraw_are_each_applied_in_order(page: Page):
    """Three Adds and a double-clicked Remove, without waiting for the server: each click
    counts, in order, and the second click on a removed section removes nothing else."""
    page.locator("#add-component-name").select_option("conciseness")
    page.evaluate(
        "() => { const b = document.querySelector('#add-component');"
        " b.click(); b.click(); b.click(); }"
    )
    expect(page.locator("#slot-conciseness-3")).to_contain_text("● on")
    page.evaluate(
        "() => { const b = document.querySelector('#remove-conciseness-2'); b.click(); b.click(); }"
    )
    expect(page.locator("#slot-conciseness-2")).to_be_hidden()
    expect(page.locator("#slot-conciseness-3")).to_contain_text("● on")
    expect(page.locator("#spec-status")).to_contain_text("conciseness_3 × 1")  # the server's
    expect(page.locator("#spec-status")).not_to_contain_text("conciseness_2")
    components = exported_spec(page)["components"]
    assert [c.get("label") for c in components[2:]] == [None, "conciseness_3"]


def test_html_and_script_typed_or_loaded_into_the_editor_show_as_text(page: Page):
    hostile = '<img src=x onerror="window.pwned=1">${window.pwned=2}`'
    rule = {"name": "rule", "params": {"pattern": hostile, "literal": True}}
    spec = {"description": hostile, "components": [rule]}
    page.locator("#spec-code .cm-content").fill(json.dumps(spec))
    page.get_by_role("button", name="Apply this spec").click()
    expect(page.locator("#rule-pattern input")).to_have_value(hostile)
    expect(page.locator("#description textarea")).to_have_value(hostile)
    page.locator("#rule-label input").fill(hostile)  # typed: an error naming what is allowed
    expect(page.locator("#error-rule-label")).to_contain_text("lower-case letters")
    expect(page.locator("#error-rule-label")).to_contain_text(hostile)
    expect(page.locator("#slot-rule summary")).to_contain_text(hostile)
    assert page.evaluate("() => window.pwned") is None
    assert page.locator("#design-editor img").count() == 0


def test_export_downloads_the_spec_and_a_standalone_trl_module(page: Page):
    page.locator("#export-spec").click()
    link = page.locator("a[download][href*='reward_module.py']")
    expect(link).to_have_count(1)
    source = page.request.get(link.get_attribute("href")).text()
    assert "reward_funcs" in source and "reward_weights" in source
    expect(page.locator("a[download][href*='reward_spec.yaml']")).to_have_count(1)


def test_a_train_form_error_is_shown_on_its_field(page: Page):
    open_tab(page, "Train")
    set_number(page, "train-training-steps", 0)
    expect(page.locator("#train-error-training-steps")).to_contain_text("[1, 1e+06]")
    set_number(page, "train-training-steps", 5)
    expect(page.locator("#train-error-training-steps")).to_be_hidden()
    expect(page.locator("#train-summary")).to_contain_text("5 steps")
    expect(page.locator("#train-summary")).to_contain_text("Estimated peak memory per device")


def test_a_pretrained_model_gets_suggested_settings(page: Page):
    open_tab(page, "Train")
    page.locator("#train-model input").click()
    page.get_by_role("option", name=re.compile("Hugging Face id")).click()
    expect(page.locator("#train-model-note")).to_contain_text("Suggested for a pretrained model")
    expect(page.locator("#train-lora input")).to_be_checked()
    tokens = CPU_SETTINGS["generation.max_completion_length"]  # this machine has no GPU
    expect(page.locator("#train-generation-max-completion-length input")).to_have_value(str(tokens))
    expect(page.locator("#train-lora-layers input")).to_have_value(str(CPU_LORA_LAST_LAYERS))


def test_a_model_that_is_not_there_is_refused_on_its_field(page: Page, live_app):
    from storage import runs as run_store
    from storage.paths import db_path
    from storage.sqlite.db import Database

    def run_count() -> int:
        with Database(db_path(live_app.data_dir)) as db:
            return len(run_store.list_runs(db))

    before = run_count()
    open_tab(page, "Train")
    page.locator("#train-model input").click()
    page.get_by_role("option", name=re.compile("Hugging Face id")).click()
    page.locator("#train-custom-model textarea, #train-custom-model input").first.fill(
        "/no/such/model"
    )
    page.locator("#train-start").click()
    expect(page.locator("#train-message")).to_contain_text("Not started")
    expect(page.locator("#train-error-model")).to_contain_text("not loadable from the web")
    assert run_count() == before


def record_run(data_dir, name, *, steps, failed=False, samples=False, algorithm="grpo"):
    """A run written straight to the app's storage, as a worker would leave it (``samples``:
    one sample at every step)."""
    from storage import runs as run_store
    from storage.paths import db_path
    from storage.records import samples as sample_store
    from storage.records.metrics import MetricWriter
    from storage.sqlite.db import Database
    from storage.sqlite.schema import RunStatus

    with Database(db_path(data_dir)) as db:
        run = run_store.create_run(
            db,
            algorithm=algorithm,
            name=name,
            config={"training": {"steps": steps}},
            total_steps=steps,
            status=RunStatus.RUNNING,
        )
        with MetricWriter(db, run.id) as writer:
            for step in range(1, steps + 1):
                writer.log(step, {"reward/total": step / 10})
        for step in range(1, steps + 1) if samples else ():
            sample_store.add_samples(db, run.id, step, [{"prompt": f"q{step}", "completion": "a"}])
        if failed:
            run_store.set_status(
                db,
                run.id,
                RunStatus.FAILED,
                error="ValueError: the prompt column is empty",
                traceback='Traceback (most recent call last):\n  File "worker.py"\nValueError',
            )
        else:
            run_store.set_status(db, run.id, RunStatus.COMPLETED)
    return run.id


@pytest.mark.opens_a_link
def test_a_failed_run_shows_its_error_in_the_run_view(page: Page, live_app):
    run_id = record_run(live_app.data_dir, "broken run", steps=2, failed=True)
    page.goto(f"{live_app.url}?run={run_id}")
    page.wait_for_selector("#main-tabs")
    # A run link opens on the Runs tab, not on Design.
    expect(page.get_by_role("tab", name="Runs", exact=True)).to_have_attribute(
        "aria-selected", "true"
    )
    expect(page.locator("#run-status")).to_contain_text("failed")
    expect(page.locator("#run-status")).to_contain_text("the prompt column is empty")
    expect(page.locator("#run-error")).to_contain_text("Traceback")
    expect(page.locator("#run-summary")).to_contain_text("failed at step 2 of 2")
    expect(page.locator("#run-resume button, button#run-resume").first).to_be_enabled()
    expect(page.locator("#run-stop button, button#run-stop").first).to_be_disabled()


@pytest.mark.opens_a_link
def test_a_tool_rollout_shows_as_turns_with_its_result_masked(page: Page, live_app):
    from storage.paths import db_path
    from storage.records import samples as sample_store
    from storage.sqlite.db import Database

    run_id = record_run(live_app.data_dir, "agent run", steps=1)
    call = {"function": {"name": "calculator", "arguments": {"expression": "17*3"}}}
    conversation = [
        {"role": "assistant", "content": "<b>Let me</b> compute.", "tool_calls": [call]},
        {"role": "tool", "content": "51"},
        {"role": "assistant", "content": "<answer>51</answer>"},
    ]
    with Database(db_path(live_app.data_dir)) as db:
        sample = {
            "prompt": "user: 17*3?",
            "completion": "x",
            "extra": {"conversation": conversation},
        }
        sample_store.add_samples(db, run_id, 1, [sample])
    page.goto(f"{live_app.url}?run={run_id}")
    page.wait_for_selector("#main-tabs")
    samples = page.locator("#run-samples")  # the table draws each cell twice, one hidden
    expect(samples.locator(".turn:visible")).to_have_count(4)
    expect(samples.locator(".turn-call:visible")).to_contain_text(
        'calculator({"expression": "17*3"})'
    )
    expect(samples.locator(".turn-result:visible")).to_contain_text("masked, not trained")
    expect(samples.locator(".turn-text:visible")).to_contain_text(
        "<b>Let me</b> compute."
    )  # as text
    expect(samples.locator(".turn-answer:visible mark")).to_have_text("51")


def pick_run(page: Page, name: str) -> None:
    page.locator("#run-select input").click()
    page.get_by_role("option", name=re.compile(re.escape(name))).click()


@pytest.mark.opens_a_link
def test_switching_runs_leaves_nothing_of_the_previous_one(page: Page, live_app):
    long_id = record_run(live_app.data_dir, "long samples", steps=6, samples=True)
    record_run(live_app.data_dir, "short failed", steps=2, failed=True, samples=True)
    page.goto(f"{live_app.url}?run={long_id}")
    page.wait_for_selector("#main-tabs")
    open_tab(page, "Runs")
    step = page.locator("#sample-step input")
    expect(step).to_have_value("6")  # the newest step, not the first
    expect(page.locator("#run-samples")).to_contain_text("q6")
    page.locator("button#run-config").click()  # a message that belongs to this run
    expect(page.locator("#run-action-message")).to_contain_text("no output folder")
    pick_run(page, "short failed")
    expect(page.locator("#run-status")).to_contain_text("short failed")
    expect(step).to_have_value("2")
    expect(page.locator("#run-samples")).to_contain_text("q2")
    # No column header is broken inside a word: at most one line per word.
    broken = page.evaluate(
        "() => [...document.querySelectorAll('#run-samples th .header')].filter(el => {"
        " const r = document.createRange(); r.selectNodeContents(el);"
        " const lines = new Set([...r.getClientRects()].map(x => Math.round(x.top)));"
        " return lines.size > el.innerText.trim().split(/\\s+/).length; })"
        ".map(el => el.innerText)"
    )
    assert broken == [], broken
    expect(page.locator("#run-action-message")).not_to_contain_text("no output folder")
    time.sleep(3)  # ticks that still carry step 6 of the other run
    expect(page.locator(".toast-body")).to_have_count(0)
    assert "not in the list of choices" not in live_app.log()
    # Only charts with points are drawn: a failed run has no row of empty panels.
    expect(page.locator("#chart-reward")).to_be_visible()
    expect(page.locator("#chart-loss")).to_be_hidden()
    expect(page.locator("#chart-kl")).to_be_hidden()


def plot_has(page: Page, elem_id: str, condition: str) -> None:
    """Wait until the Plotly chart ``elem_id`` drawn in the page meets ``condition`` (JS on
    ``el``: the plot element with ``data`` and ``layout``)."""
    page.wait_for_function(
        f"() => {{ const el = document.querySelector('#{elem_id} .js-plotly-plot');"
        f" return !!(el && el.data && el.layout && ({condition})); }}"
    )


@pytest.mark.opens_a_link
def test_charts_smooth_switch_axes_and_log_scale_like_the_trackers(page: Page, live_app):
    run_id = record_run(live_app.data_dir, "smooth me", steps=6)
    page.goto(f"{live_app.url}?run={run_id}")
    page.wait_for_selector("#main-tabs")
    plot_has(page, "chart-reward", "el.data.length === 1 && el.data[0].x.length === 6")
    box = page.locator("#chart-smoothing input[type=number]")
    box.fill("0.6")
    box.press("Enter")
    # The smoothed line over the raw one drawn faint, over the window's min/max band.
    plot_has(
        page,
        "chart-reward",
        "el.data.length === 4 && el.data[1].fill === 'tonexty' && el.data[2].opacity < 1",
    )
    page.locator("#chart-log input").check()
    plot_has(page, "chart-reward", "el.layout.yaxis.type === 'log'")
    page.locator("#chart-x").get_by_text("relative time").click()
    plot_has(page, "chart-reward", "el.layout.xaxis.title?.text?.includes('minutes')")


@pytest.mark.opens_a_link
def test_deleting_a_run_removes_it_from_the_list(page: Page, live_app):
    kept = record_run(live_app.data_dir, "to keep", steps=1)
    deleted = record_run(live_app.data_dir, "to delete", steps=1)
    page.goto(f"{live_app.url}?run={kept}")
    page.wait_for_selector("#main-tabs")
    open_tab(page, "Runs")
    expect(page.locator("#runs-table")).to_contain_text(kept)
    page.locator("button#run-delete").click()  # asks first
    expect(page.locator("#run-action-message")).to_contain_text("You can undo it")
    page.locator("button#run-delete-cancel").click()
    expect(page.locator("button#run-delete-confirm")).to_be_hidden()
    # Confirmed then undone inside the window: the run stays, with its data.
    page.locator("button#run-delete").click()
    page.locator("button#run-delete-confirm").click()
    expect(page.locator("#run-action-message")).to_contain_text(f"Deleting {kept} in")
    page.locator("button#run-delete-undo").click()
    expect(page.locator("#run-action-message")).to_contain_text(f"Kept {kept}")
    # Another run confirmed and left alone: gone when its window ends, by which time the undone
    # delete's window has passed too.
    page.goto(f"{live_app.url}?run={deleted}")
    page.wait_for_selector("#main-tabs")
    open_tab(page, "Runs")
    expect(page.locator("#runs-table")).to_contain_text(deleted)
    page.locator("button#run-delete").click()
    expect(page.locator("#run-action-message")).to_contain_text("You can undo it")
    page.locator("button#run-delete-confirm").click()
    expect(page.locator("#run-action-message")).to_contain_text(f"Deleting {deleted} in")
    expect(page.locator("#runs-table")).not_to_contain_text(deleted, timeout=40_000)
    expect(page.locator("#run-status")).to_contain_text("No run selected")
    expect(page.locator("#runs-table")).to_contain_text(kept)


def test_compare_overlays_runs_and_diffs_their_configs(page: Page, live_app):
    # Runs recorded after the page loaded: opening the tab lists them, no Refresh needed.
    record_run(live_app.data_dir, "short one", steps=2)
    record_run(live_app.data_dir, "long one", steps=4)
    open_tab(page, "Compare")
    box = page.locator("#compare-runs input")
    for name in ("short one", "long one"):
        pick_new_choice(page, box, name)
    page.keyboard.press("Escape")
    page.wait_for_function(
        "() => { const el = document.querySelector('#compare-chart .js-plotly-plot');"
        " return el && el.data && el.data.length === 2; }"
    )
    assert sorted(chart_points(page, "compare-chart")) == [2, 4]
    expect(page.locator("#compare-diff")).to_contain_text("training.steps")
    summary = page.locator("#compare-summary")
    expect(summary).to_contain_text("short one: no held-out evaluation · 2 steps")
    expect(summary).to_contain_text("long one: no held-out evaluation · 4 steps")
    # By relative time, like the Runs charts: each run from its own first point.
    page.locator("#compare-x").get_by_text("relative time").click()
    page.wait_for_function(
        "() => { const el = document.querySelector('#compare-chart .js-plotly-plot');"
        " return el && el.layout.xaxis.title.text === 'minutes since the first point'; }"
    )
    starts = page.evaluate(
        "() => document.querySelector('#compare-chart .js-plotly-plot').data.map(d => d.x[0])"
    )
    assert starts == [0, 0]


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

    rows(page, "preview-table").first.locator(".body-cell").nth(2).click()
    expect(rows(page, "preview-trace")).to_have_count(2)
    expect(rows(page, "preview-probes").first).to_contain_text("strip tags")
    assert column(page, "preview-trace", 2) == ["1", "5"]  # the weights

    # The selected sample follows a weight change too, and a new Generate clears it.
    open_tab(page, "Design")
    set_number(page, "format-weight", 1)
    open_tab(page, "Preview")
    page.wait_for_function(
        "() => [...document.querySelectorAll('#preview-trace div.virtual-row')]"
        ".map(r => r.querySelectorAll('.body-cell')[2]?.innerText.trim()).join() === '1,1'",
        timeout=120_000,  # the probes are scored again too
    )
    page.locator("#preview-generate").click()
    expect(rows(page, "preview-trace")).to_have_count(0, timeout=120_000)


def test_a_preview_number_out_of_range_is_reported_under_it(page: Page):
    open_tab(page, "Preview")
    set_number(page, "preview-prompts", 0)
    page.locator("#preview-generate").click()
    error = page.locator("#preview-error-num_prompts")
    expect(error).to_be_visible()
    expect(error).to_contain_text("whole number in [1, 64]")
    top = error.bounding_box()["y"]
    assert page.locator("#preview-prompts").bounding_box()["y"] < top
    assert top < page.locator("#preview-seed").bounding_box()["y"]


def recorded_phases(app, run_id: str) -> list:
    """The phases the run's worker recorded, in order."""
    from storage.paths import db_path
    from storage.records import phases as phase_store
    from storage.sqlite.db import Database

    with Database(db_path(app.data_dir)) as db:
        return [phase for phase, _ in phase_store.phases(db, run_id)]


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
    phases: set[str] = set()
    deadline = time.monotonic() + 420
    while time.monotonic() < deadline:
        points = chart_points(page, "chart-reward")
        seen.append(points[0] if points else 0)
        phases.update(page.locator("#run-progress .run-phase").all_inner_texts())
        text = status.inner_text()
        if "completed" in text or "failed" in text:
            break
        time.sleep(1)
    assert "completed" in status.inner_text(), page.locator("#run-error").inner_text()
    expect(page.locator("#run-status")).to_contain_text("step 3/3")
    time.sleep(2)  # the tick after the last write
    assert chart_points(page, "chart-reward")[0] == 3
    # Growth while running is checked on a 200-step run (test_stop_and_resume_from_the_run_view):
    # three steps of this size can all land between two samples.
    assert seen == sorted(seen), f"points never went back: {seen}"
    assert chart_points(page, "chart-eval")  # held-out accuracy before and after
    # The page is sampled once a second, which a fast machine can outrun: every phase it showed
    # must be a real one, and the worker must have recorded evaluating, then training.
    known = set(run_progress.PHASE_TEXT.values()) | {"Queued: waiting for a free training slot"}
    assert all(p.strip().removesuffix("…") in known for p in phases), phases
    walked = recorded_phases(live_app, run_id)
    assert RunPhase.EVALUATING in walked, walked
    assert RunPhase.TRAINING in walked[walked.index(RunPhase.EVALUATING) :], walked
    expect(page.locator("#run-summary")).to_contain_text("completed at step 3 of 3")
    expect(page.locator("#run-summary")).to_contain_text("held-out accuracy")
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


@pytest.mark.opens_a_link
@pytest.mark.slow
def test_stop_and_resume_from_the_run_view(page: Page, live_app):
    import yaml
    from gradio_client import Client

    config = {
        "name": "stop me",
        "training": {"steps": 200, "prompts_per_step": 2, "eval_samples": 0, "save_steps": 0},
        "generation": {"num_generations": 4, "max_completion_length": 32},
    }
    client = Client(live_app.url, verbose=False)
    run_id = client.predict(config=yaml.safe_dump(config), api_name="/start_run")["run_id"]
    page.goto(f"{live_app.url}?run={run_id}")
    page.wait_for_selector("#main-tabs")
    open_tab(page, "Runs")
    status = page.locator("#run-status")
    expect(status).to_contain_text(re.compile(r"step [1-9]\d*/200"), timeout=180_000)
    # The reward chart grows while the run trains (200 steps last well beyond two points).
    page.wait_for_function(
        "() => { const el = document.querySelector('#chart-reward .js-plotly-plot');"
        " return el && el.data && el.data.length && el.data[0].x.length >= 2; }",
        timeout=180_000,
    )
    assert "running" in status.inner_text(), status.inner_text()
    page.locator("button#run-stop").click()
    expect(page.locator("#run-action-message")).to_contain_text("Stopping")
    expect(status).to_contain_text("stopped", timeout=180_000)
    stopped_at = int(re.search(r"step (\d+)/200", status.inner_text()).group(1))

    page.locator("button#run-resume").click()
    expect(page.locator("#run-action-message")).to_contain_text("Resuming")
    expect(status).to_contain_text("running", timeout=60_000)
    expect(status).to_contain_text("attempt 2")
    # The second attempt continues from the checkpoint saved at the stop: wait for a new step
    # (a stop that arrives while the worker is still starting up is not what is tested here).
    page.wait_for_function(
        "(n) => { const m = document.querySelector('#run-status').innerText"
        ".match(/step (\\d+)\\/200/); return m && Number(m[1]) > n; }",
        arg=stopped_at,
        timeout=180_000,
    )
    page.locator("button#run-stop").click()
    expect(status).to_contain_text("stopped", timeout=180_000)


def test_an_applied_spec_keeps_its_metric_names_and_names_what_the_form_cannot_hold(page: Page):
    def apply(text: str) -> None:
        page.locator("#spec-code .cm-content").fill(text)
        page.get_by_role("button", name="Apply this spec").click()

    def rules(n: int) -> str:
        return ", ".join(f'{{"name": "rule", "params": {{"pattern": "w{i}"}}}}' for i in range(n))

    apply(f'{{"components": [{{"name": "correctness"}}, {rules(MAX_INSTANCES + 1)}]}}')
    expect(page.locator("#import-message")).to_contain_text(
        f"Not applied: the spec has {MAX_INSTANCES + 1} rule components and the form holds at "
        f"most {MAX_INSTANCES}"
    )
    expect(page.locator("#spec-status")).to_contain_text("correctness × 1 + format × 0.5")
    apply(f'{{"components": [{{"name": "correctness"}}, {rules(7)}]}}')  # all drawn
    expect(page.locator("#spec-status")).to_contain_text("rule_7 × 1")
    expect(page.locator("#rule-7-pattern textarea, #rule-7-pattern input").first).to_have_value(
        "w6"
    )

    apply(
        '{"components": [{"name": "correctness", "label": "answer_ok"},'
        ' {"name": "format", "weight": 0.5, "enabled": false}]}'
    )
    expect(page.locator("#import-message")).to_contain_text(
        "1 disabled component is shown unticked (format)"
    )
    label = page.locator("#correctness-label input, #correctness-label textarea").first
    expect(label).to_have_value("answer_ok")
    expect(page.locator("#spec-status")).to_contain_text("Valid reward: answer_ok × 1")
    expect(page.locator("#spec-code")).to_contain_text('"label": "answer_ok"')
    page.locator("#export-spec").click()
    link = page.locator("a[download][href*='reward_spec.yaml']")
    expect(link).to_have_count(1)
    assert "label: answer_ok" in page.request.get(link.get_attribute("href")).text()


def test_an_uploaded_file_is_stored_in_the_data_dir_and_read_from_there(
    page: Page, live_app, tmp_path
):
    upload = tmp_path / "mine.jsonl"
    upload.write_text('{"question": "1+1?", "solution": "2"}\n', encoding="utf-8")
    open_tab(page, "Train")
    page.get_by_text("Training data", exact=True).click()  # open the accordion
    page.locator("#train-data-source").get_by_text("uploaded file").click()
    page.locator("#train-data-file input[type=file]").set_input_files(str(upload))
    # Gradio draws the stored name as stem and extension ("mine .jsonl" as text); its cell is
    # named by the whole name.
    shown = page.locator("#train-data-file").get_by_role("cell", name="mine.jsonl", exact=True)
    expect(shown).to_be_visible()
    # The app has taken the upload (its stored copy is in the config) before Start is pressed.
    expect(page.locator("#train-yaml")).to_contain_text("uploads/")
    page.locator("#train-start").click()
    expect(page.locator("#train-message")).to_contain_text("Not started")
    # The app read the stored copy (an upload: its column names may be shown), not refused it.
    expect(page.locator("#train-error-data")).to_contain_text("['question', 'solution']")
    stored = list((live_app.data_dir / "uploads").rglob("*.jsonl"))  # under the uploader's folder
    assert [p.read_text() for p in stored] == [upload.read_text()]
