"""Decode attention as one Triton kernel: a few query rows per key/value head, one pass over the
written part of the cache.

Flash-decoding's loop (Dao et al. 2023, "Flash-Decoding for long-context inference"; the online
softmax of Milakov & Gimelshein 2018): one program per (row, key/value head) keeps the G query
heads that share it as a tile of rows, walks the cache in blocks of positions with a running
maximum and sum, and stops at the slot being written, so a step reads only the positions that
hold tokens (on average half the cache over a completion) instead of the whole buffer. The slot
is read from device memory, so a captured CUDA graph replays the right bound at every step.

Used by :func:`engine.generation.decoder.decode_attention` on CUDA when Triton is present; the
batched-product version stays the reference and the fallback.
"""

from __future__ import annotations

import functools
import importlib.util
from dataclasses import dataclass

import torch

# Looked up once: ``torch.compile`` cannot trace importlib, and the sampler asks inside it.
_TRITON = importlib.util.find_spec("triton") is not None


def available() -> bool:
    return _TRITON


@functools.cache
def _kernel():
    import triton
    import triton.language as tl

    @triton.jit
    def decode_attention_kernel(
        q_ptr,
        k_ptr,
        v_ptr,
        valid_ptr,
        slot_ptr,
        out_ptr,
        scale,
        stride_qn,
        stride_qh,
        stride_qg,
        stride_kn,
        stride_kh,
        stride_kl,
        stride_vn,
        stride_vh,
        stride_vl,
        stride_mn,
        stride_on,
        stride_oh,
        stride_og,
        heads: tl.constexpr,
        group: tl.constexpr,
        dim: tl.constexpr,
        block_g: tl.constexpr,
        block_l: tl.constexpr,
    ):
        pid = tl.program_id(0)
        n = pid // heads
        h = pid % heads
        g = tl.arange(0, block_g)
        d = tl.arange(0, dim)
        rows = g[:, None] < group
        q = tl.load(
            q_ptr + n * stride_qn + h * stride_qh + g[:, None] * stride_qg + d[None, :],
            mask=rows,
            other=0.0,
        )
        end = tl.load(slot_ptr) + 1  # positions past the slot hold no token yet
        m_i = tl.full([block_g], float("-inf"), tl.float32)
        l_i = tl.zeros([block_g], tl.float32)
        acc = tl.zeros([block_g, dim], tl.float32)
        for start in range(0, end, block_l):
            pos = start + tl.arange(0, block_l)
            inside = pos < end
            ok = tl.load(valid_ptr + n * stride_mn + pos, mask=inside, other=0) != 0
            k = tl.load(
                k_ptr + n * stride_kn + h * stride_kh + pos[:, None] * stride_kl + d[None, :],
                mask=inside[:, None],
                other=0.0,
            )
            # float32 throughout: a Python float reaches the compiled kernel as a double.
            s = (tl.dot(q, tl.trans(k)) * scale).to(tl.float32)  # (block_g, block_l)
            s = tl.where(ok[None, :], s, float("-inf"))
            m_new = tl.maximum(m_i, tl.max(s, 1))
            # A block of left padding only: keep the running sums as they are (no NaN).
            m_safe = tl.where(m_new == float("-inf"), 0.0, m_new)
            alpha = tl.exp(m_i - m_safe)
            p = tl.exp(s - m_safe[:, None])
            l_i = l_i * alpha + tl.sum(p, 1)
            v = tl.load(
                v_ptr + n * stride_vn + h * stride_vh + pos[:, None] * stride_vl + d[None, :],
                mask=inside[:, None],
                other=0.0,
            )
            acc = acc * alpha[:, None] + tl.dot(p.to(v.dtype), v)
            m_i = m_new
        out = acc / l_i[:, None]
        tl.store(
            out_ptr + n * stride_on + h * stride_oh + g[:, None] * stride_og + d[None, :],
            out.to(out_ptr.dtype.element_ty),
            mask=rows,
        )

    return decode_attention_kernel


@dataclass(frozen=True)
class LaunchConfig:
    """Cache positions per loop iteration, warps per program, software-pipelining stages.

    The defaults were the fastest of 48 settings at 256 rows x 320 positions on one H100
    (``bench/attention_sweep.py``: 8.2 us with the cache written to its middle, 13.1 us to its
    end, against 9.1 and 13.4 us at Triton's 4 warps and 3 stages).
    """

    block_l: int = 64
    num_warps: int = 2
    num_stages: int = 2


DEFAULT_CONFIG = LaunchConfig()


def supports(q: torch.Tensor, keys: torch.Tensor) -> bool:
    """Shapes the kernel handles: a power-of-two head size of 16..256 on contiguous rows."""
    dim = q.shape[-1]
    return (
        dim in (16, 32, 64, 128, 256)
        and q.stride(-1) == 1
        and keys.stride(-1) == 1
        and q.dtype in (torch.bfloat16, torch.float16)
    )


def launch(
    q: torch.Tensor,
    keys: torch.Tensor,
    values: torch.Tensor,
    valid: torch.Tensor,
    slot: torch.Tensor,
    scale: float,
    out: torch.Tensor,
    kernel=None,
    launch_config: LaunchConfig = DEFAULT_CONFIG,
) -> None:
    """Write softmax attention of q (N, Hkv, G, D) over keys/values (N, Hkv, L, D) at the valid
    (N, L) positions up to ``slot`` into ``out`` (like q). ``kernel``: the Triton kernel, or a
    wrapper of it (the operator's ``wrap_triton``)."""
    n, heads, group, dim = q.shape
    kernel = kernel or _kernel()
    kernel[(n * heads,)](
        q,
        keys,
        values,
        valid,
        slot,
        out,
        scale,
        *q.stride()[:3],
        *keys.stride()[:3],
        *values.stride()[:3],
        valid.stride(0),
        *out.stride()[:3],
        heads=heads,
        group=group,
        dim=dim,
        block_g=max(16, 1 << (group - 1).bit_length()),
        block_l=launch_config.block_l,
        num_warps=launch_config.num_warps,
        num_stages=launch_config.num_stages,
    )


@functools.cache
def custom_op():
    """The kernel as a torch operator that ``torch.compile`` keeps as one call (and captures);
    registered on first use, outside any compiled region."""
    from torch.library import triton_op, wrap_triton

    @triton_op("studio::decode_attention", mutates_args={})
    def decode_attention(
        q: torch.Tensor,
        keys: torch.Tensor,
        values: torch.Tensor,
        valid: torch.Tensor,
        slot: torch.Tensor,
        scale: float,
    ) -> torch.Tensor:
        out = torch.empty_like(q)
        launch(q, keys, values, valid, slot, scale, out, kernel=wrap_triton(_kernel()))
        return out

    return torch.ops.studio.decode_attention.default
