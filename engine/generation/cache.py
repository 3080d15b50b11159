"""A static key/value cache: one pre-allocated (N, H_kv, L, D) buffer pair per layer.

The buffers never move, so a decode step captured as a CUDA graph keeps reading and writing
the same addresses (gpt-fast's ``KVCache``; nano-vllm pages its cache instead, which pays off
for many requests of mixed length, not for one training batch of equal budgets).
"""

from __future__ import annotations

import torch


class StaticKVCache:
    """Keys and values of ``num_rows`` sequences of up to ``max_len`` tokens, for every layer."""

    def __init__(
        self,
        num_layers: int,
        num_rows: int,
        kv_heads: int,
        max_len: int,
        head_dim: int,
        dtype: torch.dtype,
        device: torch.device,
    ) -> None:
        shape = (num_rows, kv_heads, max_len, head_dim)
        self.keys = [torch.zeros(shape, dtype=dtype, device=device) for _ in range(num_layers)]
        self.values = [torch.zeros(shape, dtype=dtype, device=device) for _ in range(num_layers)]
        self.num_rows, self.max_len = num_rows, max_len

    def fits(self, num_rows: int, max_len: int, dtype: torch.dtype) -> bool:
        """True when this cache has exactly this shape and dtype (graphs depend on both)."""
        return self.num_rows == num_rows and self.max_len == max_len and self.keys[0].dtype == dtype

    def write_prefix(
        self,
        layer: int,
        key: torch.Tensor,
        value: torch.Tensor,
        rows: torch.Tensor,
        sources: torch.Tensor,
    ) -> None:
        """Copy prefilled prompts into positions ``0..P-1`` of several rows each.

        ``key``/``value``: (U, H_kv, P, D) for U distinct prompts; row ``rows[j]`` gets prompt
        ``sources[j]``. This is how a GRPO group shares one prefill among its G completions.
        """
        width = key.shape[2]
        self.keys[layer][rows, :, :width] = key[sources]
        self.values[layer][rows, :, :width] = value[sources]

    def keep_rows(self, rows: torch.Tensor, upto: int) -> StaticKVCache:
        """A cache of ``rows`` alone, in that order: their first ``upto`` positions move to the
        front of these buffers, which the returned cache views. For dropping finished rows
        between eager token steps; no captured graph may read these buffers meanwhile."""
        kept = object.__new__(StaticKVCache)
        count = len(rows)
        for buffers in (self.keys, self.values):
            for layer in buffers:
                layer[:count, :, :upto] = layer[rows, :, :upto]  # the right side is a copy
        kept.keys = [layer[:count] for layer in self.keys]
        kept.values = [layer[:count] for layer in self.values]
        kept.num_rows, kept.max_len = count, self.max_len
        return kept
