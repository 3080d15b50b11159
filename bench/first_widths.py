"""What the first forward and backward at each new sequence width costs the compiled layers.

A run's widths change from step to step (completions shrink as the model learns), and the
layers are compiled once with dynamic shapes (engine/trainers/compiled_layers.py). This builds a
random-init Llama of SmolLM2-135M's shape with the suggested LoRA (r16 on every projection),
repairs and compiles its decoder layers as a run does, then times one forward and backward of
``--rows`` rows at each width of ``--widths`` in that order, from compile caches (Inductor's and
Triton's) that start empty. A width's first visit against a later visit of the same width is
what that width cost to build. Run it twice, once per padding multiple, to compare:

    python bench/first_widths.py --widths 296,296,232,192,176,184,192   # multiples of 8
    python bench/first_widths.py --widths 304,304,240,192,176,192       # multiples of 16

The layers' attention leaves cuDNN's kernels out, as a run's does
(:func:`engine.trainers.compiled_layers.avoid_cudnn_attention`); ``--cudnn-attention`` lets SDPA
pick them, to compare. ``--profile`` records each visit with torch.profiler and prints the host
calls it spent most time in (a compile, a module load or a library's planning shows there by
name); ``--device cpu`` with a few rows checks the script without a GPU.

Ends with one JSON line: each width's seconds, in order, and the largest first-visit excess.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import tempfile
import time

import studio_run  # noqa: F401  (puts the repository on sys.path)

SMOLLM2_SHAPE = {
    "hidden_size": 576,
    "intermediate_size": 1536,
    "num_hidden_layers": 30,
    "num_attention_heads": 9,
    "num_key_value_heads": 3,
    "vocab_size": 49152,
    "max_position_embeddings": 2048,
    "tie_word_embeddings": True,
}
LORA_TARGETS = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]


def host_time_table(profile, rows: int = 8) -> str:
    """The calls a profiled visit spent most host time in, by their own time."""
    return profile.key_averages().table(sort_by="self_cpu_time_total", row_limit=rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--widths", default="296,296,232,192,176,184,192")
    parser.add_argument("--rows", type=int, default=256, help="rows a micro-batch")
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--profile", action="store_true", help="name each visit's host time")
    parser.add_argument("--cudnn-attention", action="store_true", help="let SDPA pick cuDNN's")
    args = parser.parse_args()
    cache = tempfile.mkdtemp(prefix="studio-widths-")
    os.environ["TORCHINDUCTOR_CACHE_DIR"] = os.path.join(cache, "inductor")
    os.environ["TRITON_CACHE_DIR"] = os.path.join(cache, "triton")

    import torch
    from peft import LoraConfig, get_peft_model
    from transformers import LlamaConfig, LlamaForCausalLM

    from engine.runtime.compile_cache import skip_cpu_isa_probe
    from engine.trainers.compiled_layers import avoid_cudnn_attention, compile_decoder_layers
    from engine.trainers.masked_rows import repair_empty_rows

    skip_cpu_isa_probe()
    if not args.cudnn_attention:
        avoid_cudnn_attention()
    torch.manual_seed(0)
    device = torch.device(args.device)
    model = LlamaForCausalLM(LlamaConfig(**SMOLLM2_SHAPE)).to(device, torch.bfloat16)
    model = get_peft_model(model, LoraConfig(r=16, lora_alpha=32, target_modules=LORA_TARGETS))
    model.train()
    repair_empty_rows(model)
    compile_decoder_layers(model)
    decoder = model.base_model.model.model
    timed: list[tuple[int, float]] = []
    sync = torch.cuda.synchronize if device.type == "cuda" else lambda: None
    for width in (int(w) for w in args.widths.split(",")):
        ids = torch.randint(0, SMOLLM2_SHAPE["vocab_size"], (args.rows, width), device=device)
        mask = torch.ones_like(ids)
        for row in range(args.rows):  # left padding of 0-23 tokens, as prompts of unlike length
            mask[row, : (row * 7) % 24] = 0
        sync()
        started = time.perf_counter()
        with torch.profiler.profile() if args.profile else contextlib.nullcontext() as profile:
            hidden = decoder(input_ids=ids, attention_mask=mask).last_hidden_state
            hidden.float().square().mean().backward()
            sync()
        timed.append((width, round(time.perf_counter() - started, 3)))
        print(f"width {width}: {timed[-1][1]} s", flush=True)
        if profile is not None:
            print(host_time_table(profile), flush=True)
    excess = []
    for i, (width, seconds) in enumerate(timed[1:], start=1):  # the first is the compile
        later = [s for w, s in timed[i + 1 :] if w == width]
        if width not in (w for w, _ in timed[:i]) and later:
            excess.append(seconds - statistics.median(later))
    print(
        json.dumps(
            {
                "card": torch.cuda.get_device_name() if device.type == "cuda" else "cpu",
                "cudnn_attention": args.cudnn_attention,
                "widths_s": timed,
                "max_first_visit_excess_s": round(max(excess), 3) if excess else None,
            }
        )
    )


if __name__ == "__main__":
    main()
