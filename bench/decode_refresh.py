"""What refreshing the decode step's merged weights costs before each generation call.

Builds a random-init Llama of SmolLM2-135M's shape (bf16) with the suggested LoRA (r16 on every
projection, float32 adapters, as peft makes them), then times
:meth:`engine.generation.decode_weights.DecodeWeights.refresh` both ways: batched (the base
weights in one multi-tensor copy, like adapters' ``B @ A`` in one batched product each, the
GPU's default) and module by module (each adapter's ``get_delta_weight`` added and copied in
turn, the CPU's), and counts what each launches (torch.profiler): GPU kernels on a GPU; on the
CPU the operators that compute (views left out), where a multi-tensor operator runs one per
tensor.

    python bench/decode_refresh.py              # on the GPU
    python bench/decode_refresh.py --device cpu

Ends with one JSON line.
"""

from __future__ import annotations

import argparse
import json

import studio_run  # noqa: F401  (puts the repository on sys.path)
import torch
from first_widths import LORA_TARGETS, SMOLLM2_SHAPE
from timed_calls import median_and_profile

# Operators that make a view, not a kernel.
VIEWS = {"select", "unbind", "slice", "as_strided", "view", "t", "transpose", "alias", "detach"}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--repeats", type=int, default=20)
    args = parser.parse_args()

    from peft import LoraConfig, get_peft_model
    from transformers import LlamaConfig, LlamaForCausalLM

    from engine.generation.decode_weights import build_decode_weights

    torch.manual_seed(0)
    device = torch.device(args.device)
    model = LlamaForCausalLM(LlamaConfig(**SMOLLM2_SHAPE)).to(device, torch.bfloat16)
    model = get_peft_model(model, LoraConfig(r=16, lora_alpha=32, target_modules=LORA_TARGETS))
    layers = model.get_base_model().model.layers
    batched = build_decode_weights(layers, batched=True)
    module_by_module = build_decode_weights(layers, batched=False)

    def timed(refresh) -> tuple[float, int]:
        seconds, events = median_and_profile(refresh, device, args.repeats)
        if device.type == "cuda":
            return seconds, sum(e.count for e in events if e.device_type.name == "CUDA")
        computing = [e for e in events if e.key.startswith("aten::")]
        return seconds, sum(e.count for e in computing if e.key.split("::")[1] not in VIEWS)

    batched_s, batched_ops = timed(batched.refresh)
    one_s, one_ops = timed(module_by_module.refresh)
    print(
        json.dumps(
            {
                "card": torch.cuda.get_device_name() if device.type == "cuda" else "cpu",
                "adapted_projections": sum(
                    1 for name, _ in model.named_modules() if name.endswith("lora_A")
                ),
                "batched_ms": round(batched_s * 1000, 2),
                "module_by_module_ms": round(one_s * 1000, 2),
                "speedup_ratio": round(one_s / batched_s, 2),
                "batched_launches": batched_ops,
                "module_by_module_launches": one_ops,
            }
        )
    )


if __name__ == "__main__":
    main()
