"""Where a decode step of the static-cache sampler spends its time, on one GPU.

Builds the same random-init Qwen2.5-0.5B-shape model as ``gpu_throughput.py`` and times, with
CUDA events, per variant of the decode step (:data:`VARIANTS`: torch's attention or ours, merged
projections or the modules', the Triton sampler or the compiled race, one compiled block run
for every block or the whole decode compiled as one graph): the first call (compiling and
capturing; Triton's kernels built by an earlier variant are reused from its cache), the whole
``GenerationRunner.generate`` of 256 rows x 256 tokens and one token step (decode, sample,
record: one graph) replayed alone; then the samplers alone (eager, and replayed from a CUDA
graph as the decode loop runs them), the Triton sampler's draws checked against exact
probabilities beside torch's, and the attention kernel checked against the products.

    python bench/decode_step.py --profile
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path

import torch
from cuda_timing import cuda_ms, graph_ms
from gpu_throughput import build_model
from transformers import AutoModelForCausalLM

from engine.generation import decoder, sampler, sampling_kernel, token_step
from engine.generation.runner import GenerationRunner
from engine.generation.sampler import compiled_race, sample_tokens
from engine.generation.settings import SamplingSettings

VARIANTS = {  # name: (attention, merged projections, fused sampler, compile scope)
    "sdpa": ("sdpa", False, "kernel", "layer"),
    "products_merged": ("products", True, "kernel", "layer"),
    "kernel_merged": ("kernel", True, "kernel", "layer"),
    "kernel_merged_race": ("kernel", True, "compiled", "layer"),
    "kernel_merged_step": ("kernel", True, "kernel", "step"),  # the whole decode in one graph
}


def attention_check(rows: int, length: int) -> dict[str, float]:
    """The Triton decode-attention kernel against the batched products in float32, on random
    bf16 inputs with left padding and a slot mid-cache; raises when they disagree."""
    from engine.generation import attention_kernel

    q = torch.randn(rows, 2, 7, 64, device="cuda", dtype=torch.bfloat16)
    keys, values = (
        torch.randn(rows, 2, length, 64, device="cuda", dtype=torch.bfloat16) for _ in "kv"
    )
    slot = length // 2
    valid = torch.zeros(rows, length, dtype=torch.bool, device="cuda")
    valid[:, 20 : slot + 1] = True
    valid[::3, 20:40] = False
    slot_t = torch.tensor([slot], device="cuda")
    ours = attention_kernel.custom_op()(q, keys, values, valid, slot_t, 0.125).float()
    reference = decoder.decode_attention(
        q.float(), keys.float(), values.float(), valid, slot_t, 0.125
    )
    error = (ours - reference).abs().max().item()
    if not error < 5e-2:
        raise AssertionError(f"decode attention kernel differs from the products by {error}")
    return {"attention_kernel_max_abs_error": round(error, 5)}


def seeded_calls_reproduce(model, prompts, tokens: int) -> bool:
    """The same seed gives the same completions through the captured graph, another seed not;
    raises otherwise."""
    runner = GenerationRunner(model)
    settings = SamplingSettings(temperature=0.8, top_p=1.0, max_new_tokens=tokens)
    kwargs = dict(eos_ids=[], pad_id=0)
    a, b, c = (
        runner.generate(prompts, settings, seed=s, **kwargs).completion_ids for s in (5, 5, 6)
    )
    runner.release()
    if not (a == b and a != c):
        raise AssertionError("seeded sampling through the graph does not reproduce")
    return True


def sampler_timings(logits: torch.Tensor, gen) -> dict[str, object]:
    """The samplers alone on one step's logits: eager (launches included) and replayed from a
    CUDA graph, as the decode loop runs them; the Triton one by programs per row too."""
    result: dict[str, object] = {
        "sampler_ms": round(cuda_ms(lambda: sample_tokens(logits, 0.8, 1.0, gen), 50), 3),
        "sampler_fused_ms": round(cuda_ms(lambda: compiled_race(logits, 0.8, gen), 50), 3),
        "sampler_fused_own_noise_ms": round(
            cuda_ms(lambda: compiled_race(logits, 0.8, None), 50), 3
        ),
        "sampler_top_p_ms": round(cuda_ms(lambda: sample_tokens(logits, 0.8, 0.95, gen), 20), 3),
    }
    fused_graph_ms = graph_ms(lambda: compiled_race(logits, 0.8), 50)
    result["sampler_fused_graph_ms"] = round(fused_graph_ms, 4)
    if not sampling_kernel.supports(logits):
        return result | {"sampler_kernel": "unsupported here (no triton?)"}
    result["sampler_kernel_ms"] = round(
        cuda_ms(lambda: sample_tokens(logits, 0.8, 1.0, None, fused=True), 50), 3
    )
    kernel_graph_ms = graph_ms(lambda: sampling_kernel.sample(logits, 0.8), 50)
    rows, vocab = logits.shape
    result["sampler_kernel_graph_ms"] = round(kernel_graph_ms, 4)
    result["sampler_kernel_speedup_x"] = round(fused_graph_ms / kernel_graph_ms, 2)
    result["sampler_kernel_read_gb_per_s"] = round(logits.nbytes / kernel_graph_ms / 1e6, 1)
    result["sampler_kernel_default_splits"] = sampling_kernel.split_columns(
        vocab, sampling_kernel.default_splits(rows, logits.device)
    )[1]
    for splits in (1, 2, 4, 8, 16):
        ms = graph_ms(lambda s=splits: sampling_kernel.sample(logits, 0.8, splits=s), 50)
        result[f"sampler_kernel_{splits}_splits_graph_ms"] = round(ms, 4)
    return result


def max_freq_error(tokens: torch.Tensor, probs: torch.Tensor) -> float:
    freq = torch.bincount(tokens, minlength=len(probs)).double() / len(tokens)
    return (freq - probs.double()).abs().max().item()


def sampler_check(vocab: int, temperature: float = 0.8) -> dict[str, object]:
    """The Triton sampler's draws against exact probabilities, beside torch's sampler on the
    same logits: 7 tokens over 262,144 rows, then the whole vocabulary (256 rows, programs per
    row as in the decode loop) with 8 column blocks of uneven mass, 32,768 draws; and its
    log-probabilities against log_softmax. A bound of 5 standard errors is printed as ``ok``."""
    if not sampling_kernel.supports(torch.zeros(1, 1, device="cuda")):
        return {"sampler_kernel_check": "unsupported here (no triton?)"}
    gen = torch.Generator(device="cuda").manual_seed(1)
    small = torch.tensor([1.5, 1.0, 0.6, 0.0, -0.3, -0.8, -1.5], device="cuda").bfloat16()
    probs = torch.softmax(small.double() / temperature, -1)
    rows = 1 << 18
    kernel_tokens, _ = sampling_kernel.sample(small.repeat(rows, 1), temperature, gen)
    torch_tokens, _ = sample_tokens(small.repeat(rows, 1), temperature, 1.0, gen)
    bound = 5 * (0.25 / rows) ** 0.5
    result: dict[str, object] = {
        "sampler_kernel_max_freq_error": round(max_freq_error(kernel_tokens, probs), 5),
        "sampler_torch_max_freq_error": round(max_freq_error(torch_tokens, probs), 5),
        "sampler_freq_error_bound": round(bound, 5),
    }
    # The whole vocabulary: block b of 8 lifted by 0.4 * b, so the blocks' masses differ.
    blocks = 8
    row = torch.randn(vocab, device="cuda", generator=gen) * 2
    row += torch.arange(vocab, device="cuda") * blocks // vocab * 0.4
    logits = row.bfloat16().expand(256, vocab).contiguous()
    logp = torch.log_softmax(logits[0].double() / temperature, -1)
    block_of = torch.arange(vocab, device="cuda") * blocks // vocab
    masses = torch.zeros(blocks, dtype=torch.float64, device="cuda").index_add_(
        0, block_of, logp.exp()
    )
    draws, errors = {"kernel": [], "torch": []}, []
    for _ in range(128):
        tokens, logprobs = sampling_kernel.sample(logits, temperature, gen)
        errors.append((logprobs.double() - logp[tokens]).abs().max())  # NaN stays NaN
        draws["kernel"].append(tokens)
        draws["torch"].append(sample_tokens(logits, temperature, 1.0, gen)[0])
    logprob_error = torch.stack(errors).max().item()
    block_bound = 5 * (0.25 / (128 * 256)) ** 0.5
    for name, tokens in draws.items():
        error = max_freq_error(block_of[torch.cat(tokens)], masses)
        result[f"sampler_{name}_block_freq_max_error"] = round(error, 5)
    result["sampler_block_freq_error_bound"] = round(block_bound, 5)
    result["sampler_kernel_logprob_max_abs_error"] = round(logprob_error, 6)
    result["sampler_kernel_ok"] = (
        result["sampler_kernel_max_freq_error"] < bound
        and result["sampler_kernel_block_freq_max_error"] < block_bound
        and logprob_error < 1e-3
    )
    return result


def sampler_compiles(logits: torch.Tensor) -> str:
    """Whether a compiled function (fullgraph) keeps the Triton sampler as one operator call."""
    sampling_kernel.custom_op()  # registered eagerly, as the decode loop's first token does
    try:
        step = torch.compile(
            lambda x: sample_tokens(x * 1.0, 0.8, 1.0, None, fused=True), fullgraph=True
        )
        tokens, logprobs = step(logits)
        ok = bool(((tokens >= 0) & (tokens < logits.shape[1])).all() and (logprobs <= 0).all())
        return "ok" if ok else "wrong values"
    except Exception as exc:  # reported, not fatal: the decode loop samples outside compile
        return f"failed: {type(exc).__name__}: {str(exc)[:200]}"


def measure(args, model, prompts, variant: str, gen) -> dict[str, float]:
    attention, merged, fused_sampler, scope = VARIANTS[variant]
    torch._dynamo.reset()  # each variant compiles afresh, not against the last one's guards
    decoder.DECODE_ATTENTION = attention
    sampler.FUSED_SAMPLER = fused_sampler
    os.environ[token_step.COMPILE_SCOPE_ENV] = scope
    runner = GenerationRunner(model, merge_weights=merged)
    settings = SamplingSettings(temperature=0.8, top_p=1.0, max_new_tokens=args.tokens)
    kwargs = dict(eos_ids=[], pad_id=0)
    started = time.perf_counter()
    runner.generate(prompts, settings, **kwargs)  # compile and capture
    first_call_s = time.perf_counter() - started
    generate_ms = cuda_ms(lambda: runner.generate(prompts, settings, **kwargs), 3)
    graph = runner._graph

    def one_token() -> None:  # a replay of the captured token step, from the first slot
        graph.slot.fill_(graph.cache.max_len - args.tokens)
        graph.buffers.column.zero_()
        graph.run_token()

    result = {
        f"{variant}_first_call_s": round(first_call_s, 1),
        f"{variant}_generate_s": round(generate_ms / 1000, 3),
        f"{variant}_tokens_per_s": round(args.rows * args.tokens / (generate_ms / 1000)),
        f"{variant}_step_ms": round(generate_ms / args.tokens, 3),
        f"{variant}_graph_replay_ms": round(cuda_ms(one_token, 50), 3),
    }
    if args.profile:
        from torch.profiler import ProfilerActivity, profile

        step = graph.compiled or graph._step  # the layer scope's _step runs its compiled block
        with torch.no_grad():
            step()  # the captured step ran under no_grad: the same compiled graph
            with profile(activities=[ProfilerActivity.CUDA]) as prof:
                for _ in range(10):  # the captured step's kernels, launched one by one
                    step()
        print(f"--- {variant}: kernels of 10 decode steps")
        print(prof.key_averages().table(sort_by="cuda_time_total", row_limit=30))
    runner.release()
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=256)
    parser.add_argument("--group", type=int, default=8)
    parser.add_argument("--tokens", type=int, default=256)
    parser.add_argument("--layers", type=int, default=24)
    parser.add_argument("--variants", default=",".join(VARIANTS))
    parser.add_argument("--profile", action="store_true", help="print the top GPU kernels")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        build_model(Path(tmp), args.layers)
        model = AutoModelForCausalLM.from_pretrained(tmp, dtype=torch.bfloat16).cuda()
    gen = torch.Generator(device="cuda").manual_seed(0)
    prompts = [
        [int(t) for t in torch.randint(10, 1000, (40 + i % 20,), generator=gen, device="cuda")]
        for i in range(args.rows // args.group)
        for _ in range(args.group)
    ]
    result: dict[str, object] = {"card": torch.cuda.get_device_name()}
    for variant in args.variants.split(","):
        result |= measure(args, model, prompts, variant, gen)
    sampler.FUSED_SAMPLER = "kernel"
    result["seeded_calls_reproduce"] = seeded_calls_reproduce(model, prompts, args.tokens)
    logits = torch.randn(args.rows, model.config.vocab_size, device="cuda", dtype=torch.bfloat16)
    result |= sampler_timings(logits, gen)
    result |= sampler_check(model.config.vocab_size)
    result["sampler_kernel_compiles"] = sampler_compiles(logits)
    result |= attention_check(args.rows, 64 + args.tokens)
    result["weights_gb"] = round(sum(p.nbytes for p in model.parameters()) / 1e9, 3)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
