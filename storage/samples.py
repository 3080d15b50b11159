"""Samples: the completions of a training step with their total reward and per-component trace."""

from __future__ import annotations

import json
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypedDict

from sqlalchemy import insert, select, text
from sqlalchemy.exc import IntegrityError
from sqlmodel import Session

from storage.db import Database
from storage.encoding import as_int, dumps_json, finite_or_none, optional_int
from storage.runs import RunNotFoundError
from storage.schema import Sample


class SampleIn(TypedDict, total=False):
    """One sample to store; ``prompt`` and ``completion`` are required, the rest optional.

    ``trace`` is the reward composer's per-component trace (a list of JSON-able objects or
    dataclasses); ``total`` the weighted total reward (None: could not be scored); ``group`` the
    group of completions that share a prompt; ``value`` a PPO value estimate; ``extra`` any
    further JSON-able fields.
    """

    prompt: str
    completion: str
    answer: str | None
    total: float | None
    trace: list[Any]
    advantage: float | None
    value: float | None
    group: int | None
    prompt_index: int | None
    extra: dict[str, Any]


SAMPLE_FIELDS = frozenset(SampleIn.__annotations__)
REQUIRED_FIELDS = ("prompt", "completion")


@dataclass(frozen=True)
class SampleRow:
    """A stored sample, JSON columns decoded."""

    id: int
    step: int
    prompt_index: int | None
    group: int | None
    prompt: str
    completion: str
    answer: str | None
    total: float | None
    trace: list[Any]
    advantage: float | None
    value: float | None
    extra: dict[str, Any]
    time: float


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
        "trace_json": dumps_json(list(trace), f"{where}.trace"),
        "advantage": finite_or_none(sample.get("advantage"), f"{where}.advantage"),
        "value": finite_or_none(sample.get("value"), f"{where}.value"),
        "extra_json": dumps_json(extra, f"{where}.extra"),
        "time": now,
    }


def add_samples(db: Database, run_id: str, step: int, samples: Sequence[Mapping[str, Any]]) -> int:
    """Store the samples of one step in one transaction; returns how many.

    Non-finite ``total``/``advantage``/``value`` are stored as None; NaN inside a trace as null.
    """
    step = as_int(step, "step", minimum=0)
    now = time.time()
    rows = [_row(run_id, step, i, sample, now) for i, sample in enumerate(samples)]
    if not rows:
        return 0
    try:
        db.write(lambda session: session.execute(insert(Sample), rows))
    except IntegrityError as exc:
        raise RunNotFoundError(f"no run with id {run_id!r}") from exc
    return len(rows)


_STEPS_SQL = text(
    """
    WITH RECURSIVE steps(step) AS (
        SELECT MIN(step) FROM sample WHERE run_id = :run_id
        UNION ALL
        SELECT (SELECT MIN(step) FROM sample WHERE run_id = :run_id AND step > steps.step)
        FROM steps WHERE steps.step IS NOT NULL
    )
    SELECT step FROM steps WHERE step IS NOT NULL
    """
)


def sample_steps(db: Database, run_id: str) -> list[int]:
    """The steps of a run that have samples, ascending (one index seek per step)."""
    return db.read(lambda session: list(session.execute(_STEPS_SQL, {"run_id": run_id}).scalars()))


def samples_at(db: Database, run_id: str, step: int) -> list[SampleRow]:
    """The samples of one step, in the order they were added."""
    step = as_int(step, "step", minimum=0)
    query = select(Sample).where(Sample.run_id == run_id, Sample.step == step).order_by(Sample.id)

    def read(session: Session) -> list[SampleRow]:
        return [
            SampleRow(
                id=row.id,
                step=row.step,
                prompt_index=row.prompt_index,
                group=row.group,
                prompt=row.prompt,
                completion=row.completion,
                answer=row.answer,
                total=row.total,
                trace=json.loads(row.trace_json),
                advantage=row.advantage,
                value=row.value,
                extra=json.loads(row.extra_json),
                time=row.time,
            )
            for row in session.scalars(query)
        ]

    return db.read(read)
