"""The static-cache sampler on CPU: backend choice, the runner against
transformers' generate (greedy tokens, early stop, LoRA), and the log-prob gap it reports."""

from __future__ import annotations

import math

import pytest
import torch
from transformers import LlamaConfig, LlamaForCausalLM, Qwen2Config, Qwen2ForCausalLM

from engine.config.run_config import RunConfig
from engine.fields import ConfigError
from engine.generation import make_runner
from engine.generation.backend import resolve_backend, vllm_installed
from engine.generation.runner import GenerationRunner, distinct_prompts
from engine.generation.sampling import (
    encode_prompts,
    sample_completions,
    sample_on_captured_graph,
)
from engine.generation.settings import SamplingSettings
from engine.models.loading import load_model_and_tokenizer
from engine.models.specs import ModelSpec
from engine.tasks import builtin_task
from engine.tracking.evaluation import evaluate
from engine.trainers.ppo.formulas import logprobs_from_logits
from tests.tiny_models import TINY_SHAPE

GREEDY_12 = SamplingSettings(temperature=0, max_new_tokens=12)


@pytest.fixture(scope="module")
def default_model():
    return load_model_and_tokenizer(ModelSpec(), device="cpu")


@pytest.fixture(scope="module")
def prompt_ids(default_model):
    _, tok = default_model
    return encode_prompts(tok, [r["prompt"] for r in builtin_task().eval_rows(3)])


# ---- backend --------------------------------------------------------------------------------
def test_auto_is_the_compiled_sampler():
    assert resolve_backend("auto") == "compiled"
    assert resolve_backend("compiled") == "compiled"
    assert resolve_backend("hf") == "hf"
    with pytest.raises(ConfigError, match=r"generation\.backend: must be one of"):
        resolve_backend("fast")


def test_config_names_the_field_for_bad_or_missing_backends():
    assert RunConfig.from_dict({}).generation.backend == "auto"
    with pytest.raises(ConfigError, match=r"generation\.backend: must be one of auto, hf"):
        RunConfig.from_dict({"generation": {"backend": "turbo"}})
    if vllm_installed():
        pytest.skip("vllm is installed here")
    with pytest.raises(ConfigError, match=r"generation\.backend: vllm needs the vllm package"):
        RunConfig.from_dict({"generation": {"backend": "vllm"}})


def test_make_runner_follows_the_backend_and_skips_unsupported_models(default_model, caplog):
    model, _ = default_model
    assert make_runner(model, "hf", 64) is None  # transformers' generate
    assert isinstance(make_runner(model, "auto", 64), GenerationRunner)  # on the CPU too
    assert isinstance(make_runner(model, "compiled", 64), GenerationRunner)
    gpt2 = torch.nn.Module()
    gpt2.config = type("C", (), {"model_type": "gpt2"})()
    gpt2.dummy = torch.nn.Parameter(torch.zeros(1))
    assert make_runner(gpt2, "compiled", 64) is None
    assert "model type 'gpt2'" in caplog.text


# ---- runner ---------------------------------------------------------------------------------
def test_distinct_prompts_keep_first_seen_order():
    assert distinct_prompts([[1, 2], [1, 2], [3], [1, 2], [3]]) == ([[1, 2], [3]], [0, 0, 1, 0, 1])


def test_greedy_tokens_equal_transformers_generate(default_model, prompt_ids):
    model, tok = default_model
    prompts = [r["prompt"] for r in builtin_task().eval_rows(3)]
    reference = sample_completions(model, tok, prompts, temperature=0, max_new_tokens=80)
    runner = GenerationRunner(model)
    # each prompt twice: one prefill serves both rows of its group
    out = runner.generate(
        [p for p in prompt_ids for _ in range(2)],
        SamplingSettings(temperature=0, max_new_tokens=80),
        eos_ids=[tok.eos_token_id],
        pad_id=tok.pad_token_id,
    )
    for i, ref in enumerate(reference):
        assert out.completion_ids[2 * i] == out.completion_ids[2 * i + 1] == ref.token_ids
        assert out.truncated[2 * i] == ref.truncated
    assert any(not t for t in out.truncated)  # the default model ends some replies


def test_sampler_logprobs_equal_a_full_forward(default_model, prompt_ids):
    model, tok = default_model
    prompts = prompt_ids * 2
    out = GenerationRunner(model).generate(
        prompts,
        SamplingSettings(temperature=0.8, max_new_tokens=80),
        eos_ids=[tok.eos_token_id],
        pad_id=tok.pad_token_id,
        seed=3,
    )
    # Rows that end at different steps: the later ones decode after the batch has shrunk.
    assert len({len(c) for c in out.completion_ids}) >= 3
    for p, c, lp in zip(prompts, out.completion_ids, out.logprobs, strict=True):
        ids = torch.tensor([p + c])
        with torch.no_grad():
            logits = model(ids).logits[:, len(p) - 1 : -1] / 0.8
        full = logprobs_from_logits(logits.float(), torch.tensor([c]))[0]
        assert (full - torch.tensor(lp)).abs().max().item() < 1e-4


def test_stops_once_every_row_has_finished(default_model, prompt_ids):
    model, tok = default_model
    runner = GenerationRunner(model)
    calls = []
    decode = runner.decoder.decode
    runner.decoder.decode = lambda *a: calls.append(len(a[1])) or decode(*a)  # its rows
    out = runner.generate(
        prompt_ids,
        SamplingSettings(temperature=0, max_new_tokens=400),
        eos_ids=[tok.eos_token_id],
        pad_id=tok.pad_token_id,
    )
    longest = max(len(c) for c in out.completion_ids)
    assert not any(out.truncated) and longest < 100
    assert all(c[-1] == tok.eos_token_id for c in out.completion_ids)
    assert len(calls) < longest + 8  # the loop ended within one check interval of the last EOS
    # Without a graph (the CPU) finished rows leave the batch once a quarter of them have.
    lengths = sorted(len(c) for c in out.completion_ids)
    assert lengths[0] < lengths[-1] and calls[0] == len(prompt_ids) > calls[-1] == 1


def test_seeded_sampling_is_reproducible(default_model, prompt_ids):
    model, tok = default_model
    runner = GenerationRunner(model)
    settings = SamplingSettings(temperature=1.0, top_p=0.9, max_new_tokens=30)
    kwargs = dict(eos_ids=[tok.eos_token_id], pad_id=tok.pad_token_id)
    a = runner.generate(prompt_ids * 3, settings, seed=5, **kwargs)
    b = runner.generate(prompt_ids * 3, settings, seed=5, **kwargs)
    c = runner.generate(prompt_ids * 3, settings, seed=6, **kwargs)
    assert a.completion_ids == b.completion_ids != c.completion_ids


@pytest.mark.parametrize("arch", ["qwen2", "llama-lora"])
def test_other_layouts_and_lora_match_generate(arch):
    """GQA with q/k/v biases (Qwen2), and a LoRA model whose adapter is updated in place."""
    torch.manual_seed(0)
    common = dict(TINY_SHAPE, eos_token_id=1, pad_token_id=0)
    if arch == "qwen2":
        model = Qwen2ForCausalLM(Qwen2Config(**common)).eval()
    else:
        from peft import LoraConfig, get_peft_model

        base = LlamaForCausalLM(LlamaConfig(**common))
        model = get_peft_model(base, LoraConfig(r=4, target_modules=["q_proj", "v_proj"]))
        model.eval()
    prompts = [[5, 6, 7, 8, 9], [10, 11], [5, 6, 7, 8, 9]]
    runner = GenerationRunner(model)

    def check():
        out = runner.generate(prompts, GREEDY_12, eos_ids=[], pad_id=0)
        for p, c in zip(prompts, out.completion_ids, strict=True):
            ref = model.generate(
                input_ids=torch.tensor([p]), max_new_tokens=12, do_sample=False, eos_token_id=None
            )
            assert c == ref[0, len(p) :].tolist()

    check()
    with torch.no_grad():  # an optimizer step writes in place; the runner must follow it
        for name, param in model.named_parameters():
            if "lora_B" in name or (arch == "qwen2" and "q_proj.bias" in name):
                param.add_(torch.randn_like(param))
    check()


def test_sample_completions_with_a_runner_carries_logprobs(default_model):
    model, tok = default_model
    prompts = [r["prompt"] for r in builtin_task().eval_rows(2)]
    runner = GenerationRunner(model)
    out = sample_completions(
        model, tok, prompts, num_samples=3, temperature=0.9, max_new_tokens=20, runner=runner
    )
    assert [(s.prompt_index, s.sample_index) for s in out] == [
        (i, j) for i in range(2) for j in range(3)
    ]
    for s in out:
        assert len(s.logprobs) == len(s.token_ids)
        assert all(lp <= 0 and math.isfinite(lp) for lp in s.logprobs)
        assert s.text == tok.decode(s.token_ids, skip_special_tokens=True)


def test_a_narrower_prompt_bucket_reuses_the_wider_cache():
    torch.manual_seed(0)
    model = Qwen2ForCausalLM(Qwen2Config(**TINY_SHAPE)).eval()
    runner = GenerationRunner(model)
    greedy = SamplingSettings(temperature=0, max_new_tokens=6)
    kwargs = dict(eos_ids=[], pad_id=0)
    long = [[2 + i % 60 for i in range(70)], list(range(3, 40))]  # a 128-token bucket
    runner.generate(long, greedy, **kwargs)
    graph = runner._graph
    short = [[5, 6, 7], [9, 10]]
    out = runner.generate(short, greedy, **kwargs)
    assert runner._graph is graph and graph.cache.max_len == 128 + 6
    for p, c in zip(short, out.completion_ids, strict=True):
        ref = model.generate(input_ids=torch.tensor([p]), max_new_tokens=6, do_sample=False)
        assert c == ref[0, len(p) :].tolist()


def test_the_runs_longest_prompt_sizes_the_first_cache():
    """A run tells the runner its longest prompt: a wider prompt later in the run finds the
    cache (and the compiled, captured step) it already has, instead of building a new one."""
    torch.manual_seed(0)
    model = Qwen2ForCausalLM(Qwen2Config(**TINY_SHAPE)).eval()
    runner = GenerationRunner(model)
    runner.prompt_width = 70
    greedy = SamplingSettings(temperature=0, max_new_tokens=6)
    kwargs = dict(eos_ids=[], pad_id=0)
    runner.generate([[5, 6, 7], [9, 10]], greedy, **kwargs)
    graph = runner._graph
    assert graph.cache.max_len == 128 + 6
    out = runner.generate([[2 + i % 60 for i in range(70)], [3, 4]], greedy, **kwargs)
    assert runner._graph is graph
    ref = model.generate(input_ids=torch.tensor([[3, 4]]), max_new_tokens=6, do_sample=False)
    assert out.completion_ids[1] == ref[0, 2:].tolist()


def test_fewer_rows_than_the_kept_graph_fill_it_up():
    """A tool loop's later turn continues some rollouts only: their prompts fill the kept
    graph's rows up (no step built for the new count) and get their own completions back."""
    torch.manual_seed(0)
    model = Qwen2ForCausalLM(Qwen2Config(**TINY_SHAPE)).eval()
    runner = GenerationRunner(model, fill_rows=True)
    greedy = SamplingSettings(temperature=0, max_new_tokens=5)
    kwargs = dict(eos_ids=[], pad_id=0)
    runner.generate([[3, 4, 5], [6, 7], [8, 9, 10], [11]], greedy, **kwargs)
    graph = runner._graph
    turn = [[3, 4, 5, 12, 13, 14], [8, 9]]
    out = runner.generate(turn, greedy, **kwargs)
    assert runner._graph is graph and len(out.completion_ids) == 2
    assert out.token_rows.shape[0] == out.logprob_rows.shape[0] == len(out.truncated) == 2
    for p, c in zip(turn, out.completion_ids, strict=True):
        ref = model.generate(input_ids=torch.tensor([p]), max_new_tokens=5, do_sample=False)
        assert c == ref[0, len(p) :].tolist()
    assert not GenerationRunner(model).fill_rows  # on a CPU nothing is captured: no filler


def test_held_out_prompts_sample_on_the_rollouts_graph(default_model):
    """Evaluation with a run's runner draws on the graph its rollouts left (rows, end ids),
    the last batch filled up, so nothing is built again; it samples otherwise elsewhere."""
    model, tok = default_model
    rows = builtin_task().eval_rows(5)
    runner = GenerationRunner(model, fill_rows=True)  # as on a GPU, where graphs are captured
    settings = SamplingSettings(temperature=0.9, max_new_tokens=12, seed=3)
    assert sample_on_captured_graph(runner, tok, ["x"], settings) is None  # no rollout yet
    rollout = encode_prompts(tok, [r["prompt"] for r in rows[:2]]) * 2  # 4 rows, like G=2
    runner.generate(
        rollout,
        settings,
        eos_ids=[tok.eos_token_id],
        pad_id=tok.pad_token_id,
    )
    graph = runner._graph
    samples = sample_on_captured_graph(runner, tok, [r["prompt"] for r in rows], settings)
    assert runner._graph is graph
    assert [s.prompt_index for s in samples] == [0, 1, 2, 3, 4]
    for s in samples:
        assert s.text == tok.decode(s.token_ids, skip_special_tokens=True)
        assert len(s.logprobs) == len(s.token_ids)
    other = SamplingSettings(temperature=0.5, max_new_tokens=12)
    assert sample_on_captured_graph(runner, tok, ["x"], other) is None  # other sampling
    report = evaluate(
        model,
        tok,
        rows,
        SamplingSettings(0.9, max_new_tokens=12, num_samples=1, seed=3),
        runner=runner,
    )
    assert [r["text"] for r in report.samples] == [s.text for s in samples]


def test_sampler_rows_line_up_with_trls_completions_or_are_refused():
    from engine.generation.runner import Generation
    from engine.trainers.trl.sampling import sampler_rows

    sampled = Generation(
        completion_ids=[[5, 6, 1], [7]],
        token_rows=torch.tensor([[5, 6, 1], [7, 0, 0]]),
        logprob_rows=torch.tensor([[-0.5, -1.0, -2.0], [-0.25, 0.0, 0.0]]),
        truncated=[False, True],
    )
    ids = torch.tensor([[5, 6, 1, 0], [7, 0, 0, 0]])  # TRL pads to its own width
    mask = torch.tensor([[1, 1, 1, 0], [1, 0, 0, 0]])
    rows = sampler_rows(sampled, ids, mask)
    assert rows.tolist() == [[-0.5, -1.0, -2.0, 0.0], [-0.25, 0.0, 0.0, 0.0]]
    shuffled = ids.flip(0)  # rows in another order: not the sampler's
    assert sampler_rows(sampled, shuffled, mask.flip(0)) is None
    assert sampler_rows(sampled, ids[:1], mask[:1]) is None
