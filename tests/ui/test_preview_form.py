"""The Preview tab's Generate inputs, built for real in a Gradio Blocks, are carried by name:
each sampling input is a ``PreviewRequest`` field, shows that field's declared range, and a bad
value comes back on that input's own error line."""

import gradio as gr
import pytest

from engine.fields import field_help
from ui.preview.generate import PreviewError, PreviewRequest
from ui.preview.layout import build_preview_controls
from ui.preview.tab import _show_error, preview_request

KNOBS = {f.name: f for f in PreviewRequest.sampling_fields()}


@pytest.fixture
def controls(ctx):
    with gr.Blocks():
        return build_preview_controls(ctx)


def default_values(controls) -> dict:
    inputs = [controls.model_key, controls.custom_model, *controls.data.all, controls.tools]
    return {comp: comp.value for comp in [*inputs, *controls.sampling.values()]}


def test_every_sampling_input_is_a_request_field_with_its_declared_range(controls):
    assert list(controls.sampling) == list(KNOBS)
    assert {"num_prompts", "samples_per_prompt", "temperature", "seed"} < set(KNOBS)
    assert set(controls.errors) == {"model", "data", "tools", *KNOBS}
    for name, comp in controls.sampling.items():
        assert comp.info == field_help(KNOBS[name])
        assert KNOBS[name].metadata["bounds"].describe() in comp.info
        assert comp.value == KNOBS[name].default


def test_the_form_defaults_make_the_default_request(ctx, controls):
    request = preview_request(ctx, controls, default_values(controls))
    request.check()
    assert request == PreviewRequest(request.model_key, "", request.data)


@pytest.mark.parametrize("name", list(KNOBS))
def test_a_value_out_of_range_shows_on_its_own_input(ctx, controls, name):
    raw = default_values(controls)
    raw[controls.sampling[name]] = KNOBS[name].metadata["bounds"].hi + 1
    with pytest.raises(PreviewError) as err:
        preview_request(ctx, controls, raw).check()
    assert err.value.field == name
    updates = _show_error(controls.errors, err.value)
    shown = [md for md, update in updates.items() if update.visible]
    assert shown == [controls.errors[name]]
    assert "must be" in updates[controls.errors[name]].value


def test_a_tool_that_is_not_built_in_shows_on_the_tools_input(ctx, controls):
    raw = default_values(controls)
    raw[controls.tools] = ["calculator", "shell"]
    with pytest.raises(PreviewError) as err:
        preview_request(ctx, controls, raw).check()
    assert err.value.field == "tools"
    shown = [md for md, u in _show_error(controls.errors, err.value).items() if u.visible]
    assert shown == [controls.errors["tools"]]
