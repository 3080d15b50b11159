"""What the sampler's prefill costs through the merged decode copies against the model's modules.

Loads a pretrained model (SmolLM2-135M-Instruct by default) with the LoRA that ``export-config
--model`` suggests for the device, gives its adapters random nonzero weights (as a trained run
has), and times :meth:`engine.generation.decoder.StaticDecoder.prefill` of ``--prompts``
prompts of ``--width`` tokens both ways: through the merged q/k/v, o, gate/up and down copies
(:mod:`engine.generation.decode_weights`, what the sampler uses) and through each adapted
module (base product plus its adapter's two). Counts what each launches (torch.profiler): GPU
kernels on a GPU, operators on the CPU.

    python bench/prefill.py --device cpu --prompts 2
    python bench/prefill.py --device cuda --prompts 32

Ends with one JSON line.
"""

from __future__ import annotations

import argparse
import json

import studio_run  # noqa: F401  (puts the repository on sys.path)
import torch
from timed_calls import median_and_profile


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", default="smollm2-135m-instruct")
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--prompts", type=int, default=32)
    parser.add_argument("--width", type=int, default=144, help="prompt tokens, left padding in")
    parser.add_argument("--repeats", type=int, default=10)
    args = parser.parse_args()

    from engine.config.pretrained import suggested_config
    from engine.generation.cache import StaticKVCache
    from engine.generation.decode_weights import build_decode_weights
    from engine.generation.decoder import StaticDecoder
    from engine.models.loading import load_model_and_tokenizer

    device = torch.device(args.device)
    config = suggested_config(args.model, on_gpu=device.type == "cuda")
    model, _ = load_model_and_tokenizer(config.model)
    model.to(device).eval()
    torch.manual_seed(0)
    with torch.no_grad():
        for name, param in model.named_parameters():
            if "lora_B" in name:
                param.normal_(0, 0.01)
    decoder = StaticDecoder(model)
    merged = build_decode_weights(decoder.body.layers)
    s, n, width = decoder.shape, args.prompts, args.width
    dtype = decoder.body.embed_tokens.weight.dtype
    cache = StaticKVCache(s.num_layers, n, s.kv_heads, width, s.head_dim, dtype, device)
    ids = torch.randint(0, decoder.body.embed_tokens.num_embeddings, (n, width), device=device)
    valid = torch.ones(n, width, dtype=torch.bool, device=device)
    valid[: n // 2, : width // 4] = False  # half the prompts shorter, left-padded
    rows = torch.arange(n, device=device)
    kind = "CUDA" if device.type == "cuda" else "CPU"

    @torch.no_grad()
    def timed(weights) -> tuple[float, int]:
        decoder.weights = weights
        seconds, events = median_and_profile(
            lambda: decoder.prefill(cache, ids, valid, rows, rows), device, args.repeats
        )
        return seconds, sum(e.count for e in events if e.device_type.name == kind)

    modules_s, modules_launched = timed(None)
    merged_s, merged_launched = timed(merged)
    print(
        json.dumps(
            {
                "card": torch.cuda.get_device_name() if device.type == "cuda" else "cpu",
                "model": args.model,
                "lora_layers": sum(
                    1 for k, _ in model.named_modules() if k.endswith("q_proj.lora_A")
                ),
                "prompts": n,
                "width": width,
                "modules_ms": round(modules_s * 1000, 1),
                "merged_ms": round(merged_s * 1000, 1),
                "speedup_ratio": round(modules_s / merged_s, 2),
                "modules_launches": modules_launched,
                "merged_launches": merged_launched,
            }
        )
    )


if __name__ == "__main__":
    main()
