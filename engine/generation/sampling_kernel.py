"""Temperature sampling as one Triton pass over the logits: the sampled token of each row and its
log-probability under ``log_softmax(logits / temperature)``.

Why: on one H100 (Qwen2.5-0.5B shape, 256 rows, vocabulary 151,936) the sampler took ~0.25 ms
of a 1.88 ms decode step, in three kernels (a float32 exponential-noise fill, a fused
log-softmax/argmax, another log-softmax), where reading the bf16 logits once is 78 MB, ~26 us.

The Gumbel-max trick (Gumbel 1954; Maddison, Tarlow & Minka 2014, "A* Sampling", §2):
``argmax_i (x_i / T + g_i)`` with ``g_i ~ Gumbel(0, 1)`` i.i.d. picks token i with probability
``softmax(x / T)_i`` exactly. Each program walks its share of one row in tiles and keeps, in
float32, the online maximum and sum of ``exp(x / T - max)`` (Milakov & Gimelshein 2018, "Online
normalizer calculation for softmax") and, per lane, the best ``x / T + g`` so far and its column.
It works in base 2 (``x / T * log2(e)``, ``exp2``, ``log2``: the GPU's native instructions); the
log-probability is converted back to nats at the end.

The noise is drawn in the kernel from Philox4x32-10 (Salmon et al. 2011, "Parallel random
numbers: as easy as 1, 2, 3") keyed by a seed read from device memory, so a CUDA-graph replay
draws fresh noise when the seed tensor is redrawn before it (:func:`sample` draws it from the
device's generator, the one a captured graph advances and a seeded call seeds). Counter
``row * ceil(V / 4) + column // 4`` gives its four 32-bit words to four adjacent columns, so every
(row, column) has its own draw, however the row is split over programs.

When the rows alone do not fill the GPU (256 rows on 132 SMs), the vocabulary is split over
several programs per row and a second small kernel merges their partial results exactly: the
log-sum-exps by ``M + log sum_s l_s exp(m_s - M)``, the winner by the largest noisy score.

Used by :func:`engine.generation.sampler.sample_tokens` for plain temperature sampling on CUDA
when Triton is present; the torch paths stay the reference and the fallback.
"""

from __future__ import annotations

import functools

import torch

from engine.generation.attention_kernel import available

# Lanes of a program: each takes 4 adjacent columns (the 4 words of one Philox draw), so a tile
# is 4 * BLOCK columns. With 4 warps, 8 columns a thread: 64 registers on sm_90 (Triton 3.6), 8
# programs resident per SM; a block of 1024 needed 245 registers and left 2.
BLOCK = 256
# Programs resident per SM at 64 registers a thread (enough warps to hide memory latency).
PROGRAMS_PER_SM = 8
MAX_SPLITS = 64
# Rows the merge kernel reduces per program.
MERGE_ROWS = 16
DTYPES = (torch.bfloat16, torch.float16, torch.float32)
LOG2_E = 1.4426950408889634


@functools.cache
def _kernels():
    """The two Triton kernels (partial pass, merge), made on first use so Triton's interpreter
    can be switched on before (tests)."""
    import triton
    import triton.language as tl

    @triton.jit
    def sample_partials_kernel(
        logits_ptr,
        seed_ptr,
        m_ptr,
        l_ptr,
        score_ptr,
        x_ptr,
        col_ptr,
        scale,
        vocab,
        stride_row,
        chunk,
        splits,
        block: tl.constexpr,
        fast_log2: tl.constexpr,
    ):
        row = tl.program_id(0)
        split = tl.program_id(1)
        seed = tl.load(seed_ptr)
        # float32 throughout: a Python float may reach the compiled kernel as a double.
        scale = tl.cast(scale, tl.float32)
        begin = split * chunk
        end = tl.minimum(begin + chunk, vocab)
        row_ptr = logits_ptr + row.to(tl.int64) * stride_row
        lanes = tl.arange(0, block)
        offsets = 4 * lanes[:, None] + tl.arange(0, 4)[None, :]  # (block, 4): a tile's columns
        counters = row * ((vocab + 3) // 4) + lanes  # one Philox counter per 4 columns
        m = tl.max(tl.full([block], float("-inf"), tl.float32), 0)
        sums = tl.zeros([block, 4], tl.float32)
        best_score = tl.full([block, 4], float("-inf"), tl.float32)
        best_col = tl.zeros([block, 4], tl.int32)
        for start in range(begin, end, 4 * block):
            cols = start + offsets
            x = tl.load(row_ptr + cols, mask=cols < end, other=float("-inf")).to(tl.float32)
            x = x * scale  # (block, 4): logits / T in base-2 units
            m_new = tl.maximum(m, tl.max(tl.max(x, 1), 0))
            # A tile of -inf only: keep the running sums as they are (no NaN).
            m_safe = tl.where(m_new == float("-inf"), 0.0, m_new)
            sums = sums * tl.exp2(m - m_safe) + tl.exp2(x - m_safe)
            m = m_new
            # Gumbel noise in base 2, -log2(E) with E = -log2(1 - v) (an Exp(1) draw over ln 2;
            # the constant shift leaves the argmax alone), v = (k + 1/2) / 2^32 from the 32 bits
            # k of a Philox word: strictly inside (0, 1) and precise near 0, where E is small
            # and the noise large (the draws that decide the argmax); below 2^-7 E is the
            # Taylor series of -log2(1 - v), which float32 1 - v would round away.
            w0, w1, w2, w3 = tl.randint4x(seed, counters + start // 4)
            bits = tl.reshape(tl.join(tl.join(w0, w1), tl.join(w2, w3)), (block, 4))
            v = bits.to(tl.float32) * 2.3283064365386963e-10 + 1.1641532182693481e-10
            v = tl.minimum(v, 0.99999994)  # the largest float32 below 1
            series = v * (1.442695 + v * (0.7213475 + v * (0.48089835 + v * 0.36067376)))
            if fast_log2:
                # The GPU's lg2.approx (error ~2^-22): Triton's log2 is a polynomial of a dozen
                # FMAs, and two of them per element would cost more than the Philox draw.
                tail = tl.inline_asm_elementwise(
                    "lg2.approx.ftz.f32 $0, $1;", "=r,r", [1.0 - v], tl.float32, True, 1
                )
                e = tl.where(v < 0.0078125, series, -tail)
                noise = tl.inline_asm_elementwise(
                    "lg2.approx.ftz.f32 $0, $1;", "=r,r", [e], tl.float32, True, 1
                )
                score = x - noise
            else:  # Triton's interpreter, on the CPU
                e = tl.where(v < 0.0078125, series, -tl.log2(1.0 - v))
                score = x - tl.log2(e)
            better = score > best_score  # strict: a lane keeps its first column on a tie
            best_score = tl.where(better, score, best_score)
            best_col = tl.where(better, cols, best_col)
        top = tl.max(tl.max(best_score, 1), 0)
        # The lowest column among equal scores, whichever lane holds it.
        col = tl.min(tl.min(tl.where(best_score == top, best_col, 2147483647), 1), 0)
        out = row * splits + split
        tl.store(m_ptr + out, m)
        tl.store(l_ptr + out, tl.sum(tl.sum(sums, 1), 0))  # relative to m (0 where m is -inf)
        tl.store(score_ptr + out, top)
        # Its logit read again: cheaper than carrying each lane's best x through the loop.
        tl.store(x_ptr + out, tl.load(row_ptr + col).to(tl.float32) * scale)
        tl.store(col_ptr + out, col)

    @triton.jit
    def merge_partials_kernel(
        m_ptr,
        l_ptr,
        score_ptr,
        x_ptr,
        col_ptr,
        tokens_ptr,
        logprobs_ptr,
        rows,
        splits,
        block_r: tl.constexpr,
        block_s: tl.constexpr,
    ):
        r = tl.program_id(0) * block_r + tl.arange(0, block_r)
        s = tl.arange(0, block_s)
        inside = (r[:, None] < rows) & (s[None, :] < splits)
        at = r[:, None] * splits + s[None, :]
        m = tl.load(m_ptr + at, mask=inside, other=float("-inf"))
        l_s = tl.load(l_ptr + at, mask=inside, other=0.0)
        score = tl.load(score_ptr + at, mask=inside, other=float("-inf"))
        x = tl.load(x_ptr + at, mask=inside, other=0.0)
        col = tl.load(col_ptr + at, mask=inside, other=0)
        m_all = tl.max(m, 1)
        m_safe = tl.where(m_all == float("-inf"), 0.0, m_all)
        lse = m_safe + tl.log2(tl.sum(l_s * tl.exp2(m - m_safe[:, None]), 1))
        top = tl.max(score, 1)
        winner = tl.min(tl.where(score == top[:, None], s[None, :], block_s), 1)
        pick = s[None, :] == winner[:, None]
        token = tl.sum(tl.where(pick, col, 0), 1)
        x_token = tl.sum(tl.where(pick, x, 0.0), 1)
        tl.store(tokens_ptr + r, token.to(tl.int64), mask=r < rows)
        tl.store(logprobs_ptr + r, (x_token - lse) * 0.6931471805599453, mask=r < rows)

    return sample_partials_kernel, merge_partials_kernel


def supports(logits: torch.Tensor) -> bool:
    """Logits the kernel handles: (N, V) on CUDA with contiguous rows, N * V below 2^31 (the
    Philox counters are 32-bit), Triton importable."""
    return (
        logits.is_cuda
        and logits.dim() == 2
        and logits.shape[0] > 0
        and logits.shape[1] > 0
        and logits.stride(-1) == 1
        and logits.dtype in DTYPES
        and logits.numel() < 2**31
        and available()
    )


def _cdiv(a: int, b: int) -> int:
    return -(-a // b)


def block_for(vocab: int) -> int:
    """Lanes per block: :data:`BLOCK`, or fewer for a small vocabulary (a tile is four blocks)."""
    return min(BLOCK, max(16, 1 << (_cdiv(vocab, 4) - 1).bit_length()))


def split_columns(vocab: int, splits: int) -> tuple[int, int]:
    """``(columns per program, programs per row)`` for about ``splits`` programs per row: whole
    tiles each, so a column draws the same noise however its row is split, and none empty."""
    tile = 4 * block_for(vocab)
    chunk = _cdiv(_cdiv(vocab, max(1, splits)), tile) * tile
    return chunk, _cdiv(vocab, chunk)


def default_splits(rows: int, device: torch.device) -> int:
    """Programs per row so that all of them run at once, up to :data:`PROGRAMS_PER_SM` on each
    SM of ``device`` (equal work each: a second, partial wave would add a whole program's
    time). 256 rows on 132 SMs: 4."""
    sms = torch.cuda.get_device_properties(device).multi_processor_count
    return max(1, min(PROGRAMS_PER_SM * sms // rows, MAX_SPLITS))


def launch(
    logits: torch.Tensor,
    seed: torch.Tensor,
    temperature: float,
    splits: int,
    tokens: torch.Tensor,
    logprobs: torch.Tensor,
    kernels: tuple | None = None,
) -> None:
    """Sample one token per row of ``logits`` (N, V) into ``tokens`` (N,) int64 and its
    log-probability into ``logprobs`` (N,) float32, with noise keyed by ``seed`` (a 1-element
    integer tensor); the vocabulary goes to ``splits`` programs per row (fewer where the tiles
    run out). ``kernels``: the two Triton kernels, or wrappers of them (``wrap_triton``)."""
    partial_kernel, merge_kernel = kernels or _kernels()
    rows, vocab = logits.shape
    chunk, splits = split_columns(vocab, splits)
    # Per (row, program): max and sum of 2^(x - max) over its columns, best noisy score, the
    # best column and its x (x: logits / T in base-2 units).
    m, sums, score, x = (
        torch.empty(rows, splits, dtype=torch.float32, device=logits.device) for _ in range(4)
    )
    cols = torch.empty(rows, splits, dtype=torch.int32, device=logits.device)
    partial_kernel[(rows, splits)](
        logits,
        seed,
        m,
        sums,
        score,
        x,
        cols,
        LOG2_E / temperature,
        vocab,
        logits.stride(0),
        chunk,
        splits,
        block=block_for(vocab),
        fast_log2=logits.is_cuda,
        num_warps=4,
    )
    merge_kernel[(_cdiv(rows, MERGE_ROWS),)](
        m,
        sums,
        score,
        x,
        cols,
        tokens,
        logprobs,
        rows,
        splits,
        block_r=MERGE_ROWS,
        block_s=max(2, 1 << (splits - 1).bit_length()),
        num_warps=1,
    )


@functools.cache
def custom_op():
    """The kernels as a torch operator that ``torch.compile`` keeps as one call (and captures);
    registered on first use, outside any compiled region (the decode loop samples eagerly,
    inside its captured graph; a compiled caller must call it once before tracing)."""
    from torch.library import triton_op, wrap_triton

    @triton_op("studio::gumbel_sample", mutates_args={})
    def gumbel_sample(
        logits: torch.Tensor, seed: torch.Tensor, temperature: float, splits: int
    ) -> tuple[torch.Tensor, torch.Tensor]:
        tokens = torch.empty(logits.shape[0], dtype=torch.long, device=logits.device)
        logprobs = torch.empty(logits.shape[0], dtype=torch.float32, device=logits.device)
        partial_kernel, merge_kernel = _kernels()
        kernels = (wrap_triton(partial_kernel), wrap_triton(merge_kernel))
        launch(logits, seed, temperature, splits, tokens, logprobs, kernels=kernels)
        return tokens, logprobs

    return torch.ops.studio.gumbel_sample.default


def draw_seed(device: torch.device, generator: torch.Generator | None = None) -> torch.Tensor:
    """A fresh 1-element int64 seed on ``device`` from ``generator`` (the device's default one
    when None: the generator a captured CUDA graph advances at each replay)."""
    return torch.randint(0, 2**62, (1,), device=device, generator=generator)


def sample(
    logits: torch.Tensor,
    temperature: float,
    generator: torch.Generator | None = None,
    splits: int | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """``(tokens, logprobs)`` of one temperature sample per row of CUDA ``logits`` (N, V)."""
    if splits is None:
        splits = default_splits(logits.shape[0], logits.device)
    return custom_op()(logits, draw_seed(logits.device, generator), temperature, splits)
