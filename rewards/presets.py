"""The ready-made reward specs, as plain data (``rewards.spec.PRESETS`` validates them).

Each entry is what a spec file would hold: components with weights and parameters, and a
description for the Design tab.
"""

from __future__ import annotations

from typing import Any


def _c(name: str, weight: float, params: dict[str, Any] | None = None, **more: Any) -> dict:
    return {"name": name, "weight": weight, "params": params or {}, **more}


#: The preset a pretrained instruct model starts from on a GPU (engine.config.pretrained).
INSTRUCT_PRESET = "instruct model (soft format)"
#: The same plus a bonus for stopping at the answer: the CPU suggestion's.
INSTRUCT_STOP_PRESET = "instruct model (soft format, stop at the answer)"

PRESET_DATA: dict[str, dict[str, Any]] = {
    "R1-style math": {
        "components": [_c("correctness", 1.0), _c("format", 0.5, {"mode": "strict"})],
        "description": (
            "DeepSeek-R1's rule-based reward: answer correctness plus the strict "
            "<think>…</think><answer>…</answer> format."
        ),
    },
    "concise answers": {
        "components": [
            _c("correctness", 1.0),
            _c("format", 0.5, {"mode": "strict"}),
            _c("conciseness", 0.5, {"mode": "cosine", "unit": "characters", "max_len": 400}),
            _c("repetition", 0.5),
        ],
        "description": (
            "Correct, well-formatted and short: the cosine length reward (Kimi 1.5) pays "
            "short right answers most; repeated trigrams are penalised."
        ),
    },
    "summaries (reference)": {
        "components": [
            _c("similarity", 1.0, {"metric": "rouge_l"}),
            _c("similarity", 0.5, {"metric": "chrf"}, label="chrf"),
            _c(
                "conciseness",
                0.5,
                {"mode": "overlong", "unit": "words", "max_len": 60, "cache": 30},
            ),
        ],
        "description": (
            "Summaries scored against the reference column: ROUGE-L (word overlap) and chrF "
            "(character overlap, any language), and a penalty past 30 words reaching -1 at "
            "60. See docs/any_task.md."
        ),
    },
    INSTRUCT_PRESET: {
        "components": [_c("correctness", 1.0), _c("format", 0.5, {"mode": "soft"})],
        "description": (
            "For a pretrained instruct model that does not write the tags yet: correctness "
            "plus a soft format score (0.25 per tag that appears once), so each tag the "
            "model learns pays on its own. Pair it with a system prompt that shows one "
            "worked example in the format (export-config --model writes one); once the "
            "model writes the tags, R1-style math scores the strict format."
        ),
    },
    INSTRUCT_STOP_PRESET: {
        "components": [
            _c("correctness", 1.0),
            _c("format", 0.5, {"mode": "soft"}),
            _c(
                "rule",
                0.25,
                {"pattern": r"</answer>\s*\z", "kind": "must_contain", "effect": "bonus"},
                label="ends_at_answer",
            ),
        ],
        "description": (
            "The instruct preset plus 0.25 for a completion that ends at </answer>. The soft "
            "format pays in full once each tag appears, so a short run at a high learning "
            "rate (the CPU suggestion: a few dozen updates at 1e-3) learns the tags and then "
            "fills the rest of its tokens after </answer>; this pays for stopping there."
        ),
    },
    "format only": {
        "components": [_c("format", 1.0, {"mode": "strict"})],
        "description": "Only the tag structure; useful to teach a format before accuracy.",
    },
    "hand-tuned GRPO script": {
        "components": [
            _c("correctness", 1.0, {"wrong_value": -0.5}),
            _c("format", 0.5, {"mode": "pairs"}),
            _c("reasoning_steps", 0.3, {"target": 10}),
            _c("repetition", 0.1, {"max_penalty": -1.0}),
            _c("conciseness", 0.05, {"mode": "cosine"}),
            _c("language", 1.0, {"language": "en"}),
        ],
        "description": (
            "The weighting users bring from earlier GRPO scripts: a wrong answer costs 0.5, "
            "0.5 per well-formed tag pair, 0.1 per step marker (capped at 1), repetition "
            "-0.1 at worst, a small length term and language consistency."
        ),
    },
    "calculator agent": {
        "components": [
            _c("tool_answer", 1.0),
            _c("tool_format", 0.5),
            _c("tool_errors", 0.5),
            _c("tool_budget", 0.2, {"budget": 2}),
        ],
        "description": (
            "For a run with tools (tools.builtin: [calculator]): the final answer after the "
            "calls, well-formed calls, a penalty per failed call (unknown tool, refused "
            "expression) and per call past a budget of 2. Each trace names the call. "
            "`export-config --task agent` writes its run (the shipped agent model, the "
            "calculator, multi-digit products); the Preview runs the calls with that model."
        ),
    },
}
