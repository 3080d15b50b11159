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
- ``/compare_specs``, ``/rescore_run``: the reward lab's (:mod:`ui.api.lab`, on these checks).

Each endpoint is a plain function of ``AppContext`` and JSON-able arguments (tested without
Gradio), in a module by what it serves (:mod:`~ui.api.scoring`, :mod:`~ui.api.runs`,
:mod:`~ui.api.models`, :mod:`~ui.api.lab`); :func:`~ui.api.endpoints.build_api` registers them
with ``gr.api``. Errors come back as ``gr.Error``
with the field named, never as a stack trace. The run endpoints take the caller's
:class:`~ui.access.identity.Viewer`, worked out from the request on the server, and serve only the
caller's runs (an admin's: all); another user's run reads exactly like a missing one.
"""

from ui.api.endpoints import CONCURRENCY, build_api
from ui.api.errors import ApiError, as_gradio_error
from ui.api.models import export_model, generate, sampling_settings
from ui.api.runs import (
    MAX_CURSOR,
    MAX_METRIC_NAMES,
    MAX_METRIC_ROWS,
    list_runs,
    parse_run_config,
    run_action,
    run_metrics,
    run_status,
    start_run,
)
from ui.api.scoring import (
    MAX_API_COMPLETIONS,
    MAX_API_TEXT_CHARS,
    MAX_API_TOTAL_CHARS,
    check_texts,
    reward_spec,
    score_preview,
)

__all__ = [
    "CONCURRENCY",
    "MAX_API_COMPLETIONS",
    "MAX_API_TEXT_CHARS",
    "MAX_API_TOTAL_CHARS",
    "MAX_CURSOR",
    "MAX_METRIC_NAMES",
    "MAX_METRIC_ROWS",
    "ApiError",
    "as_gradio_error",
    "build_api",
    "check_texts",
    "export_model",
    "generate",
    "list_runs",
    "parse_run_config",
    "reward_spec",
    "run_action",
    "run_metrics",
    "run_status",
    "sampling_settings",
    "score_preview",
    "start_run",
]
