"""The update runs each prompt of a GRPO group once, not once per completion.

TRL's loss forward (``_get_per_token_logps_and_entropies``) runs every completion with its
prompt, each row padded to the step's longest completion, so a group of G completions computes
the same prompt G times. With the built-in task's 136-token prompt and completions that shrink
to ~25 tokens as a model learns, most of the update's tokens are prompt and padding.

Here each distinct prompt becomes one packed row: its tokens once, then one segment per
completion (the prompt's last token, then the completion up to its last kept token). A 4-D
boolean mask lets a segment see the prompt and itself, causally, and nothing else; the position
ids are those of TRL's padded row. Causal attention makes this exact: no prompt position attends
to a completion, so a prompt's keys and values are the same whichever completion follows, and
each completion's gradient flows back into the one prompt pass. It is the prefix sharing of LLM
serving (vLLM's prefix caching; RadixAttention, Zheng et al. 2024, "SGLang") in the form of
packed sequences with a block mask (Krell et al. 2021, "Efficient Sequence Packing without
Cross-contamination"), applied to the update.

One forward per backward and no key/value cache, so activation checkpointing and DDP keep
working. Used for text under SDPA attention (the 4-D mask is passed as it is; eager attention
would add it as numbers, and flash attention takes no mask), when TRL does not chunk the rows
itself, on the CPU: there SmolLM2's step (2 prompts x 8, 64 tokens) took 28.1 s against 47.2 s
with TRL's rows. On a GPU the update of such a model is bound by launching kernels, not by
tokens: packing cut an H200's kernel time 4x (53 against 207 ms) but the forward and backward
only 1.1-1.3x, and whole SmolLM2 runs were slower (0.96 against 0.55 s a step), so a GPU runs
TRL's rows (bench/RESULTS.md, sixteenth session).
"""

from __future__ import annotations

import os
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from typing import Any

import torch

from engine.generation.runner import bucket
from engine.trainers.compiled_layers import COMPILED_LENGTH_MULTIPLE

# Set to 0 to run every completion with its prompt, as TRL does (to compare).
SHARE_ENV = "STUDIO_SHARE_PROMPTS"

# The loss forward's keyword arguments that are not images or other inputs besides text.
TEXT_ONLY_KWARGS = ("compute_entropy", "compute_aux_loss")

PROMPT_SEGMENT, PADDING_SEGMENT = 0, -1


def shares_prompts(
    attention: str | None,
    input_ids: torch.Tensor,
    batch_size: int | None,
    forward_kwargs: dict[str, Any],
) -> bool:
    """Whether the update may run each distinct prompt once: text only (TRL's other keyword
    arguments all None, no MoE loss), ``attention`` (the model's implementation) SDPA, on the
    CPU, TRL not chunking the rows itself, and not turned off by ``STUDIO_SHARE_PROMPTS=0``."""
    if forward_kwargs.get("compute_aux_loss") or any(
        value is not None for name, value in forward_kwargs.items() if name not in TEXT_ONLY_KWARGS
    ):
        return False
    if os.environ.get(SHARE_ENV, "1") == "0" or attention != "sdpa":
        return False
    if input_ids.device.type != "cpu":
        return False
    return batch_size is None or batch_size >= input_ids.size(0)


@dataclass
class PackedRows:
    """One row per distinct prompt; ``gather_*`` find each completion token of TRL's rows."""

    input_ids: torch.Tensor  # (prompts, width)
    position_ids: torch.Tensor  # (prompts, width): the column of TRL's padded row
    segment: torch.Tensor  # (prompts, width): 0 prompt, k the k-th completion, -1 padding
    kept: torch.Tensor  # (prompts, width) bool: TRL's attention mask at that position
    shift_labels: torch.Tensor  # (prompts, width): the next token to score, else -100
    gather_row: torch.Tensor  # (rows, completion width): packed row of each completion token
    gather_position: torch.Tensor  # (rows, completion width): the position that predicts it
    scored: torch.Tensor  # (rows, completion width) bool: the position is a real token


def pack_rows(
    input_ids: torch.Tensor, attention_mask: torch.Tensor, completion_width: int
) -> PackedRows | None:
    """Pack TRL's rows (a left-padded prompt, then a right-padded completion of
    ``completion_width`` columns) by distinct prompt; None when no two rows share a prompt."""
    ids, mask = input_ids.cpu(), attention_mask.cpu().bool()  # the layout is built on the host
    rows, width = ids.shape
    prompt_width = width - completion_width
    head = prompt_width - 1  # the prompt's last column: it runs with each completion
    if head < 1:
        return None
    key = torch.cat([ids[:, :head], mask[:, :head].long()], dim=1)
    distinct, prompt_of = torch.unique(key, dim=0, return_inverse=True)
    if len(distinct) == rows:
        return None
    completion_kept = mask[:, prompt_width:]
    # Up to its last kept token: TRL's completions end in padding, tool results are masked.
    lengths = (completion_kept * torch.arange(1, completion_width + 1)).amax(1)
    source_row, source_column, segment, starts = [], [], [], torch.zeros(rows, dtype=torch.long)
    for index in range(len(distinct)):
        members = (prompt_of == index).nonzero().flatten().tolist()
        prompt_columns = mask[members[0], :head].nonzero().flatten()
        row_cols, row_rows, row_segment = [prompt_columns], [members[0]], [PROMPT_SEGMENT]
        row_counts, at = [len(prompt_columns)], len(prompt_columns)
        for number, member in enumerate(members, start=1):
            span = 1 + int(lengths[member])
            starts[member] = at
            row_cols.append(torch.arange(head, head + span))
            row_rows.append(member)
            row_segment.append(number)
            row_counts.append(span)
            at += span
        counts = torch.tensor(row_counts)
        source_row.append(torch.tensor(row_rows).repeat_interleave(counts))
        source_column.append(torch.cat(row_cols))
        segment.append(torch.tensor(row_segment).repeat_interleave(counts))
    # padded like the compiled layers' widths, so the same widths recur from step to step
    packed_width = bucket(max(len(c) for c in source_column), COMPILED_LENGTH_MULTIPLE)

    def padded(parts: list[torch.Tensor], fill: int) -> torch.Tensor:
        out = torch.full((len(parts), packed_width), fill, dtype=torch.long)
        for row, part in enumerate(parts):
            out[row, : len(part)] = part
        return out

    row_of = padded(source_row, 0)
    column = padded(source_column, 0)
    segment_ids = padded(segment, PADDING_SEGMENT)
    packed_ids = ids[row_of, column]
    kept = mask[row_of, column] & (segment_ids != PADDING_SEGMENT)
    # Position t scores the token at t + 1 where both are in one completion segment and TRL
    # scores it: a kept token in the completion columns.
    following = torch.roll(segment_ids, -1, dims=1)
    scores_next = (
        (segment_ids > PROMPT_SEGMENT)
        & (following == segment_ids)
        & torch.roll(kept & (column >= prompt_width), -1, dims=1)
    )
    scores_next[:, -1] = False
    shift_labels = torch.roll(packed_ids, -1, dims=1).masked_fill(~scores_next, -100)
    gather_position = (starts[:, None] + torch.arange(completion_width)).clamp(max=packed_width - 1)
    return PackedRows(
        input_ids=packed_ids,
        position_ids=column,
        segment=segment_ids,
        kept=kept,
        shift_labels=shift_labels,
        gather_row=prompt_of[:, None].expand(rows, completion_width),
        gather_position=gather_position,
        scored=completion_kept,
    )


def packed_attention_mask(packed: PackedRows) -> torch.Tensor:
    """(prompts, 1, width, width) bool, True where a query may attend to a key: a kept key at
    or before it in its own segment or the prompt; a padding position attends to itself."""
    segment, position = packed.segment, packed.position_ids
    query_segment, key_segment = segment[:, :, None], segment[:, None, :]
    same_part = (key_segment == query_segment) | (key_segment == PROMPT_SEGMENT)
    causal = position[:, None, :] <= position[:, :, None]
    allowed = same_part & causal & packed.kept[:, None, :] & (query_segment != PADDING_SEGMENT)
    width = segment.size(1)
    itself = torch.eye(width, dtype=torch.bool, device=segment.device)[None]
    allowed |= itself & (query_segment == PADDING_SEGMENT)
    return allowed[:, None]


def logps_with_shared_prompts(
    model: Any,
    input_ids: torch.Tensor,
    attention_mask: torch.Tensor,
    logits_to_keep: int,
    compute_entropy: bool,
    autocast: AbstractContextManager | None = None,
) -> tuple[torch.Tensor, torch.Tensor | None, None] | None:
    """TRL's ``(log-probs, entropies, aux loss)`` of the last ``logits_to_keep`` tokens of each
    row, from one packed row per distinct prompt; None when no two rows share one."""
    packed = pack_rows(input_ids, attention_mask, logits_to_keep)
    if packed is None:
        return None
    packed = PackedRows(
        **{name: value.to(input_ids.device) for name, value in vars(packed).items()}
    )
    with autocast or nullcontext():
        out = model(
            input_ids=packed.input_ids,
            attention_mask=packed_attention_mask(packed),
            position_ids=packed.position_ids,
            shift_labels=packed.shift_labels,
            fused_lm_head=True,
        )

    def unpacked(values: torch.Tensor) -> torch.Tensor:
        return torch.where(packed.scored, values[packed.gather_row, packed.gather_position], 0.0)

    entropy = unpacked(out.entropy) if compute_entropy else None
    return unpacked(out.log_probs), entropy, None


def shared_prompt_logps(
    trainer: Any,
    model: Any,
    input_ids: torch.Tensor,
    attention_mask: torch.Tensor,
    logits_to_keep: int,
    batch_size: int | None,
    forward_kwargs: dict[str, Any],
) -> tuple[torch.Tensor, torch.Tensor | None, None] | None:
    """The trainer's ``_get_per_token_logps_and_entropies`` with each distinct prompt run once,
    where :func:`shares_prompts` allows it; None where TRL's own rows must run."""
    config = trainer.accelerator.unwrap_model(model).config
    attention = getattr(config, "_attn_implementation", None)
    if not shares_prompts(attention, input_ids, batch_size, forward_kwargs):
        return None
    return logps_with_shared_prompts(
        model,
        input_ids,
        attention_mask,
        logits_to_keep,
        forward_kwargs.get("compute_entropy", False),
        trainer.accelerator.autocast(),
    )
