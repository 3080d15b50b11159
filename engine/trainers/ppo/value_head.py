"""The critic of PPO for language models: a scalar head on a transformer's last hidden state.

Two layouts (Ziegler et al. 2019 §2.2; Ouyang et al. 2022 §3.5):

- ``shared``: a linear head on the policy's own last hidden state. One forward pass gives the
  logits and the values; policy and value losses share the backbone's gradients.
- ``separate``: a copy of the base model (its decoder only) with its own head, trained by the
  value loss alone. Twice the forward/backward cost, no interference between the two losses.

The head starts at zero, so ``V = 0`` everywhere and the first advantages are the plain returns.
(The reward-head initialisation ``N(0, 1/sqrt(d_model + 1))`` of "The N Implementation Details
of RLHF with PPO", Huang et al. 2024, gives per-token values of order 1 on unit-scale hidden
states: on the default model the critic's explained variance started at -6 and its noise went
straight into the advantages.)
"""

from __future__ import annotations

import copy
from typing import Any

import torch
from torch import nn

from engine.config.algorithms import PPO_VALUE_MODELS
from engine.models.lm_head import plain_head
from engine.trainers.ppo.formulas import chunked_logprobs_entropy
from engine.trainers.ppo.fused_head import head_logprobs


class ValueHead(nn.Module):
    """``V(s_t) = w . h_t + b`` on hidden states (B, T, d) -> (B, T)."""

    def __init__(self, hidden_size: int) -> None:
        super().__init__()
        self.summary = nn.Linear(hidden_size, 1)
        nn.init.zeros_(self.summary.weight)
        nn.init.zeros_(self.summary.bias)

    def forward(self, hidden_states: torch.Tensor) -> torch.Tensor:
        return self.summary(hidden_states.to(self.summary.weight.dtype)).squeeze(-1)


def hidden_size_of(model: Any) -> int:
    config = model.config
    for name in ("hidden_size", "n_embd", "d_model"):
        if getattr(config, name, None):
            return int(getattr(config, name))
    text_config = getattr(config, "get_text_config", lambda: None)()
    if text_config is not None and getattr(text_config, "hidden_size", None):
        return int(text_config.hidden_size)
    raise ValueError(f"cannot find the hidden size of {type(model).__name__}'s config")


def position_ids_from(attention_mask: torch.Tensor) -> torch.Tensor:
    """Positions that skip left padding, as ``generate`` computes them: (B, L) -> (B, L)."""
    return (attention_mask.long().cumsum(-1) - 1).clamp(min=0)


class PolicyWithValue(nn.Module):
    """The policy LM and its critic in one module, so one optimizer and one DDP wrapper hold both.

    ``forward(input_ids, attention_mask, keep)`` returns ``(logits, values)`` of the last ``keep``
    positions: (B, K, V) and (B, K).
    """

    def __init__(
        self, policy: nn.Module, value_model: str = "shared", fused_head: bool = True
    ) -> None:
        super().__init__()
        # FSDP gathers the LM head's weight only inside its own forward, which the fused head
        # skips: sharded models take the logits path.
        self.fused_head = fused_head
        if value_model not in PPO_VALUE_MODELS:
            raise ValueError(f"value_model must be one of {PPO_VALUE_MODELS}, got {value_model!r}")
        self.policy = policy
        self.value_model = value_model
        hidden = hidden_size_of(policy)
        self.value_backbone: nn.Module | None = None
        if value_model == "separate":
            # A copy of the base model's decoder: the critic starts from the same features.
            self.value_backbone = copy.deepcopy(_decoder_of(policy))
            for p in self.value_backbone.parameters():
                p.requires_grad_(True)
        param = next(policy.parameters())
        self.value_head = ValueHead(hidden).to(device=param.device)

    def forward(
        self,
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor,
        keep: int = 0,
        targets: torch.Tensor | None = None,
        temperature: float = 1.0,
        entropy: str = "skip",
    ) -> tuple[torch.Tensor, ...]:
        """Logits and values of the last ``keep`` positions (all when 0): (B, K, V), (B, K).

        With ``targets`` (B, K - 1), the tokens that positions ``-keep .. -2`` predict, it
        returns ``(logprobs, values, entropies)`` instead, (B, K - 1), (B, K), (B, K - 1): the
        log-probabilities at ``temperature`` come from the fused LM head
        (:mod:`~engine.trainers.ppo.fused_head`) where the model allows, so no logits are built.
        """
        common = {
            "input_ids": input_ids,
            "attention_mask": attention_mask,
            "position_ids": position_ids_from(attention_mask),
            "use_cache": False,
        }
        shared = self.value_backbone is None
        if targets is not None:
            logprobs, entropies, hidden = completion_logprobs(
                self.policy,
                input_ids,
                attention_mask,
                keep,
                targets,
                temperature,
                entropy,
                fused=self.fused_head,
                hidden=shared,
            )
            if not shared:
                hidden = self.value_backbone(**common).last_hidden_state  # (B, L, d)
            return logprobs, self.value_head(hidden[:, -keep:]), entropies
        out = self.policy(**common, output_hidden_states=shared, logits_to_keep=keep)
        if shared:
            hidden = out.hidden_states[-1]  # (B, L, d), after the final norm
        else:
            hidden = self.value_backbone(**common).last_hidden_state  # (B, L, d)
        return out.logits, self.value_head(hidden[:, -keep:])  # (B, K, V), (B, K)

    def critic_state_dict(self) -> dict[str, torch.Tensor]:
        """The critic's own weights (head, and backbone when separate), for checkpoints."""
        state = {f"value_head.{k}": v for k, v in self.value_head.state_dict().items()}
        if self.value_backbone is not None:
            state.update(
                {f"value_backbone.{k}": v for k, v in self.value_backbone.state_dict().items()}
            )
        return state

    def load_critic_state_dict(self, state: dict[str, torch.Tensor]) -> None:
        head = {k.removeprefix("value_head."): v for k, v in state.items() if "value_head." in k}
        self.value_head.load_state_dict(head)
        if self.value_backbone is not None:
            backbone = {
                k.removeprefix("value_backbone."): v
                for k, v in state.items()
                if k.startswith("value_backbone.")
            }
            self.value_backbone.load_state_dict(backbone)


def completion_logprobs(
    model: nn.Module,
    input_ids: torch.Tensor,
    attention_mask: torch.Tensor,
    keep: int,
    targets: torch.Tensor,
    temperature: float,
    entropy: str = "skip",
    *,
    fused: bool = True,
    hidden: bool = False,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor | None]:
    """Log-probabilities at ``temperature`` and entropies of ``targets`` (B, K - 1), the tokens
    that positions ``-keep .. -2`` predict, under the causal LM ``model``.

    Through the fused LM head (:mod:`~engine.trainers.ppo.fused_head`: no logits over the
    vocabulary) when ``fused`` and the model's logits are the head's plain product; else from
    the last ``keep`` positions' logits with a chunked float32 log-softmax
    (:func:`~engine.trainers.ppo.formulas.chunked_logprobs_entropy`). FSDP gathers the LM head's
    weight only inside the model's own forward, so a sharded model passes ``fused=False``.
    ``entropy`` as there (``grad``, ``detached`` or ``skip``).

    Returns:
        ``(logprobs, entropies, hidden)``: float32 (B, K - 1) tensors, and with ``hidden`` the
        decoder's last hidden states after its final norm (B, L, d), else None.
    """
    head = plain_head(model) if fused else None
    if head is not None:
        states = decoder_hidden(model, input_ids, attention_mask)  # (B, L, d)
        logprobs, entropies = head_logprobs(
            head, states[:, -keep:-1], targets, temperature, entropy
        )
        return logprobs, entropies, states if hidden else None
    out = model(
        input_ids=input_ids,
        attention_mask=attention_mask,
        position_ids=position_ids_from(attention_mask),
        use_cache=False,
        output_hidden_states=hidden,
        logits_to_keep=keep,
    )
    logprobs, entropies = chunked_logprobs_entropy(
        out.logits[:, :-1], targets, temperature, entropy=entropy
    )
    return logprobs, entropies, out.hidden_states[-1] if hidden else None


def decoder_hidden(
    model: nn.Module, input_ids: torch.Tensor, attention_mask: torch.Tensor
) -> torch.Tensor:
    """The decoder's last hidden states, after its final norm, without the LM head: (B, L, d)."""
    return _decoder_of(model)(
        input_ids=input_ids,
        attention_mask=attention_mask,
        position_ids=position_ids_from(attention_mask),
        use_cache=False,
    ).last_hidden_state


def _decoder_of(model: nn.Module) -> nn.Module:
    """The transformer body (no LM head) of a causal LM, unwrapping a PEFT model if needed."""
    base = model
    if hasattr(base, "get_base_model"):  # peft: copy the plain base model, not the adapters
        base = base.get_base_model()
    if hasattr(base, "get_decoder"):
        decoder = base.get_decoder()
        if decoder is not None:
            return decoder
    prefix = getattr(base, "base_model_prefix", "")
    if prefix and hasattr(base, prefix):
        return getattr(base, prefix)
    raise ValueError(f"cannot find the decoder of {type(model).__name__} for a value model")
