"""The run endpoints: ``/start_run``, ``/run_status``, ``/run_metrics``, ``/list_runs`` and
``/stop_run``, ``/resume_run``, ``/delete_run``; each serves only the caller's runs."""

from __future__ import annotations

import functools
from typing import Any

from engine.config.run_config import RunConfig
from engine.fields import ConfigError, parse_yaml
from rewards.params import describe_value
from storage import runs as run_store
from storage.records import metrics as metric_store
from storage.run_caps import TooManyActiveRunsError
from storage.runs import RunInfo
from ui.access.identity import IdentityError, Viewer
from ui.api.errors import ApiError
from ui.runs import actions as run_actions
from ui.shared.context import AppContext

MAX_METRIC_ROWS = 10_000


#: Most metric names one /run_metrics call may filter by (a run logs a few dozen).
MAX_METRIC_NAMES = 256


#: Largest metric cursor: metric row ids are SQLite integers, which are signed 64-bit.
MAX_CURSOR = 2**63 - 1


def parse_run_config(config: dict | str) -> RunConfig:
    try:
        if isinstance(config, str):
            data = parse_yaml(config) or {}
            if not isinstance(data, dict):
                raise ApiError("config: must be a run config mapping (YAML or JSON)")
            config = data
        if not config:  # an empty config would silently start a default run
            raise ApiError(
                "config: empty; send a run config as YAML or JSON text "
                "(`python -m engine export-config` writes a documented one)"
            )
        return RunConfig.from_dict(config)
    except ConfigError as exc:
        raise ApiError(f"config.{exc}" if exc.field else f"config: {exc}") from None


def start_run(ctx: AppContext, config: dict | str, *, viewer: Viewer) -> dict[str, Any]:
    """Validate and start a run of ``viewer`` (queued if all slots are busy); returns its id."""
    try:
        viewer.check_may_own_runs()
    except IdentityError as exc:
        raise ApiError(str(exc)) from None
    run_config = parse_run_config(config)
    try:
        run_id = ctx.start_run(
            run_config, viewer.owner, viewer.caps, admin=viewer.is_admin, address=viewer.address
        )
    except ConfigError as exc:  # over a demo cap, or the model or data cannot be used
        raise ApiError(f"config.{exc}") from None
    except TooManyActiveRunsError as exc:
        raise ApiError(str(exc)) from None
    return {"run_id": run_id, "status": run_status(ctx, run_id, viewer=viewer)["status"]}


def _run_dict(run: RunInfo) -> dict[str, Any]:
    return {
        "run_id": run.id,
        "name": run.name,
        "algorithm": run.algorithm,
        "status": str(run.status),
        "last_step": run.last_step,
        "total_steps": run.total_steps,
        "created_at": run.created_at,
        "started_at": run.started_at,
        "ended_at": run.ended_at,
        "error_message": run.error_message,
    }


def owned_run(ctx: AppContext, run_id: str, viewer: Viewer) -> RunInfo:
    if not isinstance(run_id, str):
        raise ApiError(f"run_id: must be a run id (text), got {type(run_id).__name__}")
    run = run_store.get_run(ctx.db, run_id, owner=viewer.scope)
    if run is None:
        raise ApiError(f"run_id: no run with id {run_id!r}")
    return run


def run_status(ctx: AppContext, run_id: str, *, viewer: Viewer) -> dict[str, Any]:
    """A run's status, progress and error (with its traceback when it failed)."""
    run = owned_run(ctx, run_id, viewer)
    out = _run_dict(run)
    out["error_traceback"] = run.error_traceback
    return out


def run_metrics(
    ctx: AppContext,
    run_id: str,
    cursor: int = 0,
    names: list[str] | None = None,
    *,
    viewer: Viewer,
) -> dict[str, Any]:
    """Metric rows ``[step, name, value]`` written after ``cursor``, and the next cursor."""
    owned_run(ctx, run_id, viewer)
    cursor = _cursor(cursor)
    if isinstance(names, list) and len(names) > MAX_METRIC_NAMES:
        raise ApiError(f"names: at most {MAX_METRIC_NAMES} metric names per call")
    try:
        points, next_cursor = metric_store.metrics_since(
            ctx.db, run_id, cursor, names=names or None, limit=MAX_METRIC_ROWS
        )
    except ValueError as exc:
        raise ApiError(f"names: {exc}") from None
    return {
        "points": [[p.step, p.name, p.value] for p in points],
        "cursor": next_cursor,
        "more": len(points) == MAX_METRIC_ROWS,
    }


def _cursor(cursor: Any) -> int:
    """``cursor`` as a row id: a whole number from 0 to :data:`MAX_CURSOR` (floats like 5.0 too,
    as JSON clients send them)."""
    whole = isinstance(cursor, int) or (isinstance(cursor, float) and cursor.is_integer())
    if isinstance(cursor, bool) or not whole or not 0 <= cursor <= MAX_CURSOR:
        raise ApiError(
            f"cursor: must be a whole number from 0 to {MAX_CURSOR} (the cursor a previous "
            f"call returned, or 0), got {describe_value(cursor)}"
        )
    return int(cursor)


def list_runs(ctx: AppContext, *, viewer: Viewer) -> list[dict[str, Any]]:
    """The viewer's runs (an admin's: every run), newest first."""
    return [_run_dict(r) for r in run_store.list_runs(ctx.db, owner=viewer.scope)]


def run_action(ctx: AppContext, action: str, run_id: str, *, viewer: Viewer) -> dict[str, Any]:
    """Stop, resume or delete a run of ``viewer``, as the Runs tab's buttons do."""
    act = {
        "stop": run_actions.stop_run,
        "resume": functools.partial(run_actions.resume_run, slots=ctx.address_slots),
        "delete": run_actions.delete_run,
    }[action]
    owned_run(ctx, run_id, viewer)
    try:
        message = act(ctx.db, ctx.launcher, viewer, run_id)
    except run_actions.RunActionError as exc:
        raise ApiError(f"run_id: {exc}") from None
    return {"run_id": run_id, "message": message}
