"""Where a decode step of the static-cache sampler spends its time, on one GPU.

Builds the same random-init Qwen2.5-0.5B-shape model as ``gpu_throughput.py`` and times, with
CUDA events, per variant of the decode step (:data:`VARIANTS`: torch's attention or ours, merged
projections or the modules'): the whole ``GenerationRunner.generate`` of 256 rows x 256 tokens
and one token step (decode, sample, record: one graph) replayed alone; then the sampler alone,
and the attention kernel checked against the products.

    python bench/decode_step.py --profile
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path

import torch
from gpu_throughput import build_model
from transformers import AutoModelForCausalLM

from engine.generation import decoder
from engine.generation.runner import GenerationRunner
from engine.generation.sampler import sample_tokens


def cuda_ms(fn, repeat: int) -> float:
    """Median milliseconds of ``fn()`` over ``repeat`` runs, timed with CUDA events."""
    times = []
    for _ in range(repeat):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end))
    return sorted(times)[len(times) // 2]


VARIANTS = {  # name: (attention, merged projections)
    "sdpa": ("sdpa", False),
    "products_merged": ("products", True),
    "kernel_merged": ("kernel", True),
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
    kwargs = dict(max_new_tokens=tokens, temperature=0.8, top_p=1.0, eos_ids=[], pad_id=0)
    a, b, c = (runner.generate(prompts, seed=s, **kwargs).completion_ids for s in (5, 5, 6))
    runner.release()
    if not (a == b and a != c):
        raise AssertionError("seeded sampling through the graph does not reproduce")
    return True


def measure(args, model, prompts, variant: str, gen) -> dict[str, float]:
    attention, merged = VARIANTS[variant]
    torch._dynamo.reset()  # each variant compiles afresh, not against the last one's guards
    decoder.DECODE_ATTENTION = attention
    runner = GenerationRunner(model, merge_weights=merged)
    kwargs = dict(max_new_tokens=args.tokens, temperature=0.8, top_p=1.0, eos_ids=[], pad_id=0)
    runner.generate(prompts, **kwargs)  # capture
    generate_ms = cuda_ms(lambda: runner.generate(prompts, **kwargs), 3)
    graph = runner._graph

    def one_token() -> None:  # a replay of the captured token step, from the first slot
        graph.slot.fill_(graph.cache.max_len - args.tokens)
        graph.buffers.column.zero_()
        graph.run_token()

    result = {
        f"{variant}_generate_s": round(generate_ms / 1000, 3),
        f"{variant}_tokens_per_s": round(args.rows * args.tokens / (generate_ms / 1000)),
        f"{variant}_step_ms": round(generate_ms / args.tokens, 3),
        f"{variant}_graph_replay_ms": round(cuda_ms(one_token, 50), 3),
    }
    if args.profile:
        from torch.profiler import ProfilerActivity, profile

        step = graph._compiled or graph._step
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
    result["seeded_calls_reproduce"] = seeded_calls_reproduce(model, prompts, args.tokens)
    logits = torch.randn(args.rows, model.config.vocab_size, device="cuda", dtype=torch.bfloat16)
    result["sampler_ms"] = round(cuda_ms(lambda: sample_tokens(logits, 0.8, 1.0, gen), 50), 3)
    result["sampler_fused_ms"] = round(
        cuda_ms(lambda: sample_tokens(logits, 0.8, 1.0, gen, fused=True), 50), 3
    )
    result["sampler_fused_own_noise_ms"] = round(
        cuda_ms(lambda: sample_tokens(logits, 0.8, 1.0, None, fused=True), 50), 3
    )
    result["sampler_top_p_ms"] = round(
        cuda_ms(lambda: sample_tokens(logits, 0.8, 0.95, gen), 20), 3
    )
    result |= attention_check(args.rows, 64 + args.tokens)
    result["weights_gb"] = round(sum(p.nbytes for p in model.parameters()) / 1e9, 3)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
