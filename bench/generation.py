"""Generation speed of the default model: 8 prompts x 8 samples x up to 64 new tokens.

    python bench/generation.py [--model PATH_OR_ALIAS] [--repeats 3] [--threads N]

Prints one line per repeat, then a JSON object (the last line) with the median figures.
Tokens counted are those actually generated (a reply may end before 64 tokens).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch

from engine.generation.sampling import sample_completions
from engine.models.loading import load_model_and_tokenizer
from engine.models.specs import ModelSpec
from engine.tasks import builtin_task

PROMPTS, SAMPLES, MAX_NEW_TOKENS = 8, 8, 64


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default="default", help="model folder, hub id or alias")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--threads", type=int, default=torch.get_num_threads())
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    model, tok = load_model_and_tokenizer(ModelSpec(args.model), device="cpu")
    prompts = [r["prompt"] for r in builtin_task().eval_rows(PROMPTS)]
    kwargs = {"num_samples": SAMPLES, "temperature": 0.8, "max_new_tokens": MAX_NEW_TOKENS}
    sample_completions(model, tok, prompts[:2], **{**kwargs, "num_samples": 2})  # warm-up
    runs = []
    for i in range(args.repeats):
        t0 = time.perf_counter()
        out = sample_completions(model, tok, prompts, seed=i, **kwargs)
        seconds = time.perf_counter() - t0
        tokens = sum(len(s.token_ids) for s in out)
        runs.append((tokens / seconds, len(out) / seconds, seconds, tokens))
        print(
            f"run {i}: {tokens} tokens in {seconds:.2f} s = {tokens / seconds:.0f} tokens/s "
            f"({sum(s.truncated for s in out)} of {len(out)} hit {MAX_NEW_TOKENS} tokens)"
        )
    result = {
        "model": args.model,
        "prompts": PROMPTS,
        "samples_per_prompt": SAMPLES,
        "max_new_tokens": MAX_NEW_TOKENS,
        "batch_size": PROMPTS * SAMPLES,
        "torch_threads": args.threads,
        "generated_tokens_per_s": round(statistics.median(r[0] for r in runs), 1),
        "completions_per_s": round(statistics.median(r[1] for r in runs), 2),
        "seconds_per_batch": round(statistics.median(r[2] for r in runs), 3),
        "mean_tokens_per_completion": round(statistics.mean(r[3] for r in runs) / len(out), 1),
    }
    print(json.dumps(result))


if __name__ == "__main__":
    main()
