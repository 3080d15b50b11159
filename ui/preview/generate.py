"""Generating a preview: pick the model and the data, sample completions, cache them.

No Gradio here: :func:`generate_preview` takes a :class:`PreviewRequest` and a progress callback
and returns a :class:`~ui.preview.cache.PreviewCache`. The model comes from the engine's model
list (the shipped default, optional offline models), any Hugging Face id or local path, or a
checkpoint of a run; the prompts from any ``DataSpec`` (built-in task, uploaded file, hub id).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import Field, dataclass, fields
from pathlib import Path
from typing import Any

from engine.config.input_policy import InputPolicy
from engine.config.run_config import GenerationSettings
from engine.config.tools import TOOL_NAMES, ToolSettings
from engine.data.datasets import DatasetError, DataSpec
from engine.data.prompts import PLAIN_TEXT, prompt_format
from engine.fields import ConfigError, knob
from engine.generation.sampling import sample_completions
from engine.models.loading import ModelLoadError
from engine.models.specs import ModelSpec, available_models
from engine.run.preflight import check_data
from engine.runtime.checkpoints import latest_model_dir
from engine.runtime.devices import bounded_threads, preview_threads
from rewards.completions.text import question_text
from rewards.params import describe_value
from storage.sqlite.schema import RunStatus
from ui.preview.cache import PreviewCache
from ui.shared.context import AppContext

logger = logging.getLogger(__name__)

CUSTOM = "custom"
RUN_PREFIX = "run:"
MAX_PROMPTS = 64
MAX_SAMPLES = 16
MAX_COMPLETIONS = 512
MAX_NEW_TOKENS = 2048
#: Most new tokens one preview may generate in all (completions x max_new_tokens): what bounds
#: its generation time and the characters every re-score of it reads.
MAX_PREVIEW_TOKENS = 131_072

Progress = Callable[[float, str], None]


class PreviewError(ValueError):
    """A preview cannot run as asked; ``field`` names the input to fix."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field


def model_choices(ctx: AppContext) -> list[tuple[str, str]]:
    """``(label, key)`` of every model the preview can load now: the engine's available
    models, each run's final model or newest checkpoint, and "custom" (an id or a path)."""
    out = [(m.label, m.key) for m in available_models() if m.available]
    for run in ctx.launcher.list():
        if run.output_dir:
            found = latest_model_dir(Path(run.output_dir))
            if found is not None:
                out.append((f"run {run.name}: {found.name}", f"{RUN_PREFIX}{run.id}"))
    out.append(("Any Hugging Face id or local folder…", CUSTOM))
    return out


def unavailable_models_note() -> str:
    """What the optional models need, for the page."""
    lines = [f"- {m.label}: {m.detail}" for m in available_models() if not m.available]
    return "Not available here:\n" + "\n".join(lines) if lines else ""


def resolve_model(ctx: AppContext, key: str, custom: str = "") -> ModelSpec:
    """The ``ModelSpec`` of a model choice."""
    if key == CUSTOM:
        if not custom.strip():
            raise PreviewError("model", "type a Hugging Face id or a local folder path")
        spec = ModelSpec(name_or_path=custom.strip())
        try:
            ctx.input_policy.check_model(spec)
        except ConfigError as exc:
            raise PreviewError("model", exc.reason) from None
        return spec
    if key.startswith(RUN_PREFIX):
        run_id = key.removeprefix(RUN_PREFIX)
        run = next((r for r in ctx.launcher.list() if r.id == run_id), None)
        found = latest_model_dir(Path(run.output_dir)) if run and run.output_dir else None
        if found is None:
            raise PreviewError("model", f"run {run_id} has no saved model or checkpoint yet")
        return ModelSpec(name_or_path=str(found))
    for choice in available_models():
        if choice.key == key:
            if not choice.available or choice.spec is None:
                raise PreviewError("model", f"{choice.label} is not available: {choice.detail}")
            return choice.spec
    raise PreviewError("model", f"unknown model choice {key!r}")


_TRAINING_SAMPLING = {f.name: f.default for f in fields(GenerationSettings)}


@dataclass(frozen=True)
class PreviewRequest:
    """What the user asked the preview to generate; each sampling knob's range, default and
    help are declared once here (the Preview form is built from them)."""

    model_key: str
    custom_model: str
    data: dict[str, Any]
    num_prompts: int = knob(4, help="Prompts drawn from the data.", lo=1, hi=MAX_PROMPTS)
    samples_per_prompt: int = knob(
        4, help="Completions sampled for each prompt.", lo=1, hi=MAX_SAMPLES
    )
    temperature: float = knob(
        _TRAINING_SAMPLING["temperature"],
        help="Sampling temperature (0 = greedy).",
        lo=0,
        hi=2,
    )
    max_new_tokens: int = knob(
        _TRAINING_SAMPLING["max_completion_length"],
        help="Most new tokens per completion.",
        lo=1,
        hi=MAX_NEW_TOKENS,
    )
    seed: int = knob(0, help="Seed of the sampling.", lo=0, hi=2**31 - 1)
    #: Built-in tools the model may call: each rollout then runs TRL's tool loop (call, result,
    #: answer) as a run with ``tools.builtin`` samples it; empty = plain completions.
    tools: tuple[str, ...] = ()

    def check(self, max_completions: int | None = None) -> None:
        """Raise :class:`PreviewError` naming the first input out of range."""
        unknown = [t for t in self.tools if t not in TOOL_NAMES]
        if unknown or len(set(self.tools)) != len(self.tools):
            raise PreviewError(
                "tools", f"must be distinct built-in tools among {', '.join(TOOL_NAMES)}"
            )
        for f in fields(self):
            bounds = f.metadata.get("bounds")
            value = getattr(self, f.name)
            if bounds is None:
                continue
            if isinstance(f.default, int):
                if not bounds.contains(value) or not float(value).is_integer():
                    raise PreviewError(
                        f.name,
                        f"must be a whole number in {bounds.describe()}, "
                        f"got {describe_value(value)}",
                    )
            elif not bounds.contains(value):
                raise PreviewError(
                    f.name, f"must be in {bounds.describe()}, got {describe_value(value)}"
                )
        cap = min(MAX_COMPLETIONS, max_completions or MAX_COMPLETIONS)
        total = int(self.num_prompts) * int(self.samples_per_prompt)
        if total > cap:
            raise PreviewError(
                "samples_per_prompt",
                f"{self.num_prompts} prompts x {self.samples_per_prompt} samples = {total} "
                f"completions; at most {cap} per preview here",
            )
        tokens = total * int(self.max_new_tokens)
        if tokens > MAX_PREVIEW_TOKENS:
            raise PreviewError(
                "max_new_tokens",
                f"{total} completions x {self.max_new_tokens} new tokens = {tokens:,}; at most "
                f"{MAX_PREVIEW_TOKENS:,} per preview (fewer samples or fewer tokens)",
            )

    @classmethod
    def sampling_fields(cls) -> list[Field]:
        """The sampling knobs (everything with a declared range), in form order."""
        return [f for f in fields(cls) if "bounds" in f.metadata]


def load_prompts(
    data: dict[str, Any], n: int, policy: InputPolicy | None = None
) -> list[dict[str, Any]]:
    """The first ``n`` rows of the data spec, within ``policy`` (what a web visitor may read).

    Raises:
        PreviewError: on ``data``, saying what is wrong (never quoting the file's values).
    """
    try:
        spec = DataSpec.from_dict({**data, "max_rows": n})
        if policy is not None:
            policy.check_data(spec)
        return check_data(spec, policy)[:n]
    except (DatasetError, ConfigError) as exc:
        raise PreviewError("data", str(exc)) from None


def generate_preview(
    ctx: AppContext,
    request: PreviewRequest,
    progress: Progress | None = None,
    policy: InputPolicy | None = None,
) -> PreviewCache:
    """Load the model and the prompts, sample completions, and return them cached; the data is
    read within ``policy`` (the viewer's; default the app's)."""
    progress = progress or (lambda fraction, text: None)
    request.check(ctx.demo.max_preview_samples)
    rows = load_prompts(request.data, int(request.num_prompts), policy or ctx.input_policy)
    spec = resolve_model(ctx, request.model_key, request.custom_model)
    progress(0.05, f"Loading {spec.name_or_path}")
    try:
        model, tokenizer = ctx.model(spec)
    except (ModelLoadError, ValueError, OSError) as exc:
        raise PreviewError("model", str(exc)) from None
    prompts = [row["prompt"] for row in rows]
    sample = _sampler(request, tokenizer, spec)
    per_call = max(1, 32 // int(request.samples_per_prompt))
    samples: list[Any] = []
    deadline = ctx.demo.call_deadline()
    done = len_asked = len(prompts)
    for start in range(0, len(prompts), per_call):
        if start and deadline is not None and time.monotonic() > deadline:
            done = start  # a public app's bound on one call: keep the prompts done so far
            rows, prompts = rows[:done], prompts[:done]
            break
        progress(
            0.1 + 0.9 * start / len(prompts),
            f"Generating: prompt {start + 1} of {len(prompts)}",
        )
        # Re-read each chunk: a run may have started or ended since the last one.
        with bounded_threads(preview_thread_count(ctx)):
            chunk = sample(model, prompts[start : start + per_call], int(request.seed) + start)
        samples.extend(_shift(chunk, start))
    progress(1.0, "Scoring")
    name = Path(spec.name_or_path).name or spec.name_or_path
    cut = (
        f"stopped at this app's {ctx.demo.max_call_s} s per preview · " if done < len_asked else ""
    )
    return PreviewCache.from_samples(
        [question_text(p) for p in prompts],
        [row.get("answer") for row in rows],
        samples,
        source=f"{name} · {len(rows)} prompts × {request.samples_per_prompt} samples · {cut}"
        f"T={request.temperature:g} · max {request.max_new_tokens} tokens · "
        f"{tools_note(request.tools)}{prompt_note(tokenizer)}",
        model=repr(spec),
    )


def _sampler(request: PreviewRequest, tokenizer: Any, spec: ModelSpec) -> Callable[..., list]:
    """``sample(model, prompts, seed)``: plain completions, or tool rollouts when the request
    names tools (the tokenizer checked to carry tool calls, as a run's is)."""
    kwargs = {
        "num_samples": int(request.samples_per_prompt),
        "temperature": float(request.temperature),
        "max_new_tokens": int(request.max_new_tokens),
    }
    if not request.tools:
        return lambda model, prompts, seed: sample_completions(
            model, tokenizer, prompts, seed=seed, **kwargs
        )
    from engine.config.toolbox import toolbox_for
    from engine.tools.rollout import sample_tool_rollouts
    from engine.tools.template import prepare_tool_tokenizer

    try:
        prepare_tool_tokenizer(tokenizer, spec.name_or_path)
        toolbox = toolbox_for(ToolSettings(builtin=list(request.tools)))
    except ConfigError as exc:
        raise PreviewError("tools", exc.reason) from None
    return lambda model, prompts, seed: sample_tool_rollouts(
        model, tokenizer, prompts, toolbox, seed=seed, **kwargs
    )


def tools_note(tools: Sequence[str]) -> str:
    """Which tools the preview's rollouts could call, for the source line."""
    return f"tools: {', '.join(tools)} (TRL's tool loop) · " if tools else ""


def preview_thread_count(ctx: AppContext) -> int:
    """Threads the preview may use: the cores no training worker holds (at least one)."""
    running = sum(1 for run in ctx.launcher.list() if run.status == RunStatus.RUNNING)
    return preview_threads(running, ctx.launcher.max_concurrent)


def prompt_note(tokenizer: Any) -> str:
    """Which prompt layout the preview used, as the training run will use it too."""
    if prompt_format(tokenizer) == PLAIN_TEXT:
        return "prompts as plain text (the tokenizer has no chat template)"
    return "prompts through the chat template"


def _shift(samples: Sequence[Any], offset: int) -> list[Any]:
    """Samples of a chunk with prompt indices relative to the whole prompt list."""
    from dataclasses import replace

    return [replace(s, prompt_index=s.prompt_index + offset) for s in samples]
