"""The endpoints on a run's models: ``/generate`` (replies to a prompt, scored, as the
Playground makes) and ``/export_model`` (a zip of the model)."""

from __future__ import annotations

from typing import Any

from engine.fields import ConfigError, from_dict
from engine.generation.playground import GenerateError
from engine.generation.settings import SamplingSettings
from ui.access.identity import Viewer
from ui.api.errors import ApiError
from ui.api.runs import owned_run
from ui.playground.replies import PlaygroundCache, PlaygroundError, generate_once
from ui.runs import actions as run_actions
from ui.runs.model_export import model_export_archive
from ui.shared.context import AppContext


def generate(
    ctx: AppContext,
    cache: PlaygroundCache,
    run_id: str,
    prompt: str,
    model: str = "latest",
    settings: dict[str, Any] | None = None,
    *,
    viewer: Viewer,
) -> dict[str, Any]:
    """Replies of the viewer's run's ``model`` to ``prompt`` with their rewards and traces."""
    owned_run(ctx, run_id, viewer)
    if not isinstance(model, str):
        raise ApiError("model: must be base, final, latest or checkpoint-<step>")
    try:
        return generate_once(ctx, cache, viewer, run_id, model, prompt, sampling_settings(settings))
    except (PlaygroundError, GenerateError) as exc:
        raise ApiError(str(exc)) from None


def sampling_settings(settings: Any) -> SamplingSettings | None:
    """``settings`` (a mapping of :class:`SamplingSettings` fields, or None: the run's own)
    read as a config section is, validated by the type (unknown fields, types and ranges
    refused by name); the app's own caps are checked where the run is known."""
    if settings is None:
        return None
    try:
        return from_dict(SamplingSettings, settings, "settings")
    except ConfigError as exc:
        raise ApiError(str(exc)) from None


def export_model(
    ctx: AppContext, run_id: str, fmt: str, quant: str = "F16", *, viewer: Viewer
) -> tuple[str, str]:
    """``(zip path, run command)`` of the viewer's run's model in ``fmt``."""
    owned_run(ctx, run_id, viewer)
    try:
        path, command = model_export_archive(ctx.db, viewer, run_id, fmt, quant)
    except run_actions.RunActionError as exc:
        raise ApiError(str(exc)) from None
    return str(path), command
