"""The PPO trainer on a tiny random Llama: tensors, padding, steps, checkpoints, stop, LoRA."""

from __future__ import annotations

from typing import Any

import pytest
import torch

from engine.config.run_config import RunConfig
from engine.fields import ConfigError
from engine.generation.sampling import encode_prompts
from engine.models.char_tokenizer import build_char_tokenizer
from engine.models.loading import load_model_and_tokenizer
from engine.models.specs import LoraSpec, ModelSpec
from engine.runtime.stop_request import StopRequest
from engine.tasks import builtin_task
from engine.trainers.ppo.checkpoint import (
    CRITIC_FILE,
    OPTIMIZER_FILE,
    POLICY_DIR,
    STATE_FILE,
    rotate_checkpoints,
)
from engine.trainers.ppo.formulas import ppo_loss
from engine.trainers.ppo.rollout import completion_forward, prompt_indices, rollout_tensors
from engine.trainers.ppo.trainer import PPOTrainer
from engine.trainers.ppo.value_head import PolicyWithValue
from storage.sqlite.schema import RunStatus
from tests.tiny_models import save_tiny_llama


class ListRecorder:
    """Keeps what a run records, in memory (the RunRecorder interface)."""

    def __init__(self) -> None:
        self.metric_points: list[tuple[int, dict[str, float]]] = []
        self.sample_points: list[tuple[int, list[dict[str, Any]]]] = []
        self.distribution_points: list[tuple[int, dict[str, Any]]] = []
        self.steps: list[int] = []
        self.phases: list[tuple[Any, int | None]] = []
        self.notes: list[tuple[int, Any, str]] = []

    def metrics(self, step: int, values: dict[str, float]) -> None:
        self.metric_points.append((step, dict(values)))

    def samples(self, step: int, rows: list[dict[str, Any]]) -> None:
        self.sample_points.append((step, rows))

    def distributions(self, step: int, values: dict[str, Any]) -> None:
        self.distribution_points.append((step, dict(values)))

    def progress(self, step: int) -> None:
        self.steps.append(step)

    def phase(self, phase: Any, step: int | None = None) -> None:
        self.phases.append((phase, step))

    def note(self, step: int, kind: Any, message: str, detail: Any = None) -> None:
        self.notes.append((step, kind, message))

    def rewind(self, step: int | None, redone_at_step=()) -> None:
        pass

    def flush(self) -> None:
        pass

    def close(self) -> None:
        pass

    def names(self) -> set[str]:
        return {name for _, values in self.metric_points for name in values}


@pytest.fixture(scope="module")
def tiny_model_dir(tmp_path_factory):
    return save_tiny_llama(tmp_path_factory.mktemp("tiny-llama"), build_char_tokenizer())


def tiny_run_config(model_dir, **ppo) -> RunConfig:
    return RunConfig.from_dict(
        {
            "algorithm": "ppo",
            "model": {"name_or_path": str(model_dir)},
            "generation": {"num_generations": 2, "max_completion_length": 12},
            "training": {
                "steps": 2,
                "prompts_per_step": 2,
                "learning_rate": 1e-3,
                "save_steps": 1,
                "samples_per_log": 4,
            },
            "ppo": {"ppo_epochs": 2, "num_minibatches": 2, **ppo},
        }
    )


def make_trainer(config, run_dir, recorder=None, stop=None, evaluate=None, lora=None):
    spec = config.model if lora is None else ModelSpec(config.model.name_or_path, lora=lora)
    model, tokenizer = load_model_and_tokenizer(spec, device="cpu")
    rows = builtin_task(0).train_rows(16)
    return PPOTrainer(
        config,
        model,
        tokenizer,
        rows,
        run_dir,
        recorder or ListRecorder(),
        stop or StopRequest(),
        evaluate=evaluate,
    )


# ---- pure helpers -----------------------------------------------------------------------------
def test_prompt_indices_read_each_row_once_per_epoch_and_depend_only_on_the_step():
    first_epoch = prompt_indices(10, 1, 4, seed=3) + prompt_indices(10, 2, 4, seed=3)
    crossing = prompt_indices(10, 3, 4, seed=3)
    assert sorted(first_epoch + crossing[:2]) == list(range(10))
    assert prompt_indices(10, 3, 4, seed=3) == crossing
    assert prompt_indices(10, 1, 4, seed=4) != prompt_indices(10, 1, 4, seed=3)


def test_rollout_tensors_left_pad_prompts_and_right_pad_completions():
    input_ids, attention_mask, response_mask = rollout_tensors(
        [[5, 6, 7], [8]], [[1], [2, 3, 4]], pad_id=0
    )
    assert input_ids.tolist() == [[5, 6, 7, 1, 0, 0], [0, 0, 8, 2, 3, 4]]
    assert attention_mask.tolist() == [[1, 1, 1, 1, 0, 0], [0, 0, 1, 1, 1, 1]]
    assert response_mask.tolist() == [[1, 0, 0], [1, 1, 1]]


def test_rollout_widths_round_up_to_the_compiled_multiple():
    input_ids, attention_mask, response_mask = rollout_tensors(
        [[5, 6, 7], [8]], [[1], [2, 3, 4]], pad_id=0, multiple=4
    )
    assert input_ids.tolist() == [[0, 5, 6, 7, 1, 0, 0, 0], [0, 0, 0, 8, 2, 3, 4, 0]]
    assert attention_mask.tolist() == [[0, 1, 1, 1, 1, 0, 0, 0], [0, 0, 0, 1, 1, 1, 1, 0]]
    assert response_mask.tolist() == [[1, 0, 0, 0], [1, 1, 1, 0]]


def test_ppo_settings_errors_name_their_field():
    with pytest.raises(ConfigError) as info:
        RunConfig.from_dict({"ppo": {"lam": 1.5}})
    assert info.value.field == "ppo.lam"
    with pytest.raises(ConfigError) as info:
        RunConfig.from_dict({"ppo": {"kl_mode": "pid"}})
    assert info.value.field == "ppo.kl_mode" and "fixed, adaptive" in str(info.value)
    with pytest.raises(ConfigError) as info:
        RunConfig.from_dict({"ppo": {"value_model": "big"}})
    assert info.value.field == "ppo.value_model"
    with pytest.raises(ConfigError) as info:
        RunConfig.from_dict(
            {
                "algorithm": "ppo",
                "training": {"prompts_per_step": 2},
                "generation": {"num_generations": 2},
                "ppo": {"num_minibatches": 5},
            }
        )
    assert info.value.field == "ppo.num_minibatches" and "at most 4" in str(info.value)
    config = RunConfig.from_dict({"algorithm": "ppo", "ppo": {"reward_clip": 2.0}})
    assert RunConfig.from_yaml(config.to_yaml()).ppo == config.ppo


# ---- the model-facing math --------------------------------------------------------------------
def test_completion_logprobs_match_the_sampling_distribution(tiny_model_dir):
    model, tokenizer = load_model_and_tokenizer(ModelSpec(str(tiny_model_dir)), device="cpu")
    prompts = [row["prompt"] for row in builtin_task(0).train_rows(3)]
    prompt_ids = encode_prompts(tokenizer, prompts)
    width = max(map(len, prompt_ids))
    ids = torch.tensor([[tokenizer.pad_token_id] * (width - len(p)) + p for p in prompt_ids])
    mask = (
        torch.arange(width) >= torch.tensor([width - len(p) for p in prompt_ids])[:, None]
    ).long()
    temperature = 0.7
    torch.manual_seed(0)
    out = model.generate(
        input_ids=ids,
        attention_mask=mask,
        do_sample=True,
        temperature=temperature,
        top_k=0,
        max_new_tokens=6,
        output_scores=True,
        return_dict_in_generate=True,
        pad_token_id=tokenizer.pad_token_id,
    )
    completions = out.sequences[:, width:]  # (B, 6)
    # What generate sampled from: its processed scores, as log-probabilities.
    expected = torch.stack(
        [
            torch.log_softmax(s, -1).gather(1, completions[:, k : k + 1])[:, 0]
            for k, s in enumerate(out.scores)
        ],
        dim=1,
    )
    eos = tokenizer.eos_token_id
    cut = [ids[: ids.index(eos) + 1] if eos in ids else ids for ids in completions.tolist()]
    input_ids, attention_mask, response_mask = rollout_tensors(
        prompt_ids, cut, tokenizer.pad_token_id
    )
    logprobs, values, entropy = completion_forward(
        PolicyWithValue(model).eval(), input_ids, attention_mask, width, temperature
    )
    real = response_mask.bool()
    torch.testing.assert_close(
        logprobs[real], expected[:, : real.shape[1]][real], atol=1e-5, rtol=1e-5
    )
    assert values.shape == entropy.shape == logprobs.shape == response_mask.shape


def test_padding_never_contributes_to_losses_or_gradients(tiny_model_dir):
    model, _ = load_model_and_tokenizer(ModelSpec(str(tiny_model_dir)), device="cpu")
    module = PolicyWithValue(model).eval()
    g = torch.Generator().manual_seed(0)
    input_ids, attention_mask, response_mask = rollout_tensors(
        [[7, 8, 9, 10], [11, 12]], [[20, 21], [22, 23, 24, 25, 26]], pad_id=0
    )
    P = 4
    B, T = response_mask.shape
    old_logprobs = -torch.rand(B, T, generator=g)
    old_values = torch.randn(B, T, generator=g)
    advantages = torch.randn(B, T, generator=g)
    returns = torch.randn(B, T, generator=g)

    def loss_and_grads(ids, old_lp, old_v, adv, ret):
        module.zero_grad()
        logprobs, values, entropy = completion_forward(module, ids, attention_mask, P, 0.9)
        loss, stats = ppo_loss(
            logprobs, values, entropy, old_lp, old_v, adv, ret, response_mask,
            clip_range=0.2, clip_range_value=0.2, vf_coef=0.5, entropy_coef=0.01,
        )  # fmt: skip
        loss.backward()
        grads = [p.grad.clone() for p in module.parameters() if p.grad is not None]
        return loss.detach(), stats, grads

    base_loss, base_stats, base_grads = loss_and_grads(
        input_ids, old_logprobs, old_values, advantages, returns
    )
    pad = response_mask == 0
    noisy_ids = input_ids.clone()
    noisy_ids[attention_mask == 0] = 50  # every padded position, left and right
    garbage = torch.full((B, T), 1e4)
    loss, stats, grads = loss_and_grads(
        noisy_ids,
        torch.where(pad, -garbage, old_logprobs),
        torch.where(pad, garbage, old_values),
        torch.where(pad, garbage, advantages),
        torch.where(pad, -garbage, returns),
    )
    torch.testing.assert_close(loss, base_loss)
    for key in base_stats:
        torch.testing.assert_close(stats[key], base_stats[key])
    assert len(grads) == len(base_grads)
    for a, b in zip(grads, base_grads, strict=True):
        torch.testing.assert_close(a, b)


# ---- the trainer --------------------------------------------------------------------------------
PPO_METRICS = {
    "ppo/approx_kl",
    "policy/clip_ratio/region_mean",
    "loss/policy",
    "loss/value",
    "policy/entropy",
    "ppo/explained_variance",
    "ppo/kl_to_ref",
    "policy/kl",
    "reward/total",
    "completions/mean_length",
    "completions/clipped_ratio",
}


@pytest.mark.slow
def test_two_steps_record_metrics_samples_and_checkpoints(tiny_model_dir, tmp_path):
    config = tiny_run_config(tiny_model_dir, kl_mode="adaptive", kl_coef=0.1)
    recorder = ListRecorder()
    evaluations = []

    def evaluate(model, step):
        evaluations.append(step)
        return {"eval/accuracy": 0.0}

    trainer = make_trainer(config, tmp_path, recorder, evaluate=evaluate)
    assert trainer.train() == RunStatus.COMPLETED

    components = {f"rewards/{c.name}" for c in config.reward.components if c.enabled}
    assert PPO_METRICS | components <= recorder.names()
    assert [s for s, v in recorder.metric_points if "reward/total" in v] == [1, 2]
    assert recorder.steps == [1, 2]
    assert evaluations == [0, 2]
    kl_coefs = [v["ppo/kl_coef"] for _, v in recorder.metric_points if "ppo/kl_coef" in v]
    assert kl_coefs[0] == 0.1 and kl_coefs[1] != 0.1  # the adaptive controller moved

    step, rows = recorder.sample_points[-1]
    assert step == 2 and len(rows) == 4
    for row in rows:
        assert {"prompt", "completion", "total", "trace", "advantage", "value"} <= set(row)
        assert isinstance(row["value"], float) and isinstance(row["advantage"], float)
    assert [t["name"] for t in rows[0]["trace"]] == [
        c.name for c in config.reward.components if c.enabled
    ]

    # save_total_limit 2 keeps the last two checkpoints; each is complete.
    assert sorted(p.name for p in tmp_path.glob("checkpoint-*")) == ["checkpoint-1", "checkpoint-2"]
    checkpoint = tmp_path / "checkpoint-2"
    for name in (CRITIC_FILE, OPTIMIZER_FILE, STATE_FILE, f"{POLICY_DIR}/config.json"):
        assert (checkpoint / name).exists(), name
    # The worker writes the final model after train() (tests/e2e/test_ppo_run.py reads it).
    assert trainer.last_step == 2 and not (tmp_path / "final").exists()


@pytest.mark.slow
def test_resume_restores_policy_critic_optimizer_and_state(tiny_model_dir, tmp_path):
    config = tiny_run_config(tiny_model_dir, reward_normalization="running")
    trainer = make_trainer(config, tmp_path)
    trainer.train_step(1)
    trainer.save_checkpoint(1)

    fresh = make_trainer(config, tmp_path / "other")
    assert fresh.load_checkpoint(tmp_path / "checkpoint-1") == 1
    for (name, a), (_, b) in zip(
        trainer.parts.unwrapped.state_dict().items(),
        fresh.parts.unwrapped.state_dict().items(),
        strict=True,
    ):
        torch.testing.assert_close(a, b, msg=name)
    assert (
        fresh.rollouts.reward_moments.state_dict() == trainer.rollouts.reward_moments.state_dict()
    )
    assert fresh.num_tokens == trainer.num_tokens
    a_state = trainer.optimizer.state_dict()["state"]
    b_state = fresh.optimizer.state_dict()["state"]
    assert a_state.keys() == b_state.keys()
    for key in a_state:
        torch.testing.assert_close(a_state[key]["exp_avg"], b_state[key]["exp_avg"])
    # The next step reads the same prompts and samples the same completions in both.
    ours, _ = trainer.train_step(2)
    theirs, _ = fresh.train_step(2)
    assert ours["reward/total"] == theirs["reward/total"]
    assert ours["loss/policy"] == pytest.approx(theirs["loss/policy"], rel=1e-4, abs=1e-6)


@pytest.mark.slow
def test_stop_request_finishes_the_step_and_saves_a_checkpoint(tiny_model_dir, tmp_path):
    stop = StopRequest()
    stop.set()
    recorder = ListRecorder()
    trainer = make_trainer(tiny_run_config(tiny_model_dir), tmp_path, recorder, stop)
    assert trainer.train() == RunStatus.STOPPED
    assert recorder.steps == [1]
    assert (tmp_path / "checkpoint-1" / STATE_FILE).exists()
    assert not (tmp_path / "final").exists()


@pytest.mark.slow
@pytest.mark.parametrize("value_model", ["shared", "separate"])
def test_lora_policy_uses_its_base_as_the_reference(tiny_model_dir, tmp_path, value_model):
    # A random model earns no reward: the entropy bonus is what moves the adapters here.
    config = tiny_run_config(tiny_model_dir, value_model=value_model, kl_coef=0.2, entropy_coef=0.5)
    config.training.steps = 1
    trainer = make_trainer(config, tmp_path, lora=LoraSpec(r=4, alpha=8, dropout=0.1))
    assert trainer.parts.ref_policy is None and trainer.is_peft
    base = {n: p.clone() for n, p in trainer.policy.named_parameters() if "lora_" not in n}
    metrics, _ = trainer.train_step(1)
    assert metrics["ppo/kl_to_ref"] == pytest.approx(0.0, abs=1e-5)  # B = 0 at the start
    after = dict(trainer.policy.named_parameters())
    assert all(torch.equal(base[n], after[n]) for n in base)  # only adapters train
    trainer.save_checkpoint(1)
    assert (tmp_path / "checkpoint-1" / POLICY_DIR / "adapter_model.safetensors").exists()
    metrics, _ = trainer.train_step(2)
    assert metrics["ppo/kl_to_ref"] != 0.0  # the adapters moved away from the base


@pytest.mark.slow
def test_single_pass_and_micro_batched_updates_agree(tiny_model_dir, tmp_path):
    """One forward reused for rollout and update == separate passes in micro-batches of 1."""
    fused_config = tiny_run_config(tiny_model_dir, ppo_epochs=1, num_minibatches=1, kl_coef=0.1)
    split_config = tiny_run_config(tiny_model_dir, ppo_epochs=1, num_minibatches=1, kl_coef=0.1)
    split_config.training.micro_batch_size = 1
    fused = make_trainer(fused_config, tmp_path / "fused")
    split = make_trainer(split_config, tmp_path / "split")
    assert fused.rollouts.single_pass(4) and not split.rollouts.single_pass(4)
    a, _ = fused.train_step(1)
    b, _ = split.train_step(1)
    for name in ("loss/policy", "loss/value", "policy/entropy", "ppo/kl_to_ref", "reward/total"):
        assert a[name] == pytest.approx(b[name], rel=1e-4, abs=1e-6), name
    for (name, p), (_, q) in zip(
        fused.parts.unwrapped.named_parameters(),
        split.parts.unwrapped.named_parameters(),
        strict=True,
    ):
        torch.testing.assert_close(p, q, atol=1e-6, rtol=1e-4, msg=name)


def test_rotate_checkpoints_keeps_the_newest(tmp_path):
    for step in (2, 10, 9, 1):
        (tmp_path / f"checkpoint-{step}").mkdir()
    (tmp_path / "checkpoint-x").mkdir()
    removed = rotate_checkpoints(tmp_path, keep=2)
    assert sorted(p.name for p in removed) == ["checkpoint-1", "checkpoint-2"]
    left = sorted(p.name for p in tmp_path.iterdir())
    assert left == ["checkpoint-10", "checkpoint-9", "checkpoint-x"]
