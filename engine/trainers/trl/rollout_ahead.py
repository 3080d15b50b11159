"""One-step-off-policy rollouts (``training.rollout: async``): the next step's completions are
sampled on a worker thread while this step scores, computes its log-probabilities and trains.

Per optimizer step t of a GRPO or RLOO run:

1. The training loop's batches are kept one step ahead (:class:`BatchLookahead`, through the
   Trainer's ``get_batch_samples``), so step t+1's prompts are known while step t runs.
2. Step t's sampling takes the completions sampled during step t-1 (:meth:`RolloutAhead.take`),
   then hands step t+1's prompts to the worker, which samples them from the weights of step t
   on a second CUDA stream while this thread goes on with step t.
3. Before step t's optimizer step the loop waits for the worker (:class:`RolloutAheadCallback`):
   the weights the worker reads change only after it has read them, so no copy of them is kept
   (verl's one-step-off trainer and PipelineRL overlap the same two phases, on separate GPUs).

Step t+1 then trains on completions of the policy one update older; the loss weighs each
token by the truncated importance ratio between the two (:mod:`.importance`). A step whose
batch was not sampled ahead (the first, the first after a resume or an epoch's end) samples on
the spot, on the same worker, as a sync run would.
"""

from __future__ import annotations

import logging
import time
from collections import deque
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

import torch
from transformers import TrainerCallback

from engine.generation.runner import Generation
from engine.tracking import metric_names

logger = logging.getLogger(__name__)

Sampler = Callable[[list[list[int]]], Generation]


def _key(prompt_ids: list[list[int]]) -> tuple[tuple[int, ...], ...]:
    return tuple(tuple(ids) for ids in prompt_ids)


def _on_host(out: Generation) -> Generation:
    """``out`` with its tensors on the host: the worker's stream allocated them, and a device
    tensor freed on the training stream could be handed back to the worker while in use."""
    out.token_rows, out.logprob_rows = out.token_rows.cpu(), out.logprob_rows.cpu()
    return out


class RolloutAhead:
    """The worker that samples one generation batch ahead. ``sampler(prompt_ids)`` samples
    one batch; every call to it, ahead or on the spot, runs on the worker's thread and stream,
    one at a time, so the sampler's cache and graphs are only ever used by one call."""

    def __init__(self, sampler: Sampler, device: torch.device) -> None:
        self.sampler = sampler
        self.device = device
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="rollout-ahead")
        # High priority: the overlapped sampling is the step's longer phase, and its small
        # decode kernels would otherwise queue behind the update's large ones.
        self._stream = torch.cuda.Stream(device, priority=-1) if device.type == "cuda" else None
        self._pending: tuple[tuple, Future[tuple[Generation, float]]] | None = None
        self._waited_s = 0.0  # this step's time blocked on the worker while it sampled
        self._warm = False  # the first call compiles and captures: on the caller's thread

    def _run(self, prompt_ids: list[list[int]], ready: torch.cuda.Event | None):
        started = time.perf_counter()
        if self._stream is None:
            out = self.sampler(prompt_ids)
        else:
            torch.cuda.set_device(self.device)  # the current device is per thread
            with torch.cuda.stream(self._stream):
                self._stream.wait_event(ready)  # the weights as the training stream left them
                out = self.sampler(prompt_ids)
                self._stream.synchronize()
        return _on_host(out), time.perf_counter() - started

    def _submit(self, prompt_ids: list[list[int]]) -> Future:
        ready = None
        if self._stream is not None:
            ready = torch.cuda.Event()
            ready.record(torch.cuda.current_stream(self.device))
        if self._warm:
            return self._pool.submit(self._run, prompt_ids, ready)
        # torch.compile and CUDA-graph capture of the sampler's step, run where they were
        # tested: on the thread that trains, with nothing else running.
        done: Future = Future()
        done.set_result(self._run(prompt_ids, ready))
        self._warm = True
        return done

    def _wait(self, future: Future) -> tuple[Generation, float]:
        started = time.perf_counter()
        result = future.result()
        self._waited_s += time.perf_counter() - started
        return result

    @property
    def busy(self) -> bool:
        """Whether a batch sampled ahead is waiting to be taken."""
        return self._pending is not None

    def submit(self, prompt_ids: list[list[int]]) -> None:
        """Start sampling ``prompt_ids`` (the next step's batch) from the weights as they are."""
        self.wait()  # at most one batch ahead
        self._waited_s = 0.0  # counted from here to the take: before the update, and at it
        self._pending = (_key(prompt_ids), self._submit(prompt_ids))

    def take(self, prompt_ids: list[list[int]], metrics: dict[str, list[float]]) -> Generation:
        """The completions of ``prompt_ids``: those sampled ahead, or sampled now when none
        were (then on-policy). Records the sampling time, how stale the completions are and
        the share of their sampling this thread did not wait for."""
        pending, self._pending = self._pending, None
        ahead = pending is not None and pending[0] == _key(prompt_ids)
        if not ahead:
            self._waited_s = 0.0
        if pending is not None and not ahead:  # another batch (eval): drop it
            self._wait(pending[1])
        future = pending[1] if ahead else self._submit(prompt_ids)
        out, sampling_s = self._wait(future)
        metrics[metric_names.GENERATION_TIME].append(sampling_s)
        metrics[metric_names.STALENESS].append(1.0 if ahead else 0.0)
        hidden = max(0.0, sampling_s - self._waited_s) if ahead else 0.0
        metrics[metric_names.OVERLAP_SHARE].append(hidden / sampling_s if sampling_s else 0.0)
        return out

    def sample_now(self, prompt_ids: list[list[int]]) -> Generation:
        """Completions of ``prompt_ids`` sampled now on the worker (evaluation's batches),
        after the batch sampled ahead, which is kept."""
        return self._submit(prompt_ids).result()[0]

    def wait(self) -> None:
        """Block until the batch sampled ahead, if any, is done reading the weights."""
        if self._pending is not None:
            self._wait(self._pending[1])

    def close(self) -> None:
        """Drop the batch sampled ahead and stop the worker (the run's training is over)."""
        self.wait()
        self._pending = None
        self._pool.shutdown(wait=True)


class BatchLookahead:
    """The epoch's batches kept one optimizer step ahead of the Trainer's loop, which asks
    for each step's batches with ``get_batch_samples(epoch_iterator, count, device)``."""

    def __init__(self) -> None:
        self._iterator: Iterator | None = None
        self._queue: deque = deque()

    def take(self, iterator: Iterator, count: int) -> list:
        """This step's ``count`` batches (fewer at the epoch's end), after reading the next
        step's from ``iterator`` too."""
        if iterator is not self._iterator:  # a new epoch, or a resume that skipped batches
            self._iterator, self._queue = iterator, deque()
        while len(self._queue) < 2 * count:
            try:
                self._queue.append(next(iterator))
            except StopIteration:
                break
        return [self._queue.popleft() for _ in range(min(count, len(self._queue)))]

    def next_batch(self) -> Any | None:
        """The next step's first batch (its generation batch), or None at the epoch's end."""
        return self._queue[0] if self._queue else None


class RolloutAheadCallback(TrainerCallback):
    """Waits for the batch sampled ahead before each optimizer step changes the weights it
    reads, and stops the worker when training ends."""

    def __init__(self, ahead: RolloutAhead) -> None:
        self.ahead = ahead

    def on_pre_optimizer_step(self, args, state, control, **kwargs: Any) -> None:
        self.ahead.wait()

    def on_train_end(self, args, state, control, **kwargs: Any) -> None:
        self.ahead.close()
