"""Tool rollouts outside training: the loop TRL's GRPOTrainer runs, for the Preview and the
held-out evaluation of a run with tools.

TRL 1.16 (``GRPOTrainer._generate`` and ``_tool_call_loop``), step by step:

1. sample a completion of the prompt rendered with the tools (the chat template's tool line);
2. parse it with ``trl.chat_template_utils.parse_response`` (a call that is not JSON stays in
   the text, and the rollout ends there);
3. run each parsed call on the rollout's own environment (a :class:`~engine.tools.toolbox.Toolbox`
   made fresh and ``reset`` with the row); an unknown tool or one that raises gives
   ``{"error": str(e)}`` as its result;
4. append the tool messages as the template renders them after the assistant turn (TRL's
   ``_get_tool_suffix_ids``: the difference between a dummy exchange with and without them) and
   sample again; a result that would pass ``max_new_tokens`` in all is dropped and ends the
   rollout, as TRL drops it past ``max_completion_length``;
5. stop when a turn makes no call, or after ``max_calls`` rounds of calls.

The rollout is the list of assistant and tool messages TRL hands reward functions; ``text`` is
the tokens decoded as the trainer's completion text. One departure: a round's prompt goes to
the sampler as text (the ids decoded with their special tokens), re-tokenized there; the shipped
character-level tokenizer round-trips exactly, a BPE one nearly.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from engine.generation.sampling import sample
from engine.generation.settings import SamplingSettings
from engine.tools.toolbox import Toolbox


@dataclass(frozen=True)
class ToolRollout:
    """One rollout with its tool turns.

    Attributes:
        prompt_index, sample_index: as :class:`~engine.generation.sampling.GeneratedSample`.
        conversation: the assistant and tool messages, in order (TRL's completion).
        text: the whole completion decoded without special tokens, tool results included.
        completion_ids: the sampled tokens and the tool results' tokens, in order.
        truncated: True when the last turn ran out of tokens before its end token.
    """

    prompt_index: int
    sample_index: int
    conversation: list[dict[str, Any]]
    text: str
    completion_ids: list[int]
    truncated: bool


def tool_names(toolbox: type[Toolbox]) -> list[str]:
    """The tools a toolbox class offers: its public methods (TRL's rule for an environment)."""
    names = [n for n, v in vars(toolbox).items() if callable(v) and not n.startswith("_")]
    return [n for n in names if n not in ("reset", "get_reward")]


def sample_tool_rollouts(
    model: Any,
    tokenizer: Any,
    prompts: Sequence[list[dict[str, Any]]],
    toolbox: type[Toolbox],
    settings: SamplingSettings,
    rows: Sequence[dict[str, Any]] | None = None,
    batch_size: int = 64,
) -> list[ToolRollout]:
    """Sample ``settings.num_samples`` tool rollouts of each chat prompt (see the module
    docstring), within ``settings.max_new_tokens`` in all; ``rows`` (aligned with ``prompts``)
    reset each rollout's toolbox (the lookup's context).
    The tokenizer must parse tool calls (:func:`engine.tools.template.prepare_tool_tokenizer`).
    Ordered by (prompt_index, sample_index); reproducible for the same arguments."""
    from trl.chat_template_utils import parse_response  # TRL's own parser, as in training

    max_new_tokens = settings.max_new_tokens
    jobs = [_Job(i, j, toolbox()) for i in range(len(prompts)) for j in range(settings.num_samples)]
    for job in jobs:
        job.env.reset(**(dict(rows[job.i]) if rows is not None else {}))
        job.tools = [getattr(job.env, n) for n in tool_names(toolbox)]
        text = tokenizer.apply_chat_template(
            list(prompts[job.i]), tools=job.tools, tokenize=False, add_generation_prompt=True
        )
        job.prompt_ids = tokenizer(text, add_special_tokens=False)["input_ids"]
    active = jobs
    for round_ in range(toolbox.max_calls + 1):
        texts = [tokenizer.decode(j.prompt_ids + j.ids, skip_special_tokens=False) for j in active]
        room = max(max_new_tokens - len(j.ids) for j in active)
        turn = replace(
            settings,
            num_samples=1,  # each job is one rollout
            max_new_tokens=room,
            seed=(settings.seed + 1000 * round_) % 2**31,  # a seed in the sampler's range
        )
        samples = sample(model, tokenizer, texts, turn, batch_size=batch_size)
        going = []
        for job, drawn in zip(active, samples, strict=True):
            ids = drawn.token_ids[: max_new_tokens - len(job.ids)]
            job.truncated = drawn.truncated or len(ids) < len(drawn.token_ids)
            message = parse_response(
                tokenizer, ids, prefix=job.prompt_ids + job.ids, tools=job.tools
            )
            job.ids += ids
            job.conversation.append(message)
            calls = message.get("tool_calls")
            if not calls or job.truncated or round_ == toolbox.max_calls:
                continue
            results = [_run(job.env, call) for call in calls]
            suffix = _suffix_ids(tokenizer, results)
            if len(job.ids) + len(suffix) > max_new_tokens:
                continue  # TRL drops results past the completion budget; the rollout ends
            job.conversation.extend(results)
            job.ids += suffix
            going.append(job)
        active = going
        if not active:
            break
    return [
        ToolRollout(
            j.i,
            j.j,
            j.conversation,
            tokenizer.decode(j.ids, skip_special_tokens=True),
            j.ids,
            j.truncated,
        )
        for j in jobs
    ]


class _Job:
    """One rollout's state between rounds."""

    def __init__(self, i: int, j: int, env: Toolbox) -> None:
        self.i, self.j, self.env = i, j, env
        self.tools: list[Any] = []
        self.prompt_ids: list[int] = []
        self.ids: list[int] = []
        self.conversation: list[dict[str, Any]] = []
        self.truncated = False


def _run(env: Toolbox, call: dict[str, Any]) -> dict[str, Any]:
    """One call as TRL runs it: the tool's result as text, or ``{"error": ...}`` as text."""
    function = call.get("function", {}) if call.get("type") == "function" else {}
    name = str(function.get("name", call.get("name", "unknown")))
    try:
        if not function:
            raise ValueError(f"Unsupported tool call type: {call.get('type')}")
        if name not in tool_names(type(env)):
            raise ValueError(f"Tool {name} not found.")
        result: Any = getattr(env, name)(**function.get("arguments", {}))
    except Exception as exc:  # TRL ends the call, never the rollout
        result = {"error": str(exc)}
    return {"role": "tool", "name": name, "content": str(result)}


def _suffix_ids(tokenizer: Any, results: list[dict[str, Any]]) -> list[int]:
    """The tokens of ``results`` as the template renders them after an assistant turn (TRL's
    ``_get_tool_suffix_ids``: a dummy exchange with and without them, cut after its EOS)."""
    call = {"type": "function", "function": {"name": results[0]["name"], "arguments": {}}}
    dummy = [
        {"role": "user", "content": "dummy"},
        {"role": "assistant", "content": "", "tool_calls": [call]},
    ]
    prefix = tokenizer.apply_chat_template(dummy, tokenize=False)
    full = tokenizer.apply_chat_template(
        dummy + results, tokenize=False, add_generation_prompt=True
    )
    prefix_ids = tokenizer(prefix, add_special_tokens=False)["input_ids"]
    full_ids = tokenizer(full, add_special_tokens=False)["input_ids"]
    ends = [k for k, t in enumerate(prefix_ids) if t == tokenizer.eos_token_id]
    if ends:
        prefix_ids = prefix_ids[: ends[-1] + 1]
    return full_ids[len(prefix_ids) :]
