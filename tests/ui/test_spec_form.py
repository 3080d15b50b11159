import dataclasses
import math

import pytest

from rewards.errors import RewardSpecError
from rewards.registry import REGISTRY
from rewards.spec import ComponentSpec, RewardSpec
from ui.design.form_values import param_from_form, param_to_form
from ui.design.spec_form import DESCRIPTION, GENERAL, MAX_INSTANCES, SpecDoesNotFit, SpecForm


@pytest.fixture(scope="module")
def form():
    return SpecForm()


def spec_of(*components):
    return RewardSpec([ComponentSpec(*c) for c in components])


def test_form_has_an_input_for_every_registry_parameter(form):
    keys = set(form.input_keys([form.slot(name) for name in REGISTRY]))
    for name, info in REGISTRY.items():
        assert f"{name}.enabled" in keys and f"{name}.weight" in keys and f"{name}.label" in keys
        for p in info.params:
            assert f"{name}.{p.name}" in keys


def test_components_that_allow_several_instances_get_up_to_the_limit(form):
    for name, info in REGISTRY.items():
        if info.allow_multiple:
            assert form.slot(f"{name}#{MAX_INSTANCES}").instance == MAX_INSTANCES
            with pytest.raises(KeyError, match=f"1 to {MAX_INSTANCES} instances"):
                form.slot(f"{name}#{MAX_INSTANCES + 1}")
        else:
            with pytest.raises(KeyError, match="1 to 1 instances"):
                form.slot(f"{name}#2")
    for bad in ("rule#1", "rule#02", "rule#x", "nothing"):
        with pytest.raises(KeyError):
            form.slot(bad)


def test_spec_round_trips_through_the_form(form):
    spec = spec_of(("correctness", 1.0), ("format", 0.5, {"mode": "soft"}))
    values = form.values_from_spec(spec)
    check = form.check(values)
    assert check.ok, check.errors
    assert check.spec.to_dict()["components"] == spec.to_dict()["components"]


def test_disabled_slots_are_left_out(form):
    spec = spec_of(("correctness", 1.0), ("format", 0.5))
    values = form.values_from_spec(spec)
    values["format.enabled"] = False
    check = form.check(values)
    assert [c.name for c in check.spec.components] == ["correctness"]


def test_a_bad_weight_is_reported_on_that_weight(form):
    values = form.values_from_spec(spec_of(("correctness", 1.0), ("format", 0.5)))
    values["format.weight"] = math.inf
    check = form.check(values)
    assert check.spec is None
    assert "finite" in check.errors["format.weight"]
    values["format.weight"] = None
    assert form.check(values).errors == {"format.weight": "must be a number"}


@pytest.mark.parametrize("weight", [math.inf, -math.inf, math.nan, 100.5, -1000, True])
def test_the_form_refuses_a_weight_in_the_spec_s_own_words(form, weight):
    data = {"components": [{"name": "correctness"}, {"name": "format", "weight": weight}]}
    with pytest.raises(RewardSpecError) as spec_error:
        RewardSpec.from_dict(data)
    values = form.values_from_spec(spec_of(("correctness", 1.0), ("format", 0.5)))
    values["format.weight"] = weight
    assert form.check(values).errors == {"format.weight": spec_error.value.reason}


def test_a_bad_parameter_is_reported_on_that_parameter(form):
    values = form.values_from_spec(spec_of(("format", 1.0)))
    values["format.mode"] = "loose"
    check = form.check(values)
    assert set(check.errors) == {"format.mode"}
    assert "strict" in check.errors["format.mode"]  # the allowed values are listed


def test_numeric_parameters_out_of_range_name_their_input(form, monkeypatch):
    monkeypatch.setenv("STUDIO_ALLOW_CODE", "1")
    monkeypatch.setenv("STUDIO_JUDGE_URLS", "https://judge.example/v1")
    # what only the user can give (their code) is not defaulted
    user_input = {
        "python": {"code": "def reward(completions, **columns):\n    return [0.0]"},
        "reward_model": {"model": "owner/some-reward-model"},
        "judge": {"model": "judge-1", "url": "https://judge.example/v1"},
    }
    checked = 0
    for slot in map(form.slot, REGISTRY):
        for p in slot.info.params:
            if p.type in ("int", "float") and p.max is not None:
                given = user_input.get(slot.info.name, {})
                values = form.values_from_spec(spec_of((slot.info.name, 1.0, given)))
                values[f"{slot.key}.{p.name}"] = p.max + 1
                assert f"{slot.key}.{p.name}" in form.check(values).errors
                checked += 1
    assert checked > 0


def test_whole_spec_errors_go_to_the_general_slot(form):
    values = form.values_from_spec(spec_of(("correctness", 1.0)))
    values["correctness.weight"] = 0.0
    check = form.check(values)
    assert GENERAL in check.errors and "zero" in check.errors[GENERAL]
    assert "1 field to fix" in check.summary()


def test_nothing_enabled_is_an_error(form):
    values = form.values_from_spec(spec_of(("correctness", 1.0)))
    values["correctness.enabled"] = False
    assert form.check(values).errors == {GENERAL: "enable at least one component"}


def test_list_parameters_are_one_item_per_line():
    p = next(p for info in REGISTRY.values() for p in info.params if p.type == "list")
    assert param_to_form(p, ("a", "b")) == "a\nb"
    assert param_from_form(p, "a\n\n  b \n") == ["a", "b"]


def enabled_by_metric(spec):
    """What scoring and the charts see: metric name -> (component, weight, params)."""
    return {n: (c.name, c.weight, c.params) for n, c in spec.enabled_components()}


def test_labels_round_trip_through_the_form(form):
    spec = spec_of(
        ("correctness", 1.0, {}, True, "answer_ok"),
        ("rule", -0.5, {"pattern": "sorry"}, True, "no_apology"),
        ("rule", 0.2, {"pattern": "Step"}),
    )
    values = form.values_from_spec(spec)
    assert values["correctness.label"] == "answer_ok"
    assert values["rule#2.label"] == ""
    check = form.check(values)
    assert check.ok, check.errors
    assert [c.label for c in check.spec.components] == ["answer_ok", "no_apology", None]
    assert check.spec.metric_names() == ["answer_ok", "no_apology", "rule_2"]


def test_an_empty_metric_name_is_the_default_and_spaces_are_trimmed(form):
    values = form.values_from_spec(spec_of(("format", 1.0)))
    values["format.label"] = "  tags  "
    assert form.check(values).spec.components[0].label == "tags"
    values["format.label"] = "   "
    assert form.check(values).spec.components[0].label is None


def test_a_bad_metric_name_is_reported_on_that_input(form):
    values = form.values_from_spec(spec_of(("correctness", 1.0), ("format", 0.5)))
    values["format.label"] = "Tag Check"
    check = form.check(values)
    assert set(check.errors) == {"format.label"}
    assert "lower-case letters" in check.errors["format.label"]


def test_a_metric_name_used_twice_names_the_other_component(form):
    values = form.values_from_spec(spec_of(("correctness", 1.0), ("format", 0.5)))
    values["correctness.label"] = "format"
    check = form.check(values)
    assert check.errors == {"format.label": "metric name 'format' is already used by correctness"}


def test_a_spec_with_more_instances_than_the_limit_is_refused(form):
    rules = [("rule", 0.1, {"pattern": f"word{i}"}) for i in range(MAX_INSTANCES + 1)]
    spec = spec_of(("correctness", 1.0), *rules)
    with pytest.raises(SpecDoesNotFit) as info:
        form.values_from_spec(spec)
    message = str(info.value)
    assert f"{MAX_INSTANCES + 1} rule components" in message
    assert f"at most {MAX_INSTANCES} of one component" in message
    assert "CLI" in message and "API" in message
    with pytest.raises(SpecDoesNotFit):
        form.load_notes(spec)


@pytest.mark.parametrize("count", [6, MAX_INSTANCES])
def test_a_spec_with_many_instances_of_one_component_loads_whole(form, count):
    rules = [("rule", 0.1, {"pattern": f"word{i}"}) for i in range(count)]
    spec = spec_of(("correctness", 1.0), *rules)
    assert form.shown_keys(spec) == ["correctness", "rule"] + [
        f"rule#{i}" for i in range(2, count + 1)
    ]
    check = form.check(form.values_from_spec(spec))
    assert enabled_by_metric(check.spec) == enabled_by_metric(spec)


def test_removing_a_slot_drops_its_inputs_and_renames_no_other(form):
    rules = [("rule", 1.0, {"pattern": p}) for p in "abc"]
    values = form.without_slot(form.values_from_spec(spec_of(*rules)), "rule#2")
    assert not any(k.startswith("rule#2.") for k in values)
    check = form.check(values)
    assert check.spec.metric_names() == ["rule", "rule_3"]
    assert [c.params["pattern"] for c in check.spec.components] == ["a", "c"]
    # Added again, the freed slot comes back with the component's defaults, enabled.
    slot = form.slot_to_add("rule", [s.key for s in form.slots_in(values)])
    assert slot.key == "rule#2"
    added = form.slot_values(slot)
    assert added["rule#2.enabled"] is True and added["rule#2.weight"] == 1.0


def test_disabled_components_are_named_when_loaded(form):
    assert form.load_notes(spec_of(("correctness", 1.0), ("format", 0.5))) == []
    spec = spec_of(
        ("correctness", 1.0),
        ("format", 0.5, {}, False),
        ("rule", 0.1, {"pattern": "a"}),
        ("rule", 0.1, {"pattern": "b"}, False),
    )
    assert form.load_notes(spec) == [
        "2 disabled components are shown unticked (format, rule #2); they stay out of the "
        "spec until ticked."
    ]
    one = spec_of(("correctness", 1.0), ("format", 0.5, {}, False))
    assert form.load_notes(one) == [
        "1 disabled component is shown unticked (format); it stays out of the spec until ticked."
    ]
    values = form.values_from_spec(spec)
    assert values["format.enabled"] is False
    assert values["rule#2.pattern"] == "b"


def test_only_order_and_disabled_components_change_on_a_round_trip(form):
    spec = RewardSpec.from_dict(
        {
            "description": "house reward",
            "components": [
                {"name": "rule", "weight": 0.1, "params": {"pattern": "x"}, "enabled": False},
                {"name": "format", "weight": 0.5, "label": "tags"},
                {"name": "rule", "weight": -0.2, "params": {"pattern": "sorry"}},
                {"name": "correctness", "weight": 1.0, "params": {"wrong_value": -0.5}},
                {"name": "rule", "weight": 0.3, "params": {"pattern": "Step"}, "label": "steps"},
            ],
        }
    )
    check = form.check(form.values_from_spec(spec))
    assert check.ok, check.errors
    assert check.spec.description == "house reward"
    # The second rule keeps its metric name rule_2 although the first one is left out.
    assert enabled_by_metric(check.spec) == enabled_by_metric(spec)
    assert sorted(check.spec.metric_names()) == ["correctness", "rule_2", "steps", "tags"]


def test_unticking_a_slot_does_not_rename_the_next_one(form):
    spec = spec_of(("rule", 1.0, {"pattern": "a"}), ("rule", 1.0, {"pattern": "b"}))
    values = form.values_from_spec(spec)
    assert form.check(values).spec.metric_names() == ["rule", "rule_2"]
    values["rule.enabled"] = False
    assert form.check(values).spec.metric_names() == ["rule_2"]


def test_a_too_long_description_is_reported_on_it(form):
    values = form.values_from_spec(spec_of(("format", 1.0)))
    values[DESCRIPTION] = "x" * 2001
    assert set(form.check(values).errors) == {DESCRIPTION}


def test_every_form_key_names_a_real_spec_field_or_parameter(form):
    component_fields = {f.name for f in dataclasses.fields(ComponentSpec)}
    spec_fields = {f.name for f in dataclasses.fields(RewardSpec)}
    shown = set()
    for key in form.input_keys([form.slot(name) for name in REGISTRY]):
        slot, name, param = form.target(key)
        if slot is None:
            assert name in spec_fields
        elif param is None:
            assert name in component_fields
        else:
            assert REGISTRY[slot.info.name].param(name) is param
            shown.add((slot.info.name, name))
    assert shown == {(n, p.name) for n, info in REGISTRY.items() for p in info.params}


def test_values_with_a_missing_or_unknown_key_are_refused(form):
    values = form.values_from_spec(spec_of(("format", 1.0)))
    with pytest.raises(KeyError):
        form.target("format.no_such_param")
    with pytest.raises(ValueError, match="unknown"):
        form.check({**values, "format.no_such_param": 1})
    del values["format.weight"]
    with pytest.raises(ValueError, match="missing"):
        form.check(values)


def test_a_negative_weight_on_a_penalty_is_warned_about_but_allowed(form):
    values = form.values_from_spec(spec_of(("correctness", -1.0), ("repetition", -0.5)))
    check = form.check(values)
    assert check.ok  # advice, not an error
    assert set(check.warnings) == {"repetition.weight"}  # correctness is no penalty
    assert "a reward for it" in check.warnings["repetition.weight"]
    values["repetition.weight"] = 0.5
    assert form.check(values).warnings == {}


def test_components_are_shown_when_the_spec_has_them_and_added_on_demand(form):
    spec = RewardSpec.from_dict(
        {"components": [{"name": "correctness"}, {"name": "rule", "params": {"pattern": "a"}}]}
    )
    shown = form.shown_keys(spec)
    assert shown == ["correctness", "rule"]
    assert form.slot_to_add("rule", shown).key == "rule#2"  # several instances
    assert form.slot_to_add("format", shown).key == "format"
    with pytest.raises(SpecDoesNotFit, match="correctness is in the form already"):
        form.slot_to_add("correctness", shown)
    full = shown + [f"rule#{i}" for i in range(2, MAX_INSTANCES + 1)]
    with pytest.raises(SpecDoesNotFit, match=f"holds at most {MAX_INSTANCES} rule components"):
        form.slot_to_add("rule", full)
    with pytest.raises(SpecDoesNotFit, match="pick a component"):
        form.slot_to_add(None, shown)
