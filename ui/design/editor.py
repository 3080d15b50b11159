"""The Design tab's component editor: one component, drawn and edited in the browser.

The editor is a single ``gr.HTML`` whose value is the form's values
(:data:`ui.design.spec_form.FormValues`: input key -> value, one key per input of the
description, the aggregation and each shown slot). ``editor.js`` draws one section per slot from
that value and a schema generated here from the registry's :class:`~rewards.params.ParamSpec`
(bounds, choices, docs, defaults), so "Add component", Remove and every keystroke change the
page at once, with no server round trip and no Gradio component per input: a redraw of ~400
Gradio components took the page seconds (Gradio refreshes the loading status of every component
any event ever updated, on every status change).

The server keeps what it must: each changed value runs one event (:meth:`EditorTargets.checked`)
that validates it with :meth:`SpecForm.check` and updates the shared spec, its summary and its
text; and the page asks :func:`check_values` (a server function, no queue) for the messages it
draws under each input. Nothing the page sends is trusted: a value of the wrong shape is an
error on the whole form, never an exception. User text is put in the page as text
(``textContent``, ``value``), never as HTML.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import gradio as gr
from gradio.events import Dependency

from rewards.params import ParamSpec
from rewards.spec import RewardSpec
from ui.design import spec_io
from ui.design.schedule_inputs import AGGREGATION_CHOICES, KINDS
from ui.design.spec_form import (
    GENERAL,
    FormCheck,
    FormValues,
    Slot,
    SpecForm,
    most_instances,
)
from ui.shared.named_values import Updates

#: A text parameter this long (``max_length``) gets a multi-line editor.
LONG_TEXT_CHARS = 10_000
ON_BADGE = "● on"
# Edits and loads run one at a time in the order they came, so an edit sent just before a load
# cannot land after it with the old values.
FORM_QUEUE: dict[str, Any] = {"concurrency_id": "design-form", "concurrency_limit": 1}
_HERE = Path(__file__).parent
SCRIPT = _HERE / "editor.js"
STYLE = _HERE / "editor.css"
# The template is a constant: Gradio re-renders it on every value change and only touches the
# page where the rendered text differs, so what editor.js draws inside it stays.
TEMPLATE = '<div class="rs-editor"></div>'


def elem_key(key: str) -> str:
    """An input key as a DOM-friendly id fragment (``rule#2.weight`` -> ``rule-2-weight``,
    ``format.schedule:end`` -> ``format-schedule-end``); editor.js's ``elemKey`` is the same."""
    return key.replace("#", "-").replace(".", "-").replace("_", "-").replace(":", "-")


def _param_schema(p: ParamSpec) -> dict[str, Any]:
    """What the page needs to draw one parameter's input: its kind, words and choices."""
    if p.type in ("int", "float"):
        widget = "number"
    elif p.type == "bool":
        widget = "check"
    elif p.type == "str" and p.choices:
        widget = "choice"
    elif p.type == "list" or (p.max_length or 0) >= LONG_TEXT_CHARS:
        widget = "area"  # one item per line, or code and rubrics
    else:
        widget = "text"
    info = p.doc if widget in ("check", "choice") else f"{p.doc} ({p.describe_allowed()})"
    if p.type == "list":
        info = f"{p.doc}; one per line"
    return {
        "name": p.name,
        "label": p.name.replace("_", " "),
        "widget": widget,
        "integer": p.type == "int",
        "info": info,
        "choices": list(p.choices or ()),
        "rows": 6 if widget == "area" and p.type != "list" else 3,
    }


def editor_schema(form: SpecForm) -> dict[str, Any]:
    """The registry as the page draws it: per component its words, how many instances the form
    may hold, a new slot's values (by field, from :meth:`SpecForm.slot_values`: defaults are
    written once) and one entry per parameter; the aggregation and schedule kinds."""
    components = []
    for name, info in form.registry.items():
        slot = Slot(info)
        prefix = f"{slot.key}."
        defaults = {k.removeprefix(prefix): v for k, v in form.slot_values(slot).items()}
        components.append(
            {
                "name": name,
                "description": info.description,
                "source": info.source,
                "most": most_instances(info),
                "defaults": defaults,
                "params": [_param_schema(p) for p in info.params],
            }
        )
    return {"components": components, "aggregations": AGGREGATION_CHOICES, "kinds": list(KINDS)}


def most_inputs(form: SpecForm) -> int:
    """The most input keys a form can hold: every slot of every component, plus the spec's."""
    return 2 + sum(
        most_instances(info) * len(form.slot_keys(Slot(info))) for info in form.registry.values()
    )


def safe_check(form: SpecForm, values: Any) -> FormCheck:
    """:meth:`SpecForm.check` of what a page sent, which may be anything JSON holds: a value
    of the wrong shape is an error on the whole form (what is allowed, said), never raised."""
    if not isinstance(values, dict) or not all(isinstance(k, str) for k in values):
        return FormCheck(None, {GENERAL: "the form's values must be an object of input keys"})
    if len(values) > most_inputs(form):
        return FormCheck(
            None, {GENERAL: f"the form holds at most {most_inputs(form)} inputs, got {len(values)}"}
        )
    try:
        return form.check(values)
    except (ValueError, TypeError, KeyError) as exc:  # missing or unknown keys, odd values
        return FormCheck(None, {GENERAL: f"the form's values do not fit it: {exc}"})


def check_values(form: SpecForm, values: Any) -> dict[str, Any]:
    """The messages to draw under the inputs, as data: ``{"errors": {key: text},
    "warnings": {key: text}}`` (an error outranks advice on the same input)."""
    check = safe_check(form, values)
    warnings = {k: v for k, v in check.warnings.items() if k not in check.errors}
    return {"errors": dict(check.errors), "warnings": warnings}


@dataclass
class EditorTargets:
    """The editor and what it updates outside itself: the shared spec, its summary and text,
    and the message line."""

    editor: gr.HTML
    spec_state: gr.State
    status: gr.Markdown
    code: gr.Code
    export_format: gr.Radio
    message: gr.Markdown
    form: SpecForm
    # The preset menu names the preset a loaded spec is (blank for any other spec), so a
    # reload's design is not shown under the default preset's name.
    preset: gr.Dropdown | None = None

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

    def show(self, values: FormValues, message: str, preset: str | None = None) -> Updates:
        """Updates that draw ``values`` whole in the editor (a preset, an import, a reload's
        design) with ``message``, the preset menu on ``preset`` (the spec's preset, or None);
        the editor's change event checks them and updates the spec (once: a second write of
        the spec's text could land over text typed since)."""
        updates: Updates = {self.editor: values, self.message: message}
        if self.preset is not None:
            updates[self.preset] = preset
        return updates

    @property
    def load_outputs(self) -> list[gr.components.Component]:
        return [self.editor, self.message, *([self.preset] if self.preset is not None else [])]


def build_editor(form: SpecForm, values: FormValues) -> gr.HTML:
    """The editor, showing ``values``; its page script asks the server for each input's
    messages through ``check_values``."""

    def check_design(sent: Any) -> dict[str, Any]:
        return check_values(form, sent)

    return gr.HTML(
        value=values,
        html_template=TEMPLATE,
        css_template=STYLE.read_text(encoding="utf-8"),
        js_on_load=SCRIPT.read_text(encoding="utf-8"),
        server_functions=[check_design],
        elem_id="design-editor",
        schema=editor_schema(form),
        on_badge=ON_BADGE,
    )


def wire_editor(
    out: EditorTargets,
    follow: Callable[[RewardSpec | None], Updates],
    followers: list[gr.components.Component],
) -> Dependency:
    """Every change of the editor's value (typed, added, removed, loaded) checks it and
    updates the shared spec, its summary and its text, and ``followers`` through ``follow``
    (the Design tab's own views of the spec, in the same event: each event costs the page a
    refresh of every component any event ever updated, so the tab's followers do not add
    events of their own). Returns the event, for what must follow each check."""

    def on_change(values: Any, fmt_name: str) -> Updates:
        updates = out.checked(safe_check(out.form, values), fmt_name)
        return {**updates, **follow(updates[out.spec_state])}

    return out.editor.change(
        on_change,
        inputs=[out.editor, out.export_format],
        outputs=[out.spec_state, out.status, out.code, *followers],
        trigger_mode="always_last",
        show_progress="hidden",
        api_visibility="private",
        **FORM_QUEUE,
    )


__all__: list[str] = [
    "FORM_QUEUE",
    "EditorTargets",
    "build_editor",
    "check_values",
    "editor_schema",
    "elem_key",
    "safe_check",
    "wire_editor",
]
