"""Talking to a model: one prompt, several samples, replies streamed token by token.

The Playground tab, the ``/generate`` endpoint and ``python -m engine generate`` share this.
Two models compared with the same :class:`SamplingSettings` (seed included) draw from the same
random stream, so where their distributions agree their samples agree too.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from engine.data.prompts import Prompt, adds_special_tokens, render_prompt
from engine.generation.sampling import stop_token_ids
from rewards.params import describe_value

#: Rows of a run's data the Playground reads: its prompt picker, and the first row's system
#: prompt for typed prompts (``engine generate`` takes the same first row).
DATA_PROMPTS = 20

#: Bounds of one request on any app; a public app lowers samples and tokens (ui.shared.context).
MAX_SAMPLES = 8
MAX_NEW_TOKENS = 1024
MAX_PROMPT_CHARS = 4000


class GenerateError(ValueError):
    """A request out of bounds; ``field`` names the input."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field


def _number(value: Any, lo: float, hi: float, whole: bool) -> bool:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return False
    return lo <= value <= hi and (not whole or float(value).is_integer())


@dataclass(frozen=True)
class SamplingSettings:
    """How replies are drawn (``transformers`` ``generate``).

    Attributes:
        temperature: softmax temperature; 0 is greedy (then every sample is the same).
        top_p: nucleus sampling mass, in (0, 1].
        max_new_tokens: longest reply, in tokens.
        num_samples: replies per model, to show the spread.
        seed: seeds the sampling; the same seed gives both models the same random stream.
    """

    temperature: float = 0.8
    top_p: float = 1.0
    max_new_tokens: int = 64
    num_samples: int = 2
    seed: int = 0

    def check(self, max_samples: int | None = None, max_tokens: int | None = None) -> None:
        """Raise :class:`GenerateError` naming the first setting out of range."""
        samples = min(MAX_SAMPLES, max_samples or MAX_SAMPLES)
        tokens = min(MAX_NEW_TOKENS, max_tokens or MAX_NEW_TOKENS)
        for name, value, lo, hi, whole in (
            ("temperature", self.temperature, 0, 2, False),
            ("top_p", self.top_p, 0.01, 1, False),
            ("max_new_tokens", self.max_new_tokens, 1, tokens, True),
            ("num_samples", self.num_samples, 1, samples, True),
            ("seed", self.seed, 0, 2**31 - 1, True),
        ):
            if not _number(value, lo, hi, whole):
                kind = "a whole number" if whole else "a number"
                raise GenerateError(
                    name, f"must be {kind} in [{lo}, {hi}], got {describe_value(value)}"
                )


def check_prompt(text: Any) -> str:
    if not isinstance(text, str) or not text.strip():
        raise GenerateError("prompt", "type a prompt (or pick one from the run's data)")
    if len(text) > MAX_PROMPT_CHARS:
        raise GenerateError("prompt", f"{len(text):,} characters; at most {MAX_PROMPT_CHARS:,}")
    return text


def chat_prompt(question: str, system: str | None = None) -> list[dict[str, str]]:
    """A typed question as a chat prompt, under the system prompt the run trained with."""
    messages = [{"role": "system", "content": system}] if system else []
    return [*messages, {"role": "user", "content": question}]


def stream_replies(
    model: Any, tokenizer: Any, prompt: Prompt, settings: SamplingSettings
) -> Iterator[list[str]]:
    """The replies so far after every generated token: ``num_samples`` texts each time.

    A plain decode loop over the model's KV cache, drawing with our sampler
    (:func:`engine.generation.sampler.sample_tokens`) from a generator seeded per request: two
    models (or two requests at once) never share a random stream, so a seed gives the same
    draws wherever it runs.
    """
    import torch

    from engine.generation.sampler import sample_tokens

    text = render_prompt(tokenizer, prompt)
    encoded = tokenizer(
        text, return_tensors="pt", add_special_tokens=adds_special_tokens(tokenizer, prompt)
    )
    room = getattr(model.config, "max_position_embeddings", None)
    length = encoded.input_ids.shape[1]
    if room is not None and length >= room:
        raise GenerateError(
            "prompt", f"{length} tokens; this model reads at most {room} (prompt and reply)"
        )
    new_tokens = (
        int(settings.max_new_tokens)
        if room is None
        else min(int(settings.max_new_tokens), room - length)
    )
    device = next(model.parameters()).device
    generator = torch.Generator(device=device).manual_seed(int(settings.seed))
    step_input = encoded.input_ids.to(device).repeat(settings.num_samples, 1)  # (S, T)
    eos = stop_token_ids(model, tokenizer)
    tokens: list[list[int]] = [[] for _ in range(settings.num_samples)]
    done = [False] * settings.num_samples
    past = None
    for _ in range(new_tokens):
        # Grad mode is thread state: no_grad must not stay on across a yield, or the caller's
        # code (a training step, another handler) runs without gradients until this resumes.
        with torch.no_grad():
            out = model(input_ids=step_input, cache=past, use_cache=True)
            past = out.cache
            drawn, _ = sample_tokens(
                out.logits[:, -1], float(settings.temperature), float(settings.top_p), generator
            )  # (S,)
        for i, token in enumerate(drawn.tolist()):
            if done[i]:
                continue
            if token in eos:
                done[i] = True
            else:
                tokens[i].append(token)
        yield [tokenizer.decode(t, skip_special_tokens=True) for t in tokens]
        if all(done):
            break
        step_input = drawn.unsqueeze(-1)  # (S, 1)


def generate_replies(
    model: Any,
    tokenizer: Any,
    prompt: Prompt,
    settings: SamplingSettings,
    deadline: float | None = None,
) -> list[str]:
    """The finished replies (:func:`stream_replies` to its end), or the replies so far when
    ``time.monotonic()`` passes ``deadline`` (a public app's bound on one call's work)."""
    last: list[str] = [""] * settings.num_samples
    for replies in stream_replies(model, tokenizer, prompt, settings):
        last = replies
        if deadline is not None and time.monotonic() > deadline:
            break
    return last
