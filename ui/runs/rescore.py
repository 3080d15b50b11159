"""The Runs view's "Re-score with…": the selected run's stored samples scored by another spec.

The spec is the Design tab's (what the user is editing now), a preset or a file; the result is
both curves over the logged steps (the run's stored reward and the new one), the samples where
they disagree most and the new spec's diagnostics on what the model learned to write. The run
is read for its owner only (:func:`engine.tracking.rescore.rescore_run` with the viewer's scope)
and at most :data:`ui.api.lab.MAX_API_RESCORE_SAMPLES` samples, under a time budget.
"""

from __future__ import annotations

from typing import Any

import gradio as gr

from engine.tracking.rescore import RescoreError, rescore_run
from rewards.errors import RewardSpecError
from rewards.spec import PRESETS, RewardSpec, preset
from rewards.verification.deadline import call_deadline
from rewards.verification.mathpool import INTERACTIVE_DEADLINE_S
from ui.access.identity import viewer_for
from ui.api.lab import MAX_API_RESCORE_SAMPLES
from ui.design.spec_io import parse_spec
from ui.plots.lab_charts import rescore_figure
from ui.plots.plot_output import plot_value
from ui.shared.context import AppContext
from ui.shared.lab_inputs import LabError, read_spec_upload
from ui.shared.messages import escape, warn
from ui.shared.trace_view import fmt

DESIGN = "the Design tab's spec"
FILE = "a file"
SOURCES = [DESIGN, *PRESETS, FILE]
TOP_HEADERS = ["step", "#", "completion", "stored total", "new total", "Δ"]


def rescore_view(result: dict[str, Any]) -> tuple[str, list[list[Any]]]:
    """The summary line(s) and the table of samples that disagree most."""
    lines = [
        f"Re-scored **{result['samples']}** samples over **{result['steps']}** logged steps; "
        f"largest |new − stored| total **{fmt(result['max_abs_diff'])}**."
    ]
    for name, why in result["skipped"].items():
        lines.append(warn(escape(f"{name} was left out: it {why}")))
    diag = result["diagnostics"]
    if diag:
        lines.append(
            f"New spec on what the model wrote: {diag['zero_std_fraction']:.0%} of groups score "
            "identically."
        )
        lines += [warn(escape(w)) for w in diag.get("warnings", [])]
    rows = [
        [
            r["step"],
            r["index"],
            r["completion"][:200],
            fmt(r["stored_total"]),
            fmt(r["new_total"]),
            fmt(r["diff"]),
        ]
        for r in result["top"]
    ]
    return "\n\n".join(lines), rows


def _spec(source: str, design_spec: RewardSpec | None, file: Any) -> RewardSpec:
    if source == DESIGN:
        if design_spec is None:
            raise LabError("the Design tab's spec has fields to fix first")
        return design_spec
    if source == FILE:
        if file is None:
            raise LabError("choose a spec file to re-score with")
        try:
            return parse_spec(read_spec_upload(file))
        except RewardSpecError as exc:
            raise LabError(f"the file: {exc}") from None
    return preset(source)


def build_rescore(ctx: AppContext, run_select: gr.Dropdown, design_spec: gr.State | None) -> None:
    """The "Re-score with…" accordion of the Runs view."""
    with gr.Accordion("Re-score with…", open=False, elem_id="runs-rescore"):
        with gr.Row():
            source = gr.Dropdown(SOURCES, value=DESIGN, label="spec", elem_id="rescore-source")
            file = gr.File(label="spec file", file_types=[".yaml", ".yml", ".json"], visible=False)
            run = gr.Button("Re-score", variant="primary", elem_id="rescore-run")
        summary = gr.Markdown(elem_id="rescore-summary")
        plot = gr.Plot(show_label=False, elem_id="rescore-plot")
        table = gr.Dataframe(
            headers=TOP_HEADERS,
            value=[],
            interactive=False,
            wrap=True,
            label="Samples where the two disagree most",
            elem_id="rescore-table",
        )
    source.change(lambda s: gr.File(visible=s == FILE), source, file, api_visibility="private")

    def on_rescore(
        run_id: str | None,
        chosen: str,
        design: RewardSpec | None,
        upload: Any,
        request: gr.Request,
        profile: gr.OAuthProfile | None = None,
    ):
        viewer = viewer_for(request, profile)
        try:
            if not run_id:
                raise LabError("select a run first")
            spec = _spec(chosen, design, upload)
            with call_deadline(INTERACTIVE_DEADLINE_S * 3):
                result = rescore_run(
                    ctx.db, run_id, spec, owner=viewer.scope, max_samples=MAX_API_RESCORE_SAMPLES
                ).to_dict()
        except (LabError, RescoreError) as exc:
            return warn(escape(str(exc))), gr.skip(), gr.skip()
        text, rows = rescore_view(result)
        label = chosen if chosen != FILE else "file"
        return text, plot_value(rescore_figure(result["per_step"], label)), rows

    inputs = [run_select, source, design_spec if design_spec is not None else gr.State(None), file]
    run.click(
        on_rescore,
        inputs,
        [summary, plot, table],
        concurrency_limit=1,
        concurrency_id="rescore",
        api_visibility="private",
    )
