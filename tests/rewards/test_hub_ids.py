"""One hub-id predicate for models, reward models and datasets: huggingface_hub's own rules,
owner/name required except where the command line accepts the hub's owner-less legacy names."""

import pytest

from engine.config.input_policy import is_web_hub_id
from engine.fields import ConfigError
from engine.run.preflight import check_hub_dataset_id
from rewards.input_guards.hub_ids import is_hub_id
from rewards.spec import RewardSpec, RewardSpecError

#: name -> (with owner required, owner-less names accepted)
CASES = {
    "Qwen/Qwen2.5-0.5B-Instruct": (True, True),
    "openai/gsm8k": (True, True),
    "gpt2": (False, True),  # a legacy hub name: the CLI may use it, a web form may not
    "a--b/c": (False, False),  # the hub forbids "--" and ".."
    "a/b..c": (False, False),
    "owner/name.git": (False, False),
    "a/b/c": (False, False),
    "-a/b": (False, False),
    "a/" + "b" * 97: (False, False),  # longer than the hub's 96 characters
    "not a dataset!": (False, False),
    "": (False, False),
}


@pytest.mark.parametrize("name", list(CASES))
def test_one_predicate_at_two_strictnesses(name):
    strict, loose = CASES[name]
    assert is_hub_id(name) is strict
    assert is_hub_id(name, owner_required=False) is loose
    assert is_web_hub_id(name) is strict  # the web's check adds "never a path that exists here"
    if loose:
        check_hub_dataset_id(name)
    else:
        with pytest.raises(ConfigError, match="not a Hugging Face dataset id"):
            check_hub_dataset_id(name)


def test_the_web_check_refuses_an_id_that_is_also_a_folder_here():
    assert is_hub_id("engine/tasks") and not is_web_hub_id("engine/tasks")


@pytest.mark.parametrize("name", ["a--b/c", "owner/name.git", "a/b..c"])
def test_a_reward_model_id_the_hub_refuses_is_refused_in_the_spec(name):
    with pytest.raises(RewardSpecError) as err:
        RewardSpec.from_dict({"components": [{"name": "reward_model", "params": {"model": name}}]})
    assert err.value.field == "components[0].params.model"
