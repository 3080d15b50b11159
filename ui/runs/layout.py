"""The Runs tab's parts, laid out: the run picker and its actions, the charts, the samples and the
log (:class:`RunsParts`); :mod:`ui.runs.tab` wires their events."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import gradio as gr

from ui.plots import chart_controls
from ui.plots.panels import PANELS
from ui.runs.baseline import NO_BASELINE
from ui.runs.distribution_chart import DistributionChart, build_distribution_chart
from ui.runs.extra_chart import ExtraChart, build_extra_chart
from ui.runs.labels_view import FilterControls, LabelEditor, build_label_editor, build_runs_list
from ui.runs.sample_groups import GROUP_HEADERS, SAMPLE_FILTERS, SHOW_ALL
from ui.runs.state import RunView


@dataclass
class RunsParts:
    """The Runs tab's named parts."""

    view: gr.State
    run_select: gr.Dropdown
    finder: FilterControls  # search, status filter and sort of the table
    table: gr.Dataframe
    table_empty: gr.Markdown  # why the table shows no row ("" when it shows some)
    labels: LabelEditor  # the open run's tags and note
    status_md: gr.Markdown
    progress: gr.HTML  # step N of M, ETA and phase; the summary card once the run ended
    stop: gr.Button
    resume: gr.Button
    delete: gr.Button
    config: gr.Button
    checkpoint: gr.Button
    data: gr.Button
    action_md: gr.Markdown
    confirm_row: gr.Row  # "Delete for good?" with its two buttons
    confirm_delete: gr.Button
    cancel_delete: gr.Button
    undo_delete: gr.Button
    pending_delete: gr.State  # the run whose delete waits in its undo window
    download: gr.File
    error_box: gr.Code
    hints_md: gr.Markdown
    repo: gr.Textbox
    token: gr.Textbox
    push: gr.Button
    smoothing: gr.Slider  # EMA weight, the raw line faint behind
    x_axis: gr.Radio  # step or relative time
    log_y: gr.Checkbox
    baseline: gr.Dropdown  # a run drawn dotted under every chart
    plots: dict[str, gr.Plot]  # panel key -> chart
    panel_columns: dict[str, gr.Column]  # panel key -> column, shown once it has points
    panel_notes: dict[str, gr.Markdown]  # panel key -> note, shown for the algorithms it is about
    extra: ExtraChart  # any logged metric, picked by name
    dist: DistributionChart  # a heat map over steps of each step's whole batch
    step_select: gr.Dropdown
    sample_filter: gr.Radio  # all, zero-variance groups, wrong answers, truncated
    groups_note: gr.Markdown  # the step's groups with zero variance, what the filter kept
    groups: gr.Dataframe  # each group's reward spread
    samples: gr.Dataframe
    logs: gr.Code

    @property
    def poll_outputs(self) -> list[gr.components.Component]:
        """Everything a tick may redraw."""
        return [
            self.view,
            self.table,
            self.table_empty,
            self.run_select,
            self.status_md,
            self.progress,
            self.error_box,
            self.hints_md,
            *self.plots.values(),
            self.logs,
            self.step_select,
            self.groups_note,
            self.groups,
            self.samples,
            self.stop,
            self.resume,
            self.delete,
            self.action_md,
            self.baseline,
            *self.panel_columns.values(),
            *self.panel_notes.values(),
            *self.extra.outputs,
            *self.dist.outputs,
        ]


def _build_header() -> dict[str, Any]:
    """Run picker and list on the left; status, actions, error, hints and Hub push on the
    right."""
    with gr.Row(equal_height=False):
        with gr.Column(scale=1, min_width=380):
            run_select = gr.Dropdown(
                label="Run", choices=[], value=None, interactive=True, elem_id="run-select"
            )
            labels = build_label_editor()
        with gr.Column(scale=1, min_width=420):
            status_md = gr.Markdown(elem_id="run-status")
            progress = gr.HTML(elem_id="run-progress")
            with gr.Row():
                stop = gr.Button("Stop", variant="stop", size="sm", elem_id="run-stop")
                resume = gr.Button("Resume", size="sm", elem_id="run-resume")
                delete = gr.Button("Delete", size="sm", elem_id="run-delete")
                config = gr.Button("Config file", size="sm", elem_id="run-config")
                checkpoint = gr.Button("Checkpoint (zip)", size="sm")
                data = gr.Button("Metrics & samples (zip)", size="sm", elem_id="run-data")
            action_md = gr.Markdown(elem_id="run-action-message")
            with gr.Row(visible=False) as confirm_row:
                confirm_delete = gr.Button(
                    "Delete for good", variant="stop", size="sm", elem_id="run-delete-confirm"
                )
                cancel_delete = gr.Button("Keep it", size="sm", elem_id="run-delete-cancel")
            undo_delete = gr.Button(
                "Undo delete", size="sm", visible=False, elem_id="run-delete-undo"
            )
            pending_delete = gr.State(None)
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
                repo = gr.Textbox(label="Repo (owner/name)", placeholder="alice/my-grpo-model")
                token = gr.Textbox(label="Write token (used once, never stored)", type="password")
                push = gr.Button("Push final model (or newest checkpoint)", size="sm")
    finder, table, table_empty = build_runs_list()
    return dict(
        run_select=run_select,
        finder=finder,
        table=table,
        table_empty=table_empty,
        labels=labels,
        status_md=status_md,
        progress=progress,
        stop=stop,
        resume=resume,
        delete=delete,
        config=config,
        checkpoint=checkpoint,
        data=data,
        action_md=action_md,
        confirm_row=confirm_row,
        confirm_delete=confirm_delete,
        cancel_delete=cancel_delete,
        undo_delete=undo_delete,
        pending_delete=pending_delete,
        download=download,
        error_box=error_box,
        hints_md=hints_md,
        repo=repo,
        token=token,
        push=push,
    )


def _build_charts() -> tuple[dict[str, gr.Plot], dict[str, gr.Column], dict[str, gr.Markdown]]:
    """One chart per panel, three to a row, each hidden until it has points; the notes under
    charts, shown for the algorithms they are about."""
    plots: dict[str, gr.Plot] = {}
    columns: dict[str, gr.Column] = {}
    notes: dict[str, gr.Markdown] = {}
    panels = list(PANELS)
    for start in range(0, len(panels), 3):
        with gr.Row():
            for panel in panels[start : start + 3]:
                with gr.Column(min_width=300, visible=False) as column:
                    columns[panel.key] = column
                    plots[panel.key] = gr.Plot(
                        show_label=False, elem_id=f"chart-{panel.key}", elem_classes="run-chart"
                    )
                    if panel.note:
                        notes[panel.key] = gr.Markdown(
                            f"<small>{panel.note}</small>",
                            visible=panel.note_shown_for(None),
                            elem_id=f"chart-note-{panel.key}",
                        )
    return plots, columns, notes


def build_runs_parts() -> RunsParts:
    """Every part of the Runs tab, laid out; nothing wired yet."""
    view = gr.State(RunView())
    header = _build_header()
    with gr.Row(equal_height=True):
        smoothing = chart_controls.smoothing_slider("chart-smoothing", scale=3)
        x_axis = chart_controls.x_axis_radio("chart-x", scale=2)
        log_y = gr.Checkbox(label="log scale", value=False, elem_id="chart-log", scale=1)
        baseline = gr.Dropdown(
            label="Baseline run (dotted under each chart)",
            choices=[NO_BASELINE],
            value="",
            elem_id="chart-baseline",
            scale=2,
        )
    plots, panel_columns, panel_notes = _build_charts()
    extra = build_extra_chart()
    dist = build_distribution_chart()
    with gr.Accordion("Samples by step, with each component's score", open=True):
        with gr.Row(equal_height=True):
            # A pick may still carry the previous run's step after the choices moved on: the
            # handler takes any value (and keeps the view's step for one that is not there)
            # instead of Gradio refusing it with an error toast.
            step_select = gr.Dropdown(
                label="Step",
                choices=[],
                value=None,
                elem_id="sample-step",
                allow_custom_value=True,
                scale=1,
            )
            sample_filter = gr.Radio(
                list(SAMPLE_FILTERS), value=SHOW_ALL, label="Show", elem_id="sample-filter", scale=3
            )
        groups_note = gr.Markdown(elem_id="sample-groups-note")
        groups = gr.Dataframe(
            value=[],
            headers=GROUP_HEADERS,
            interactive=False,
            max_height=240,
            elem_id="run-groups",
        )
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
    return RunsParts(
        view=view,
        **header,
        smoothing=smoothing,
        x_axis=x_axis,
        log_y=log_y,
        baseline=baseline,
        plots=plots,
        panel_columns=panel_columns,
        panel_notes=panel_notes,
        extra=extra,
        dist=dist,
        step_select=step_select,
        sample_filter=sample_filter,
        groups_note=groups_note,
        groups=groups,
        samples=samples,
        logs=logs,
    )
