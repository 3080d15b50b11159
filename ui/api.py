"""Named API endpoints of the app, for ``gradio_client`` and scripts.

- ``/score_preview``: score completions (texts or tool rollouts' turns) with a reward spec, with
  per-component traces;
- ``/start_run``: start a run from a config (YAML or JSON text), returns its id;
- ``/run_status``: a run's status, step and error;
- ``/run_metrics``: a run's metric rows after a cursor (poll with the returned cursor);
- ``/list_runs``: every run of the caller with its status;
- ``/stop_run``, ``/resume_run``, ``/delete_run``: the Runs tab's actions;
- ``/generate``: replies of one of a run's models to a prompt, scored, as the Playground makes;
- ``/export_model``: a zip of a run's model as hf, merged, gguf or ollama;
- ``/compare_specs``, ``/rescore_run``: the reward lab's (:mod:`ui.lab_api`, on these checks).

Each endpoint is a plain function of ``AppContext`` and JSON-able arguments (tested without
Gradio); :func:`build_api` registers them with ``gr.api``. Errors come back as ``gr.Error``
with the field named, never as a stack trace. The run endpoints take the caller's
:class:`~ui.access.identity.Viewer`, worked out from the request on the server, and serve only the
caller's runs (an admin's: all); another user's run reads exactly like a missing one.
"""

from __future__ import annotations

import functools
from typing import Any

import gradio as gr

from engine.config.fields import ConfigError, from_dict, parse_yaml
from engine.config.run_config import RunConfig
from engine.generation.playground import GenerateError, SamplingSettings
from rewards.composer import score
from rewards.errors import RewardSpecError
from rewards.params import describe_value, text_problem
from rewards.spec import RewardSpec
from rewards.verification.deadline import call_deadline
from rewards.verification.mathpool import INTERACTIVE_DEADLINE_S
from storage import metrics as metric_store
from storage import runs as run_store
from storage.run_caps import TooManyActiveRunsError
from storage.runs import RunInfo
from ui.access.identity import IdentityError, Viewer, viewer_for
from ui.api_conversations import CompletionError, completions_chars
from ui.design.spec_io import parse_spec
from ui.playground.replies import PlaygroundCache, PlaygroundError, generate_once
from ui.runs import actions as run_actions
from ui.runs.model_export import model_export_archive
from ui.shared.context import AppContext

MAX_API_COMPLETIONS = 1000
#: Longest completion (and prompt, and answer) one scoring call accepts, in characters.
MAX_API_TEXT_CHARS = 20_000
#: Most characters of completions, prompts and answers together in one scoring call: about 1 s
#: of language identification and 50 MB of traces on the reference machine.
MAX_API_TOTAL_CHARS = 1_000_000
MAX_METRIC_ROWS = 10_000
#: Most metric names one /run_metrics call may filter by (a run logs a few dozen).
MAX_METRIC_NAMES = 256
#: Largest metric cursor: metric row ids are SQLite integers, which are signed 64-bit.
MAX_CURSOR = 2**63 - 1
#: Requests each endpoint serves at once; more wait in Gradio's queue. Scoring and starting
#: runs are the heavy ones.
CONCURRENCY = {
    "score_preview": 2,
    "start_run": 2,
    "run_status": 8,
    "run_metrics": 8,
    "list_runs": 8,
    "stop_run": 4,
    "resume_run": 4,
    "delete_run": 4,
    "generate": 1,
    "export_model": 1,
}


class ApiError(ValueError):
    """A request the API cannot serve; the message names the argument."""


def reward_spec(spec: dict | str) -> RewardSpec:
    try:
        return parse_spec(spec) if isinstance(spec, str) else RewardSpec.from_dict(spec)
    except RewardSpecError as exc:
        raise ApiError(f"spec.{exc}" if exc.field else f"spec: {exc}") from None


def score_preview(
    ctx: AppContext,
    spec: dict | str,
    completions: list[str | list[dict[str, Any]]],
    prompts: list[str] | None = None,
    answers: list[str | None] | None = None,
) -> dict[str, Any]:
    """Totals and traces of ``completions`` (texts, or tool rollouts as lists of turns:
    :mod:`ui.api_conversations`) under ``spec``."""
    reward = reward_spec(spec)
    try:  # texts, or tool rollouts as lists of turns, each part bounded
        total = completions_chars(completions, MAX_API_TEXT_CHARS, MAX_API_COMPLETIONS)
    except CompletionError as exc:
        raise ApiError(str(exc)) from None
    for name, values in (("prompts", prompts), ("answers", answers)):
        if values is not None:
            check_texts(name, values, len(completions), allow_none=name == "answers")
            total += sum(len(v) for v in values if v is not None)
    if total > MAX_API_TOTAL_CHARS:
        raise ApiError(
            f"completions: {total:,} characters of completions, prompts and answers in one "
            f"call; at most {MAX_API_TOTAL_CHARS:,} (send fewer or shorter completions)"
        )
    with call_deadline(INTERACTIVE_DEADLINE_S):  # answers math-verify cannot settle in time
        scored = score(reward, prompts or [""] * len(completions), completions, answers=answers)
    return {
        "components": reward.metric_names(),
        "totals": [s.total for s in scored],
        "samples": [s.to_dict() for s in scored],
    }


def check_texts(name: str, values: Any, count: int, allow_none: bool = False) -> None:
    """``values`` is a list of ``count`` strings (or None, where allowed), each within the
    per-text cap and storable as text."""
    kind = "strings or nulls" if allow_none else "strings"
    if not isinstance(values, list):
        raise ApiError(f"{name}: must be a list of {kind}")
    if len(values) != count:
        raise ApiError(f"{name}: {len(values)} values for {count} completions")
    for i, value in enumerate(values):
        if value is None and allow_none:
            continue
        if not isinstance(value, str):
            raise ApiError(f"{name}[{i}]: must be a string, got {describe_value(value)}")
        if len(value) > MAX_API_TEXT_CHARS:
            raise ApiError(
                f"{name}[{i}]: {len(value):,} characters; at most {MAX_API_TEXT_CHARS:,} each"
            )
        problem = text_problem(value)  # RE2 and SQLite take UTF-8 only
        if problem:
            raise ApiError(f"{name}[{i}]: {problem}")


def _config(config: dict | str) -> RunConfig:
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
    run_config = _config(config)
    try:
        run_id = ctx.start_run(run_config, viewer.owner, viewer.caps, admin=viewer.is_admin)
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


def _owned(ctx: AppContext, run_id: str, viewer: Viewer) -> RunInfo:
    if not isinstance(run_id, str):
        raise ApiError(f"run_id: must be a run id (text), got {type(run_id).__name__}")
    run = run_store.get_run(ctx.db, run_id, owner=viewer.scope)
    if run is None:
        raise ApiError(f"run_id: no run with id {run_id!r}")
    return run


def run_status(ctx: AppContext, run_id: str, *, viewer: Viewer) -> dict[str, Any]:
    """A run's status, progress and error (with its traceback when it failed)."""
    run = _owned(ctx, run_id, viewer)
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
    _owned(ctx, run_id, viewer)
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
        "resume": run_actions.resume_run,
        "delete": run_actions.delete_run,
    }[action]
    _owned(ctx, run_id, viewer)
    try:
        message = act(ctx.db, ctx.launcher, viewer, run_id)
    except run_actions.RunActionError as exc:
        raise ApiError(f"run_id: {exc}") from None
    return {"run_id": run_id, "message": message}


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
    _owned(ctx, run_id, viewer)
    if not isinstance(model, str):
        raise ApiError("model: must be base, final, latest or checkpoint-<step>")
    try:
        return generate_once(ctx, cache, viewer, run_id, model, prompt, sampling_settings(settings))
    except (PlaygroundError, GenerateError) as exc:
        raise ApiError(str(exc)) from None


def sampling_settings(settings: Any) -> SamplingSettings:
    """``settings`` (a mapping of :class:`SamplingSettings` fields, or None) read as a config
    section is (unknown fields and types refused by name); the app's own caps are checked where
    the run is known."""
    if settings is None:
        return SamplingSettings()
    try:
        out = from_dict(SamplingSettings, settings, "settings")
    except ConfigError as exc:
        raise ApiError(str(exc)) from None
    try:
        out.check()
    except GenerateError as exc:
        raise ApiError(f"settings.{exc}") from None
    return out


def export_model(
    ctx: AppContext, run_id: str, fmt: str, quant: str = "F16", *, viewer: Viewer
) -> tuple[str, str]:
    """``(zip path, run command)`` of the viewer's run's model in ``fmt``."""
    _owned(ctx, run_id, viewer)
    try:
        path, command = model_export_archive(ctx.db, viewer, run_id, fmt, quant)
    except run_actions.RunActionError as exc:
        raise ApiError(str(exc)) from None
    return str(path), command


def as_gradio_error(fn):
    """Report ``ApiError`` to the client as a ``gr.Error`` (its message, no traceback)."""

    @functools.wraps(fn)
    def wrapped(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except (ApiError, IdentityError) as exc:
            raise gr.Error(str(exc), print_exception=False) from None

    return wrapped


def _file_endpoint(fn, name: str) -> None:
    """A named endpoint that returns a file: an event of hidden components, so the file goes
    through ``gr.File``, which copies it into Gradio's cache and lets the client download it
    (``gr.api`` returns a bare path the file route refuses)."""
    with gr.Column(visible=False):
        run_id = gr.Textbox(label="run_id")
        fmt = gr.Textbox(label="format", value="merged")
        quant = gr.Textbox(label="quant", value="F16")
        file = gr.File(label="model zip")
        command = gr.Textbox(label="command")
        trigger = gr.Button(name)
    trigger.click(
        fn,
        inputs=[run_id, fmt, quant],
        outputs=[file, command],
        api_name=name,
        api_visibility="public",
        concurrency_limit=CONCURRENCY[name],
        concurrency_id=name,
    )


def build_api(ctx: AppContext) -> None:
    """Register the endpoints on the Blocks being built."""

    @as_gradio_error
    def score_preview_endpoint(
        spec: str,
        completions: list[str | list[dict[str, Any]]],
        prompts: list[str] | None = None,
        answers: list[str | None] | None = None,
    ) -> dict:
        """Score completions (texts, or tool rollouts as lists of turns) with a reward spec
        (JSON or YAML text); totals and traces."""
        return score_preview(ctx, spec, completions, prompts, answers)

    # Each run endpoint works out its caller from the request (never from an argument).
    @as_gradio_error
    def start_run_endpoint(
        config: str, request: gr.Request, profile: gr.OAuthProfile | None = None
    ) -> dict:
        """Start a run from a config (YAML or JSON text); returns its run_id."""
        return start_run(ctx, config, viewer=viewer_for(request, profile))

    @as_gradio_error
    def run_status_endpoint(
        run_id: str, request: gr.Request, profile: gr.OAuthProfile | None = None
    ) -> dict:
        """Status, step and error of one of your runs."""
        return run_status(ctx, run_id, viewer=viewer_for(request, profile))

    @as_gradio_error
    def run_metrics_endpoint(
        run_id: str,
        cursor: int = 0,
        names: list[str] | None = None,
        request: gr.Request = None,
        profile: gr.OAuthProfile | None = None,
    ) -> dict:
        """Metric rows [step, name, value] after a cursor; poll again with the returned cursor."""
        return run_metrics(ctx, run_id, cursor, names, viewer=viewer_for(request, profile))

    @as_gradio_error
    def list_runs_endpoint(request: gr.Request, profile: gr.OAuthProfile | None = None) -> list:
        """Your runs with their status, newest first."""
        return list_runs(ctx, viewer=viewer_for(request, profile))

    def action_endpoint(action: str):
        @as_gradio_error
        def endpoint(
            run_id: str, request: gr.Request, profile: gr.OAuthProfile | None = None
        ) -> dict:
            return run_action(ctx, action, run_id, viewer=viewer_for(request, profile))

        endpoint.__doc__ = f"{action.capitalize()} one of your runs, as the Runs tab does."
        return endpoint

    playground = PlaygroundCache()

    @as_gradio_error
    def generate_endpoint(
        run_id: str,
        prompt: str,
        model: str = "latest",
        settings: dict | None = None,
        request: gr.Request = None,
        profile: gr.OAuthProfile | None = None,
    ) -> dict:
        """Replies of one of your runs' models (base, final, latest, checkpoint-N) to a prompt,
        scored by the run's reward; settings: temperature, top_p, max_new_tokens,
        num_samples, seed."""
        viewer = viewer_for(request, profile)
        return generate(ctx, playground, run_id, prompt, model, settings, viewer=viewer)

    @as_gradio_error
    def export_model_endpoint(
        run_id: str,
        format: str = "merged",
        quant: str = "F16",
        request: gr.Request = None,
        profile: gr.OAuthProfile | None = None,
    ) -> tuple[str, str]:
        """A zip of one of your runs' models: format hf, merged, gguf or ollama; quant F16
        or Q8_0 (GGUF). Also the command that runs it (Ollama)."""
        return export_model(ctx, run_id, format, quant, viewer=viewer_for(request, profile))

    _file_endpoint(export_model_endpoint, "export_model")

    for fn, name in (
        (generate_endpoint, "generate"),
        (score_preview_endpoint, "score_preview"),
        (start_run_endpoint, "start_run"),
        (run_status_endpoint, "run_status"),
        (run_metrics_endpoint, "run_metrics"),
        (list_runs_endpoint, "list_runs"),
        (action_endpoint("stop"), "stop_run"),
        (action_endpoint("resume"), "resume_run"),
        (action_endpoint("delete"), "delete_run"),
    ):
        gr.api(fn, api_name=name, concurrency_limit=CONCURRENCY[name], concurrency_id=name)
