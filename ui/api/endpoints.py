""":func:`build_api` registers the API's functions as named Gradio endpoints, each working out
its caller from the request and bounded by its own concurrency limit."""

from __future__ import annotations

from typing import Any

import gradio as gr

from ui.access.identity import viewer_for
from ui.api.errors import as_gradio_error
from ui.api.models import export_model, generate
from ui.api.runs import list_runs, run_action, run_metrics, run_status, start_run
from ui.api.scoring import score_preview
from ui.playground.replies import PlaygroundCache
from ui.shared.context import AppContext

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
        def endpoint(
            run_id: str, request: gr.Request, profile: gr.OAuthProfile | None = None
        ) -> dict:
            return run_action(ctx, action, run_id, viewer=viewer_for(request, profile))

        endpoint.__doc__ = f"{action.capitalize()} one of your runs, as the Runs tab does."
        endpoint.__name__ = f"{action}_run_endpoint"  # the name its errors give
        return as_gradio_error(endpoint)

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
