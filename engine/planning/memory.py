"""Peak GPU memory of a run, estimated before launch from the model's config and the RunConfig.

Nothing is loaded or downloaded: the model is built on the meta device
(:func:`engine.models.loading.meta_model`) for its shape. Each term follows what the code allocates:

- **weights**: parameters x bytes of the dtype (bf16 on a GPU, fp32 on CPU); under 4-bit NF4
  with double quantisation, the linear layers' weights at 4.127 bits each (QLoRA, Dettmers et al.
  2023, §2-3: 0.127 bits of quantisation constants per parameter), the rest (embeddings, norms,
  LM head) in float32, where peft's ``prepare_model_for_kbit_training`` casts every 16-bit
  parameter that is not ``Params4bit`` (see 4-bit below); a full fine-tune's FSDP shards in
  float32 (see FSDP below);
- **optimizer**: AdamW's two moments per trainable parameter in the parameter's dtype
  (``torch.optim.AdamW`` keeps ``exp_avg`` and ``exp_avg_sq`` like the parameter). A full
  fine-tune here is pure bf16 (weights, gradients and moments 2 bytes each, 8 bytes/parameter),
  not the 16 bytes/parameter of mixed precision with fp32 master weights counted by the ZeRO
  paper (Rajbhandari et al. 2020, §3.1); LoRA adapters are kept in fp32 by peft
  (``autocast_adapter_dtype``), 16 bytes per adapter parameter;
- **gradients**: one per trainable parameter, in its dtype, alive from the first micro-batch's
  backward to the optimizer step (gradient accumulation);
- **optimizer step**: our PPO's ``torch.optim.AdamW`` runs its ``foreach`` path on a GPU, whose
  ``torch._foreach_sqrt(exp_avg_sqs)`` is one temporary copy of the trainable parameters
  (``torch/optim/adamw.py``, ``_multi_tensor_adamw``); TRL's trainers use transformers'
  default ``adamw_torch_fused`` (one fused kernel, no copies), so it is 0 there;
- **DDP buckets**: under DDP (``processes`` > 1) the reducer keeps a flat copy of every gradient
  in its buckets, "equal to the total gradients size" (PyTorch ``DistributedDataParallel`` docs,
  ``gradient_as_bucket_view``, left False by transformers and accelerate);
- **FSDP**: weights, gradients, optimizer and reference are divided by the GPUs (``FULL_SHARD``,
  ZeRO-3); the unsharded root unit (embeddings, final norm, LM head: FSDP1 keeps the root
  unsharded between forward and backward) and two layer units (the one computing and the one
  prefetched, ``BACKWARD_PRE``), each with its unsharded gradient, are added as "FSDP gathered".
  A full fine-tune's shards are float32 whatever the model's dtype: when the trainer runs in
  bf16, accelerate upcasts each trainable flat parameter "to hold the parameters in full
  precision" as DeepSpeed does (``Accelerator.prepare_model``), so its weights, gradients and
  AdamW moments take 16 bytes a parameter before the division. A memory history of an 8.5B
  model on 2 x H200 (bench/RESULTS.md) found them so at the peak, the end of the backward: the
  float32 shards, both moments and every sharded float32 gradient alive, the activations already
  freed. The sharded gradients are made as the activations are freed, unit by unit, so the update
  counts the larger of the two rather than both; and the peak was the same at one and at two
  micro-batches a step (67.9 GiB), so the gradients are counted sharded either way. TRL samples
  with the full weights gathered on every GPU (``unwrap_model_for_generation``), which the
  generation phase counts;
- **activations** kept for the backward pass of one micro-batch, per layer and token at 16-bit
  precision (scaled by the activation dtype), Korthikanti et al. 2022 ("Reducing Activation
  Recomputation in Large Transformer Models", §4.1, eq. 1) adapted to a SwiGLU MLP with
  intermediate size ``I`` and fused (SDPA/flash) attention that keeps no ``s x s`` scores:
  attention 10h (its input, Q, K, V, the attention output), two norms 4h, MLP 2h + 6I (its input,
  gate, up and their product): ``16 h + 6 I`` bytes. That is what the compiled layers keep
  (:mod:`engine.trainers.compiled_layers`; inductor's partitioner recomputes the cheap
  element-wise ops): on one H100 the measured peak of a GRPO step grew by 18.0 GiB from 64 to
  128 sequences of 283 tokens (24.0 -> 42.0 GiB, bench/RESULTS.md), 44.5 kB per token and layer
  against the formula's 42.5. Eager layers keep more: transformers' RMSNorm upcasts its input to
  float32 and autograd keeps that copy beside the bf16 product (``Qwen2RMSNorm.forward``: +4h
  per norm), and the SiLU output is kept apart from the gate (+2I): ``24 h + 8 I`` bytes, which
  the eager GRPO peak (30.8 GiB at 64 sequences) matches within 4%. With activation checkpointing
  (Chen et al. 2016, "Training Deep Nets with Sublinear Memory Cost") only each layer's input
  (``2 h`` bytes) is kept, plus one layer's full set while it is recomputed;
- **LoRA inputs**: what peft's adapted layers keep beside the base layer's activations. Each
  ``lora.Linear`` casts its input to the adapter's float32 (``_cast_input_dtype``), runs it
  through dropout (``nn.Identity`` at dropout 0) and ``lora_A``, whose product keeps its input
  and whose ``r`` outputs ``lora_B`` keeps (peft ``tuners/lora/layer.py``, ``Linear.forward``).
  Eager layers keep a float32 copy of the input of every adapted layer (4 bytes per input
  feature), plus dropout's mask (1 byte) when dropout is on. Compiled layers keep less: on one
  H100, SmolLM2-135M (30 layers, h 576) under LoRA r16 on all seven projections, dropout 0,
  peaked 7.38 GiB higher at 64 than at 32 completions of 392 tokens (10.67 -> 18.05 GiB), 21.1 kB
  per token and layer against 18.4 for the base formula: 2.6 kB more, which is one float32 copy
  of the layer's input (4h, 2.3 kB) and the adapters' outputs (4r per adapted layer, 0.45 kB).
  Dropout's masks (1 byte per adapted input feature) come on top either way: they are random,
  so inductor keeps them rather than recomputing them. An 8.5B Qwen2 (32 layers) with LoRA r16
  and dropout 0.05, 16 completions of 283 tokens a micro-batch, peaked at 50.3 GiB, 1% above
  these terms (issue 22);
- **4-bit (QLoRA)** changes the activations' dtype: the embeddings that
  ``prepare_model_for_kbit_training`` cast to float32 put a float32 residual stream into the
  layers, and bitsandbytes' ``Linear4bit.forward`` returns its product in its input's dtype, so
  the norms, the MLP's gate, up and SiLU outputs and the residual adds stay float32 under bf16
  autocast, beside the bf16 copies autocast makes for the adapters' matmuls. On one H200, the
  decoder layers' forward under autocast (LoRA r16 on every projection, dropout 0) kept 89,394
  bytes per token and layer at Qwen2.5-0.5B's widths (h 896, I 4864) and 354,922 at the 8.5B
  shape's (h 3584, I 18944), against ``14 I + 24 h`` = 89,600 and 351,232: the three float32
  I-wide tensors (12I), the down projection's bf16 input copy (2I), and 24h of float32 norm
  tensors and bf16 casts (bench/RESULTS.md, issue 42). That counts the adapters' inputs too, so
  there is no separate "LoRA inputs" term but dropout's masks. The layers do not train compiled
  over ``Linear4bit`` (dynamo breaks the graph on bitsandbytes' ``.data`` dtype change and
  recompiles per layer until ``recompile_limit``): a 0.5B QLoRA step peaked at 74.1 GiB
  compiled and 73.3 eager, so 4-bit counts this figure either way. By the same code, not
  measured apart: the LM head's hidden states (the final norm's float32 output), the
  checkpointed layer inputs and the KV cache (the k and v projections' float32 products) are
  float32 too, and transformers' ``generate`` samples (the static-cache sampler refuses
  bitsandbytes weights, :func:`engine.generation.decoder.unsupported_reason`), so the cache is
  not persistent;
- **LM head**: log-probabilities come from a fused head that never builds the logits (TRL 1.16's
  GRPO and RLOO patch the model with ``add_fused_lm_head``; our PPO uses the same
  ``ChunkedLogProbFunction``, :mod:`engine.trainers.ppo.fused_head`). Its backward holds one
  ``4096 x 32768`` tile, the gradient of the completion tokens' hidden states in float32 plus
  their saved copy and cast (``4 + 2 x dtype`` bytes per token and ``h``), and, when the head
  trains (a full fine-tune), a float32 accumulator of the head's weight gradient and its cast
  (``trl/kernels/chunked_logprob.py``, ``ChunkedLogProbFunction.backward``);
- **logits** only where PPO cannot use the fused head (FSDP, or a model that scales or
  soft-caps its logits): micro-batch x completion length x vocabulary, three tensors of the
  activation dtype (the logits, their float32 chunks' share, their gradient);
- **KV cache** of generation, which samples a device's whole step at once: layers x 2 (K, V) x
  key-value heads x head dim x completions per device x (prompt + completion length) x dtype
  bytes (HF's "model memory anatomy" guide and the transformers KV-cache docs). The static-cache
  sampler (``generation.backend`` auto or compiled, one process without FSDP) rounds
  the prompt up to its bucket and keeps the cache allocated between steps
  (:mod:`engine.generation.runner`), so there it is persistent, alive through the update too,
  with the sampler's merged copies of the q/k/v and gate/up weights
  (:mod:`engine.generation.decode_weights`, up to 1 GiB);
- **reference model** (a frozen copy of the weights) when the KL coefficient is > 0 and the
  model is not LoRA (with LoRA the base with adapters off is the reference);
- **value model** for PPO's ``value_model: separate``: a full trainable copy (weights, gradients
  and AdamW moments); the shared value head is a single linear layer.

Generation, the update and the optimizer step do not overlap, so the peak is the persistent part
(weights, optimizer, reference, value model, DDP buckets, FSDP's gathered units, a static KV
cache) plus the largest of the generation phase (transformers' KV cache), the update phase
(gradients, activations, LM head, logits) and the optimizer step (gradients and its
temporaries). Prompts are assumed ``PROMPT_TOKENS`` long (the measured runs' were 17-27).

Margins: a **margin** term of ``PER_TOKEN_MARGIN`` (15%) of the per-token terms (activations, LM
head, logits) covers the measured slope running 4.6% above the formula and padding to the longest
prompt of a micro-batch. On the measured runs of bench/RESULTS.md (listed with their card in
tests/engine/test_memory_measured.py) the estimate at their prompt length is then 9-11% above the
peak allocated (the terms alone: 2-4% below it). Picking the micro-batch against ``CARD_BUDGET``
(80% of the card) keeps the rest for the CUDA context, the allocator's fragmentation (reserved
minus allocated) and prompts longer than ``PROMPT_TOKENS``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from engine.config.run_config import RunConfig
from engine.generation.backend import resolve_backend
from engine.generation.runner import bucket
from engine.models.shape import ModelShape

GIB = 1024**3
PROMPT_TOKENS = 128
# Share of the card the estimate may fill: the rest is the CUDA context, the allocator's
# fragmentation and what the estimate leaves out.
CARD_BUDGET = 0.8
DTYPE_BYTES = {"float32": 4, "bfloat16": 2, "float16": 2}
NF4_BYTES = 4.127 / 8
LORA_BYTES = 4  # peft keeps adapter weights in fp32
# Under 4-bit, the unquantised parameters and the residual stream are float32 (docstring, 4-bit).
FOUR_BIT_STREAM_BYTES = 4
MASTER_BYTES = 4  # accelerate keeps FSDP's trainable shards in fp32
# ChunkedLogProbFunction's tile: TRL's TOKEN_CHUNK_SIZE tokens x our (and TRL's) vocabulary chunk.
HEAD_TILE = 4096 * 32768
# FSDP layer units unsharded at once: the one computing and the one prefetched.
FSDP_UNITS_IN_FLIGHT = 2
# Added to the per-token terms (activations, LM head, logits): the measured slope ran 4.6% above
# the formula, and a micro-batch is padded to its longest prompt.
PER_TOKEN_MARGIN = 0.15

# What lowers each term, for the form and the CLI.
KNOBS = {
    "weights": "model.load_in_4bit, or a smaller model",
    "optimizer": "LoRA (model.lora), or training.distributed: fsdp on several GPUs",
    "gradients": "LoRA (model.lora), or training.distributed: fsdp on several GPUs",
    "optimizer_step": "LoRA (model.lora)",
    "ddp_buckets": "LoRA (model.lora), or training.distributed: fsdp",
    "fsdp_gathered": "a smaller model",
    "activations": "training.micro_batch_size or training.activation_checkpointing",
    "lora_inputs": "lora.dropout 0, or training.micro_batch_size",
    "lm_head": "training.micro_batch_size",
    "logits": "training.micro_batch_size",
    "kv_cache": "generation.max_completion_length or training.prompts_per_step",
    "generation_gather": "a smaller model",
    "reference": "beta / kl_coef 0, or LoRA (the base model is the reference)",
    "value_model": "ppo.value_model: shared",
    "margin": "training.micro_batch_size",
}
LABELS = {
    "weights": "weights",
    "optimizer": "optimizer",
    "gradients": "gradients",
    "optimizer_step": "optimizer step",
    "ddp_buckets": "DDP buckets",
    "fsdp_gathered": "FSDP gathered",
    "activations": "activations",
    "lora_inputs": "LoRA inputs",
    "lm_head": "LM head",
    "logits": "logits",
    "kv_cache": "KV cache",
    "generation_gather": "weights gathered to sample",
    "reference": "reference model",
    "value_model": "value model",
    "margin": "margin",
}


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
        compiled_layers: the decoder layers train compiled (their activations are smaller).
        sharded: FSDP shards the model (its gradients replace the activations as they go).
    """

    terms: dict[str, int]
    micro_batch: int
    dtype: str
    static_cache: bool = False
    compiled_layers: bool = False
    sharded: bool = False

    @property
    def persistent(self) -> int:
        t = self.terms
        kept = t["weights"] + t["optimizer"] + t["reference"] + t["value_model"]
        kept += t["ddp_buckets"] + t["fsdp_gathered"]
        return kept + (t["kv_cache"] if self.static_cache else 0)

    @property
    def peak(self) -> int:
        t = self.terms
        activations = t["activations"] + t["lora_inputs"]
        # FSDP shards each unit's gradients as its activations are freed (module docstring)
        held = max(t["gradients"], activations) if self.sharded else t["gradients"] + activations
        update = held + t["lm_head"] + t["logits"] + t["margin"]
        step = t["gradients"] + t["optimizer_step"]
        generation = t["generation_gather"] + (0 if self.static_cache else t["kv_cache"])
        return self.persistent + max(generation, update, step)

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


def layers_compile(config: RunConfig, on_gpu: bool) -> bool:
    """Whether the run's decoder layers train compiled, as the trainers decide it
    (:func:`engine.trainers.compiled_layers.compiles_on`)."""
    import torch

    from engine.trainers.compiled_layers import compiles_on

    if not on_gpu:
        return False
    t = config.training
    return compiles_on(torch.device("cuda"), t.distributed == "fsdp" and t.processes > 1)


def activation_bytes_per_token_layer(
    shape: ModelShape, act: int, compiled: bool, four_bit: bool = False
) -> int:
    """Bytes one decoder layer keeps per token for its backward (module docstring); under
    4-bit, ``14 I + 24 h`` as measured, the adapters' inputs included ("4-bit")."""
    h, i = shape.hidden, shape.intermediate
    if four_bit:
        return 14 * i + 24 * h
    per_16bit = 16 * h + 6 * i if compiled else 24 * h + 8 * i
    return per_16bit * act // 2


def lora_bytes_per_token(
    shape: ModelShape, lora: Any, act: int, compiled: bool, four_bit: bool = False
) -> int:
    """Bytes the adapted layers of all decoder layers keep per token for the backward, beyond
    the base activations (module docstring, "LoRA inputs"); 0 without LoRA. Under 4-bit the
    activations count the adapters' inputs, so only dropout's masks ("4-bit")."""
    if lora is None or not shape.lora_modules:
        return 0
    outputs = LORA_BYTES * lora.r * shape.lora_modules
    masks = shape.lora_input_features if lora.dropout > 0 else 0
    if four_bit:
        return masks
    if compiled:
        return shape.layers * shape.hidden * LORA_BYTES + outputs + masks
    return shape.lora_input_features * LORA_BYTES + outputs + masks


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
    spec, g, t = config.model, config.generation, config.training
    dtype = spec.dtype if spec.dtype != "auto" else ("bfloat16" if on_gpu else "float32")
    act = DTYPE_BYTES[dtype]
    four_bit = spec.load_in_4bit
    stream = FOUR_BIT_STREAM_BYTES if four_bit else act  # the hidden states' bytes
    fsdp = t.distributed == "fsdp" and t.processes > 1
    shards = t.processes if fsdp else 1  # FSDP shards over every process of every machine
    per_device = config.completions_per_step // t.processes
    b = micro_batch or config.per_device_batch_size()
    completion = g.max_completion_length
    seq = prompt_tokens + completion
    # under 4-bit the static-cache sampler refuses the weights and transformers' generate samples
    static_cache = resolve_backend(g.backend) == "compiled" and not fsdp and not four_bit
    cache_seq = bucket(prompt_tokens) + completion if static_cache else seq
    compiled = layers_compile(config, on_gpu)

    if four_bit:
        linear = shape.linear_parameters
        weights = int(linear * NF4_BYTES) + (shape.parameters - linear) * FOUR_BIT_STREAM_BYTES
    else:
        weights = shape.parameters * act
    full = spec.lora is None
    master = MASTER_BYTES if fsdp else act  # accelerate's float32 shards under FSDP
    stored = shape.parameters * master if full and fsdp else weights  # what the model keeps
    trainable_bytes = shape.parameters * master if full else shape.lora_parameters * LORA_BYTES
    per_token_layer = activation_bytes_per_token_layer(shape, act, compiled, four_bit)
    lora_per_token = lora_bytes_per_token(shape, spec.lora, act, compiled, four_bit)
    if t.activation_checkpointing:
        activations = (shape.layers * shape.hidden * stream + per_token_layer) * b * seq
        lora_inputs = lora_per_token // max(shape.layers, 1) * b * seq  # one layer recomputed
    else:
        activations = shape.layers * per_token_layer * b * seq
        lora_inputs = lora_per_token * b * seq
    # TRL's kernel scales and soft-caps itself; our PPO needs plain logits and no FSDP
    fused = config.algorithm != "ppo" or (shape.fused_head and not fsdp)
    completion_tokens = b * completion
    lm_head = HEAD_TILE * stream + completion_tokens * shape.hidden * (4 + 2 * stream)
    if full:  # the head's weight gradient, accumulated in float32, then cast
        lm_head += shape.vocab * shape.hidden * (4 + act)
    kv_per_token = shape.layers * 2 * shape.kv_heads * shape.head_dim * stream
    sampler_copies = _sampler_weight_copies(shape, act, lora=not full) if static_cache else 0
    value_separate = config.algorithm == "ppo" and config.ppo.value_model == "separate"
    # parameters and gradients (x 2) of the root unit and of the layer units in flight
    gathered = (shape.root_parameters + FSDP_UNITS_IN_FLIGHT * shape.layer_parameters) * act * 2
    lm_head = lm_head if fused else 0
    logits = 0 if fused else 3 * completion_tokens * shape.vocab * act
    terms = {
        "weights": stored // shards,
        "optimizer": 2 * trainable_bytes // shards,
        "gradients": trainable_bytes // shards,
        "optimizer_step": trainable_bytes // shards if config.algorithm == "ppo" else 0,
        "ddp_buckets": trainable_bytes if t.processes > 1 and not fsdp else 0,
        "fsdp_gathered": gathered if fsdp else 0,
        "activations": activations,
        "lora_inputs": lora_inputs,
        "lm_head": lm_head,
        "logits": logits,
        "kv_cache": kv_per_token * per_device * cache_seq + sampler_copies,
        "generation_gather": stored - stored // shards if fsdp else 0,
        "reference": weights // shards if _uses_reference(config) and full else 0,
        "value_model": 4 * shape.parameters * act // shards if value_separate else 0,
        "margin": int(PER_TOKEN_MARGIN * (activations + lora_inputs + lm_head + logits)),
    }
    return MemoryEstimate(
        terms=terms,
        micro_batch=b,
        dtype=dtype,
        static_cache=static_cache,
        compiled_layers=compiled,
        sharded=fsdp,
    )


def _sampler_weight_copies(shape: ModelShape, act: int, lora: bool) -> int:
    """The static-cache sampler's merged projections (:mod:`engine.generation.decode_weights`):
    q/k/v and gate/up copied per layer, o and down too under LoRA; none above its size limit."""
    from engine.generation.decode_weights import MAX_COPY_BYTES

    kv = shape.kv_heads * shape.head_dim
    per_layer = shape.hidden * (shape.hidden + 2 * kv) + 2 * shape.hidden * shape.intermediate
    if lora:
        per_layer += shape.hidden * shape.hidden + shape.intermediate * shape.hidden
    copies = shape.layers * per_layer * act
    return copies if copies <= MAX_COPY_BYTES else 0


def _uses_reference(config: RunConfig) -> bool:
    if config.algorithm == "grpo":
        return config.grpo.beta > 0
    if config.algorithm == "rloo":
        return config.rloo.beta > 0
    return config.ppo.kl_coef > 0 or config.ppo.kl_mode == "adaptive"
