"""The Playground's work, without Gradio: pick the sides, stream both, score the replies.

One prompt (typed, or picked from the run's data), two models (by default the run's starting
model and its final one; any checkpoint of the run, or a model folder the app allows), the
same sampling settings and seed, replies streamed token by token, then each reply scored with
its trace by the reward the run was trained with (or, when asked, the Design tab's current one:
:func:`scoring_spec` picks and says which). Everything here acts only on the viewer's own
runs (``ui.runs.actions.owned_run``); a public app caps samples and tokens as it caps previews.
"""

from __future__ import annotations

import html
import logging
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from engine.config.run_config import RunConfig
from engine.fields import ConfigError
from engine.generation.playground import (
    GenerateError,
    SamplingSettings,
    chat_prompt,
    check_prompt,
    generate_replies,
    stream_replies,
)
from engine.models.loading import ModelLoadError
from engine.run.saved_models import RunModelError, load_run_model, run_models
from engine.runtime.devices import bounded_threads
from rewards.composer import ScoredSample, score
from rewards.spec import RewardSpec
from rewards.verification.deadline import call_deadline
from rewards.verification.mathpool import INTERACTIVE_DEADLINE_S
from storage import runs as run_store
from storage.runs import RunInfo
from ui.access.identity import Viewer
from ui.design.tab import TRACE_HEADERS
from ui.playground.reads import RunReadCache, RunReads
from ui.playground.tool_replies import tool_replies
from ui.preview.generate import CUSTOM, PreviewError, preview_thread_count, resolve_model
from ui.runs.actions import RunActionError, owned_run
from ui.shared.context import AppContext
from ui.shared.conversation_view import completion_view
from ui.shared.trace_view import fmt

logger = logging.getLogger(__name__)

#: Run models kept loaded (two sides).
KEEP_LOADED = 2


class PlaygroundError(ValueError):
    """A request the Playground cannot serve; the message names the input."""


@dataclass(frozen=True)
class Side:
    """One model to generate from: ``key`` is a run model (``base``, ``final``,
    ``checkpoint-N``) or ``custom`` with ``custom`` naming a folder or hub id."""

    key: str
    custom: str = ""


class LoadedModels:
    """The run models the Playground has loaded, newest kept (a folder that changed since
    loads again)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._models: dict[tuple, tuple[Any, Any]] = {}

    def get(self, run: RunReads, key: str) -> tuple[Any, Any]:
        folder = run.run_dir / key
        stamp = folder.stat().st_mtime_ns if folder.exists() else 0
        cache_key = (str(run.run_dir), key, stamp)
        with self._lock:
            if cache_key not in self._models:
                model, tokenizer, _ = load_run_model(run.run_dir, key, config=run.config)
                while len(self._models) >= KEEP_LOADED:
                    self._models.pop(next(iter(self._models)))
                self._models[cache_key] = (model, tokenizer)
            return self._models[cache_key]


@dataclass
class PlaygroundCache:
    """What the Playground keeps between requests: loaded run models and runs' reads."""

    models: LoadedModels = field(default_factory=LoadedModels)
    runs: RunReadCache = field(default_factory=RunReadCache)


def run_dir_of(ctx: AppContext, viewer: Viewer, run_id: str | None) -> tuple[Path, RunInfo]:
    """The viewer's run (owner-checked) and its folder."""
    try:
        run = owned_run(ctx.db, viewer, run_id)
    except RunActionError as exc:
        raise PlaygroundError(f"run: {exc}") from None
    if not run.output_dir or not Path(run.output_dir).is_dir():
        raise PlaygroundError(f"run: {run.id} has no folder")
    return Path(run.output_dir), run


def run_choices(ctx: AppContext, viewer: Viewer) -> list[tuple[str, str]]:
    """The viewer's runs, newest first."""
    runs = run_store.list_runs(ctx.db, owner=viewer.scope)
    return [(f"{r.name or r.id} ({r.status})", r.id) for r in runs]


def model_choices(ctx: AppContext, viewer: Viewer, run_id: str | None) -> list[tuple[str, str]]:
    """The run's models (starting, checkpoints, final) and "another model folder"."""
    out = []
    if run_id:
        try:
            run_dir, run = run_dir_of(ctx, viewer, run_id)
            models = run_models(run_dir, RunConfig.from_dict(run.config))
            out = [(m.label, m.key) for m in models]
        except PlaygroundError:
            out = []
    return [*out, ("Another model (folder or hub id)…", CUSTOM)]


def default_sides(choices: list[tuple[str, str]]) -> tuple[str, str]:
    """Starting model on the left, the newest trained one (final, else latest checkpoint)
    on the right."""
    keys = [key for _, key in choices if key != CUSTOM]
    if not keys:
        return CUSTOM, CUSTOM
    return keys[0], keys[-1]


def run_reads(
    ctx: AppContext, cache: PlaygroundCache, viewer: Viewer, run_id: str | None
) -> RunReads:
    """The viewer's run (owner-checked on every call), its config and its data's first rows
    (within what the app lets a visitor read; read once per run)."""
    run_dir, run = run_dir_of(ctx, viewer, run_id)
    try:
        return cache.runs.get(ctx, run.id, run_dir, run.config)
    except PreviewError as exc:
        raise PlaygroundError(f"data: {exc}") from None


RUN_REWARD = "the run's reward (as trained)"
DESIGN_REWARD = "the Design tab's reward"
SCORING_CHOICES = [RUN_REWARD, DESIGN_REWARD]


def spec_words(spec: RewardSpec) -> str:
    """``format × 1, correctness × 0.5`` (the enabled components with their weights)."""
    return ", ".join(f"{c.name} × {c.weight:g}" for c in spec.components if c.enabled) or "none"


def scoring_spec(
    ctx: AppContext,
    cache: PlaygroundCache,
    viewer: Viewer,
    run_id: str | None,
    source: str | None,
    design: RewardSpec | None,
) -> tuple[RewardSpec | None, str]:
    """The reward spec the replies are scored with, and a line saying which: the run's own
    (its config's, as it was trained; the default, and what a reloaded page gets) unless
    ``source`` asks for the Design tab's, or no run is picked."""
    if source == DESIGN_REWARD or not run_id:
        if design is None:
            return None, "Not scored: the Design tab has no valid reward spec."
        return design, f"Scored with the Design tab's current reward: {spec_words(design)}."
    run = run_reads(ctx, cache, viewer, run_id)
    spec = run.config.reward
    name = run.config.name or run_id
    return spec, f"Scored with the reward {name} was trained with: {spec_words(spec)}."


def check_settings(ctx: AppContext, settings: SamplingSettings) -> None:
    """Bounded work: a public app's preview caps bound samples and new tokens here too."""
    try:
        settings.check(
            max_samples=ctx.demo.max_preview_samples,
            max_tokens=ctx.demo.sizes.get("generation.max_completion_length"),
        )
    except GenerateError as exc:
        raise PlaygroundError(str(exc)) from None


def load_side(
    ctx: AppContext, cache: PlaygroundCache, run: RunReads | None, side: Side
) -> tuple[Any, Any, str]:
    """``(model, tokenizer, label)`` of one side of ``run`` (owner-checked by the caller, None:
    no run picked), within the model rules."""
    try:
        if side.key == CUSTOM:
            spec = resolve_model(ctx, CUSTOM, side.custom or "")
            model, tokenizer = ctx.model(spec)
            return model, tokenizer, spec.name_or_path
        if run is None:
            raise PlaygroundError("run: Pick a run first.")  # as run_dir_of says it
        labels = {m.key: m.label for m in run_models(run.run_dir, run.config)}
        if side.key not in labels:
            raise PlaygroundError(
                f"model: the run has no model {side.key!r}; it has {', '.join(labels)}"
            )
        model, tokenizer = cache.models.get(run, side.key)
        return model, tokenizer, labels[side.key]
    except PreviewError as exc:
        raise PlaygroundError(f"model: {exc}") from None
    except ConfigError as exc:  # the demo's size cap
        raise PlaygroundError(f"model: {exc.reason}") from None
    except (ModelLoadError, RunModelError, OSError) as exc:
        raise PlaygroundError(f"model: {exc}") from None


def _tool_replies(
    run: RunReads, model: Any, tokenizer: Any, prompt: Any, settings: SamplingSettings
) -> list[Any]:
    try:
        return tool_replies(
            model, tokenizer, prompt, settings, run.config.tools, run.config.model.name_or_path
        )
    except GenerateError as exc:
        raise PlaygroundError(str(exc)) from None


def score_replies(
    spec: RewardSpec, question: str, replies: list[Any], answer: str | None
) -> list[ScoredSample]:
    with call_deadline(INTERACTIVE_DEADLINE_S):
        return score(spec, [question] * len(replies), replies, answers=[answer] * len(replies))


def replies_html(label: str, replies: list[Any], scored: list[ScoredSample] | None) -> str:
    """One side: each reply (tags coloured, answer marked; a tool rollout drawn as turns) with
    its total and trace."""
    parts = [f"<h4>{html.escape(label)}</h4>"]
    for i, reply in enumerate(replies):
        parts.append(f'<div class="pg-sample" data-sample="{i}">')
        total = "" if scored is None else f" · reward <b>{fmt(scored[i].total)}</b>"
        parts.append(f"<div><small>sample {i + 1}{total}</small></div>")
        shown = completion_view(reply) if reply else ""
        parts.append(f'<div class="pg-reply">{shown or "<i>(empty)</i>"}</div>')
        if scored is not None:
            parts.append(_trace_table(scored[i]))
        parts.append("</div>")
    return "".join(parts)


def _trace_table(sample: ScoredSample) -> str:
    """The Preview's trace columns (component, raw, weight, contribution, why) as a table."""
    head = "".join(f"<th>{h}</th>" for h in TRACE_HEADERS)
    rows = "".join(
        "<tr>"
        + "".join(
            f"<td>{html.escape(str(v))}</td>"
            for v in (t.name, fmt(t.raw), fmt(t.weight), fmt(t.contribution), t.explanation)
        )
        + "</tr>"
        for t in sample.trace
    )
    return f'<table class="pg-trace"><tr>{head}</tr>{rows}</table>'


def compare_stream(
    ctx: AppContext,
    cache: PlaygroundCache,
    viewer: Viewer,
    run_id: str | None,
    sides: tuple[Side, Side],
    prompt_text: str,
    answer: str | None,
    settings: SamplingSettings,
    spec: RewardSpec | None,
) -> Iterator[tuple[str, str]]:
    """Both sides' HTML after every token of either, then scored with their traces."""
    check_prompt(prompt_text)
    check_settings(ctx, settings)
    run = run_reads(ctx, cache, viewer, run_id) if run_id else None
    prompt = chat_prompt(prompt_text, run.system if run else None)
    loaded = [load_side(ctx, cache, run, side) for side in sides]
    if run is not None and run.config.tools.enabled:  # replies through the run's tools
        streams = [iter([_tool_replies(run, m, t, prompt, settings)]) for m, t, _ in loaded]
    else:
        streams = [stream_replies(m, t, prompt, settings) for m, t, _ in loaded]
    current: list[list[Any]] = [[""] * settings.num_samples for _ in loaded]
    active = [True, True]
    deadline = ctx.demo.call_deadline()
    with bounded_threads(preview_thread_count(ctx)):
        while any(active) and (deadline is None or time.monotonic() < deadline):
            for i, stream in enumerate(streams):  # take turns: both sides grow together
                if active[i]:
                    try:
                        current[i] = next(stream)
                    except StopIteration:
                        active[i] = False
            yield tuple(replies_html(loaded[i][2], current[i], None) for i in range(2))
    if spec is not None:
        yield tuple(
            replies_html(
                loaded[i][2], current[i], score_replies(spec, prompt_text, current[i], answer)
            )
            for i in range(2)
        )


def generate_once(
    ctx: AppContext,
    cache: PlaygroundCache,
    viewer: Viewer,
    run_id: str | None,
    model: str,
    prompt_text: str,
    settings: SamplingSettings,
) -> dict[str, Any]:
    """Replies of one model of the viewer's run, scored by the run's reward spec (for the
    ``/generate`` endpoint): ``model`` is ``base``, ``final``, ``checkpoint-N`` or
    ``latest`` (final, else the newest checkpoint)."""
    check_prompt(prompt_text)
    check_settings(ctx, settings)
    run = run_reads(ctx, cache, viewer, run_id)
    if model == "latest":
        model = run_models(run.run_dir, run.config)[-1].key
    loaded, tokenizer, label = load_side(ctx, cache, run, Side(model))
    prompt = chat_prompt(prompt_text, run.system)
    with bounded_threads(preview_thread_count(ctx)):
        if run.config.tools.enabled:
            replies: list[Any] = _tool_replies(run, loaded, tokenizer, prompt, settings)
        else:
            replies = generate_replies(
                loaded, tokenizer, prompt, settings, deadline=ctx.demo.call_deadline()
            )
    scored = score_replies(run.config.reward, prompt_text, replies, None)
    return {
        "model": model,
        "label": label,
        "replies": replies,
        "totals": [s.total for s in scored],
        "traces": [[t.to_dict() for t in s.trace] for s in scored],
    }
