"""Weight schedules: the formulas, their validation, the spec at a step, the exported module."""

import math

import pytest

from engine.config.run_config import RunConfig
from engine.fields import ConfigError
from rewards.composer import score
from rewards.errors import RewardSpecError
from rewards.schedule import WeightSchedule
from rewards.spec import RewardSpec
from rewards.trl_adapter import export_module
from tests.fresh_interpreter import run_json_script


def spec_with(schedule, weight=0.5):
    return RewardSpec.from_dict(
        {
            "components": [
                {"name": "correctness", "weight": 1.0},
                {"name": "format", "weight": weight, "schedule": schedule},
            ]
        }
    )


LINEAR = {"kind": "linear", "end": 2.0, "start_step": 2, "end_step": 6}
COSINE = {"kind": "cosine", "end": 0.0, "start_step": 0, "end_step": 10}
STEP = {"kind": "step", "end": -1.0, "start_step": 3}


def test_each_kind_follows_its_formula():
    linear = WeightSchedule.from_dict(LINEAR)
    assert [linear.value(0.5, s) for s in (0, 2, 3, 4, 6, 9)] == [0.5, 0.5, 0.875, 1.25, 2.0, 2.0]
    cosine = WeightSchedule.from_dict(COSINE)
    for s in range(12):
        p = min(1.0, s / 10)
        assert cosine.value(1.0, s) == pytest.approx(0.5 * (1 + math.cos(math.pi * p)))
    step = WeightSchedule.from_dict(STEP)
    assert [step.value(0.5, s) for s in (1, 2, 3, 4)] == [0.5, 0.5, -1.0, -1.0]
    assert WeightSchedule().value(0.7, 100) == 0.7


@pytest.mark.parametrize(
    ("schedule", "field", "message"),
    [
        ({"kind": "exp"}, "kind", "must be one of constant, linear, step, cosine"),
        ({**LINEAR, "end": 500}, "end", r"must be in \[-100, 100\], got 500"),
        ({**LINEAR, "end_step": 2}, "end_step", r"must be a whole number in \(2, 1e\+07\]"),
        ({**LINEAR, "start_step": -1}, "start_step", r"in \[0, 1e\+07\], got -1"),
        ({**LINEAR, "start_step": 1.5}, "start_step", "must be a whole number"),
        ({**STEP, "end_step": 9}, "end_step", "switches at start_step"),
        ({"kind": "constant", "end": 1.0}, "end", "a constant schedule takes no end"),
        ({**LINEAR, "speed": 1}, "speed", "unknown field; allowed: kind, end, start_step"),
        ("fast", "", "must be a mapping"),
    ],
)
def test_bad_schedules_name_the_field_and_the_range(schedule, field, message):
    with pytest.raises(RewardSpecError, match=message) as err:
        spec_with(schedule)
    assert err.value.field == "components[1].schedule" + (f".{field}" if field else "")


def test_the_spec_at_a_step_and_its_round_trip():
    spec = spec_with(LINEAR)
    assert spec.has_schedules and spec.weights_at(4) == [1.0, 1.25]
    at4 = spec.at_step(4)
    assert not at4.has_schedules and [c.weight for c in at4.components] == [1.0, 1.25]
    assert RewardSpec.from_text(spec.to_yaml()).to_dict() == spec.to_dict()
    assert spec.to_dict()["components"][1]["schedule"] == LINEAR
    # A weight that is 0 at first but not later is a usable reward.
    zero_first = RewardSpec.from_dict(
        {"components": [{"name": "format", "weight": 0.0, "schedule": {**STEP, "end": 1.0}}]}
    )
    assert zero_first.weights_at(5) == [1.0]


def test_aggregation_is_a_grpo_setting():
    reward = {**spec_with(None).to_dict(), "aggregation": "normalize_then_sum"}
    assert RunConfig.from_dict({"reward": reward}).reward.aggregation == "normalize_then_sum"
    for algorithm in ("rloo", "ppo"):
        with pytest.raises(ConfigError, match="normalize_then_sum is a GRPO setting") as err:
            RunConfig.from_dict({"algorithm": algorithm, "reward": reward})
        assert err.value.field == "reward.aggregation"
    with pytest.raises(RewardSpecError, match="aggregation: must be one of sum_then_normalize"):
        RewardSpec.from_dict({**reward, "aggregation": "mean"})


def test_the_exported_module_takes_a_step(tmp_path):
    spec = spec_with(LINEAR)
    (tmp_path / "exported_reward.py").write_text(export_module(spec, "exported_reward"))
    texts = ["<think>2+2=4</think><answer>4</answer>", "4", "<think>x</think><answer>5</answer>"]
    script = """
        import json, sys
        from exported_reward import score, weights_at, reward_weights
        texts, answers = json.load(sys.stdin)
        print(json.dumps({
            "weights": [weights_at(s) for s in range(8)],
            "first": reward_weights,
            "totals": [score(texts, step=s, answer=answers) for s in range(8)],
        }))
    """
    out = run_json_script(script, tmp_path, [texts, ["4"] * 3])
    assert out["weights"] == [spec.weights_at(s) for s in range(8)]
    assert out["first"] == spec.weights_at(1)
    for s in range(8):
        want = [x.total for x in score(spec.at_step(s), None, texts, answers=["4"] * 3)]
        assert out["totals"][s] == pytest.approx(want, abs=1e-12)


def test_a_step_where_every_weight_is_zero_still_scores():
    fade = RewardSpec.from_dict(
        {"components": [{"name": "format", "weight": 1.0, "schedule": {**COSINE, "end_step": 2}}]}
    )
    at_end = fade.at_step(2)
    assert at_end.weights_at(2) == [0.0] and fade.weights_at(2) == [0.0]
    assert [s.total for s in score(at_end, None, ["<answer>1</answer>"])] == [0.0]
