import math

import pytest

from rewards.registry import REGISTRY
from rewards.spec import ComponentSpec, RewardSpec
from ui.spec_form import GENERAL, SpecForm, param_from_form, param_to_form


@pytest.fixture(scope="module")
def form():
    return SpecForm()


def spec_of(*components):
    return RewardSpec([ComponentSpec(*c) for c in components])


def test_form_has_an_input_for_every_registry_parameter(form):
    keys = set(form.input_keys())
    for name, info in REGISTRY.items():
        assert f"{name}.enabled" in keys and f"{name}.weight" in keys
        for p in info.params:
            assert f"{name}.{p.name}" in keys
    assert len(form.input_keys()) == form.size


def test_components_that_allow_several_instances_get_several_slots(form):
    for name, info in REGISTRY.items():
        slots = [s for s in form.slots if s.info.name == name]
        assert len(slots) == (3 if info.allow_multiple else 1)


def test_spec_round_trips_through_the_form(form):
    spec = spec_of(("correctness", 1.0), ("format", 0.5, {"mode": "soft"}))
    values = form.values_from_spec(spec)
    check = form.check(values)
    assert check.ok, check.errors
    assert check.spec.to_dict()["components"] == spec.to_dict()["components"]


def test_disabled_slots_are_left_out(form):
    spec = spec_of(("correctness", 1.0), ("format", 0.5))
    values = form.values_from_spec(spec)
    values[form.input_keys().index("format.enabled")] = False
    check = form.check(values)
    assert [c.name for c in check.spec.components] == ["correctness"]


def test_a_bad_weight_is_reported_on_that_weight(form):
    values = form.values_from_spec(spec_of(("correctness", 1.0), ("format", 0.5)))
    values[form.input_keys().index("format.weight")] = math.inf
    check = form.check(values)
    assert check.spec is None
    assert "finite" in check.errors["format.weight"]
    values[form.input_keys().index("format.weight")] = None
    assert form.check(values).errors == {"format.weight": "must be a number"}


def test_a_bad_parameter_is_reported_on_that_parameter(form):
    values = form.values_from_spec(spec_of(("format", 1.0)))
    values[form.input_keys().index("format.mode")] = "loose"
    check = form.check(values)
    assert set(check.errors) == {"format.mode"}
    assert "strict" in check.errors["format.mode"]  # the allowed values are listed


def test_numeric_parameters_out_of_range_name_their_input(form):
    checked = 0
    for slot in form.slots:
        for p in slot.info.params:
            if p.type in ("int", "float") and p.max is not None and slot.instance == 1:
                values = form.values_from_spec(spec_of((slot.info.name, 1.0)))
                values[form.input_keys().index(f"{slot.key}.{p.name}")] = p.max + 1
                assert f"{slot.key}.{p.name}" in form.check(values).errors
                checked += 1
    assert checked > 0


def test_whole_spec_errors_go_to_the_general_slot(form):
    values = form.values_from_spec(spec_of(("correctness", 1.0)))
    values[form.input_keys().index("correctness.weight")] = 0.0
    check = form.check(values)
    assert GENERAL in check.errors and "zero" in check.errors[GENERAL]
    assert "1 field to fix" in check.summary()


def test_nothing_enabled_is_an_error(form):
    values = form.values_from_spec(spec_of(("correctness", 1.0)))
    values[form.input_keys().index("correctness.enabled")] = False
    assert form.check(values).errors == {GENERAL: "enable at least one component"}


def test_list_parameters_are_one_item_per_line():
    p = next(p for info in REGISTRY.values() for p in info.params if p.type == "list")
    assert param_to_form(p, ("a", "b")) == "a\nb"
    assert param_from_form(p, "a\n\n  b \n") == ["a", "b"]
