import math

import pytest

from engine.config.run_config import RunConfig
from engine.fields import ConfigError
from rewards.spec import (
    DEFAULT_PRESET,
    MAX_COMPONENTS,
    PRESETS,
    WEIGHT_BOUNDS,
    ComponentSpec,
    RewardSpec,
    RewardSpecError,
    preset,
)


@pytest.mark.parametrize("name", list(PRESETS))
def test_presets_round_trip_through_json_and_yaml(name):
    spec = PRESETS[name]
    assert RewardSpec.from_text(spec.to_json()) == spec
    assert RewardSpec.from_text(spec.to_yaml()) == spec
    assert RewardSpec.from_dict(spec.to_dict()).to_dict() == spec.to_dict()


def test_required_presets_exist():
    assert DEFAULT_PRESET == "R1-style math"
    assert {"R1-style math", "concise answers", "format only"} <= set(PRESETS)
    r1 = PRESETS["R1-style math"]
    assert [(c.name, c.weight) for c in r1.components] == [("correctness", 1.0), ("format", 0.5)]
    assert r1.components[1].params["mode"] == "strict"


def test_preset_returns_an_independent_copy():
    spec = preset("format only")
    spec.components[0].weight = 3.0
    assert PRESETS["format only"].components[0].weight == 1.0


def test_defaults_are_filled_in():
    spec = RewardSpec([ComponentSpec("repetition", 0.5)])
    assert spec.components[0].params == {
        "n": 3,
        "max_penalty": -1.0,
        "split": "whitespace",
        "unit": "words",
    }


def test_checks_math_names_specs_that_send_answers_to_math_verify():
    assert PRESETS[DEFAULT_PRESET].checks_math
    assert not preset("format only").checks_math
    numeric = ComponentSpec("correctness", params={"mode": "numeric"})
    assert not RewardSpec([numeric]).checks_math
    length = ComponentSpec("relative_length", params={"correctness_mode": "math"})
    assert RewardSpec([numeric, length]).checks_math
    off = ComponentSpec("correctness", enabled=False)
    assert not RewardSpec([off, ComponentSpec("format")]).checks_math


def test_metric_names_for_repeated_rules_and_labels():
    spec = RewardSpec(
        [
            ComponentSpec("correctness"),
            ComponentSpec("rule", 0.5, {"pattern": "sorry"}),
            ComponentSpec("rule", 0.5, {"pattern": "please"}, enabled=False),
            ComponentSpec("rule", 0.5, {"pattern": "thanks"}),
            ComponentSpec("rule", 0.5, {"pattern": "hello"}, label="greeting"),
        ]
    )
    assert spec.metric_names() == ["correctness", "rule", "rule_3", "greeting"]
    assert spec.metric_names(all_components=True) == [
        "correctness",
        "rule",
        "rule_2",
        "rule_3",
        "greeting",
    ]
    assert [fn.__name__ for fn, _ in spec.build()] == ["correctness", "rule", "rule_3", "greeting"]


def valid():
    return {
        "components": [
            {"name": "correctness", "weight": 1.0},
            {"name": "conciseness", "weight": 0.5, "params": {"max_len": 100}},
        ]
    }


def with_change(path, value):
    data = valid()
    target = data
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    return data


@pytest.mark.parametrize(
    "data, field, fragment",
    [
        (
            with_change(["components", 1, "name"], "brevity"),
            "components[1].name",
            "unknown component 'brevity'",
        ),
        (
            with_change(["components", 1, "params", "max_len"], -3),
            "components[1].params.max_len",
            "must be an integer in [1, 1000000], got -3",
        ),
        (
            with_change(["components", 1, "params", "max_len"], 2.5),
            "components[1].params.max_len",
            "got 2.5",
        ),
        (
            with_change(["components", 1, "params", "unit"], "bytes"),
            "components[1].params.unit",
            "one of 'tokens', 'characters', 'words'",
        ),
        (
            with_change(
                ["components", 1, "params"], {"mode": "overlong", "max_len": 100, "cache": 500}
            ),
            "components[1].params.cache",
            "at most max_len (100)",
        ),
        (
            with_change(["components", 1, "params", "speed"], 1),
            "components[1].params.speed",
            "unknown parameter",
        ),
        (
            with_change(["components", 0, "weight"], math.nan),
            "components[0].weight",
            "finite number",
        ),
        (
            with_change(["components", 0, "weight"], math.inf),
            "components[0].weight",
            "finite number",
        ),
        (with_change(["components", 0, "weight"], "1"), "components[0].weight", "must be a number"),
        (with_change(["components", 0, "weight"], 1000), "components[0].weight", "[-100, 100]"),
        (
            with_change(["components", 0, "enabled"], "yes"),
            "components[0].enabled",
            "true or false",
        ),
        (with_change(["components", 0, "label"], "Bad Label"), "components[0].label", "lower-case"),
        (with_change(["components", 0, "colour"], "red"), "components[0].colour", "unknown field"),
        (
            with_change(["components", 0, "params"], [1]),
            "components[0].params",
            "must be a mapping",
        ),
        (with_change(["components"], []), "components", "at least one component"),
        (with_change(["components"], "correctness"), "components", "must be a list"),
        (with_change(["version"], 2), "version", "must be 1"),
        (with_change(["owner"], "me"), "owner", "unknown field"),
        ({"components": [{"weight": 1.0}]}, "components[0].name", "is required"),
        (
            {
                "components": [
                    {"name": "format", "weight": 0.0},
                    {"name": "correctness", "weight": 0},
                ]
            },
            "components",
            "all enabled weights are zero",
        ),
        (
            {"components": [{"name": "format", "enabled": False}]},
            "components",
            "at least one component must be enabled",
        ),
        (
            {"components": [{"name": "format"}, {"name": "format"}]},
            "components[1].name",
            "already appears at components[0]",
        ),
        (
            {"components": [{"name": "rule", "params": {"pattern": "(a)\\1"}}]},
            "components[0].params.pattern",
            "invalid regular expression",
        ),
        (
            {"components": [{"name": "rule", "params": {"pattern": "(?=x)y"}}]},
            "components[0].params.pattern",
            "invalid regular expression",
        ),
        (
            {"components": [{"name": "rule", "params": {"pattern": "a" * 501}}]},
            "components[0].params.pattern",
            "at most 500 characters",
        ),
        (
            {"components": [{"name": "rule", "params": {"pattern": ""}}]},
            "components[0].params.pattern",
            "must not be empty",
        ),
        (
            {"components": [{"name": "reasoning_steps", "params": {"markers": ["ok", "(x"]}}]},
            "components[0].params.markers[1]",
            "invalid regular expression",
        ),
        (
            {"components": [{"name": "reasoning_steps", "params": {"markers": "Step"}}]},
            "components[0].params.markers",
            "must be a list",
        ),
        (
            {"components": [{"name": "language", "params": {"language": "klingon"}}]},
            "components[0].params.language",
            "must be one of",
        ),
        (
            {"components": [{"name": "language", "params": {"candidates": ["de", "fr"]}}]},
            "components[0].params.candidates",
            "must include the target language",
        ),
        (
            {"components": [{"name": "rule", "label": "x"}, {"name": "rule", "label": "x"}]},
            "components[1].label",
            "already used by components[0]",
        ),
        (
            {"components": [{"name": "correctness"}, {"name": "rule", "label": "correctness"}]},
            "components[1].label",
            "already used",
        ),
    ],
)
def test_invalid_specs_name_the_field(data, field, fragment):
    with pytest.raises(RewardSpecError) as err:
        RewardSpec.from_dict(data)
    assert err.value.field == field
    assert str(err.value).startswith(f"{field}: ")
    assert fragment in str(err.value)


def test_error_is_a_value_error():
    assert issubclass(RewardSpecError, ValueError)


def test_bad_json_and_yaml():
    with pytest.raises(RewardSpecError, match="not valid JSON or YAML"):
        RewardSpec.from_text("{")
    with pytest.raises(RewardSpecError, match="not valid JSON or YAML"):
        RewardSpec.from_text("components: [")
    with pytest.raises(RewardSpecError, match="must be a mapping"):
        RewardSpec.from_text("- 1")


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("[" * 100_000, "deeper than"),
        ("- " * 200 + "x", "deeper than"),
        ("n: " + "9" * 5000, "too many digits"),
        ("x" * 1_000_001, "over 1,000,000 characters"),
    ],
)
def test_the_one_parser_refuses_hostile_text_by_reason(text, reason):
    """Specs, run configs and API arguments share load_structured's guards."""
    from engine.fields import ConfigError, parse_yaml

    with pytest.raises(RewardSpecError, match=reason):
        RewardSpec.from_text(text)
    with pytest.raises(ConfigError, match=reason):
        parse_yaml(text)


def test_constructing_directly_also_validates():
    with pytest.raises(RewardSpecError) as err:
        RewardSpec([ComponentSpec("format", params={"mode": "loose"})])
    assert err.value.field == "components[0].params.mode"


@pytest.mark.parametrize(
    ("weight", "reason"),
    [
        (200, "must be in [-100, 100], got 200"),
        ("heavy", "must be a number, got 'heavy'"),
        (float("nan"), "must be a finite number, got nan"),
    ],
)
def test_a_bad_weight_is_worded_as_every_range_is(weight, reason):
    """One wording of a range (Bounds.problem) for weights and config fields alike."""
    with pytest.raises(RewardSpecError) as err:
        RewardSpec.from_dict({"components": [{"name": "format", "weight": weight}]})
    assert (err.value.field, err.value.reason) == ("components[0].weight", reason)
    assert WEIGHT_BOUNDS.problem(weight) == reason
    with pytest.raises(ConfigError) as config_err:  # a config field's range, same words
        RunConfig.from_dict({"training": {"steps": 0}})
    assert config_err.value.reason.startswith("must be in [1, ")


def test_a_spec_holds_a_bounded_number_of_components():
    rules = [{"name": "rule", "params": {"pattern": f"w{i}"}} for i in range(MAX_COMPONENTS)]
    assert len(RewardSpec.from_dict({"components": rules}).components) == MAX_COMPONENTS
    with pytest.raises(RewardSpecError, match=r"components: at most 100 components, got 101"):
        RewardSpec.from_dict({"components": [*rules, {"name": "format"}]})
