"""The Runs tab: run list, live charts, per-step samples, logs and errors, run actions.

A 1 s ``gr.Timer`` calls :func:`ui.run_poll.poll`, which runs one cheap query and reads new
rows by cursor only when something moved; outputs that did not change are skipped, so the
browser redraws nothing on a quiet tick. The selection is the run dropdown's value, so a page
reload (or a second browser tab) re-attaches to the same runs from the database.

Every handler works out the viewer from the request (``ui.identity``) and lists, reads and acts
on that viewer's runs only, so a queue call replayed from another session is refused too.
"""

from __future__ import annotations

from dataclasses import dataclass

import gradio as gr

from engine.launcher import RESUMABLE
from storage import runs as run_store
from ui import charts, run_actions
from ui.context import AppContext
from ui.identity import Viewer, viewer_for
from ui.messages import escape, ok, warn
from ui.plots import plot_value
from ui.run_poll import RUN_COLUMNS, default_selection, poll, run_choices
from ui.run_state import RunView

POLL_SECONDS = 1.0


@dataclass
class RunsHandles:
    """What other tabs need from the Runs tab."""

    run_select: gr.Dropdown
    view: gr.State
    timer: gr.Timer


def _skip_or(value):
    return gr.skip() if value is None else value


def action_buttons(status: str | None) -> list:
    """Stop, Resume and Delete, enabled for the statuses where they apply."""
    if status is None:
        return [gr.skip()] * 3
    active = status in ("queued", "running")
    return [
        gr.Button(interactive=active),
        gr.Button(interactive=status in RESUMABLE),
        gr.Button(interactive=bool(status) and not active),
    ]


def build_runs(ctx: AppContext) -> RunsHandles:
    view = gr.State(RunView())
    timer = gr.Timer(POLL_SECONDS)
    with gr.Row(equal_height=False):
        with gr.Column(scale=1, min_width=380):
            run_select = gr.Dropdown(
                label="Run", choices=[], value=None, interactive=True, elem_id="run-select"
            )
            table = gr.Dataframe(
                headers=RUN_COLUMNS,
                value=[],
                interactive=False,
                label="All runs (click a row to open it)",
                elem_id="runs-table",
                max_height=360,
                wrap=True,
            )
        with gr.Column(scale=1, min_width=420):
            status_md = gr.Markdown(elem_id="run-status")
            with gr.Row():
                stop_btn = gr.Button("Stop", variant="stop", size="sm", elem_id="run-stop")
                resume_btn = gr.Button("Resume", size="sm", elem_id="run-resume")
                delete_btn = gr.Button("Delete", size="sm", elem_id="run-delete")
                config_btn = gr.Button("Config file", size="sm", elem_id="run-config")
                ckpt_btn = gr.Button("Checkpoint (zip)", size="sm")
                data_btn = gr.Button("Metrics & samples (zip)", size="sm", elem_id="run-data")
            action_md = gr.Markdown(elem_id="run-action-message")
            download = gr.File(label="Download", visible=False, interactive=False)
            error_box = gr.Code(
                label="Error and traceback",
                language="python",
                visible=False,
                elem_id="run-error",
                max_lines=25,
            )
            hints_md = gr.Markdown(elem_id="run-hints")
            with gr.Accordion("Push to the Hugging Face Hub", open=False):
                repo_box = gr.Textbox(label="Repo (owner/name)", placeholder="alice/my-grpo-model")
                token_box = gr.Textbox(
                    label="Write token (used once, never stored)", type="password"
                )
                push_btn = gr.Button("Push final model (or newest checkpoint)", size="sm")

    plots: dict[str, gr.Plot] = {}
    panels = list(charts.PANELS)
    panel_columns: dict[str, gr.Column] = {}
    for start in range(0, len(panels), 3):
        with gr.Row():
            for panel in panels[start : start + 3]:
                with gr.Column(min_width=300, visible=panel.shown_for(None)) as column:
                    panel_columns[panel.key] = column
                    plots[panel.key] = gr.Plot(
                        show_label=False, elem_id=f"chart-{panel.key}", elem_classes="run-chart"
                    )
                    if panel.note:
                        gr.Markdown(f"<small>{panel.note}</small>")

    with gr.Accordion("Samples by step, with each component's score", open=True):
        step_select = gr.Dropdown(label="Step", choices=[], value=None, elem_id="sample-step")
        samples = gr.Dataframe(
            value=[],
            headers=["prompt", "completion", "total"],
            interactive=False,
            wrap=True,
            max_height=480,
            elem_id="run-samples",
            datatype="html",
        )
    with gr.Accordion("Worker log", open=False):
        logs = gr.Code(label="Log", language=None, max_lines=30, elem_id="run-logs")

    plot_list = [plots[p.key] for p in panels]
    buttons = [stop_btn, resume_btn, delete_btn]
    outputs = [view, table, run_select, status_md, error_box, hints_md, *plot_list, logs]
    outputs += [step_select, *buttons]
    optional_panels = [p for p in panels if p.only_for]
    outputs += [panel_columns[p.key] for p in optional_panels]

    def refresh(state: RunView, selected: str | None, current_step, viewer: Viewer, force: bool):
        update = poll(ctx.db, state, selected or None, owner=viewer.scope, force=force)
        error = (
            gr.skip()
            if update.error is None
            else gr.Code(value=update.error, visible=bool(update.error))
        )
        choices = gr.skip()
        if update.run_choices is not None:
            listed = any(run_id == state.run_id for _, run_id in update.run_choices)
            choices = gr.Dropdown(
                choices=update.run_choices, value=state.run_id if listed else None
            )
        figures = [
            gr.skip() if p.key not in update.figures else plot_value(update.figures[p.key])
            for p in panels
        ]
        steps = gr.skip()
        if update.sample_steps is not None:
            keep = current_step if current_step in update.sample_steps else None
            latest = update.sample_steps[-1] if update.sample_steps else None
            steps = gr.Dropdown(choices=update.sample_steps, value=keep or latest)
        return (
            state,
            _skip_or(update.runs_table),
            choices,
            _skip_or(update.status_md),
            error,
            _skip_or(update.hints_md),
            *figures,
            _skip_or(update.logs),
            steps,
            *action_buttons(update.status),
            *[
                gr.skip()
                if update.algorithm is None
                else gr.Column(visible=p.shown_for(update.algorithm))
                for p in optional_panels
            ],
        )

    def tick(
        state: RunView,
        selected: str | None,
        current_step,
        request: gr.Request,
        profile: gr.OAuthProfile | None = None,
    ):
        return refresh(state, selected, current_step, viewer_for(request, profile), False)

    def on_select(
        state: RunView,
        selected: str | None,
        current_step,
        request: gr.Request,
        profile: gr.OAuthProfile | None = None,
    ):
        return refresh(state, selected, current_step, viewer_for(request, profile), True)

    timer.tick(
        tick,
        inputs=[view, run_select, step_select],
        outputs=outputs,
        show_progress="hidden",
        api_visibility="private",
        trigger_mode="always_last",
        concurrency_limit=None,  # one cheap query; never wait behind other sessions' events
    )
    run_select.change(
        on_select,
        inputs=[view, run_select, step_select],
        outputs=outputs,
        show_progress="hidden",
        api_visibility="private",
    )

    def on_row(evt: gr.SelectData):
        row = evt.row_value if getattr(evt, "row_value", None) else None
        return row[0] if row else gr.skip()

    table.select(on_row, outputs=run_select, api_visibility="private")

    def show_samples(
        run_id: str | None, step, request: gr.Request, profile: gr.OAuthProfile | None = None
    ):
        viewer = viewer_for(request, profile)
        headers, rows = run_actions.samples_table(ctx.db, viewer, run_id, step)
        n_components = max(0, len(headers) - 7)
        datatypes = ["number", "str", "html", "str", "str", "str"]
        datatypes += ["str"] * n_components + ["str"]
        widths = ["5%", "14%", "33%", "6%", "6%", "7%", *["6%"] * n_components]
        widths.append(f"{max(10, 29 - 6 * n_components)}%")
        if len(headers) < 7:  # no samples: the placeholder headers
            return gr.Dataframe(value=rows, headers=headers)
        return gr.Dataframe(value=rows, headers=headers, datatype=datatypes, column_widths=widths)

    step_select.change(
        show_samples, inputs=[run_select, step_select], outputs=samples, api_visibility="private"
    )

    def act(fn):
        def handler(
            run_id: str | None, request: gr.Request, profile: gr.OAuthProfile | None = None
        ):
            try:
                return ok(escape(fn(ctx.db, ctx.launcher, viewer_for(request, profile), run_id)))
            except run_actions.RunActionError as exc:
                return warn(escape(exc))

        return handler

    for button, fn in (
        (stop_btn, run_actions.stop_run),
        (resume_btn, run_actions.resume_run),
        (delete_btn, run_actions.delete_run),
    ):
        button.click(act(fn), inputs=run_select, outputs=action_md, api_visibility="private")

    def download_with(fn):
        def handler(
            run_id: str | None, request: gr.Request, profile: gr.OAuthProfile | None = None
        ):
            try:
                path = fn(ctx.db, viewer_for(request, profile), run_id)
            except run_actions.RunActionError as exc:
                return gr.File(visible=False), warn(escape(exc))
            return gr.File(value=str(path), visible=True), ""

        return handler

    config_btn.click(
        download_with(run_actions.config_file),
        inputs=run_select,
        outputs=[download, action_md],
        api_visibility="private",
    )
    ckpt_btn.click(
        download_with(run_actions.checkpoint_archive),
        inputs=run_select,
        outputs=[download, action_md],
        api_visibility="private",
    )
    data_btn.click(
        download_with(run_actions.run_data_archive),
        inputs=run_select,
        outputs=[download, action_md],
        api_visibility="private",
    )

    def push(
        run_id: str | None,
        repo: str,
        token: str,
        request: gr.Request,
        profile: gr.OAuthProfile | None = None,
    ):
        viewer = viewer_for(request, profile)
        try:
            message = ok(escape(run_actions.push_to_hub(ctx.db, viewer, run_id, repo, token)))
        except run_actions.RunActionError as exc:
            message = warn(escape(exc))
        return message, ""  # the token box is cleared either way

    push_btn.click(
        push,
        inputs=[run_select, repo_box, token_box],
        outputs=[action_md, token_box],
        api_visibility="private",
    )
    return RunsHandles(run_select=run_select, view=view, timer=timer)


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
