"""The Design tab: compose the reward from the registry's components.

Every component gets an enable switch, a weight, an optional metric name and its parameters, all
generated from :data:`rewards.registry.REGISTRY` through :class:`ui.spec_form.SpecForm`. Loading a
spec that the form cannot show whole is refused, and disabled components are named when loaded
(they are shown unticked and stay out of the spec until ticked). Each edit is validated
at once and a wrong value gets its message right under its input. The valid spec goes into a
``gr.State`` that the Preview and Train tabs read; presets, JSON/YAML import and export, and the
standalone TRL module are here too. "Try it" scores one hand-written completion live.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import gradio as gr

from rewards.composer import score
from rewards.errors import RewardSpecError
from rewards.params import ParamSpec
from rewards.spec import DEFAULT_PRESET, PRESETS, RewardSpec
from ui import spec_io
from ui.context import AppContext
from ui.messages import escape, hint, warn
from ui.named import Updates, Values, error_line
from ui.spec_form import (
    DESCRIPTION,
    GENERAL,
    FormCheck,
    FormValues,
    Slot,
    SpecDoesNotFit,
    SpecForm,
)
from ui.trace_view import cut_note, fmt

TRY_PROMPT = "What is 17 + 25?"
TRY_COMPLETION = "<think>17 + 25: 7+5=12, carry 1; 1+2+1=4; so 42</think><answer>42</answer>"
TRY_ANSWER = "42"
TRACE_HEADERS = ["component", "raw score", "weight", "contribution", "why"]
TRACE_WIDTHS = ["19%", "14%", "12%", "17%", "38%"]  # headers fit on one line


@dataclass
class DesignHandles:
    """What other tabs read from the Design tab: the current valid spec as a plain dict."""

    spec_state: gr.State
    form: SpecForm


#: A text parameter this long (``max_length``) gets a multi-line editor.
LONG_TEXT_CHARS = 10_000


def elem_key(key: str) -> str:
    """An input key as a DOM-friendly id fragment (``rule#2.weight`` -> ``rule-2-weight``)."""
    return key.replace("#", "-").replace(".", "-").replace("_", "-")


def _param_input(slot: Slot, p: ParamSpec, value: Any) -> gr.components.Component:
    common = {"label": p.name.replace("_", " "), "elem_id": elem_key(f"{slot.key}.{p.name}")}
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


ON_BADGE = "● on"


def header_label(slot: Slot, enabled: bool) -> str:
    """A component's accordion header: its name, with an "on" badge while it is enabled."""
    return f"{slot.label}   {ON_BADGE}" if enabled else slot.label


def trace_rows(spec: RewardSpec, prompt: str, completion: str, answer: str) -> tuple[list, str]:
    """Trace table rows and a total line for one completion."""
    scored = score(spec, [prompt or ""], [completion or ""], answers=[answer or None])[0]
    rows = [
        [t.name, fmt(t.raw), fmt(t.weight), fmt(t.contribution), t.explanation]
        for t in scored.trace
    ]
    total = f"**Total reward: {fmt(scored.total, 4)}**"
    note = cut_note(completion or "")
    return rows, total + (f"\n\n{warn(escape(note))}" if note else "")


@dataclass
class FormParts:
    """The form's inputs and error lines, each keyed by input key (``"format.weight"``)."""

    inputs: dict[str, gr.components.Component]
    errors: dict[str, gr.Markdown]
    status: gr.Markdown
    accordions: dict[str, tuple[Slot, gr.Accordion]] = field(default_factory=dict)  # by slot key
    add_name: gr.Dropdown | None = None  # which registry component "Add component" adds
    add: gr.Button | None = None
    shown: gr.State | None = None  # slot keys in the form, in the order they came
    removes: dict[str, gr.Button] = field(default_factory=dict)  # slot key -> its Remove button

    def show_headers(
        self, values: FormValues, shown: list[str], *, open_keys: Sequence[str] = ()
    ) -> Updates:
        """Each shown component's header with an "on" badge while it is enabled (the others
        hidden until added); the slots in ``open_keys`` are opened."""
        updates: Updates = {}
        for key, (slot, accordion) in self.accordions.items():
            enabled = bool(values.get(f"{key}.enabled"))
            extra = {"open": True} if key in open_keys else {}
            updates[accordion] = gr.Accordion(
                label=header_label(slot, enabled), visible=key in shown, **extra
            )
        return updates

    def read(self, raw: Values) -> FormValues:
        """The form values, by input key, out of what Gradio passes for a set of inputs."""
        return {key: raw[comp] for key, comp in self.inputs.items()}

    def show(self, values: FormValues) -> Updates:
        """Updates that put ``values`` into the inputs."""
        return {self.inputs[key]: value for key, value in values.items()}

    def show_errors(self, check: FormCheck) -> Updates:
        """Updates that show each error (or warning) under its input and hide the others, plus
        the summary."""
        notes = {**check.warnings, **check.errors}  # an error outranks advice on one input
        updates: Updates = {
            md: gr.Markdown(value=warn(escape(notes.get(key, ""))), visible=key in notes)
            for key, md in self.errors.items()
        }
        updates[self.status] = check.summary()
        return updates


@dataclass
class TryParts:
    """The "Try it" column: one hand-written completion scored with the current spec."""

    prompt: gr.Textbox
    completion: gr.Textbox
    answer: gr.Textbox
    total: gr.Markdown
    table: gr.Dataframe


@dataclass
class SpecIoParts:
    """Import and export of the spec as text and files."""

    export_format: gr.Radio
    code: gr.Code
    apply: gr.Button
    upload: gr.UploadButton
    export: gr.Button
    message: gr.Markdown
    downloads: gr.File


def _error_md(parts: FormParts, key: str) -> None:
    parts.errors[key] = error_line(f"error-{elem_key(key)}")


def _build_slot(parts: FormParts, slot: Slot, values: FormValues, shown: bool) -> None:
    """One component's accordion: enable switch, weight, metric name, its parameters and a
    Remove button; hidden until the spec has the component or the user adds it."""
    at = f"{slot.key}."
    enabled = bool(values[at + "enabled"])
    accordion = gr.Accordion(
        header_label(slot, enabled),
        open=enabled,
        visible=shown,
        elem_id=f"slot-{elem_key(slot.key)}",
    )
    parts.accordions[slot.key] = (slot, accordion)
    with accordion, gr.Group():
        with gr.Row():
            gr.Markdown(escape(slot.info.description), padding=True)
            parts.removes[slot.key] = gr.Button(
                "Remove", size="sm", scale=0, elem_id=f"remove-{elem_key(slot.key)}"
            )
        with gr.Row():
            parts.inputs[at + "enabled"] = gr.Checkbox(
                value=enabled,
                label=f"use {slot.label}",
                elem_id=elem_key(at + "enabled"),
                scale=1,
                min_width=120,
            )
            with gr.Column(scale=2, min_width=140):
                parts.inputs[at + "weight"] = gr.Number(
                    value=values[at + "weight"], label="weight", elem_id=elem_key(at + "weight")
                )
                _error_md(parts, at + "weight")
            with gr.Column(scale=3, min_width=180):
                parts.inputs[at + "label"] = gr.Textbox(
                    value=values[at + "label"],
                    label="metric name in charts",
                    placeholder=f"default: {slot.default_metric_name}",
                    max_lines=1,
                    elem_id=elem_key(at + "label"),
                )
                _error_md(parts, at + "label")
        params = slot.info.params
        for start in range(0, len(params), 3):
            with gr.Row():
                for p in params[start : start + 3]:
                    with gr.Column(min_width=200):
                        parts.inputs[at + p.name] = _param_input(slot, p, values[at + p.name])
                        _error_md(parts, at + p.name)
        gr.Markdown(f"<small>Source: {escape(slot.info.source)}</small>", padding=True)


def build_form_parts(
    form: SpecForm, initial_spec: RewardSpec
) -> tuple[gr.Dropdown, gr.Button, FormParts]:
    """The preset picker, the summary line and one input per form key."""
    values = form.values_from_spec(initial_spec)
    with gr.Row():
        preset = gr.Dropdown(
            label="Preset",
            choices=list(PRESETS),
            value=DEFAULT_PRESET if DEFAULT_PRESET in PRESETS else None,
            scale=3,
            elem_id="preset",
        )
        load_preset = gr.Button("Load preset", scale=1, elem_id="load-preset")
    status = gr.Markdown(FormCheck(initial_spec).summary(), elem_id="spec-status")
    parts = FormParts(inputs={}, errors={}, status=status)
    _error_md(parts, GENERAL)
    parts.inputs[DESCRIPTION] = gr.Textbox(
        value=values[DESCRIPTION],
        label="Description",
        placeholder="optional: what this reward is for",
        lines=1,
        max_lines=4,
        elem_id=elem_key(DESCRIPTION),
    )
    _error_md(parts, DESCRIPTION)
    shown = form.shown_keys(initial_spec)
    for slot in form.slots:
        _build_slot(parts, slot, values, slot.key in shown)
    with gr.Row(equal_height=True):
        parts.add_name = gr.Dropdown(
            label="Add component",
            choices=form.component_names,
            value=None,
            elem_id="add-component-name",
            scale=3,
        )
        parts.add = gr.Button("Add component", scale=1, elem_id="add-component")
    parts.shown = gr.State(shown)
    return preset, load_preset, parts


def _build_try(initial_spec: RewardSpec) -> TryParts:
    gr.Markdown("### Try it on one completion")
    prompt = gr.Textbox(label="Prompt", value=TRY_PROMPT, lines=1)
    completion = gr.Textbox(
        label="Completion", value=TRY_COMPLETION, lines=4, elem_id="try-completion"
    )
    answer = gr.Textbox(label="Gold answer", value=TRY_ANSWER, lines=1)
    first_rows, first_total = trace_rows(initial_spec, TRY_PROMPT, TRY_COMPLETION, TRY_ANSWER)
    total = gr.Markdown(first_total, elem_id="try-total")
    table = gr.Dataframe(
        headers=TRACE_HEADERS,
        value=first_rows,
        interactive=False,
        wrap=True,
        elem_id="try-trace",
        column_widths=TRACE_WIDTHS,
    )
    return TryParts(prompt, completion, answer, total, table)


def _build_spec_io(initial_spec: RewardSpec) -> SpecIoParts:
    gr.Markdown("### Import / export")
    export_format = gr.Radio(list(spec_io.FORMATS), value="json", label="Format")
    code = gr.Code(
        value=spec_io.spec_text(initial_spec),
        language="json",
        label="Spec (edit and apply, or paste one)",
        interactive=True,
        elem_id="spec-code",
    )
    with gr.Row():
        apply = gr.Button("Apply this spec", size="sm")
        upload = gr.UploadButton("Import file", file_types=[".json", ".yaml", ".yml"], size="sm")
        export = gr.Button("Prepare downloads", size="sm", elem_id="export-spec")
    message = gr.Markdown(elem_id="import-message")
    downloads = gr.File(
        label="spec JSON, spec YAML, standalone TRL reward module",
        file_count="multiple",
        visible=False,
        interactive=False,
    )
    return SpecIoParts(export_format, code, apply, upload, export, message, downloads)


def _wire_form(
    form: SpecForm,
    parts: FormParts,
    io: SpecIoParts,
    spec_state: gr.State,
    preset: gr.Dropdown,
    load_preset: gr.Button,
) -> None:
    """Validate on every edit; load presets, pasted specs and files into the form."""
    accordions = [accordion for _, accordion in parts.accordions.values()]
    edit_outputs = [spec_state, parts.status, io.code, *parts.errors.values()]
    check_outputs = [*edit_outputs, *accordions]
    enables = [parts.inputs[f"{key}.enabled"] for key in parts.accordions]
    slot_outputs = [*check_outputs, *enables, parts.shown, io.message]
    load_outputs = [*parts.inputs.values(), *check_outputs, parts.shown, io.message]

    def render_check(check: FormCheck, fmt_name: str) -> Updates:
        # While any field is wrong the shared spec is None: Preview keeps its last scores and
        # Train refuses to start, instead of silently using an older reward.
        updates = parts.show_errors(check)
        updates[spec_state] = check.spec.to_dict() if check.ok else None
        if check.ok:
            updates[io.code] = spec_io.spec_text(check.spec, fmt_name)
        return updates

    def on_edit(raw: Values) -> Updates:
        return render_check(form.check(parts.read(raw)), raw[io.export_format])

    # The "on" badge follows the component's own switch (one small update, not every header).
    for key, (slot, accordion) in parts.accordions.items():
        parts.inputs[f"{key}.enabled"].input(
            lambda enabled, slot=slot: gr.Accordion(label=header_label(slot, bool(enabled))),
            inputs=parts.inputs[f"{key}.enabled"],
            outputs=accordion,
            show_progress="hidden",
            api_visibility="private",
        )

    def with_slot(raw: Values, key: str, enabled: bool, shown: list[str], message: str) -> Updates:
        """The form after a slot was added (ticked, shown, opened) or removed (unticked,
        hidden)."""
        values = {**parts.read(raw), f"{key}.enabled": enabled}
        return {
            **render_check(form.check(values), raw[io.export_format]),
            **parts.show_headers(values, shown, open_keys=[key] if enabled else []),
            parts.inputs[f"{key}.enabled"]: enabled,
            parts.shown: shown,
            io.message: message,
        }

    def on_add(raw: Values) -> Updates:
        shown = list(raw[parts.shown] or [])
        try:
            slot = form.slot_to_add(raw[parts.add_name], shown)
        except SpecDoesNotFit as exc:
            return refuse(f"Not added: {escape(exc)}")
        return with_slot(raw, slot.key, True, [*shown, slot.key], f"Added **{slot.label}**.")

    def remover(key: str):
        def on_remove(raw: Values) -> Updates:
            shown = [k for k in raw[parts.shown] or [] if k != key]
            label = parts.accordions[key][0].label
            return with_slot(raw, key, False, shown, f"Removed **{label}** from the reward.")

        return on_remove

    every_input = {io.export_format, parts.shown, *parts.inputs.values()}
    parts.add.click(
        on_add,
        inputs={*every_input, parts.add_name},
        outputs=slot_outputs,
        api_visibility="private",
    )
    for key, button in parts.removes.items():
        button.click(
            remover(key), inputs=every_input, outputs=slot_outputs, api_visibility="private"
        )

    gr.on(
        [c.input for c in parts.inputs.values()]
        + [c.blur for c in parts.inputs.values() if isinstance(c, gr.Number)],
        on_edit,
        inputs={io.export_format, *parts.inputs.values()},
        outputs=edit_outputs,
        trigger_mode="always_last",
        show_progress="hidden",
        api_visibility="private",
    )

    def refuse(message: str) -> Updates:
        return {io.message: warn(message)}

    def show_spec(spec: RewardSpec, fmt_name: str, message: str, refused: str) -> Updates:
        try:
            values = form.values_from_spec(spec)
        except SpecDoesNotFit as exc:
            return refuse(f"{refused}: {escape(exc)}")
        notes = [hint(escape(note)) for note in form.load_notes(spec)]
        shown = form.shown_keys(spec)
        opened = [key for key in shown if values[f"{key}.enabled"]]
        updates = {
            **parts.show(values),
            **render_check(form.check(values), fmt_name),
            **parts.show_headers(values, shown, open_keys=opened),
            parts.shown: shown,
        }
        updates[io.message] = "\n\n".join([message, *notes])
        return updates

    def on_preset(name: str, fmt_name: str) -> Updates:
        if name not in PRESETS:
            return refuse("Pick a preset first.")
        return show_spec(PRESETS[name], fmt_name, f"Loaded preset **{name}**.", "Not loaded")

    def on_import_text(text: str, fmt_name: str) -> Updates:
        try:
            spec = spec_io.parse_spec(text or "")
        except RewardSpecError as exc:
            return refuse(f"Not applied: {escape(exc)}")
        return show_spec(spec, fmt_name, "Applied the spec.", "Not applied")

    def on_import_file(file: Any, fmt_name: str) -> Updates:
        path = getattr(file, "name", file)
        try:
            spec = spec_io.read_spec_file(path)
        except (RewardSpecError, OSError) as exc:
            return refuse(f"Not imported: {escape(exc)}")
        return show_spec(spec, fmt_name, "Imported the spec file.", "Not imported")

    for trigger, handler, source in (
        (load_preset.click, on_preset, preset),
        (io.apply.click, on_import_text, io.code),
        (io.upload.upload, on_import_file, io.upload),
    ):
        trigger(
            handler,
            inputs=[source, io.export_format],
            outputs=load_outputs,
            api_visibility="private",
        )


def _wire_spec_io(io: SpecIoParts, spec_state: gr.State) -> None:
    """Show the spec in the chosen format; build the download files."""

    def on_format(spec_dict: dict | None, fmt_name: str):
        if spec_dict is None:
            return gr.Code(language=fmt_name)
        spec = RewardSpec.from_dict(spec_dict)
        return gr.Code(value=spec_io.spec_text(spec, fmt_name), language=fmt_name)

    io.export_format.change(
        on_format, inputs=[spec_state, io.export_format], outputs=io.code, api_visibility="private"
    )

    def on_export(spec_dict: dict | None):
        if spec_dict is None:
            return gr.File(visible=False), warn("Fix the marked fields first.")
        paths = spec_io.export_files(RewardSpec.from_dict(spec_dict))
        return gr.File(value=list(paths), visible=True), ""

    io.export.click(
        on_export,
        inputs=spec_state,
        outputs=[io.downloads, io.message],
        api_visibility="private",
    )


def _wire_try(parts: TryParts, spec_state: gr.State) -> None:
    """Score the hand-written completion again whenever it or the spec changes."""

    def on_try(spec_dict: dict | None, prompt: str, completion: str, answer: str):
        if spec_dict is None:
            return gr.skip(), warn("Fix the marked fields to score again.")
        return trace_rows(RewardSpec.from_dict(spec_dict), prompt, completion, answer)

    gr.on(
        [spec_state.change, parts.prompt.input, parts.completion.input, parts.answer.input],
        on_try,
        inputs=[spec_state, parts.prompt, parts.completion, parts.answer],
        outputs=[parts.table, parts.total],
        trigger_mode="always_last",
        show_progress="hidden",
        api_visibility="private",
    )


def build_design(ctx: AppContext) -> DesignHandles:
    form = SpecForm()
    initial_spec = PRESETS.get(DEFAULT_PRESET) or next(iter(PRESETS.values()))
    spec_state = gr.State(initial_spec.to_dict())
    with gr.Row(equal_height=False):
        with gr.Column(scale=3):
            preset, load_preset, parts = build_form_parts(form, initial_spec)
        with gr.Column(scale=2):
            try_parts = _build_try(initial_spec)
            io = _build_spec_io(initial_spec)
    _wire_form(form, parts, io, spec_state, preset, load_preset)
    _wire_spec_io(io, spec_state)
    _wire_try(try_parts, spec_state)
    return DesignHandles(spec_state=spec_state, form=form)
