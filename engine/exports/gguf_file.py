"""Writing a transformers causal LM as a GGUF file (llama.cpp, Ollama, LM Studio read it).

Written with the ``gguf`` package, llama.cpp's own Python writer, laid out as llama.cpp's
``convert_hf_to_gguf.py`` lays out the same models: tensor names ``token_embd``,
``blk.N.attn_q`` ..., query and key rows of Llama-style models permuted for llama.cpp's rotary
layout (``LlamaModel.permute``), norms kept in F32, and the tokenizer and chat template in the
metadata under the ``tokenizer.ggml.*`` keys, which transformers' ``gguf_file=`` loader reads
back (``transformers/integrations/gguf/gguf_tokenizer_mapping.py``).

Supported: Llama-, Mistral- (written as ``llama``, as llama.cpp does) and Qwen2-style models.
Tokenizers: byte-level BPE (Qwen2, Llama 3, SmolLM2), written as llama.cpp's ``gpt2``
vocabulary, and a character-level word vocabulary (the shipped default model), written as a
sentencepiece (``llama``) vocabulary without merges.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

logger = logging.getLogger(__name__)

#: Weight encodings a user may ask for (llama.cpp's names).
QUANTS = ("F16", "Q8_0")
#: transformers ``model_type`` -> llama.cpp architecture.
ARCHITECTURES = {"llama": "llama", "mistral": "llama", "qwen2": "qwen2"}
#: Architectures whose q/k rows llama.cpp permutes (``LlamaModel.permute``); Qwen2's it does not.
PERMUTED_QK = ("llama",)
#: GGUF token types (llama.cpp ``gguf.TokenType``).
NORMAL, CONTROL, UNUSED = 1, 3, 5
#: Sentencepiece's spelling of a space.
SPACE = "\u2581"


class GGUFExportError(ValueError):
    """The model (or its tokenizer) cannot be written as GGUF; the message names what."""


@dataclass(frozen=True)
class Vocab:
    """A tokenizer as llama.cpp stores it."""

    model: str
    pre: str
    tokens: list[str]
    types: list[int]
    merges: list[str]


def gguf_architecture(model_type: str, architectures: list[str] | None = None) -> str:
    """llama.cpp's architecture for a transformers ``model_type``; refuses others by name."""
    if model_type not in ARCHITECTURES:
        named = ", ".join(architectures or []) or model_type
        raise GGUFExportError(
            f"GGUF export supports Llama-, Mistral- and Qwen2-style models "
            f"({', '.join(sorted(ARCHITECTURES))}); this model is {named} "
            f"(model_type {model_type!r})"
        )
    return ARCHITECTURES[model_type]


def read_vocab(tokenizer: Any, vocab_size: int) -> Vocab:
    """The tokenizer's vocabulary, padded with unused tokens to the model's ``vocab_size``."""
    backend = getattr(tokenizer, "backend_tokenizer", None)
    if backend is None:
        raise GGUFExportError(
            f"GGUF export needs a fast tokenizer (tokenizer.json); got {type(tokenizer).__name__}"
        )
    data = json.loads(backend.to_str())
    model = data["model"]
    special = {t["id"] for t in data.get("added_tokens", []) if t.get("special")}
    by_id = {i: t for t, i in tokenizer.get_vocab().items()}
    if model["type"] == "WordLevel":
        kind, pre, merges = "llama", "default", []
        tokens = _char_tokens(by_id, special)
    elif model["type"] == "BPE" and _byte_level(data):
        kind, pre = "gpt2", _bpe_pre(data["pre_tokenizer"])
        tokens = [by_id.get(i, f"[PAD{i}]") for i in range(max(by_id) + 1)]
        merges = [m if isinstance(m, str) else " ".join(m) for m in model.get("merges", [])]
    else:
        raise GGUFExportError(
            f"GGUF export writes byte-level BPE and character tokenizers; this tokenizer is "
            f"{model['type']} (pre-tokenizer {(data.get('pre_tokenizer') or {}).get('type')})"
        )
    if len(tokens) > vocab_size:
        raise GGUFExportError(
            f"the tokenizer has {len(tokens)} tokens but the model only {vocab_size} embeddings"
        )
    types = [CONTROL if i in special else NORMAL for i in range(len(tokens))]
    for i in range(len(tokens), vocab_size):  # embedding rows no token uses (llama.cpp: [PADn])
        tokens.append(f"[PAD{i}]")
        types.append(UNUSED)
    return Vocab(model=kind, pre=pre, tokens=tokens, types=types, merges=merges)


def _bpe_pre(pre: dict) -> str:
    """llama.cpp's name for how a byte-level BPE splits text before merging (``tokenizer.
    ggml.pre``): GPT-2's own regex, or one of the splits both llama.cpp and transformers'
    loader know (``GGUF_PRE_TOKENIZER_SPLITS``: Qwen2, Llama 3, ...), matched by pattern."""
    from transformers.integrations.gguf.gguf_tokenizer_mapping import GGUF_PRE_TOKENIZER_SPLITS

    parts = pre.get("pretokenizers", []) if pre.get("type") == "Sequence" else [pre]
    types = [p.get("type") for p in parts]
    if types == ["ByteLevel"] and parts[0].get("use_regex", True):
        return "gpt-2"
    if types == ["Split", "ByteLevel"]:
        pattern = (parts[0].get("pattern") or {}).get("Regex")
        names = {regex: name for name, regex in reversed(GGUF_PRE_TOKENIZER_SPLITS.items())}
        if pattern in names:
            return names[pattern]
    raise GGUFExportError(
        f"GGUF export does not know this tokenizer's pre-tokenizer ({' + '.join(map(str, types))}"
        "); known: GPT-2's, and the Qwen2, Llama 3 and other splits llama.cpp names"
    )


def _byte_level(data: dict) -> bool:
    pre = data.get("pre_tokenizer") or {}
    parts = pre.get("pretokenizers", [pre]) if pre.get("type") == "Sequence" else [pre]
    return any(p.get("type") == "ByteLevel" for p in parts)


def _char_tokens(by_id: dict[int, str], special: set[int]) -> list[str]:
    """A character vocabulary as llama.cpp's sentencepiece (``llama``) vocabulary: one token
    per character, the space spelled ``▁``, no merges (none can apply), no space prefix.

    Not a ``gpt2`` vocabulary: llama.cpp refuses one without merges, the gguf writer cannot
    write an empty list, and any merge would name a token that is not in the vocabulary.
    """
    out = []
    for i in range(max(by_id) + 1):
        token = by_id.get(i, f"[PAD{i}]")
        if i not in special and len(token) != 1:
            raise GGUFExportError(
                f"GGUF export of a word vocabulary needs one character per token; token {i} "
                f"is {token!r}"
            )
        out.append(SPACE if token == " " and i not in special else token)
    return out


def _permute(weights: np.ndarray, n_head: int) -> np.ndarray:
    """llama.cpp's rotary row order for q/k (``convert_hf_to_gguf.LlamaModel.permute``)."""
    return (
        weights.reshape(n_head, 2, weights.shape[0] // n_head // 2, *weights.shape[1:])
        .swapaxes(1, 2)
        .reshape(weights.shape)
    )


_LAYER_NAMES = {
    "input_layernorm.weight": "attn_norm.weight",
    "post_attention_layernorm.weight": "ffn_norm.weight",
    "self_attn.q_proj.weight": "attn_q.weight",
    "self_attn.k_proj.weight": "attn_k.weight",
    "self_attn.v_proj.weight": "attn_v.weight",
    "self_attn.o_proj.weight": "attn_output.weight",
    "self_attn.q_proj.bias": "attn_q.bias",
    "self_attn.k_proj.bias": "attn_k.bias",
    "self_attn.v_proj.bias": "attn_v.bias",
    "mlp.gate_proj.weight": "ffn_gate.weight",
    "mlp.up_proj.weight": "ffn_up.weight",
    "mlp.down_proj.weight": "ffn_down.weight",
}
_TOP_NAMES = {
    "model.embed_tokens.weight": "token_embd.weight",
    "model.norm.weight": "output_norm.weight",
    "lm_head.weight": "output.weight",
}


def gguf_tensor_name(name: str) -> str:
    """The GGUF name of a transformers parameter (``model.layers.3.mlp.up_proj.weight`` ->
    ``blk.3.ffn_up.weight``)."""
    if name in _TOP_NAMES:
        return _TOP_NAMES[name]
    parts = name.split(".", 3)
    if len(parts) == 4 and parts[:2] == ["model", "layers"] and parts[3] in _LAYER_NAMES:
        return f"blk.{parts[2]}.{_LAYER_NAMES[parts[3]]}"
    raise GGUFExportError(f"GGUF export does not know where to put the tensor {name!r}")


def write_gguf(model: Any, tokenizer: Any, path: str | Path, quant: str = "F16") -> Path:
    """Write ``model`` (a plain transformers causal LM) and ``tokenizer`` to the GGUF ``path``.

    ``quant``: ``F16``, or ``Q8_0`` (llama.cpp's 8-bit blocks of 32; matrices whose rows are
    not a multiple of 32 stay F16). Norms and biases are F32 either way, as llama.cpp writes
    them.
    """
    import gguf
    import torch

    if quant not in QUANTS:
        raise GGUFExportError(f"quant must be one of {', '.join(QUANTS)}, got {quant!r}")
    config = model.config
    arch = gguf_architecture(config.model_type, getattr(config, "architectures", None))
    n_head = config.num_attention_heads
    n_kv = getattr(config, "num_key_value_heads", None) or n_head
    head_dim = getattr(config, "head_dim", None) or config.hidden_size // n_head
    vocab = read_vocab(tokenizer, config.vocab_size)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    writer = gguf.GGUFWriter(str(path), arch)
    writer.add_name(Path(str(getattr(config, "_name_or_path", "") or "model")).name or "model")
    writer.add_context_length(config.max_position_embeddings)
    writer.add_embedding_length(config.hidden_size)
    writer.add_block_count(config.num_hidden_layers)
    writer.add_feed_forward_length(config.intermediate_size)
    writer.add_head_count(n_head)
    writer.add_head_count_kv(n_kv)
    writer.add_rope_dimension_count(head_dim)
    if head_dim * n_head != config.hidden_size:
        writer.add_key_length(head_dim)
        writer.add_value_length(head_dim)
    writer.add_layer_norm_rms_eps(config.rms_norm_eps)
    writer.add_rope_freq_base(_rope_theta(config))
    writer.add_vocab_size(config.vocab_size)
    ftype = gguf.LlamaFileType.MOSTLY_Q8_0 if quant == "Q8_0" else gguf.LlamaFileType.MOSTLY_F16
    writer.add_file_type(ftype)
    _add_vocab(writer, vocab, tokenizer)

    tied = bool(getattr(config, "tie_word_embeddings", False))
    for name, tensor in model.state_dict().items():
        if name == "lm_head.weight" and tied:
            continue  # llama.cpp reuses token_embd, and transformers' loader ties it back
        if name.endswith("rotary_emb.inv_freq"):
            continue
        data = tensor.detach().to("cpu", torch.float32).numpy()
        if arch in PERMUTED_QK and name.endswith("self_attn.q_proj.weight"):
            data = _permute(data, n_head)
        elif arch in PERMUTED_QK and name.endswith("self_attn.k_proj.weight"):
            data = _permute(data, n_kv)
        _add_tensor(writer, gguf, gguf_tensor_name(name), data, quant)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    logger.info("wrote %s (%s, %s)", path, arch, quant)
    return path


def _rope_theta(config: Any) -> float:
    params = getattr(config, "rope_parameters", None) or {}
    return float(params.get("rope_theta", getattr(config, "rope_theta", 10000.0)))


def _add_vocab(writer: Any, vocab: Vocab, tokenizer: Any) -> None:
    writer.add_tokenizer_model(vocab.model)
    writer.add_tokenizer_pre(vocab.pre)
    writer.add_token_list(vocab.tokens)
    writer.add_token_types(vocab.types)
    # Always present: llama.cpp refuses a BPE vocabulary without the key, and transformers
    # would derive merges from scores instead (a character vocabulary has none).
    if vocab.merges:
        writer.add_token_merges(vocab.merges)
    if vocab.model == "llama":  # sentencepiece: merges come from scores (a character vocab: none)
        writer.add_token_scores([0.0] * len(vocab.tokens))
        writer.add_add_space_prefix(False)
    for token_id, add in (
        (tokenizer.bos_token_id, writer.add_bos_token_id),
        (tokenizer.eos_token_id, writer.add_eos_token_id),
        (tokenizer.unk_token_id, writer.add_unk_token_id),
        (tokenizer.pad_token_id, writer.add_pad_token_id),
    ):
        if token_id is not None:
            add(int(token_id))
    probe = tokenizer("a").input_ids  # whether the tokenizer itself puts BOS in front
    writer.add_add_bos_token(bool(probe) and probe[0] == tokenizer.bos_token_id)
    if isinstance(getattr(tokenizer, "chat_template", None), str):
        writer.add_chat_template(tokenizer.chat_template)


def _add_tensor(writer: Any, gguf: Any, name: str, data: np.ndarray, quant: str) -> None:
    if data.ndim == 1:  # norms and biases: F32, as llama.cpp keeps them
        writer.add_tensor(name, data.astype(np.float32))
    elif (
        quant == "Q8_0"
        and data.shape[-1] % gguf.GGML_QUANT_SIZES[gguf.GGMLQuantizationType.Q8_0][0] == 0
    ):
        packed = gguf.quants.quantize(data, gguf.GGMLQuantizationType.Q8_0)
        writer.add_tensor(name, packed, raw_dtype=gguf.GGMLQuantizationType.Q8_0)
    else:
        writer.add_tensor(name, data.astype(np.float16))
