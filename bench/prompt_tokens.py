"""What tokenizing a step's prompts costs: each completion's (TRL) against each distinct one's.

Builds the GRPO trainer a run builds for ``--model`` with the settings ``export-config --model``
suggests for a GPU (the built-in task, the worked-example system prompt), then times its
``_tokenize_prompts`` on a step's ``--prompts`` x ``--generations`` prompts: TRL 1.16's own,
which renders every completion's prompt, against ours
(:mod:`engine.trainers.trl.prompt_tokens`), which renders each distinct prompt once. Runs on
the CPU: tokenizing is host work, which a GPU step waits for.

    python bench/prompt_tokens.py

Ends with one JSON line.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time

import studio_run  # noqa: F401  (puts the repository on sys.path)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", default="smollm2-135m-instruct")
    parser.add_argument("--prompts", type=int, default=32)
    parser.add_argument("--generations", type=int, default=8)
    parser.add_argument("--repeats", type=int, default=20)
    args = parser.parse_args()

    from datasets import Dataset
    from trl import GRPOTrainer

    from engine.config.pretrained import suggested_config
    from engine.config.run_config import RunConfig
    from engine.data.datasets import load_rows
    from engine.data.prompts import for_trainer
    from engine.models.loading import load_model_and_tokenizer
    from engine.trainers.trl.build import build_trl_trainer

    data = suggested_config(args.model, on_gpu=True).to_dict()
    data["training"].update(micro_batch_size=args.prompts * args.generations, save_steps=0)
    config = RunConfig.from_dict(data)
    model, tokenizer = load_model_and_tokenizer(config.model, device="cpu")
    rows = for_trainer(tokenizer, load_rows(config.data))
    with tempfile.TemporaryDirectory() as out:
        trainer = build_trl_trainer(config, model, tokenizer, Dataset.from_list(rows), out, [])
        step = [r["prompt"] for r in rows[: args.prompts] for _ in range(args.generations)]

        def timed(tokenize) -> float:
            seconds = []
            for _ in range(args.repeats):
                started = time.perf_counter()
                tokenize(step)
                seconds.append(time.perf_counter() - started)
            return statistics.median(seconds)

        each = timed(lambda p: GRPOTrainer._tokenize_prompts(trainer, p))
        distinct = timed(trainer._tokenize_prompts)
    print(
        json.dumps(
            {
                "model": args.model,
                "prompts": len(step),
                "distinct_prompts": args.prompts,
                "each_completions_ms": round(each * 1000, 2),
                "distinct_ms": round(distinct * 1000, 2),
                "speedup_ratio": round(each / distinct, 2),
            }
        )
    )


if __name__ == "__main__":
    main()
