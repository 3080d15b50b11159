"""The model card every export writes (``README.md``): what the model is and how it was made.

Base model, reward spec, algorithm and steps come from the run's config; the held-out scores
before and after training from its ``eval/*`` metrics (first and last value, as the Runs view
charts them). Hugging Face reads the same file as the repo's model card.

The run's name and a component's label are the user's text: the card shows them as one line of
text (Markdown and HTML escaped, so no image, link or tag loads from a Hub page), and a data
file by its name only (its folder is the server's).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Mapping, Sequence
from pathlib import PurePath

import yaml

from engine.config.run_config import RunConfig
from engine.tracking import metric_names

#: Held-out metrics the card reports, with their labels.
HELDOUT_METRICS = {
    metric_names.EVAL_ACCURACY: "accuracy",
    metric_names.EVAL_STRICT_ACCURACY: "strict accuracy (answer right and format exact)",
    metric_names.EVAL_FORMAT_RATE: "format rate",
}


# Every ASCII punctuation character may be backslash-escaped in CommonMark (spec §2.4).
_MARKDOWN_PUNCTUATION = re.compile(r"([!-/:-@\[-`{-~])")


def as_text(raw: str) -> str:
    """``raw`` as one line of Markdown that renders as the same text: whitespace runs (line
    breaks included) become one space, format and control characters go, punctuation is
    escaped."""
    kept = "".join(c for c in raw if unicodedata.category(c)[0] != "C" or c in "\t\n")
    return _MARKDOWN_PUNCTUATION.sub(r"\\\1", " ".join(kept.split()))


def before_after(series: Mapping[str, tuple[Sequence[int], Sequence[float | None]]]) -> dict:
    """``{metric: (step_first, value_first, step_last, value_last)}`` of each non-empty series
    (``series`` maps a metric to its steps and values, ordered by step)."""
    out = {}
    for name, (steps, values) in series.items():
        points = [(s, v) for s, v in zip(steps, values, strict=True) if v is not None]
        if points:
            out[name] = (*points[0], *points[-1])
    return out


def model_card(
    config: RunConfig,
    *,
    run_id: str,
    model_label: str,
    trained_steps: int | None,
    heldout: Mapping[str, tuple[int, float, int, float]],
    export_format: str,
    files: Sequence[str] = (),
) -> str:
    """The card's Markdown (with Hugging Face front matter)."""
    base = config.model.name_or_path
    lora = config.model.lora
    lines = [
        "---",
        yaml.safe_dump(
            {"library_name": "transformers", "tags": ["reward-studio", config.algorithm]},
            sort_keys=False,
        ).strip(),
        "---",
        f"# {as_text(config.name) or run_id}",
        "",
        f"Trained with Reward Studio (run `{run_id}`), exported as **{export_format}** from its "
        f"{model_label}.",
        "",
        f"- Base model: `{base}`"
        + (
            f" with a LoRA adapter (r={lora.r}, alpha={lora.alpha}), merged into the weights"
            if lora
            else ""
        ),
        f"- Algorithm: {config.algorithm.upper()}",
        f"- Steps: {trained_steps if trained_steps is not None else '?'} of "
        f"{config.training.steps} planned "
        f"({config.training.prompts_per_step} prompts x {config.generation.num_generations} "
        "generations per step)",
        f"- Data: {config.data.source} {_data_name(config)}",
        "",
        "## Reward",
        "",
        "| component | weight | parameters |",
        "|---|---|---|",
    ]
    for comp in config.reward.components:
        if comp.enabled:
            params = ", ".join(f"{k}={v!r}" for k, v in comp.params.items()) or "defaults"
            label = as_text(comp.label or comp.name)
            lines.append(f"| {label} | {comp.weight:g} | {as_text(params)} |")
    lines += ["", "## Held-out scores", ""]
    if heldout:
        lines += ["| metric | before (step) | after (step) |", "|---|---|---|"]
        for name, label in HELDOUT_METRICS.items():
            if name in heldout:
                s0, v0, s1, v1 = heldout[name]
                lines.append(f"| {label} | {v0:.3f} ({s0}) | {v1:.3f} ({s1}) |")
    else:
        lines.append("This run recorded no held-out evaluation (only the built-in task has one).")
    if files:
        lines += ["", "## Files", "", *[f"- `{f}`" for f in files]]
    return "\n".join(lines) + "\n"


def _data_name(config: RunConfig) -> str:
    path = str(config.data.path or "")
    if not path:
        return "built-in task"
    return as_text(PurePath(path).name if config.data.source == "file" else path)
