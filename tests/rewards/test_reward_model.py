"""The reward_model component scores exactly as the model does when called directly."""

import math

import pytest
import torch
from transformers import AutoModelForSequenceClassification, AutoTokenizer

from engine.models.char_tokenizer import build_char_tokenizer
from rewards.composer import score
from rewards.spec import RewardSpec, RewardSpecError
from tests.tiny_models import save_tiny_reward_model

PROMPTS = ["What is 2+2?", "What is 2+2?", "What is 2+2?", "Name a colour."]
COMPLETIONS = [
    "<think>2+2=4</think><answer>4</answer>",
    "5",
    "I am not sure, maybe four or five, it is hard to tell.",
    "blue",
]


@pytest.fixture(scope="module")
def rm_dir(tmp_path_factory):
    return save_tiny_reward_model(tmp_path_factory.mktemp("tiny-rm"), build_char_tokenizer())


def direct_scores(folder):
    """One forward per sample, no padding: the model's own score of each conversation."""
    tokenizer = AutoTokenizer.from_pretrained(folder)
    model = AutoModelForSequenceClassification.from_pretrained(folder).eval()
    out = []
    for prompt, completion in zip(PROMPTS, COMPLETIONS, strict=True):
        messages = [
            {"role": "user", "content": prompt},
            {"role": "assistant", "content": completion},
        ]
        ids = tokenizer.apply_chat_template(messages, return_tensors="pt", return_dict=True)
        with torch.no_grad():
            out.append(float(model(**ids).logits[0, 0]))
    return out


def spec(folder, **params):
    component = {"name": "reward_model", "params": {"model": str(folder), **params}}
    return RewardSpec.from_dict({"components": [component]})


@pytest.mark.parametrize("batch_size", [1, 3, 8])
def test_scores_equal_calling_the_model_directly(rm_dir, batch_size):
    want = direct_scores(rm_dir)
    assert len(set(round(w, 4) for w in want)) == len(want)  # the samples really differ
    scored = score(spec(rm_dir, batch_size=batch_size), PROMPTS, COMPLETIONS)
    assert [s.total for s in scored] == pytest.approx(want, abs=1e-5)


def test_output_mappings_and_rank_in_the_group(rm_dir):
    raw = direct_scores(rm_dir)
    sig = [s.total for s in score(spec(rm_dir, output="sigmoid"), PROMPTS, COMPLETIONS)]
    assert sig == pytest.approx([1 / (1 + math.exp(-x)) for x in raw], abs=1e-6)
    std = [s.total for s in score(spec(rm_dir, output="standardised"), PROMPTS, COMPLETIONS)]
    mean = sum(raw) / len(raw)
    sd = math.sqrt(sum((x - mean) ** 2 for x in raw) / len(raw))
    assert std == pytest.approx([(x - mean) / sd for x in raw], abs=1e-5)
    trace = [s.trace[0].explanation for s in score(spec(rm_dir), PROMPTS, COMPLETIONS)]
    first_group = sorted(range(3), key=lambda i: -raw[i])
    for rank, i in enumerate(first_group, start=1):
        assert f"rank {rank} of 3 for this prompt" in trace[i]
    assert "rank 1 of 1" in trace[3]


def test_chat_prompts_read_like_plain_ones(rm_dir):
    chat = [[{"role": "user", "content": p}] for p in PROMPTS]
    plain = [s.total for s in score(spec(rm_dir), PROMPTS, COMPLETIONS)]
    assert [s.total for s in score(spec(rm_dir), chat, COMPLETIONS)] == pytest.approx(plain)


def test_pickle_weights_are_refused_and_fail_the_component_not_the_batch(rm_dir, tmp_path):
    model = AutoModelForSequenceClassification.from_pretrained(rm_dir)
    model.config.save_pretrained(tmp_path)
    torch.save(model.state_dict(), tmp_path / "pytorch_model.bin")  # pickle weights only
    AutoTokenizer.from_pretrained(rm_dir).save_pretrained(tmp_path)
    assert not list(tmp_path.glob("*.safetensors"))
    scored = score(spec(tmp_path), PROMPTS[:1], COMPLETIONS[:1])
    assert scored[0].total is None
    assert "reward model 'reward_model'" in scored[0].trace[0].explanation


@pytest.mark.parametrize("model", ["", "not a model", "/no/such/folder"])
def test_model_must_be_a_folder_or_hub_id(model):
    with pytest.raises(RewardSpecError) as err:
        RewardSpec.from_dict({"components": [{"name": "reward_model", "params": {"model": model}}]})
    assert err.value.field == "components[0].params.model"


def test_web_runs_name_reward_models_as_they_name_policy_models(rm_dir, tmp_path):
    from engine.config.input_policy import InputPolicy
    from engine.fields import ConfigError

    policy = InputPolicy.for_web(tmp_path, env={})
    policy.check_reward(spec("owner/reward-model"))
    with pytest.raises(ConfigError) as err:
        policy.check_reward(spec(rm_dir))  # a server folder, not under STUDIO_MODEL_ROOTS
    assert err.value.field == "reward.components[0].params.model"
    allowed = InputPolicy.for_web(tmp_path, env={"STUDIO_MODEL_ROOTS": str(rm_dir.parent)})
    allowed.check_reward(spec(rm_dir))


def test_a_demo_caps_the_size_of_reward_models_too(rm_dir, tmp_path, monkeypatch):
    from engine.fields import ConfigError
    from ui.shared.context import AppContext, DemoLimits

    monkeypatch.setenv("STUDIO_MODEL_ROOTS", str(rm_dir.parent))
    small = AppContext(data_dir=tmp_path, demo=DemoLimits(max_model_params=1000))
    with pytest.raises(ConfigError) as err:
        small.check_reward_model_sizes(spec(rm_dir))
    assert err.value.field == "reward.components[0].params.model"
    assert "over this demo's cap of 1,000" in str(err.value)
    roomy = AppContext(data_dir=tmp_path, demo=DemoLimits(max_model_params=10**9))
    roomy.check_reward_model_sizes(spec(rm_dir))


def test_the_web_apps_rule_is_checked_before_a_model_loads(rm_dir, tmp_path):
    from rewards.components import reward_model
    from ui.shared.context import AppContext, DemoLimits

    ctx = AppContext(data_dir=tmp_path, demo=DemoLimits(max_model_params=10**9))
    reward_model.restrict_models(ctx.check_reward_model)
    reward_model.load_reward_model.cache_clear()
    try:
        got = score(spec(rm_dir), PROMPTS[:1], COMPLETIONS[:1])  # a server folder: refused
        assert got[0].total is None
        assert "model.name_or_path: must be a Hugging Face model id" in got[0].trace[0].explanation
    finally:
        reward_model.restrict_models(None)
    assert score(spec(rm_dir), PROMPTS[:1], COMPLETIONS[:1])[0].total is not None
