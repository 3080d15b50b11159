"""Reward model: a trained sequence-classification model scores prompt + completion.

The classic RLHF reward (Ouyang et al. 2022, "Training language models to follow instructions
with human feedback", §3.5: a scalar head on a transformer reads prompt and response); TRL's
``GRPOTrainer`` accepts such a model as a reward function the same way: the conversation goes
through the reward model's chat template, and the score is the logit of its single label.

Any ``AutoModelForSequenceClassification`` from a local folder or a hub id, loaded with
safetensors only and ``trust_remote_code=False`` (no pickle, no code from the repo). Batches of
``batch_size`` run on the run's device (``auto``: this process's GPU when there is one), padded
on the right so every row reads as it would alone; a batch holds at most
:data:`MAX_BATCH_TOKENS` padded tokens (fewer rows when ``max_length`` is long), and within a
web call's time budget (:mod:`rewards.verification.deadline`) no batch starts after it runs out.
``output`` maps the logit: ``raw``, ``sigmoid`` (a probability-like [0, 1]), or
``standardised`` per batch ((x - mean) / std, 0 when all are equal). A model with several
labels is read at its last label. The trace gives the raw score and its rank among the
completions of the same prompt.
"""

from __future__ import annotations

import functools
import logging
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

from rewards.completions.text import completion_text
from rewards.components.base import BatchContext, Judgement, RewardComponent
from rewards.errors import RewardSpecError
from rewards.input_guards.hub_ids import is_hub_id
from rewards.params import ComponentInfo, ParamSpec, describe_value, with_defaults
from rewards.verification.deadline import deadline_passed

logger = logging.getLogger(__name__)

OUTPUTS = ("raw", "sigmoid", "standardised")
#: Most padded tokens in one forward pass: bounds its memory whatever batch_size x max_length.
MAX_BATCH_TOKENS = 65_536

PARAMS = (
    ParamSpec(
        "model",
        "str",
        "",
        "a local model folder or a hub id (owner/name) of a sequence-classification model",
        max_length=4096,
    ),
    ParamSpec("output", "str", "raw", "how the logit becomes the score", choices=OUTPUTS),
    ParamSpec("batch_size", "int", 8, "completions per forward pass", min=1, max=256),
    ParamSpec("max_length", "int", 1024, "tokens kept per prompt+completion", min=8, max=32768),
    ParamSpec(
        "device",
        "str",
        "auto",
        "where the model runs (auto: the run's GPU if any)",
        choices=("auto", "cpu", "cuda"),
    ),
)


# Checks a model name before this process loads it (raises ValueError); the web app installs
# its input policy and size cap here, so a preview cannot load what a run could not.
_model_rule: Callable[[str], None] | None = None


def restrict_models(rule: Callable[[str], None] | None) -> None:
    """Check every reward or judge model with ``rule`` before loading it (None: no check)."""
    global _model_rule
    _model_rule = rule


def check_model_allowed(name: str) -> None:
    """Raise ``ValueError`` when the installed rule refuses model ``name``."""
    if _model_rule is not None:
        _model_rule(name)


def loaded_models(spec: Any) -> list[tuple[int, str]]:
    """``(component index, model)`` of each enabled component of a ``RewardSpec`` that loads a
    model into the run (a reward model, a local judge), for size and source checks."""
    out = []
    for i, comp in enumerate(spec.components):
        local_judge = comp.name == "judge" and comp.params.get("backend") == "local"
        if comp.enabled and (comp.name == "reward_model" or local_judge):
            out.append((i, comp.params["model"]))
    return out


def pick_device(device: str) -> str:
    """``cpu``, or this process's current CUDA device (each DDP rank has its own)."""
    import torch

    if device == "cpu" or not torch.cuda.is_available():
        return "cpu"
    return f"cuda:{torch.cuda.current_device()}"


def load_allowed_model(name_or_path: str, auto_class: Any, padding_side: str) -> tuple[Any, Any]:
    """A model the operator allows, loaded by ``auto_class`` (safetensors only, no remote code),
    and its tokenizer padded on ``padding_side`` with a pad token (EOS when it has none)."""
    check_model_allowed(name_or_path)
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(name_or_path, trust_remote_code=False)
    model = auto_class.from_pretrained(name_or_path, trust_remote_code=False, use_safetensors=True)
    tokenizer.padding_side = padding_side
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    return model, tokenizer


@functools.lru_cache(maxsize=2)
def load_reward_model(name_or_path: str, device: str) -> tuple[Any, Any]:
    """The model (eval mode, on ``device``) and its tokenizer (right padding, a pad token)."""
    from transformers import AutoModelForSequenceClassification

    model, tokenizer = load_allowed_model(name_or_path, AutoModelForSequenceClassification, "right")
    if model.config.pad_token_id is None:
        model.config.pad_token_id = tokenizer.pad_token_id
    return model.to(device).eval(), tokenizer


def conversation_text(tokenizer: Any, prompt: Any, completion: str) -> tuple[str, bool]:
    """Prompt + completion as the reward model reads them, and whether a chat template made it.

    A chat prompt (a list of messages) or a plain one (a user turn) gets the completion as the
    assistant's turn; without a chat template the texts are joined.
    """
    if getattr(tokenizer, "chat_template", None):
        messages = (
            list(prompt)
            if isinstance(prompt, list)
            else [{"role": "user", "content": "" if prompt is None else str(prompt)}]
        )
        messages.append({"role": "assistant", "content": completion})
        return tokenizer.apply_chat_template(messages, tokenize=False), True
    prompt_text = completion_text(prompt) if isinstance(prompt, list) else prompt or ""
    return f"{prompt_text}{completion}", False


def score_texts(
    model: Any, tokenizer: Any, texts: list[str], templated: bool, batch_size: int, max_length: int
) -> list[float]:
    """The reward model's logit for each text, ``batch_size`` at a time (fewer when
    ``max_length`` would take a batch over :data:`MAX_BATCH_TOKENS`).

    Raises:
        TimeoutError: the web call's time budget ran out before the last batch.
    """
    import torch

    rows = max(1, min(batch_size, MAX_BATCH_TOKENS // max_length))
    out: list[float] = []
    for start in range(0, len(texts), rows):
        if deadline_passed():
            raise TimeoutError("not scored, this call's time budget ran out")
        batch = tokenizer(
            texts[start : start + rows],
            return_tensors="pt",
            padding=True,
            truncation=True,
            max_length=max_length,
            add_special_tokens=not templated,  # the template already wrote them
        ).to(model.device)
        with torch.no_grad():
            logits = model(**batch).logits  # (B, num_labels)
        out.extend(float(x) for x in logits[:, -1].float().cpu())
    return out


def map_scores(raw: list[float], output: str) -> list[float]:
    """``raw`` logits mapped as ``output`` says (see the module docstring)."""
    if output == "sigmoid":
        return [
            1.0 / (1.0 + math.exp(-x)) if x >= 0 else math.exp(x) / (1.0 + math.exp(x)) for x in raw
        ]
    if output == "standardised":
        mean = sum(raw) / len(raw)
        std = math.sqrt(sum((x - mean) ** 2 for x in raw) / len(raw))
        return [(x - mean) / std if std > 0 else 0.0 for x in raw]
    return list(raw)


def group_ranks(values: list[float], prompts: list[Any]) -> list[tuple[int, int]]:
    """``(rank, group size)`` of each value among those with the same prompt (1 = best)."""
    groups: dict[str, list[int]] = {}
    for i, p in enumerate(prompts):
        groups.setdefault(repr(p), []).append(i)
    ranks = [(1, 1)] * len(values)
    for members in groups.values():
        for i in members:
            better = sum(values[j] > values[i] for j in members)
            ranks[i] = (better + 1, len(members))
    return ranks


class RewardModel(RewardComponent):
    component = "reward_model"

    def __init__(self, name: str | None = None, **params: Any) -> None:
        super().__init__(name)
        p = with_defaults(PARAMS, params)
        self.model = p["model"]
        self.output = p["output"]
        self.batch_size = p["batch_size"]
        self.max_length = p["max_length"]
        self.device = p["device"]

    def judge(self, texts: list[str], ctx: BatchContext) -> list[Judgement]:
        if not texts:
            return []
        prompts = list(ctx.prompts) if ctx.prompts is not None else [None] * len(texts)
        try:
            model, tokenizer = load_reward_model(self.model, pick_device(self.device))
            pairs = [
                conversation_text(tokenizer, p, t) for p, t in zip(prompts, texts, strict=True)
            ]
            raw = score_texts(
                model,
                tokenizer,
                [text for text, _ in pairs],
                pairs[0][1],
                self.batch_size,
                self.max_length,
            )
        except (OSError, ValueError, RuntimeError, ImportError) as err:
            message = f"reward model {self.__name__!r} ({self.model}) failed: {err}"[:400]
            logger.warning("%s", message)
            return [Judgement(None, message) for _ in texts]
        values = map_scores(raw, self.output)
        out = []
        for value, r, (rank, size) in zip(values, raw, group_ranks(raw, prompts), strict=True):
            note = f"reward model {r:.4g}" + (f" -> {value:.3g}" if self.output != "raw" else "")
            out.append(Judgement(value, f"{note}; rank {rank} of {size} for this prompt"))
        return out


def _check(params: dict[str, Any]) -> None:
    name = params["model"].strip()
    if not name:
        raise RewardSpecError("model", "give a local model folder or a hub id (owner/name)")
    try:
        check_model_allowed(name)
    except ValueError:
        return  # refused when it loads, alike whether the server path exists or not
    folder = Path(name).expanduser()
    if not (folder / "config.json").is_file() and not is_hub_id(name):
        raise RewardSpecError(
            "model",
            f"must be a local model folder (with config.json) or a hub id owner/name, got "
            f"{describe_value(name)}",
        )


INFO = ComponentInfo(
    name="reward_model",
    factory=RewardModel,
    params=PARAMS,
    description=(
        "A trained reward model (sequence classification, safetensors, no remote code) scores "
        "prompt + completion through its chat template; raw, sigmoid or standardised per batch."
    ),
    source="Ouyang et al. 2022 (InstructGPT) §3.5 reward model; TRL GRPOTrainer reward models",
    check=_check,
)
