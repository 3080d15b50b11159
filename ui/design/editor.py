"""The Design tab's component editor, drawn on demand from the form's values.

The values (:data:`ui.design.spec_form.FormValues`) live in a ``gr.State``, the *layout*;
``gr.render`` draws one accordion per slot they hold, so "Add component" adds any registry
component any number of times (up to :data:`ui.design.spec_form.MAX_INSTANCES`) and Remove drops
any, with no pool of hidden slots. Typing in an input validates at once without drawing again (the
layout changes only on add, remove and load, which read the inputs first, so nothing typed is
lost). Inputs are generated from the registry's :class:`~rewards.params.ParamSpec` and carried by
input key, never by position.
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from typing import Any

import gradio as gr

from rewards.params import ParamSpec
from ui.design import spec_io
from ui.design.form_values import label_from_form
from ui.design.schedule_inputs import AGGREGATION, AGGREGATION_CHOICES, KINDS, schedule_keys
from ui.design.spec_form import (
    DESCRIPTION,
    GENERAL,
    FormCheck,
    FormValues,
    Slot,
    SpecDoesNotFit,
    SpecForm,
)
from ui.shared.messages import escape, warn
from ui.shared.named_values import Updates, Values, error_line

#: A text parameter this long (``max_length``) gets a multi-line editor.
LONG_TEXT_CHARS = 10_000
ON_BADGE = "● on"
# Edits, adds, removes and loads run one at a time in the order they came, so an edit sent just
# before a Remove cannot land after it with the removed slot's values.
FORM_QUEUE: dict[str, Any] = {"concurrency_id": "design-form", "concurrency_limit": 1}


def elem_key(key: str) -> str:
    """An input key as a DOM-friendly id fragment (``rule#2.weight`` -> ``rule-2-weight``,
    ``format.schedule:end`` -> ``format-schedule-end``)."""
    return key.replace("#", "-").replace(".", "-").replace("_", "-").replace(":", "-")


def drawn(key: str) -> dict[str, Any]:
    """Arguments that keep a block across redraws of the editor, so the page updates it in place
    instead of building it again (a redraw of a large form took the browser tens of seconds on
    two cores). Nothing the page holds is kept over what is drawn: every value comes from the
    layout, which add, remove and load read from the inputs first."""
    return {"key": key, "preserved_by_key": None}


def section_of(key: str) -> str:
    """The slot an input or error key belongs to (``"rule#2"`` for ``rule#2.weight``), or
    ``""`` for the spec's own (description, aggregation, the general line)."""
    return key.rpartition(".")[0]


def section_title(slot: Slot, label: Any = None) -> str:
    """A component's section title: its name, and the metric name it logs under when that is
    another (``conciseness · conciseness_4``); the slot's number alone may not be it (after a
    remove, the third section can log as ``conciseness_4``)."""
    metric = label_from_form(label) or slot.default_metric_name
    return slot.info.name if metric == slot.info.name else f"{slot.info.name} · {metric}"


def header_label(slot: Slot, enabled: bool, label: Any = None) -> str:
    """A component's accordion header: its title, with an "on" badge while it is enabled."""
    title = section_title(slot, label)
    return f"{title}   {ON_BADGE}" if enabled else title


def layout_of(values: FormValues, version: int = 0, adding: str | None = None) -> dict[str, Any]:
    """The layout state: the values to draw, a version that changes on every redraw (so
    loading the same preset twice still puts back what the user had typed over), and the
    component "Add component" stays on (adding another of the same is one click)."""
    return {"version": version, "values": values, "adding": adding}


@dataclass
class EditorTargets:
    """What the editor updates outside itself: the shared spec, its summary and text, the
    message line, and the layout it is drawn from."""

    layout: gr.State
    spec_state: gr.State
    status: gr.Markdown
    code: gr.Code
    export_format: gr.Radio
    message: gr.Markdown

    def checked(self, check: FormCheck, fmt_name: str) -> Updates:
        # While any field is wrong the shared spec is None: Preview keeps its last scores and
        # Train refuses to start, instead of silently using an older reward.
        updates: Updates = {
            self.spec_state: check.spec if check.ok else None,
            self.status: check.summary(),
        }
        if check.ok:
            updates[self.code] = spec_io.spec_text(check.spec, fmt_name)
        return updates

    def redraw(
        self,
        form: SpecForm,
        values: FormValues,
        layout: dict,
        fmt_name: str,
        message: str,
        adding: str | None = None,
    ) -> Updates:
        """Updates that draw the editor again from ``values`` and check them."""
        return {
            **self.checked(form.check(values), fmt_name),
            self.layout: layout_of(values, int(layout.get("version", 0)) + 1, adding),
            self.message: message,
        }

    @property
    def redraw_outputs(self) -> list[gr.components.Component]:
        return [self.layout, self.spec_state, self.status, self.code, self.message]


@dataclass
class FormParts:
    """One drawing of the editor: inputs and error lines keyed by input key."""

    inputs: dict[str, gr.components.Component] = field(default_factory=dict)
    errors: dict[str, gr.Markdown] = field(default_factory=dict)
    accordions: dict[str, tuple[Slot, gr.Accordion]] = field(default_factory=dict)  # by slot key
    removes: dict[str, gr.Button] = field(default_factory=dict)  # slot key -> its Remove button
    add_name: gr.Dropdown | None = None  # which registry component "Add component" adds
    add: gr.Button | None = None
    shown: dict[str, str] = field(default_factory=dict)  # input key -> the note under it now

    def read(self, raw: Values) -> FormValues:
        """The form values, by input key, out of what Gradio passes for a set of inputs."""
        return {key: raw[comp] for key, comp in self.inputs.items()}

    def show_errors(self, check: FormCheck, lines: Collection[str] | None = None) -> Updates:
        """Updates that show each error (or warning) under its input and hide the others,
        for the lines that change only (a form holds a hundred or more, and each update costs
        the page a redraw of its line); ``lines``: only these (default: all)."""
        notes = {**check.warnings, **check.errors}  # an error outranks advice on one input
        keys = self.errors.keys() if lines is None else lines
        changed = [key for key in keys if notes.get(key, "") != self.shown.get(key, "")]
        for key in changed:
            self.shown[key] = notes.get(key, "")
        return {
            self.errors[key]: gr.Markdown(
                value=warn(escape(notes.get(key, ""))), visible=key in notes
            )
            for key in changed
        }

    def lines_of(self, section: str) -> list[str]:
        """The error lines an edit in ``section`` (a slot key, or ``""`` for the spec's own
        inputs) updates: the section's own, the spec's, and every metric name's (a name's
        clash is reported under the later of the two slots)."""
        return [
            key for key in self.errors if section_of(key) in (section, "") or key.endswith(".label")
        ]


def _param_input(slot: Slot, p: ParamSpec, value: Any) -> gr.components.Component:
    elem_id = elem_key(f"{slot.key}.{p.name}")
    common = {
        "label": p.name.replace("_", " "),
        "elem_id": elem_id,
        "interactive": True,  # drawn by gr.render, where Gradio infers no interactivity
        **drawn(elem_id),
    }
    info = f"{p.doc} ({p.describe_allowed()})"
    if p.type == "bool":
        return gr.Checkbox(value=bool(value), info=p.doc, **common)
    if p.type in ("int", "float"):
        return gr.Number(value=value, precision=0 if p.type == "int" else None, info=info, **common)
    if p.type == "str" and p.choices:
        return gr.Dropdown(choices=list(p.choices), value=value, info=p.doc, **common)
    if p.type == "list":
        return gr.Textbox(
            value=value, lines=3, max_lines=8, info=f"{p.doc}; one per line", **common
        )
    if (p.max_length or 0) >= LONG_TEXT_CHARS:  # code or a rubric: a multi-line editor
        return gr.Textbox(value=value, lines=6, max_lines=30, info=p.doc, **common)
    return gr.Textbox(value=value, info=info, **common)


def _error_md(parts: FormParts, key: str, notes: dict[str, str]) -> None:
    note = notes.get(key)
    if note:
        parts.shown[key] = note
    elem_id = f"error-{elem_key(key)}"
    parts.errors[key] = error_line(elem_id, warn(escape(note)) if note else "", **drawn(elem_id))


def _build_slot(parts: FormParts, slot: Slot, values: FormValues, notes: dict[str, str]) -> None:
    """One component's accordion, open while enabled: enable switch, weight, metric name, its
    parameters and a Remove button."""
    at = f"{slot.key}."
    block = elem_key(slot.key)  # key prefix of this slot's blocks
    enabled = bool(values[at + "enabled"])
    label = values.get(at + "label")
    accordion = gr.Accordion(
        header_label(slot, enabled, label),
        open=enabled,
        elem_id=f"slot-{block}",
        **drawn(f"slot-{block}"),
    )
    parts.accordions[slot.key] = (slot, accordion)
    with accordion, gr.Group(**drawn(f"{block}-group")):
        with gr.Row(**drawn(f"{block}-head")):
            gr.Markdown(
                escape(slot.info.description), padding=True, **drawn(f"{block}-description")
            )
            # Buttons are drawn anew (never keyed): a click on the old one while the new
            # drawing is on its way still reaches a handler (see current_values).
            parts.removes[slot.key] = gr.Button(
                "Remove", size="sm", scale=0, elem_id=f"remove-{block}"
            )
        with gr.Row(**drawn(f"{block}-fields")):
            parts.inputs[at + "enabled"] = gr.Checkbox(
                value=enabled,
                label=f"use {section_title(slot, label)}",
                elem_id=elem_key(at + "enabled"),
                interactive=True,
                scale=1,
                min_width=120,
                **drawn(elem_key(at + "enabled")),
            )
            with gr.Column(scale=2, min_width=140, **drawn(f"{block}-weight-column")):
                parts.inputs[at + "weight"] = gr.Number(
                    value=values[at + "weight"],
                    label="weight",
                    elem_id=elem_key(at + "weight"),
                    interactive=True,
                    **drawn(elem_key(at + "weight")),
                )
                _error_md(parts, at + "weight", notes)
            with gr.Column(scale=3, min_width=180, **drawn(f"{block}-label-column")):
                parts.inputs[at + "label"] = gr.Textbox(
                    value=values[at + "label"],
                    label="metric name in charts",
                    placeholder=f"default: {slot.default_metric_name}",
                    max_lines=1,
                    elem_id=elem_key(at + "label"),
                    interactive=True,
                    **drawn(elem_key(at + "label")),
                )
                _error_md(parts, at + "label", notes)
        _schedule_row(parts, slot, values, notes)
        params = slot.info.params
        for start in range(0, len(params), 3):
            with gr.Row(**drawn(f"{block}-params-{start}")):
                for p in params[start : start + 3]:
                    with gr.Column(min_width=200, **drawn(f"{block}-{elem_key(p.name)}-column")):
                        parts.inputs[at + p.name] = _param_input(slot, p, values[at + p.name])
                        _error_md(parts, at + p.name, notes)
        gr.Markdown(
            f"<small>Source: {escape(slot.info.source)}</small>",
            padding=True,
            **drawn(f"{block}-source"),
        )


def _schedule_row(parts: FormParts, slot: Slot, values: FormValues, notes: dict[str, str]) -> None:
    """The weight's schedule: kind, the weight it reaches and the steps where it moves."""
    keys = schedule_keys(slot.key)
    kind, end, start_step, end_step = (values[k] for k in keys)
    with gr.Row(**drawn(f"{elem_key(slot.key)}-schedule")):
        common = [{"elem_id": elem_key(k), "interactive": True, **drawn(elem_key(k))} for k in keys]
        widgets = (
            gr.Dropdown(
                list(KINDS),
                value=kind or "constant",
                label="weight schedule",
                info="how the weight moves over training steps",
                **common[0],
            ),
            gr.Number(end, label="to weight", info="the weight it reaches", **common[1]),
            gr.Number(start_step, precision=0, label="from step", **common[2]),
            gr.Number(end_step, precision=0, label="until step (linear, cosine)", **common[3]),
        )
        parts.inputs.update(zip(keys, widgets, strict=True))
    for key in keys:
        _error_md(parts, key, notes)


def draw_form(form: SpecForm, values: FormValues, adding: str | None = None) -> FormParts:
    """The inputs of ``values`` (description, then each slot in registry order) with each
    message of their check under its input, and the "Add component" row."""
    check = form.check(values)
    notes = {**check.warnings, **check.errors}
    parts = FormParts()
    _error_md(parts, GENERAL, notes)
    parts.inputs[DESCRIPTION] = gr.Textbox(
        value=values[DESCRIPTION],
        label="Description",
        placeholder="optional: what this reward is for",
        lines=1,
        max_lines=4,
        elem_id=elem_key(DESCRIPTION),
        interactive=True,
        **drawn(elem_key(DESCRIPTION)),
    )
    _error_md(parts, DESCRIPTION, notes)
    parts.inputs[AGGREGATION] = gr.Dropdown(
        AGGREGATION_CHOICES,
        value=values[AGGREGATION],
        label="Aggregation (GRPO's multi_objective_aggregation)",
        info="sum then normalise per group (default), or normalise each component, then sum",
        elem_id=elem_key(AGGREGATION),
        interactive=True,
        **drawn(elem_key(AGGREGATION)),
    )
    _error_md(parts, AGGREGATION, notes)
    for slot in form.slots_in(values):
        _build_slot(parts, slot, values, notes)
    with gr.Row(equal_height=True, **drawn("add-row")):
        parts.add_name = gr.Dropdown(
            label="Add component",
            choices=form.component_names,
            value=adding,
            elem_id="add-component-name",
            interactive=True,
            scale=3,
        )
        parts.add = gr.Button("Add component", scale=1, elem_id="add-component")
    return parts


def _wire_form(form: SpecForm, parts: FormParts, out: EditorTargets, version: int) -> None:
    """Validate on every edit; add and remove slots by drawing the editor again.

    Each listener is keyed by the layout version it was drawn from: the page may draw one
    version twice (a second redraw requested while the first ran), and a click sent to the
    first drawing's listener then still reaches one (the same inputs, in the same order)."""

    def editor_of(lines: list[str]) -> Callable[[Values], Updates]:
        def on_edit(raw: Values) -> Updates:
            if raw[out.layout].get("version") != version:
                return {}  # sent by inputs that a redraw has replaced since: stale
            check = form.check(parts.read(raw))
            return {**parts.show_errors(check, lines), **out.checked(check, raw[out.export_format])}

        return on_edit

    # One listener per section, updating its own error lines: the page refreshes every output
    # of every event it has run on each status change, so outputs are kept few.
    sections: dict[str, list[gr.components.Component]] = {}
    for key, comp in parts.inputs.items():
        sections.setdefault(section_of(key), []).append(comp)
    for section, comps in sections.items():
        lines = parts.lines_of(section)
        gr.on(
            [c.input for c in comps] + [c.blur for c in comps if isinstance(c, gr.Number)],
            editor_of(lines),
            inputs={out.layout, out.export_format, *parts.inputs.values()},
            outputs=[out.spec_state, out.status, out.code, *(parts.errors[k] for k in lines)],
            trigger_mode="always_last",
            show_progress="hidden",
            api_visibility="private",
            key=("design-edit", section, version),
            **FORM_QUEUE,
        )

    # The "on" badge follows the component's own switch (one small update, not a redraw).
    for key, (slot, accordion) in parts.accordions.items():
        parts.inputs[f"{key}.enabled"].input(
            lambda enabled, label, slot=slot: gr.Accordion(
                label=header_label(slot, bool(enabled), label)
            ),
            inputs=[parts.inputs[f"{key}.enabled"], parts.inputs[f"{key}.label"]],
            outputs=accordion,
            show_progress="hidden",
            api_visibility="private",
            key=("design-badge", key, version),
        )

    every_input = {out.layout, out.export_format, *parts.inputs.values()}

    def current_values(raw: Values) -> FormValues:
        """The values an add or remove applies to. A click on a drawing that a redraw has
        replaced (a second click before the first one's redraw reached the page, on a busy
        machine) carries that old drawing's inputs: it applies to the newest drawing's values
        instead (the layout state, read when the event runs), so no earlier add or remove is
        undone by it."""
        layout = raw[out.layout]
        if layout.get("version") != version:
            return dict(layout["values"])
        return parts.read(raw)

    def on_add(raw: Values) -> Updates:
        values = current_values(raw)
        shown = [slot.key for slot in form.slots_in(values)]
        try:
            slot = form.slot_to_add(raw[parts.add_name], shown)
        except SpecDoesNotFit as exc:
            return {out.message: warn(f"Not added: {escape(exc)}")}
        values.update(form.slot_values(slot))
        message = f"Added **{escape(slot.label)}**."
        layout, fmt_name = raw[out.layout], raw[out.export_format]
        return out.redraw(form, values, layout, fmt_name, message, adding=slot.info.name)

    def remover(slot: Slot) -> Callable[[Values], Updates]:
        def on_remove(raw: Values) -> Updates:
            values = current_values(raw)
            if f"{slot.key}.enabled" not in values:  # a second click on it, before the redraw
                return {out.message: warn(f"{escape(slot.label)} was removed already.")}
            values = form.without_slot(values, slot.key)
            message = f"Removed **{escape(slot.label)}** from the reward."
            return out.redraw(form, values, raw[out.layout], raw[out.export_format], message)

        return on_remove

    assert parts.add is not None and parts.add_name is not None
    parts.add.click(
        on_add,
        inputs={*every_input, parts.add_name},
        outputs=out.redraw_outputs,
        api_visibility="private",
        key=("design-add", version),
        trigger_mode="multiple",  # every click counts, in order (FORM_QUEUE)
        **FORM_QUEUE,
    )
    for key, button in parts.removes.items():
        button.click(
            remover(parts.accordions[key][0]),
            inputs=every_input,
            outputs=out.redraw_outputs,
            api_visibility="private",
            key=("design-remove", key, version),
            trigger_mode="multiple",  # every click counts, in order (FORM_QUEUE)
            **FORM_QUEUE,
        )


def build_editor(form: SpecForm, out: EditorTargets) -> None:
    """The editor, drawn again whenever ``out.layout`` changes (and on page load)."""

    @gr.render(inputs=out.layout, show_progress="hidden")
    def draw(layout: dict[str, Any]) -> None:
        parts = draw_form(form, layout["values"], layout.get("adding"))
        _wire_form(form, parts, out, layout.get("version", 0))
