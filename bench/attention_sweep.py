"""The decode-attention kernel's launch settings, swept at a training step's decode shape.

Inside a GRPO step on one H100 the kernel took 16 us a layer on average over a completion
(torch.profiler, bench/step_phases.py), while reading that step's written cache once is about
7 us at HBM speed: its tiling, not the bytes, sets its time. This times every combination of
positions per iteration, warps and pipelining stages (``attention_kernel.LaunchConfig``) for
256 rows x 2 key/value heads x 7 query heads of 64 dims, at a cache of 320 positions written up
to the middle and to the end, each replayed from a CUDA graph, and checks each against the
batched products.

    python bench/attention_sweep.py
"""

from __future__ import annotations

import argparse
import itertools
import json

import torch
from cuda_timing import replay_us

from engine.generation import attention_kernel, decoder


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=256)
    parser.add_argument("--length", type=int, default=320)
    args = parser.parse_args()
    torch.manual_seed(0)
    n, length = args.rows, args.length
    q = torch.randn(n, 2, 7, 64, device="cuda", dtype=torch.bfloat16)
    keys, values = (
        torch.randn(n, 2, length, 64, device="cuda", dtype=torch.bfloat16) for _ in "kv"
    )
    valid = torch.zeros(n, length, dtype=torch.bool, device="cuda")
    valid[:, 16:] = True  # a left-padded prompt
    out = torch.empty_like(q)
    result: dict[str, object] = {"card": torch.cuda.get_device_name(), "rows": n}
    timings = {}
    for where, slot in (("mid", length // 2), ("end", length - 1)):
        slot_t = torch.tensor([slot], device="cuda")
        reference = decoder.decode_attention(
            q.float(),
            keys.float(),
            values.float(),
            valid & (torch.arange(length, device="cuda") <= slot),
            slot_t,
            0.125,
        )
        for block_l, warps, stages in itertools.product((32, 64, 128), (1, 2, 4, 8), (1, 2, 3, 4)):
            config = attention_kernel.LaunchConfig(block_l, warps, stages)

            def run(config=config, slot_t=slot_t) -> None:
                attention_kernel.launch(
                    q, keys, values, valid, slot_t, 0.125, out, launch_config=config
                )

            try:
                run()
            except Exception as exc:  # a setting the compiler refuses (shared memory, ...)
                result[f"{where}_{block_l}_{warps}_{stages}_error"] = type(exc).__name__
                continue
            error = (out.float() - reference).abs().max().item()
            if error > 5e-2:
                raise AssertionError(f"{config} differs from the products by {error}")
            timings.setdefault(config, {})[where] = replay_us(run)
    for config, t in timings.items():
        key = f"block{config.block_l}_warps{config.num_warps}_stages{config.num_stages}"
        result[f"{key}_mid_us"] = round(t.get("mid", float("nan")), 2)
        result[f"{key}_end_us"] = round(t.get("end", float("nan")), 2)
    default = timings[attention_kernel.DEFAULT_CONFIG]
    best = min((c for c in timings if len(timings[c]) == 2), key=lambda c: sum(timings[c].values()))
    result["default_mid_us"] = round(default["mid"], 2)
    result["default_end_us"] = round(default["end"], 2)
    result["best_config"] = (
        f"block_l={best.block_l} num_warps={best.num_warps} num_stages={best.num_stages}"
    )
    result["best_mid_us"] = round(timings[best]["mid"], 2)
    result["best_end_us"] = round(timings[best]["end"], 2)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
