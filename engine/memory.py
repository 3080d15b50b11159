"""Peak GPU memory of a run, estimated before launch from the model's config and the RunConfig.

Nothing is loaded or downloaded: the model is built on the meta device
(:func:`engine.models.meta_model`) for its shape. The estimate is the sum of

- **weights**: parameters x bytes of the dtype (bf16 on a GPU, fp32 on CPU); under 4-bit NF4
  with double quantisation, the linear layers' weights at 4.127 bits each (QLoRA, Dettmers et al.
  2023, §2-3: 0.127 bits of quantisation constants per parameter), the rest in the dtype;
- **optimizer**: AdamW's two moments per trainable parameter in the parameter's dtype
  (``torch.optim.AdamW`` keeps ``exp_avg`` and ``exp_avg_sq`` like the parameter). A full
  fine-tune here is pure bf16 (weights, gradients and moments 2 bytes each, 8 bytes/parameter),
  not the 16 bytes/parameter of mixed precision with fp32 master weights counted by the ZeRO
  paper (Rajbhandari et al. 2020, §3.1); LoRA adapters are kept in fp32 by peft
  (``autocast_adapter_dtype``), 16 bytes per adapter parameter;
- **gradients**: one per trainable parameter, in its dtype, alive during the update;
- **activations** kept for the backward pass of one micro-batch: per layer and token
  ``16 h + 6 I`` bytes at 16-bit precision, Korthikanti et al. 2022 ("Reducing Activation
  Recomputation in Large Transformer Models", §4.1, eq. 1) adapted to a SwiGLU MLP with
  intermediate size ``I`` and fused (SDPA/flash) attention that keeps no ``s x s`` scores:
  attention 10h (its input, Q, K, V, the attention output), two norms 4h, MLP 2h + 6I (its input,
  gate, up and their product); scaled by the activation dtype. With activation checkpointing
  (Chen et al. 2016, "Training Deep Nets with Sublinear Memory Cost") only each layer's input
  (``2 h`` bytes) is kept, plus one layer's full set while it is recomputed;
- **logits** of one micro-batch over the completion positions (TRL's ``logits_to_keep``, and our
  PPO's ``keep``): micro-batch x completion length x vocabulary, three tensors of the activation
  dtype (the logits, their temperature-scaled copy, their gradient); the float32 log-softmax
  runs per row or per chunk and adds little;
- **KV cache** of generation, which samples a device's whole step at once: layers x 2 (K, V) x
  key-value heads x head dim x completions per device x (prompt + completion length) x dtype
  bytes (HF's "model memory anatomy" guide and the transformers KV-cache docs). The static-cache
  sampler (``generation.backend`` compiled, or auto on a GPU) rounds the prompt up to its bucket
  and keeps the cache allocated between steps (:mod:`engine.generation.runner`), so there it is
  persistent, alive through the update too;
- **reference model** (a frozen copy of the weights) when the KL coefficient is > 0 and the
  model is not LoRA (with LoRA the base with adapters off is the reference);
- **value model** for PPO's ``value_model: separate``: a full trainable copy (weights, gradients
  and AdamW moments); the shared value head is a single linear layer.

Generation and the update do not overlap, so the peak is the persistent part (weights,
optimizer, reference, value model, a static KV cache) plus the larger of the generation phase
(transformers' KV cache) and the update phase (gradients, activations, logits). Prompts are
assumed ``PROMPT_TOKENS`` long.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from engine.config import RunConfig
from engine.generation.runner import bucket
from engine.models import ModelSpec, meta_model, resolve_spec

GIB = 1024**3
PROMPT_TOKENS = 128
# Share of the card the estimate may fill: the rest is the CUDA context, the allocator's
# fragmentation and what the estimate leaves out.
CARD_BUDGET = 0.8
DTYPE_BYTES = {"float32": 4, "bfloat16": 2, "float16": 2}
NF4_BYTES = 4.127 / 8
LORA_BYTES = 4  # peft keeps adapter weights in fp32

# What lowers each term, for the form and the CLI.
KNOBS = {
    "weights": "model.load_in_4bit, or a smaller model",
    "optimizer": "LoRA (model.lora)",
    "gradients": "LoRA (model.lora)",
    "activations": "training.micro_batch_size or training.activation_checkpointing",
    "logits": "training.micro_batch_size",
    "kv_cache": "generation.max_completion_length or training.prompts_per_step",
    "reference": "beta / kl_coef 0, or LoRA (the base model is the reference)",
    "value_model": "ppo.value_model: shared",
}
LABELS = {
    "weights": "weights",
    "optimizer": "optimizer",
    "gradients": "gradients",
    "activations": "activations",
    "logits": "logits",
    "kv_cache": "KV cache",
    "reference": "reference model",
    "value_model": "value model",
}


@dataclass(frozen=True)
class ModelShape:
    """What the estimate needs of a model, read from its config.

    Attributes:
        parameters: all parameters.
        linear_parameters: weights of the linear layers but the output head (what 4-bit
            quantises and ``all-linear`` LoRA adapts).
        lora_parameters: trainable adapter parameters under the spec's LoRA (0 without LoRA).
        layers, hidden, intermediate, kv_heads, head_dim, vocab: the transformer's sizes.
    """

    parameters: int
    linear_parameters: int
    lora_parameters: int
    layers: int
    hidden: int
    intermediate: int
    kv_heads: int
    head_dim: int
    vocab: int


def model_shape(spec: ModelSpec) -> ModelShape | None:
    """The shape of ``spec``'s model, or None when its config cannot be read from here."""
    resolved = resolve_spec(spec)
    try:
        model = meta_model(resolved.name_or_path.strip(), resolved.gguf_file)
    except (OSError, ValueError, ImportError):
        return None
    return shape_of(model, spec)


def shape_of(model: Any, spec: ModelSpec) -> ModelShape:
    """The :class:`ModelShape` of a built (meta or real) model under ``spec``'s LoRA."""
    import torch

    cfg = model.config.get_text_config()
    head = model.get_output_embeddings()
    linears = [
        (name, m)
        for name, m in model.named_modules()
        if isinstance(m, torch.nn.Linear) and m is not head
    ]
    lora = 0
    if spec.lora is not None:
        targets = spec.lora.target_modules
        for name, m in linears:
            leaf = name.rsplit(".", 1)[-1]
            if targets == "all-linear" or leaf in targets:
                lora += spec.lora.r * (m.in_features + m.out_features)
    heads = cfg.num_attention_heads
    return ModelShape(
        parameters=sum(p.numel() for p in model.parameters()),
        linear_parameters=sum(m.weight.numel() for _, m in linears),
        lora_parameters=lora,
        layers=cfg.num_hidden_layers,
        hidden=cfg.hidden_size,
        intermediate=getattr(cfg, "intermediate_size", None) or 4 * cfg.hidden_size,
        kv_heads=getattr(cfg, "num_key_value_heads", None) or heads,
        head_dim=getattr(cfg, "head_dim", None) or cfg.hidden_size // heads,
        vocab=cfg.vocab_size,
    )


def size(n: float) -> str:
    """Bytes in GiB, or MiB below one GiB."""
    return f"{n / GIB:.1f} GiB" if n >= GIB else f"{n / 2**20:.0f} MiB"


@dataclass(frozen=True)
class MemoryEstimate:
    """Peak memory of one device, in bytes, by term (see the module docstring).

    Attributes:
        terms: bytes per term, keys as in ``KNOBS``.
        micro_batch: completions per forward/backward pass the estimate assumed.
        dtype: the weights' dtype name.
        static_cache: the KV cache stays allocated through the update (the static-cache sampler).
    """

    terms: dict[str, int]
    micro_batch: int
    dtype: str
    static_cache: bool = False

    @property
    def persistent(self) -> int:
        t = self.terms
        kept = t["weights"] + t["optimizer"] + t["reference"] + t["value_model"]
        return kept + (t["kv_cache"] if self.static_cache else 0)

    @property
    def peak(self) -> int:
        t = self.terms
        update = t["gradients"] + t["activations"] + t["logits"]
        generation = 0 if self.static_cache else t["kv_cache"]
        return self.persistent + max(generation, update)

    @property
    def biggest(self) -> str:
        return max(self.terms, key=self.terms.__getitem__)

    def summary(self) -> str:
        """One line: the peak, the terms that matter, the biggest one and its knob."""
        parts = [
            f"{LABELS[k]} {size(v)}"
            for k, v in sorted(self.terms.items(), key=lambda kv: -kv[1])
            if v >= 0.02 * self.peak
        ]
        return (
            f"Estimated peak memory per device: {size(self.peak)} ({', '.join(parts)}), "
            f"{self.dtype}, micro-batches of {self.micro_batch}; most is "
            f"{LABELS[self.biggest]}: lower it with {KNOBS[self.biggest]}."
        )


def estimate(
    config: RunConfig,
    shape: ModelShape,
    *,
    on_gpu: bool = True,
    micro_batch: int | None = None,
    prompt_tokens: int = PROMPT_TOKENS,
) -> MemoryEstimate:
    """The peak memory of one device running ``config`` on a model of ``shape``.

    ``micro_batch`` overrides the config's (default: its micro-batch, else the whole step).
    """
    spec, g = config.model, config.generation
    dtype = spec.dtype if spec.dtype != "auto" else ("bfloat16" if on_gpu else "float32")
    act = DTYPE_BYTES[dtype]
    per_device = config.completions_per_step // config.training.num_gpus
    b = micro_batch or config.per_device_batch_size()
    completion = g.max_completion_length
    seq = prompt_tokens + completion
    static_cache = on_gpu and g.backend in ("auto", "compiled")
    cache_seq = bucket(prompt_tokens) + completion if static_cache else seq

    if spec.load_in_4bit:
        linear = shape.linear_parameters
        weights = int(linear * NF4_BYTES) + (shape.parameters - linear) * act
    else:
        weights = shape.parameters * act
    if spec.lora is not None:
        trainable_bytes = shape.lora_parameters * LORA_BYTES
    else:
        trainable_bytes = shape.parameters * act
    per_token_layer = (16 * shape.hidden + 6 * shape.intermediate) * act // 2
    if config.training.activation_checkpointing:
        activations = (shape.layers * shape.hidden * act + per_token_layer) * b * seq
    else:
        activations = shape.layers * per_token_layer * b * seq
    kv_per_token = shape.layers * 2 * shape.kv_heads * shape.head_dim * act
    value_separate = config.algorithm == "ppo" and config.ppo.value_model == "separate"
    terms = {
        "weights": weights,
        "optimizer": 2 * trainable_bytes,
        "gradients": trainable_bytes,
        "activations": activations,
        "logits": 3 * b * completion * shape.vocab * act,
        "kv_cache": kv_per_token * per_device * cache_seq,
        "reference": weights if _uses_reference(config) and spec.lora is None else 0,
        "value_model": 4 * shape.parameters * act if value_separate else 0,
    }
    return MemoryEstimate(terms=terms, micro_batch=b, dtype=dtype, static_cache=static_cache)


def _uses_reference(config: RunConfig) -> bool:
    if config.algorithm == "grpo":
        return config.grpo.beta > 0
    if config.algorithm == "rloo":
        return config.rloo.beta > 0
    return config.ppo.kl_coef > 0 or config.ppo.kl_mode == "adaptive"


def micro_batch_choices(config: RunConfig) -> list[int]:
    """Micro-batch sizes the batch rule allows: divisors of the completions per device."""
    per_device = config.completions_per_step // config.training.num_gpus
    return [d for d in range(per_device, 0, -1) if per_device % d == 0]


def fitting_micro_batch(config: RunConfig, shape: ModelShape, budget_bytes: float) -> int:
    """The largest allowed micro-batch whose estimated peak fits ``budget_bytes`` (1 if none
    does: the smallest step the config allows)."""
    for size in micro_batch_choices(config):
        if estimate(config, shape, micro_batch=size).peak <= budget_bytes:
            return size
    return 1


def with_default_micro_batch(config: RunConfig, card_bytes: int) -> RunConfig:
    """``config`` with ``training.micro_batch_size`` picked for a card of ``card_bytes`` when
    the user left it empty; unchanged otherwise, or when the model's shape is unknown."""
    if config.training.micro_batch_size is not None:
        return config
    shape = model_shape(config.model)
    if shape is None:
        return config
    size = fitting_micro_batch(config, shape, CARD_BUDGET * card_bytes)
    training = replace(config.training, micro_batch_size=size)
    return replace(config, training=training)


def local_card_bytes() -> int | None:
    """Total memory of this process's first visible GPU, or None without CUDA. Total, not
    free: every process of a multi-GPU run must pick the same micro-batch."""
    import torch

    if not torch.cuda.is_available():
        return None
    return torch.cuda.get_device_properties(0).total_memory


def describe(config: RunConfig, card_bytes: int | None) -> str:
    """The estimate's line for ``config`` on a card of ``card_bytes`` (None: on the CPU), or
    why there is none. An empty micro-batch on a card shows the size the run will pick."""
    shape = model_shape(config.model)
    if shape is None:
        return (
            f"No memory estimate: the config of {config.model.name_or_path!r} is not on this "
            "machine."
        )
    on_gpu = card_bytes is not None
    picked = on_gpu and config.training.micro_batch_size is None
    if picked:
        config = with_default_micro_batch(config, card_bytes)
    line = estimate(config, shape, on_gpu=on_gpu).summary()
    if picked:
        line += (
            f" The micro-batch ({config.training.micro_batch_size}) is picked to fit "
            f"{CARD_BUDGET:.0%} of the {size(card_bytes)} card."
        )
    return line
