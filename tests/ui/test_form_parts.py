"""The Design and Train tabs' inputs, built for real in a Gradio Blocks, are keyed by name:
every key is a real spec/config field and every field the form should show has an input."""

import dataclasses
import typing

import gradio as gr

from engine.config.run_config import RunConfig
from rewards.spec import DEFAULT_PRESET, PRESETS
from ui.design.editor import draw_form
from ui.design.spec_form import DESCRIPTION, GENERAL, SpecForm
from ui.design.tab import DesignHandles
from ui.train import form as train_form
from ui.train.layout import build_train_parts
from ui.train.tab import collect


def config_field(path: str) -> dataclasses.Field:
    """The ``RunConfig`` dataclass field at a dotted path (KeyError when there is none)."""
    cls, field = RunConfig, None
    for name in path.split("."):
        fields = {f.name: f for f in dataclasses.fields(cls)}
        field = fields[name]
        cls = typing.get_type_hints(cls)[name]
    return field


def test_design_inputs_are_the_form_keys_in_order():
    form = SpecForm()
    values = form.values_from_spec(PRESETS["hand-tuned GRPO script"])
    with gr.Blocks():
        parts = draw_form(form, values)
    assert list(parts.inputs) == form.input_keys(form.slots_in(values))
    for key in parts.inputs:
        form.target(key)  # raises on a key that is no spec field or parameter
    enabled = {f"{key}.enabled" for key in parts.accordions}  # a switch cannot be wrong
    assert set(parts.errors) == {GENERAL, *parts.inputs} - enabled
    raw = {comp: comp.value for comp in parts.inputs.values()}
    assert parts.read(raw) == values
    assert parts.inputs[DESCRIPTION].value == values[DESCRIPTION]
    assert not any(md.visible for md in parts.errors.values())  # a valid form shows no line
    values["repetition.weight"] = -0.1  # pays for repetition: the warning is drawn under it
    with gr.Blocks():
        parts = draw_form(form, values)
    assert {key for key, md in parts.errors.items() if md.visible} == {"repetition.weight"}


def test_an_edit_updates_only_the_error_lines_that_change():
    form = SpecForm()
    values = form.values_from_spec(PRESETS["hand-tuned GRPO script"])
    values["repetition.weight"] = -0.1  # drawn with a warning under it
    with gr.Blocks():
        parts = draw_form(form, values)
    by_line = {md: key for key, md in parts.errors.items()}

    def changed(values) -> dict[str, bool]:
        return {by_line[md]: up.visible for md, up in parts.show_errors(form.check(values)).items()}

    values["repetition.weight"] = 0.5
    assert changed(values) == {"repetition.weight": False}
    assert changed(values) == {}  # nothing new: no update at all
    values["format.weight"] = "x"
    assert changed(values) == {"format.weight": True}
    values["format.weight"] = 1.0
    assert changed(values) == {"format.weight": False}


def test_train_inputs_are_config_fields_and_build_the_default_config(ctx):
    spec = PRESETS[DEFAULT_PRESET]
    with gr.Blocks():
        design = DesignHandles(spec_state=gr.State(spec), form=SpecForm())
        parts = build_train_parts(ctx, design)
    assert set(parts.hyper) == {f.path for f in train_form.form_fields()}
    for path in parts.hyper:
        assert config_field(path).metadata.get("help"), path
    assert set(parts.errors) - set(parts.hyper) == {"name", "reward", "model", "data"}
    raw = {comp: comp.value for comp in parts.inputs}
    config = collect(ctx, parts, spec, raw)
    default = RunConfig()
    for section in ("generation", "training", "grpo"):
        assert getattr(config, section) == getattr(default, section)


def test_an_edit_in_one_slot_updates_its_lines_the_specs_and_every_metric_name():
    form = SpecForm()
    values = form.values_from_spec(PRESETS["hand-tuned GRPO script"])
    with gr.Blocks():
        parts = draw_form(form, values)
    lines = parts.lines_of("format")
    assert {GENERAL, DESCRIPTION, "format.weight", "repetition.label"} <= set(lines)
    assert "repetition.weight" not in lines
    values["repetition.weight"] = "x"  # an error in another slot: not drawn by this edit
    assert parts.show_errors(form.check(values), lines) == {}
    assert len(parts.show_errors(form.check(values), parts.lines_of("repetition"))) == 1
