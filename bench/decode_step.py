"""Where a decode step of the static-cache sampler spends its time, on one GPU.

Builds the same random-init Qwen2.5-0.5B-shape model as ``gpu_throughput.py`` and times, with
CUDA events: the whole ``GenerationRunner.generate`` of 256 rows x 256 tokens, the decode graph
replayed alone, the sampler alone on one step's logits, and one eager (uncaptured) decode step.

    python bench/decode_step.py
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path

import torch
from gpu_throughput import build_model
from transformers import AutoModelForCausalLM

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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=256)
    parser.add_argument("--group", type=int, default=8)
    parser.add_argument("--tokens", type=int, default=256)
    parser.add_argument("--layers", type=int, default=24)
    parser.add_argument("--profile", action="store_true", help="print the top GPU kernels")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        build_model(Path(tmp), args.layers)
        model = AutoModelForCausalLM.from_pretrained(tmp, dtype=torch.bfloat16).cuda()
    runner = GenerationRunner(model)
    gen = torch.Generator(device="cuda").manual_seed(0)
    prompts = [
        [int(t) for t in torch.randint(10, 1000, (40 + i % 20,), generator=gen, device="cuda")]
        for i in range(args.rows // args.group)
        for _ in range(args.group)
    ]
    kwargs = dict(max_new_tokens=args.tokens, temperature=0.8, top_p=1.0, eos_ids=[], pad_id=0)
    runner.generate(prompts, **kwargs)  # capture
    generate_ms = cuda_ms(lambda: runner.generate(prompts, **kwargs), 3)
    graph = runner._graph
    replay_ms = cuda_ms(graph.run, 50)
    logits = graph.run().clone()
    sampler_ms = cuda_ms(lambda: sample_tokens(logits, 0.8, 1.0, gen), 50)
    fused_ms = cuda_ms(lambda: sample_tokens(logits, 0.8, 1.0, gen, fused=True), 50)
    top_p_ms = cuda_ms(lambda: sample_tokens(logits, 0.8, 0.95, gen), 20)
    eager_ms = cuda_ms(graph._step, 10)
    weights_gb = sum(p.numel() * p.element_size() for p in model.parameters()) / 1e9
    cache_gb = 2 * sum(k.numel() * k.element_size() for k in graph.cache.keys) / 1e9
    result = {
        "card": torch.cuda.get_device_name(),
        "generate_s": round(generate_ms / 1000, 3),
        "tokens_per_s": round(args.rows * args.tokens / (generate_ms / 1000)),
        "step_ms": round(generate_ms / args.tokens, 3),
        "graph_replay_ms": round(replay_ms, 3),
        "eager_step_ms": round(eager_ms, 3),
        "sampler_ms": round(sampler_ms, 3),
        "sampler_fused_ms": round(fused_ms, 3),
        "sampler_top_p_ms": round(top_p_ms, 3),
        "weights_gb": round(weights_gb, 3),
        "kv_cache_gb": round(cache_gb, 3),
    }
    if args.profile:
        from torch.profiler import ProfilerActivity, profile

        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
            runner.generate(prompts[: args.rows], **{**kwargs, "max_new_tokens": 16})
            graph._step()
        print(prof.key_averages().table(sort_by="cuda_time_total", row_limit=25))
    print(json.dumps(result))


if __name__ == "__main__":
    main()
