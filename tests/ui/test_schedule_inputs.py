"""The Design form's schedule and aggregation inputs: round trips, errors by input, curves."""

import pytest

from rewards.spec import RewardSpec
from ui.design.schedule_inputs import AGGREGATION, schedule_curves
from ui.design.spec_form import SpecForm

SPEC = RewardSpec.from_dict(
    {
        "aggregation": "normalize_then_sum",
        "components": [
            {"name": "correctness", "weight": 1.0},
            {
                "name": "format",
                "weight": 0.5,
                "params": {"mode": "strict"},
                "schedule": {"kind": "linear", "end": 1.5, "start_step": 10, "end_step": 50},
            },
            {
                "name": "conciseness",
                "weight": 0.2,
                "schedule": {"kind": "step", "end": 0.0, "start_step": 30},
            },
        ],
    }
)


@pytest.fixture
def form():
    return SpecForm()


def test_a_spec_with_schedules_and_aggregation_survives_the_form(form):
    values = form.values_from_spec(SPEC)
    assert values["format.schedule:kind"] == "linear" and values["format.schedule:end_step"] == 50
    assert values["correctness.schedule:kind"] == "constant"
    assert values[AGGREGATION] == "normalize_then_sum"
    check = form.check(values)
    assert check.ok, check.errors
    assert check.spec.to_dict() == SPEC.to_dict()
    # Numbers come back from the page as floats; whole ones are steps.
    values["format.schedule:start_step"] = 12.0
    assert form.check(values).spec.components[1].schedule.start_step == 12


def test_schedule_errors_land_on_their_input(form):
    values = form.values_from_spec(SPEC)
    values["format.schedule:end_step"] = 5.0  # before start_step 10
    check = form.check(values)
    assert set(check.errors) == {"format.schedule:end_step"}
    assert "after start_step" in check.errors["format.schedule:end_step"]
    values = form.values_from_spec(SPEC)
    values["conciseness.schedule:end"] = 300
    assert set(form.check(values).errors) == {"conciseness.schedule:end"}
    values = form.values_from_spec(SPEC)
    values["correctness.schedule:kind"] = "linear"  # no target weight given
    assert "correctness.schedule:end" in form.check(values).errors


def test_the_schedules_are_drawn_as_small_curves():
    figure = schedule_curves(SPEC)
    names = [trace["name"] for trace in figure["data"]]
    assert names == ["format", "conciseness"]
    xs, ys = figure["data"][0]["x"], figure["data"][0]["y"]
    assert ys[0] == 0.5 and ys[-1] == 1.5 and xs[-1] >= 50
    steps = dict(zip(figure["data"][1]["x"], figure["data"][1]["y"], strict=True))
    assert steps[30] == 0.0 and steps[0] == 0.2
    assert schedule_curves(RewardSpec.from_dict({"components": [{"name": "format"}]})) is None
