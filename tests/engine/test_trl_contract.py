"""The TRL and transformers methods our GRPO and RLOO trainers override, with the parameters
each override relies on: a TRL upgrade that renames, reorders or drops one fails here, by name,
instead of in a slow end-to-end run."""

from __future__ import annotations

import inspect

import pytest
from trl import GRPOTrainer, RLOOTrainer

from engine.trainers.trl.grpo import StudioGRPOTrainer
from engine.trainers.trl.rloo import StudioRLOOTrainer

# Method -> the leading positional parameters (after self) we pass or read, in TRL's order.
LOGPS = ["model", "input_ids", "attention_mask", "logits_to_keep", "batch_size"]
SHARED = {
    "_generate_and_score_completions": ["inputs"],
    "_tokenize_prompts": ["prompts"],
    "_calculate_rewards": ["inputs", "prompts", "completions", "completion_ids_list"],
    "_compute_loss": ["model", "inputs"],
    "_get_per_token_logps_and_entropies": LOGPS,
    "_save_checkpoint": ["model", "trial"],
    "_get_output_dir": ["trial"],
    "get_batch_samples": ["epoch_iterator", "num_batches", "device"],
}
CONTRACT = {
    (StudioGRPOTrainer, GRPOTrainer): {
        **SHARED,
        "_generate_single_turn": [
            "prompt_ids",
            "images",
            "multimodal_fields",
            "num_generations",
            "has_tool_images",
        ],
    },
    (StudioRLOOTrainer, RLOOTrainer): {
        **SHARED,
        "_generate_single_turn": ["prompt_ids", "images", "multimodal_fields"],
    },
}
# The attributes of TRL's trainers the helpers read (set in TRL's constructor).
ATTRIBUTES = [
    "_is_vlm", "_metrics", "_logs", "top_k", "min_p", "repetition_penalty", "beta",
]  # fmt: skip


def _parameters(function) -> list[str]:
    return [name for name in inspect.signature(function).parameters if name != "self"]


CASES = [
    (ours, theirs, name, expected)
    for (ours, theirs), methods in CONTRACT.items()
    for name, expected in methods.items()
]


@pytest.mark.parametrize(
    ("ours", "theirs", "name", "expected"),
    CASES,
    ids=[f"{theirs.__name__}.{name}" for _, theirs, name, _ in CASES],
)
def test_each_overridden_method_keeps_the_signature_we_rely_on(ours, theirs, name, expected):
    assert name in vars(ours), f"{ours.__name__} no longer overrides {name}: update the contract"
    inherited = getattr(theirs, name, None)
    assert inherited is not None, f"{theirs.__name__}.{name} is gone"
    assert _parameters(inherited)[: len(expected)] == expected, (
        f"{theirs.__name__}.{name}{inspect.signature(inherited)} changed"
    )


@pytest.mark.parametrize("ours", [StudioGRPOTrainer, StudioRLOOTrainer])
def test_the_contract_lists_every_override(ours):
    # Every TRL/transformers method our class defines is pinned above.
    theirs, methods = next((t, m) for (o, t), m in CONTRACT.items() if o is ours)
    overridden = {
        name for name in vars(ours) if not name.startswith("__") and hasattr(theirs, name)
    }
    assert overridden == set(methods)


@pytest.mark.parametrize("theirs", [GRPOTrainer, RLOOTrainer])
def test_trls_constructor_still_sets_what_the_helpers_read(theirs):
    source = inspect.getsource(theirs.__init__)
    missing = [name for name in ATTRIBUTES if f"self.{name} =" not in source]
    assert not missing, f"{theirs.__name__}.__init__ no longer sets {missing}"
