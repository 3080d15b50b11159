"""The objects a run makes before its first step ends are kept out of Python's garbage collector.

Compiling the decoder layers and the decode step, and loading the trainer, leave millions of
long-lived objects (graphs, guards, sympy expressions), and each full collection walks all of
them: 0.25 s for half a million on a 2-core CPU. Two SmolLM2 runs on a GPU stalled at nearly the
same steps (52, 146, 332 and 56, 147, 333: 1.2-1.7 s against a 0.44 s median) with sampling and
rewards at their usual times, which is the pattern of the collector's thresholds (a full
collection when the survivors have grown by a quarter), not of the work. ``gc.freeze()`` moves
every object alive now to a permanent generation that later collections skip (Python docs,
``gc.freeze``); torchtitan's trainer turns the automatic collections off for the same stalls
("used to avoid stragglers in garbage collection", ``GarbageCollection`` in
``torchtitan/tools/utils.py``): under DDP one process's stall holds the others at the next
all-reduce."""

from __future__ import annotations

import gc

_frozen = False


def freeze_long_lived() -> None:
    """Once per process, after its first step: keep every object alive now out of later
    garbage collections."""
    global _frozen
    if _frozen:
        return
    _frozen = True
    gc.collect()  # what is garbage already goes now, not frozen for the whole run
    gc.freeze()
