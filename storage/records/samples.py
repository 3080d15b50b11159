"""Samples: the completions of a training step with their total reward and per-component trace.

A sample given to :func:`add_samples` is a mapping with the fields of
:class:`storage.sqlite.schema.Sample` that the caller knows (``prompt`` and ``completion`` required;
``answer``, ``total``, ``trace``, ``advantage``, ``value``, ``group``, ``prompt_index``,
``extra``, ``tokens`` optional); :func:`samples_at` reads them back as ``Sample`` rows.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import Any

from sqlalchemy import select

from storage.sqlite.db import Database
from storage.sqlite.encoding import as_int, finite_or_none, optional_int, plain_json
from storage.sqlite.queries import distinct_values, insert_rows
from storage.sqlite.schema import Sample

# What a caller may give for a sample: the model's fields but those this module sets.
SAMPLE_FIELDS = frozenset(Sample.model_fields) - {"id", "run_id", "step", "time"}
REQUIRED_FIELDS = ("prompt", "completion")


def _row(run_id: str, step: int, index: int, sample: Mapping[str, Any], now: float) -> dict:
    where = f"samples[{index}]"
    if not isinstance(sample, Mapping):
        raise TypeError(f"{where}: expected a mapping, got {type(sample).__name__}")
    unknown = sorted(set(sample) - SAMPLE_FIELDS)
    if unknown:
        raise ValueError(
            f"{where}.{unknown[0]}: not a sample field; allowed: {', '.join(sorted(SAMPLE_FIELDS))}"
        )
    for key in REQUIRED_FIELDS:
        if not isinstance(sample.get(key), str):
            raise ValueError(f"{where}.{key}: required, a string; got {sample.get(key)!r}")
    answer = sample.get("answer")
    if answer is not None and not isinstance(answer, str):
        raise TypeError(f"{where}.answer: expected a string or None, got {answer!r}")
    trace = sample.get("trace", [])
    if not isinstance(trace, (list, tuple)):
        raise TypeError(f"{where}.trace: expected a list, got {type(trace).__name__}")
    extra = sample.get("extra", {})
    if not isinstance(extra, Mapping):
        raise TypeError(f"{where}.extra: expected a mapping, got {type(extra).__name__}")
    return {
        "run_id": run_id,
        "step": step,
        "prompt_index": optional_int(
            sample.get("prompt_index"), f"{where}.prompt_index", minimum=0
        ),
        "group": optional_int(sample.get("group"), f"{where}.group", minimum=0),
        "prompt": sample["prompt"],
        "completion": sample["completion"],
        "answer": answer,
        "total": finite_or_none(sample.get("total"), f"{where}.total"),
        "trace": plain_json(list(trace), f"{where}.trace"),
        "advantage": finite_or_none(sample.get("advantage"), f"{where}.advantage"),
        "value": finite_or_none(sample.get("value"), f"{where}.value"),
        "extra": plain_json(extra, f"{where}.extra"),
        "time": now,
        "tokens": optional_int(sample.get("tokens"), f"{where}.tokens", minimum=0),
    }


def add_samples(db: Database, run_id: str, step: int, samples: Sequence[Mapping[str, Any]]) -> int:
    """Store the samples of one step in one transaction; returns how many.

    Non-finite ``total``/``advantage``/``value`` are stored as None; NaN inside a trace as null.
    """
    step = as_int(step, "step", minimum=0)
    now = time.time()
    rows = [_row(run_id, step, i, sample, now) for i, sample in enumerate(samples)]
    return insert_rows(db, Sample, run_id, rows)


def sample_steps(db: Database, run_id: str) -> list[int]:
    """The steps of a run that have samples, ascending (one index seek per step)."""
    return distinct_values(db, Sample.step, run_id)


def samples_at(db: Database, run_id: str, step: int) -> list[Sample]:
    """The samples of one step, in the order they were added."""
    step = as_int(step, "step", minimum=0)
    query = select(Sample).where(Sample.run_id == run_id, Sample.step == step).order_by(Sample.id)
    return db.read(lambda session: list(session.scalars(query)))
