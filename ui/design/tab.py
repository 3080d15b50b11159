"""The Design tab: compose the reward from the registry's components.

Every component instance gets an enable switch, a weight, an optional metric name and its
parameters, all generated from :data:`rewards.registry.REGISTRY` through
:class:`ui.design.spec_form.SpecForm` and drawn on demand by :mod:`ui.design.editor`. Loading a
spec that the form cannot show whole is refused, and disabled components are named when loaded
(they are shown unticked and stay out of the spec until ticked). Each edit is validated
at once and a wrong value gets its message right under its input. The valid spec goes into a
``gr.State`` that the Preview and Train tabs read; presets, JSON/YAML import and export, and the
standalone TRL module are here too. "Try it" scores one hand-written completion live.

Each part is its own module (:mod:`ui.design.editor`, :mod:`ui.design.presets`,
:mod:`ui.design.files`, :mod:`ui.design.try_it`); this one lays them out and wires them together,
and re-exports the names other tabs take from the Design tab (``elem_key``, ``TRACE_HEADERS``,
``TRACE_WIDTHS``, ``trace_rows``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import gradio as gr

from rewards.spec import DEFAULT_PRESET, PRESETS, RewardSpec
from ui.design.editor import EditorTargets, build_editor, wire_editor
from ui.design.editor import elem_key as elem_key
from ui.design.files import SpecIoParts, build_spec_io, wire_spec_io
from ui.design.presets import build_presets, wire_loaders
from ui.design.schedule_inputs import schedule_curves
from ui.design.spec_form import FormCheck, SpecForm
from ui.design.try_it import TRACE_HEADERS as TRACE_HEADERS
from ui.design.try_it import TRACE_WIDTHS as TRACE_WIDTHS
from ui.design.try_it import build_try, wire_try
from ui.design.try_it import trace_rows as trace_rows
from ui.plots.plot_output import plot_value
from ui.shared.context import AppContext
from ui.shared.named_values import Updates


@dataclass
class DesignHandles:
    """What other tabs read from the Design tab: the current valid spec as a plain dict."""

    spec_state: gr.State
    form: SpecForm
    # What a loaded spec redraws (the browser's saved design, on reload); None where another
    # tab is built alone, without the Design form.
    editor: EditorTargets | None = None


def _schedule_plot(spec: RewardSpec | None) -> gr.Plot:
    """Each weight schedule of the spec as a small curve (hidden while there is none)."""
    if spec is None:
        return gr.skip()
    figure = schedule_curves(spec)
    return gr.Plot(value=plot_value(figure), visible=figure is not None)


def _followers(schedules: gr.Plot, io: SpecIoParts) -> Callable[[RewardSpec | None], Updates]:
    def follow(spec: RewardSpec | None) -> Updates:
        # Files prepared for one spec are not the next one's: a change takes them away.
        return {schedules: _schedule_plot(spec), io.downloads: gr.File(value=None, visible=False)}

    return follow


def build_design(ctx: AppContext) -> DesignHandles:
    form = SpecForm()
    initial_spec = PRESETS.get(DEFAULT_PRESET) or next(iter(PRESETS.values()))
    spec_state = gr.State(initial_spec)
    with gr.Row(equal_height=False):
        with gr.Column(scale=3):
            preset, load_preset = build_presets()
            status = gr.Markdown(FormCheck(initial_spec).summary(), elem_id="spec-status")
            editor = build_editor(form, form.values_from_spec(initial_spec))
            schedules = gr.Plot(
                show_label=False, visible=initial_spec.has_schedules, elem_id="design-schedules"
            )
        with gr.Column(scale=2):
            try_parts = build_try(initial_spec)
            io = build_spec_io(initial_spec)
    out = EditorTargets(
        editor, spec_state, status, io.code, io.export_format, io.message, form, preset
    )
    checked = wire_editor(out, _followers(schedules, io), [schedules, io.downloads])
    wire_loaders(form, out, io, preset, load_preset)
    wire_spec_io(io, spec_state)
    starts = [editor.change, load_preset.click, io.apply.click, io.upload.upload]
    wire_try(try_parts, spec_state, checked, starts)
    return DesignHandles(spec_state=spec_state, form=form, editor=out)
