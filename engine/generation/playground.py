"""Talking to a model: one prompt, several samples, replies streamed token by token.

The Playground tab, the ``/generate`` endpoint and ``python -m engine generate`` share this.
Two models compared with the same :class:`SamplingSettings` (seed included) draw from the same
random stream, so where their distributions agree their samples agree too.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from engine.data.prompts import Prompt, adds_special_tokens, render_prompt
from engine.fields import ConfigError
from engine.generation.sampling import stop_token_ids
from engine.generation.settings import SamplingSettings

#: Rows of a run's data the Playground reads: its prompt picker, and the first row's system
#: prompt for typed prompts (``engine generate`` takes the same first row).
DATA_PROMPTS = 20

#: The most one request may ask on any app (the work of one interactive call, not a range of
#: the knobs: those are SamplingSettings'); a public app lowers them (ui.shared.context).
MAX_SAMPLES = 8
MAX_NEW_TOKENS = 1024
MAX_PROMPT_CHARS = 4000


class GenerateError(ConfigError):
    """A request out of bounds; ``field`` names the input (``prompt``, ``num_samples``)."""


def check_reply_settings(
    settings: SamplingSettings, max_samples: int | None = None, max_tokens: int | None = None
) -> None:
    """Raise :class:`GenerateError` when ``settings`` ask more than one request may: this
    module's bounds, lowered by an app's (``max_samples``, ``max_tokens``)."""
    try:
        settings.check(
            max_samples=min(MAX_SAMPLES, max_samples or MAX_SAMPLES),
            max_tokens=min(MAX_NEW_TOKENS, max_tokens or MAX_NEW_TOKENS),
        )
    except ConfigError as exc:
        raise GenerateError(exc.field, exc.reason) from None


def check_prompt(text: Any) -> str:
    """``text`` when it is a prompt one request may send, else :class:`GenerateError`."""
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
    generator = torch.Generator(device=device).manual_seed(settings.seed)
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
