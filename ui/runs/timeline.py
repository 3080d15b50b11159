"""A run's clock for the charts' x axes (:class:`ui.plots.x_axes.RunClock`), read from storage:
its phase rows (when each attempt started), its config's batch, its logged token count."""

from __future__ import annotations

from collections.abc import Mapping

from engine.config.run_config import RunConfig
from engine.tracking.metric_names import NUM_TOKENS
from storage.records import phases as phase_store
from storage.runs import RunInfo
from storage.sqlite.db import Database
from ui.plots.series import Series
from ui.plots.x_axes import RunClock, run_clock


def completions_per_step(config: Mapping) -> int | None:
    """The run's batch, completions per step, from its config as the worker read it; ``None``
    for a config that is not a run config (a hand-written test run, a run of an older schema)."""
    try:
        return RunConfig.from_dict(dict(config)).completions_per_step
    except (ValueError, TypeError):  # ConfigError is a ValueError: no batch size to draw by
        return None


def read_clock(db: Database, run: RunInfo, series: Mapping[str, Series]) -> RunClock:
    """The clock of ``run``, whose points read so far are ``series``."""
    return run_clock(
        phase_store.phase_times(db, run.id),
        series,
        completions_per_step(run.config or {}),
        series.get(NUM_TOKENS),
    )
