"""The Playground's form, built for real in a Gradio Blocks, is carried by name: each sampling
input is a ``SamplingSettings`` field showing that field's declared range, and a picked run
sets the max new tokens to the completion length it trained with (issue 45, bug 5)."""

from __future__ import annotations

import dataclasses

import gradio as gr
import pytest

from engine.fields import ConfigError, field_help
from engine.generation.settings import SamplingSettings
from engine.run.saved_models import recorded_config
from ui.access.identity import LOCAL_VIEWER
from ui.playground.replies import PlaygroundCache
from ui.playground.tab import build_form, form_settings, playground_knobs, run_picked
from ui.shared.context import AppContext

KNOBS = {f.name: f for f in dataclasses.fields(SamplingSettings)}


@pytest.fixture
def form():
    with gr.Blocks():
        return build_form()


def test_every_sampling_input_is_a_settings_field_with_its_declared_range(form):
    assert set(form.sampling) == set(KNOBS)
    shown = playground_knobs()
    for name, comp in form.sampling.items():
        assert comp.info == field_help(shown[name])
        assert shown[name].metadata["bounds"].describe() in comp.info
        assert comp.value == KNOBS[name].default
    assert "allowed: [1, 8]" in form.sampling["num_samples"].info  # a request's cap
    defaults = {comp: comp.value for comp in form.sampling.values()}
    assert form_settings(form, defaults) == SamplingSettings()


def test_a_value_out_of_range_is_refused_naming_its_knob(form):
    values = {comp: comp.value for comp in form.sampling.values()}
    values[form.sampling["top_p"]] = 0
    with pytest.raises(ConfigError, match=r"top_p: must be in \(0, 1\], got 0") as err:
        form_settings(form, values)
    assert err.value.field == "top_p"
    values[form.sampling["top_p"]] = 1.0
    values[form.sampling["num_samples"]] = 2.5
    with pytest.raises(ConfigError, match="num_samples: must be a whole number"):
        form_settings(form, values)


def test_a_picked_run_samples_as_many_tokens_as_it_trained_with(form, tiny_run):
    ctx = AppContext(tiny_run[0])
    try:
        trained = recorded_config(tiny_run[0], tiny_run[1]).generation.max_completion_length
        assert trained != KNOBS["max_new_tokens"].default  # 8: the tiny run's
        updates = run_picked(ctx, PlaygroundCache(), form, LOCAL_VIEWER, tiny_run[1])
        assert updates[form.sampling["max_new_tokens"]].value == trained
        assert form.sampling["max_new_tokens"] not in run_picked(
            ctx, PlaygroundCache(), form, LOCAL_VIEWER, None
        )
    finally:
        ctx.close()
