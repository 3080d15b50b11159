"""The decode step's matrix products alone, by weight layout and kernel choice.

At a training step's batch (a few hundred rows) each projection of a decode step is a skinny
product: 256 rows against a weight of up to 9,728 x 896. Its time is set by the kernel's tiling
as much as by its FLOPs, so this times each projection of Qwen2.5-0.5B's shape four ways, every
one captured in a CUDA graph and replayed (kernel time, no launch cost): ``F.linear`` on the
``(out, in)`` weight (what the decoder does), a product with the weight stored transposed
``(in, out)``, and both through ``torch.compile(mode="max-autotune-no-cudagraphs")`` (inductor
benchmarks its Triton templates against cuBLAS and keeps the fastest).

    python bench/decode_gemms.py --rows 256
"""

from __future__ import annotations

import argparse
import json
import time

import torch
import torch.nn.functional as F
from cuda_timing import replay_us

# (name, in_features, out_features) of one decoder layer, q/k/v and gate/up merged, and the head.
SHAPES = (
    ("qkv", 896, 1152),
    ("o", 896, 896),
    ("gate_up", 896, 9728),
    ("down", 4864, 896),
    ("lm_head", 896, 151_936),
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=256)
    args = parser.parse_args()
    torch.manual_seed(0)
    result: dict[str, object] = {"card": torch.cuda.get_device_name(), "rows": args.rows}
    compile_s = 0.0
    for name, d_in, d_out in SHAPES:
        x = torch.randn(args.rows, d_in, device="cuda", dtype=torch.bfloat16)
        w = torch.randn(d_out, d_in, device="cuda", dtype=torch.bfloat16) / d_in**0.5
        wt = w.t().contiguous()
        variants = {
            "linear": lambda x=x, w=w: F.linear(x, w),
            "transposed": lambda x=x, wt=wt: x @ wt,
        }
        started = time.perf_counter()
        auto_linear = torch.compile(F.linear, mode="max-autotune-no-cudagraphs", dynamic=False)
        auto_matmul = torch.compile(torch.matmul, mode="max-autotune-no-cudagraphs", dynamic=False)
        variants["linear_autotuned"] = lambda x=x, w=w, f=auto_linear: f(x, w)
        variants["transposed_autotuned"] = lambda x=x, wt=wt, f=auto_matmul: f(x, wt)
        variants["linear_autotuned"]()
        variants["transposed_autotuned"]()
        compile_s += time.perf_counter() - started
        reference = F.linear(x, w).float()
        for variant, fn in variants.items():
            err = (fn().float() - reference).abs().max().item()
            result[f"{name}_{variant}_us"] = round(replay_us(fn), 2)
            result[f"{name}_{variant}_max_abs_error"] = round(err, 4)
        torch._dynamo.reset()
    result["autotune_compile_s"] = round(compile_s, 1)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
