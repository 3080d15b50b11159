"""The update's forward and backward with TRL's rows against packed rows, outside a run.

Loads a model as a GRPO run does (TRL's fused LM head, then the suggested LoRA; on CUDA the
decoder layers compiled), builds one step's rows like the built-in task's (32 prompts of 120-136
tokens, 8 completions each) for three completion-length mixes, and times a forward and backward
of the completions' log-probabilities each way (``engine/trainers/shared_prompt.py``; the
runs themselves pack only on the CPU). ``--profile`` adds torch.profiler's device time.

    python bench/packed_update.py                      # SmolLM2-135M-Instruct, this device
    python bench/packed_update.py --iterations 3 --prompts 4   # a quick look on a CPU
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
import json
import time
from collections.abc import Callable

import studio_run  # noqa: F401  (puts the repository on sys.path)
import torch
from trl.trainer.utils import add_fused_lm_head

from engine.config.pretrained import suggested_config
from engine.models.loading import apply_lora, load_model_and_tokenizer
from engine.models.specs import ENGLISH_MODEL_ALIAS
from engine.trainers.compiled_layers import compile_decoder_layers
from engine.trainers.masked_rows import repair_empty_rows
from engine.trainers.trl.shared_prompt import logps_with_shared_prompts

GROUP, PROMPT_WIDTH, LONGEST = 8, 144, 160


def load(model_name: str, on_gpu: bool):
    spec = suggested_config(model_name, on_gpu).model
    model, _ = load_model_and_tokenizer(dataclasses.replace(spec, lora=None))
    add_fused_lm_head(model, temperature=0.8, outputs=("log_probs", "entropy"))
    model = apply_lora(model, spec.lora).train()
    repair_empty_rows(model)
    if on_gpu:
        compile_decoder_layers(model)
    return model


def lengths(mix: str, rows: int, generator: torch.Generator) -> torch.Tensor:
    """Completion lengths as a run sees them: late (short, one at the limit), mid (a group at
    the limit) and early (long)."""
    if mix == "late":
        out = torch.randint(12, 36, (rows,), generator=generator)
        out[5] = LONGEST
    elif mix == "mid":
        out = torch.randint(20, 40, (rows,), generator=generator)
        out[:3] = LONGEST
    else:
        out = torch.randint(60, LONGEST + 1, (rows,), generator=generator)
    return out


def step_rows(prompts: int, mix: str, vocab: int, device: torch.device):
    """ids, attention mask and completion mask of one step, rows shuffled as TRL does."""
    generator = torch.Generator().manual_seed(0)
    widths = torch.randint(120, 137, (prompts,), generator=generator)
    prompt_ids = torch.randint(5, vocab, (prompts, PROMPT_WIDTH), generator=generator)
    prompt_mask = (torch.arange(PROMPT_WIDTH)[None] >= (PROMPT_WIDTH - widths)[:, None]).long()
    rows = prompts * GROUP
    kept = lengths(mix, rows, generator)
    width = int(-(-kept.max() // 8) * 8)
    order = torch.randperm(rows, generator=generator) // GROUP
    completions = torch.randint(5, vocab, (rows, width), generator=generator)
    completion_mask = (torch.arange(width)[None] < kept[:, None]).long()
    ids = torch.cat([prompt_ids[order], completions], 1)
    mask = torch.cat([prompt_mask[order], completion_mask], 1)
    return ids.to(device), mask.to(device), completion_mask.to(device).float()


def update(
    model, ids: torch.Tensor, mask: torch.Tensor, completion_mask: torch.Tensor, *, packed: bool
) -> None:
    """One forward and backward of the completions' mean log-probability."""
    width = completion_mask.size(1)
    with torch.autocast(ids.device.type, dtype=torch.bfloat16, enabled=ids.is_cuda):
        if packed:
            logps = logps_with_shared_prompts(model, ids, mask, width, True)[0]
        else:  # TRL 1.16's loss forward (GRPOTrainer._get_per_token_logps_and_entropies)
            labels = ids.masked_fill(mask == 0, -100)
            labels[:, :-width] = -100
            out = model(input_ids=ids, attention_mask=mask, labels=labels, fused_lm_head=True)
            logps = out.log_probs[:, -width:]
    ((logps * completion_mask).sum() / completion_mask.sum()).backward()
    model.zero_grad(set_to_none=True)


def timed(step: Callable[[], None], iterations: int, device: torch.device) -> float:
    for _ in range(2):  # compiles, warms the allocator
        step()
    if device.type == "cuda":
        torch.cuda.synchronize()
    started = time.perf_counter()
    for _ in range(iterations):
        step()
    if device.type == "cuda":
        torch.cuda.synchronize()
    return (time.perf_counter() - started) / iterations * 1000


def device_ms(step: Callable[[], None]) -> float:
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        step()
        torch.cuda.synchronize()
    return sum(e.self_device_time_total for e in prof.key_averages()) / 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default=ENGLISH_MODEL_ALIAS)
    parser.add_argument("--prompts", type=int, default=32)
    parser.add_argument("--iterations", type=int, default=8)
    parser.add_argument("--mixes", default="late,mid,early")
    parser.add_argument("--profile", action="store_true", help="device time per step (CUDA)")
    args = parser.parse_args()
    on_gpu = torch.cuda.is_available()
    device = torch.device("cuda" if on_gpu else "cpu")
    model = load(args.model, on_gpu)
    vocab = model.config.vocab_size
    figures: dict = {"device": torch.cuda.get_device_name() if on_gpu else "cpu"}
    for mix in args.mixes.split(","):
        rows = step_rows(args.prompts, mix, vocab, device)
        for name, packed in (("trl_rows", False), ("packed", True)):
            step = functools.partial(update, model, *rows, packed=packed)
            figures[f"{mix}_{name}_ms"] = round(timed(step, args.iterations, device), 1)
            if args.profile and on_gpu:
                figures[f"{mix}_{name}_device_ms"] = round(device_ms(step), 1)
            print(f"{mix} {name}: {figures[f'{mix}_{name}_ms']} ms", flush=True)
        figures[f"{mix}_speedup_ratio"] = round(
            figures[f"{mix}_trl_rows_ms"] / figures[f"{mix}_packed_ms"], 2
        )
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
