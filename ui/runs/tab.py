"""The Runs tab: run list, live charts, per-step samples, logs and errors, run actions.

A 1 s ``gr.Timer`` calls :func:`ui.runs.poll.poll`, which runs one cheap query and reads new
rows by cursor only when something moved; outputs that did not change are skipped, so the
browser redraws nothing on a quiet tick. The selection is the view's (``ui.runs.state``), set by
the selection events only (the run picker's change, which a row click, a link and a new run from
Train go through); the timer reads it and never writes it back. A page reload (or a second
browser tab) re-attaches to the same runs from the database.

Every handler works out the viewer from the request (``ui.access.identity``) and lists, reads and
acts on that viewer's runs only, so a queue call replayed from another session is refused too.
The parts are laid out in :mod:`ui.runs.layout`; this module wires their events.
"""

from __future__ import annotations

from dataclasses import dataclass

import gradio as gr

from engine.run.launcher import RESUMABLE
from storage import runs as run_store
from ui.access.identity import Viewer, viewer_for
from ui.plots import charts
from ui.plots.chart_controls import ChartControls
from ui.plots.panels import PANELS
from ui.plots.plot_output import plot_value
from ui.runs.baseline import NO_BASELINE, read_baseline, with_baseline
from ui.runs.buttons import wire_actions
from ui.runs.distribution_chart import distribution_updates, wire_distribution_chart
from ui.runs.extra_chart import draw, extra_updates
from ui.runs.labels_view import wire_label_editor
from ui.runs.layout import RunsParts, build_runs_parts
from ui.runs.model_export import build_model_export
from ui.runs.poll import KEPT, RunsUpdate, default_selection, poll, run_choices
from ui.runs.rescore import build_rescore
from ui.runs.samples_view import samples_updates, wire_samples
from ui.runs.state import RunView
from ui.shared.context import AppContext
from ui.shared.named_values import Updates, Values

POLL_SECONDS = 1.0
POLL_CONCURRENCY = 8  # polls of all sessions served at once (Gradio runs them in threads)
_PANELS = {p.key: p for p in PANELS}
URL_JS = "(run) => { window.studioRunInUrl?.(run); }"


@dataclass
class RunsHandles:
    """What other tabs need from the Runs tab."""

    run_select: gr.Dropdown
    view: gr.State
    timer: gr.Timer
    chart_controls: ChartControls  # smoothing, x axis, log scale (kept by the browser)


def action_buttons(parts: RunsParts, status: str | None) -> Updates:
    """Stop, Resume and Delete, enabled for the statuses where they apply (no update when the
    status did not change)."""
    if status is None:
        return {}
    active = status in ("queued", "running")
    return {
        parts.stop: gr.Button(interactive=active),
        parts.resume: gr.Button(interactive=status in RESUMABLE),
        parts.delete: gr.Button(interactive=bool(status) and not active),
    }


def poll_updates(
    parts: RunsParts,
    state: RunView,
    update: RunsUpdate,
    options: charts.ChartOptions | None = None,
) -> Updates:
    """The page updates of one poll: only what ``update`` says changed (a quiet tick updates
    nothing but the view state).

    The run picker gets new choices, never a value from the view, except none when its run is
    gone: a pick made while this poll ran must not be undone by it.
    """
    out: Updates = {parts.view: state}
    for comp, value in (
        (parts.table, update.runs_table),
        (parts.table_empty, update.table_empty),
        (parts.status_md, update.status_md),
        (parts.progress, update.progress_html),
        (parts.hints_md, update.hints_md),
        (parts.logs, update.logs),
    ):
        if value is not None:
            out[comp] = value
    if update.error is not None:
        out[parts.error_box] = gr.Code(value=update.error, visible=bool(update.error))
    if update.run_choices is not None:
        listed = any(run_id == state.run_id for _, run_id in update.run_choices)
        gone = state.run_id is not None and not listed  # deleted, here or elsewhere
        out[parts.run_select] = (
            gr.Dropdown(choices=update.run_choices, value=None)
            if gone
            else gr.Dropdown(choices=update.run_choices)
        )
        out[parts.baseline] = gr.Dropdown(choices=[NO_BASELINE, *update.run_choices])
    for key, figure in update.figures.items():
        if state.baseline_series and state.baseline_id != state.run_id:
            baseline = state.baseline_series, state.baseline_name, options, state.baseline_clock
            figure = with_baseline(figure, _PANELS[key], *baseline)
        out[parts.plots[key]] = plot_value(figure)
        # An empty chart says nothing: panels appear with their first point.
        out[parts.panel_columns[key]] = gr.Column(visible=bool(figure["data"]))
    if update.sample_steps is not None and state.offer_sample_steps(update.sample_steps):
        out[parts.step_select] = gr.Dropdown(choices=state.sample_steps, value=state.sample_step)
    out.update(action_buttons(parts, update.status))
    if update.clear_message:
        out[parts.action_md] = ""
    if update.algorithm is not None:
        for key, note in parts.panel_notes.items():
            out[note] = gr.Markdown(visible=_PANELS[key].note_shown_for(update.algorithm))
    return out


def _wire_poll(ctx: AppContext, parts: RunsParts, timer: gr.Timer) -> None:
    """Each tick (and each new selection) redraws only what changed."""

    def refresh(
        raw: Values, request: gr.Request, profile: gr.OAuthProfile | None, picked: bool
    ) -> Updates:
        state: RunView = raw[parts.view]
        viewer = viewer_for(request, profile)
        # Only a selection event reads the picker: a tick sent before a pick carries the run
        # picked before, and taking it as a new pick snapped the view back to that run.
        selected = (raw[parts.run_select] or None) if picked else KEPT
        options = charts.ChartOptions.from_inputs(
            raw[parts.smoothing], raw[parts.x_axis], raw[parts.log_y]
        )
        shown = parts.finder.read(raw)
        with state.lock:
            if picked and (raw[parts.baseline] or None) != state.baseline_id:
                state.baseline_id = raw[parts.baseline] or None
                state.baseline_name, state.baseline_series, state.baseline_clock = read_baseline(
                    ctx.db, state.baseline_id, viewer.scope
                )
            update = poll(
                ctx.db,
                state,
                selected,
                owner=viewer.scope,
                force=picked,
                options=options,
                run_filter=shown,
            )
            out = poll_updates(parts, state, update, options)
            out.update(samples_updates(ctx.db, viewer, parts, state))
            picked_metrics = raw[parts.extra.metrics]
            out.update(extra_updates(parts.extra, state, update, picked_metrics, options, picked))
            quantity = raw[parts.dist.quantity]
            out.update(distribution_updates(parts.dist, state, update, quantity, picked))
            return out

    def tick(raw: Values, request: gr.Request, profile: gr.OAuthProfile | None = None) -> Updates:
        return refresh(raw, request, profile, False)

    def on_select(
        raw: Values, request: gr.Request, profile: gr.OAuthProfile | None = None
    ) -> Updates:
        return refresh(raw, request, profile, True)

    inputs = {
        parts.view,
        parts.run_select,
        parts.smoothing,
        parts.x_axis,
        parts.log_y,
        parts.baseline,
        parts.extra.metrics,
        parts.dist.quantity,
        *parts.finder.inputs,
    }
    # A new filter redraws the table only (it is part of the list's key), not the charts: the
    # tick's own work, in the poll's pool.
    gr.on(
        [
            timer.tick,
            parts.finder.search.change,
            parts.finder.status.change,
            parts.finder.sort.change,
        ],
        tick,
        inputs=inputs,
        outputs=parts.poll_outputs,
        show_progress="hidden",
        api_visibility="private",
        trigger_mode="always_last",
        # One cheap query, in its own pool (never behind a preview), but bounded: a flood of
        # polls must not take every worker thread from the page's own requests.
        concurrency_limit=POLL_CONCURRENCY,
        concurrency_id="poll",
    )
    gr.on(
        [
            parts.run_select.change,
            parts.smoothing.change,
            parts.x_axis.change,
            parts.log_y.change,
            parts.baseline.change,
        ],
        on_select,
        inputs=inputs,
        outputs=parts.poll_outputs,
        show_progress="hidden",
        api_visibility="private",
        trigger_mode="always_last",  # a dragged slider redraws for where it stops
    )

    def on_pick(raw: Values) -> Updates:
        options = charts.ChartOptions.from_inputs(
            raw[parts.smoothing], raw[parts.x_axis], raw[parts.log_y]
        )
        view: RunView = raw[parts.view]
        with view.lock:
            return draw(view, raw[parts.extra.metrics], options, parts.extra)

    parts.extra.metrics.input(  # the user's pick: only the extra chart is drawn again
        on_pick,
        inputs={parts.view, parts.smoothing, parts.x_axis, parts.log_y, parts.extra.metrics},
        outputs=[parts.extra.column, parts.extra.plot],
        show_progress="hidden",
        api_visibility="private",
        trigger_mode="always_last",
    )

    def on_row(evt: gr.SelectData):
        row = evt.row_value if getattr(evt, "row_value", None) else None
        return row[0] if row else gr.skip()

    # The previous run's download, action message ("Resuming …") and delete question do not
    # belong to the run now open (a confirm after switching would delete the wrong run),
    # however it was opened: picked, a row clicked, or a run just started in Train.
    cleared = [parts.download, parts.action_md, parts.confirm_row]
    # The user's picks (a row clicked, the menu) go into the address (ui.memory.wiring).
    in_url = {"inputs": parts.run_select, "js": URL_JS, "api_visibility": "private"}
    parts.table.select(on_row, outputs=parts.run_select, api_visibility="private").then(
        None, **in_url
    )
    parts.run_select.input(None, **in_url)
    parts.run_select.change(
        clear_action_output, outputs=cleared, api_visibility="private", show_progress="hidden"
    )


def clear_action_output() -> tuple[gr.File, str, gr.Row]:
    return gr.File(value=None, visible=False), "", gr.Row(visible=False)


def build_runs(ctx: AppContext, design_spec: gr.State | None = None) -> RunsHandles:
    # Ticks only while the Runs tab shows (ui.factory turns it on and off): every event makes
    # the page refresh the status of each output it has drawn, which slows all other tabs.
    timer = gr.Timer(POLL_SECONDS, active=False)
    parts = build_runs_parts()
    _wire_poll(ctx, parts, timer)
    wire_samples(ctx, parts)
    wire_distribution_chart(parts.dist, parts.view)
    wire_actions(ctx, parts)
    wire_label_editor(ctx, parts.labels, parts.run_select, parts.view)
    build_model_export(ctx, parts.run_select)
    build_rescore(ctx, parts.run_select, design_spec)  # the reward lab's "Re-score with…"
    controls = ChartControls(parts.smoothing, parts.x_axis, parts.log_y)
    return RunsHandles(
        run_select=parts.run_select, view=parts.view, timer=timer, chart_controls=controls
    )


def initial_selection(
    ctx: AppContext, viewer: Viewer, requested: str | None = None
) -> tuple[list[tuple[str, str]], str | None]:
    """The viewer's run choices and the selection when a page (re)opens: the run asked for in
    the URL (``?run=ID``) if it is one of theirs, else the newest running run, else the
    newest run."""
    runs = run_store.list_runs(ctx.db, owner=viewer.scope)
    ids = {r.id for r in runs}
    pick = requested if requested in ids else default_selection(runs)
    return run_choices(runs), pick
