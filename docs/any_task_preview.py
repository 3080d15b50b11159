"""Run the Design tab's preview on the summarisation example, headless, for docs/any_task.md.

    STUDIO_DATA_ROOTS=docs/any_task python docs/any_task_preview.py

Generates completions with the offline SmolLM2-135M-Instruct for 8 articles x 4 samples, scores
them under each candidate reward, and prints each component's mean, the learning-signal
diagnostics (groups with no spread, each component's share of the variance, correlations) and
a final JSON line.
"""

from __future__ import annotations

import json
import logging
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from rewards.spec import RewardSpec, preset
from ui.preview.generate import PreviewRequest, generate_preview
from ui.shared.context import AppContext

DATA = Path(__file__).resolve().parent / "any_task" / "summaries.jsonl"
CANDIDATES = {
    "rouge_l only": RewardSpec.from_dict({"components": [{"name": "similarity"}]}),
    "summaries preset": preset("summaries (reference)"),
}


def main() -> None:
    logging.basicConfig(level=logging.WARNING)
    ctx = AppContext(data_dir=Path(tempfile.mkdtemp(prefix="any-task-preview-")))
    request = PreviewRequest(
        model_key="smollm2-135m-instruct",
        custom_model="",
        data={
            "source": "file",
            "path": str(DATA),
            "prompt_column": "prompt",
            "answer_column": "summary",
            "split": "all",
        },
        num_prompts=8,
        samples_per_prompt=4,
        temperature=0.8,
        max_new_tokens=80,
    )
    cache = generate_preview(ctx, request)
    report = {}
    for label, spec in CANDIDATES.items():
        scores = cache.rescore(spec)
        diag = scores.diagnostics()
        means = {
            name: sum(v for v in values if v is not None)
            / max(1, sum(v is not None for v in values))
            for name, values in scores.contributions().items()
        }
        print(f"\n== {label} ==")
        print("mean total", scores.mean_total())
        print("mean weighted contribution per component", means)
        print("zero-std fraction", diag.zero_std_fraction)
        print("variance share", diag.variance_share)
        print("correlations", diag.correlations)
        print("warnings", diag.warnings)
        report[label] = {
            "mean_total": scores.mean_total(),
            "zero_std_fraction": diag.zero_std_fraction,
            "variance_share": diag.variance_share,
        }
    for i in range(0, len(cache.completions), 4):
        print("\nPROMPT", cache.prompts[i][:80].replace("\n", " "))
        for text in cache.completions[i : i + 2]:
            print("  ->", text[:200].replace("\n", " "))
    print(json.dumps(report))


if __name__ == "__main__":
    main()
