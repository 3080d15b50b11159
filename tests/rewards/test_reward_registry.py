import json
import pickle

import pytest

from rewards.errors import RewardSpecError
from rewards.registry import REGISTRY, describe


def test_every_component_is_described_completely():
    for name, info in REGISTRY.items():
        assert info.name == name
        assert info.description and info.source
        for p in info.params:
            assert p.doc and p.type in ("float", "int", "bool", "str", "list")
            if p.type in ("float", "int"):
                assert p.min is not None and p.max is not None and p.min <= p.default <= p.max
            if p.type == "str":
                assert p.choices is not None or p.max_length is not None
            if p.type == "list":
                assert p.max_items is not None
            assert p.validate(p.default) == (list(p.default) if p.type == "list" else p.default)
    json.dumps(describe())  # forms are generated from this


#: Components whose defaults leave out what only the user can give (their code, their model).
USER_INPUT = {
    "python": {"code": "def reward(completions, **columns):\n    return [0.0]"},
    "reward_model": {"model": "owner/some-reward-model"},
    "judge": {
        "model": "judge-1",
        "url": "https://judge.example/v1",
    },  # checked, not loaded, when built
}


def test_defaults_build_a_named_picklable_function(monkeypatch):
    monkeypatch.setenv("STUDIO_ALLOW_CODE", "1")
    monkeypatch.setenv("STUDIO_JUDGE_URLS", "https://judge.example/v1")
    for name, info in REGISTRY.items():
        fn = info.build(USER_INPUT.get(name, {}))
        assert fn.__name__ == name
        assert pickle.loads(pickle.dumps(fn)).__name__ == name


def test_build_with_another_metric_name():
    assert REGISTRY["format"].build({}, name="format_2").__name__ == "format_2"


@pytest.mark.parametrize(
    "params, field, fragment",
    [
        ({"mode": "fuzzy"}, "mode", "one of 'math', 'numeric', 'exact', 'choice'"),
        ({"wrong_value": 2}, "wrong_value", "a number in [-1.0, 0.0], got 2"),
        ({"wrong_value": float("nan")}, "wrong_value", "got nan"),
        ({"abs_tol": "0.1"}, "abs_tol", "got '0.1'"),
        ({"letters": "AAB"}, "letters", "distinct capital letters"),
        ({"colour": 1}, "colour", "unknown parameter of 'correctness'"),
    ],
)
def test_bad_correctness_params_name_the_field(params, field, fragment):
    with pytest.raises(RewardSpecError) as err:
        REGISTRY["correctness"].validate_params(params)
    assert err.value.field == field
    assert fragment in str(err.value)


def test_bad_format_tag():
    with pytest.raises(RewardSpecError, match="think_tag: must be a tag name"):
        REGISTRY["format"].build({"think_tag": "th ink"})
