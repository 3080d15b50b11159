"""The Design and Train tabs' inputs are keyed by name: every key is a real spec/config field,
every field the form should show has an input, and what the Design editor's page sends is
checked as hostile input."""

import dataclasses
import typing

import gradio as gr
import pytest

from engine.config.run_config import RunConfig
from rewards.spec import DEFAULT_PRESET, PRESETS
from ui.design.editor import check_values, editor_schema, safe_check
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


# What editor.js draws for every slot before the component's own parameters (its section()).
SLOT_INPUTS = (
    "enabled",
    "weight",
    "label",
    "schedule:kind",
    "schedule:end",
    "schedule:start_step",
    "schedule:end_step",
)


def test_the_editor_schema_draws_every_input_of_the_form_and_no_other():
    form = SpecForm()
    schema = editor_schema(form)
    assert [c["name"] for c in schema["components"]] == form.component_names
    for c in schema["components"]:
        slot = form.slot(c["name"])
        drawn = [f"{slot.key}.{f}" for f in SLOT_INPUTS] + [
            f"{slot.key}.{p['name']}" for p in c["params"]
        ]
        assert drawn == form.slot_keys(slot)
        for key in drawn:
            form.target(key)  # raises on a key that is no spec field or parameter
        # A new section's values are the form's own (a valid, enabled slot).
        assert {f"{slot.key}.{f}": v for f, v in c["defaults"].items()} == form.slot_values(slot)
        for p in c["params"]:
            assert p["widget"] in ("number", "check", "choice", "area", "text")
            assert p["info"]
    values = form.values_from_spec(PRESETS["hand-tuned GRPO script"])
    assert check_values(form, values) == {"errors": {}, "warnings": {}}


def test_each_message_is_sent_for_its_input_an_error_over_advice():
    form = SpecForm()
    values = form.values_from_spec(PRESETS["hand-tuned GRPO script"])
    values["repetition.weight"] = -0.1  # pays for repetition: advice under it, still valid
    got = check_values(form, values)
    assert got["errors"] == {}
    assert "a reward for it" in got["warnings"]["repetition.weight"]
    values["format.weight"] = "x"
    values["correctness.abs_tol"] = -1
    got = check_values(form, values)
    assert set(got["errors"]) == {"format.weight", "correctness.abs_tol"}
    assert "must be a number in [0.0" in got["errors"]["correctness.abs_tol"]


@pytest.mark.parametrize(
    ("sent", "said"),
    [
        (None, "must be an object of input keys"),
        (["description"], "must be an object of input keys"),
        ({1: 2}, "must be an object of input keys"),
        ({"description": ""}, "do not fit it"),  # keys missing
        ({"description": "", "aggregation": None, "nope.enabled": True}, "do not fit it"),
        ({f"k{i}": 0 for i in range(5000)}, "the form holds at most"),
    ],
)
def test_what_a_page_sends_is_checked_never_trusted(sent, said):
    form = SpecForm()
    got = check_values(form, sent)
    assert said in got["errors"][GENERAL]
    assert safe_check(form, sent).spec is None


def test_odd_values_in_the_right_keys_are_errors_on_their_inputs():
    form = SpecForm()
    values = form.values_from_spec(PRESETS["hand-tuned GRPO script"])
    values.update(
        {
            DESCRIPTION: {"a": 1},
            "format.weight": [1],
            "format.mode": {"x": 1},
            "format.schedule:kind": ["linear"],
            "correctness.abs_tol": "<script>alert(1)</script>",
        }
    )
    got = check_values(form, values)
    assert got["errors"]  # each named, nothing raised
    assert "correctness.abs_tol" in got["errors"] or GENERAL in got["errors"]


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
