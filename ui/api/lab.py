"""The reward lab's API endpoints (issue 23), registered by the app factory after build_api.

- ``/compare_specs``: 2-4 reward specs on the same completions: per-spec totals, GRPO
  advantages, zero-variance share and probe payoffs; against the first, sign flips, per-group
  rank correlations and best-sample changes, rows sorted by disagreement;
- ``/rescore_run``: one of the caller's runs re-scored with a spec, every logged step.

The completions of ``/compare_specs`` come without token ids: components that count tokens do
not score them (set their unit to characters or words).

Plain functions of ``AppContext`` like those of :mod:`ui.api`'s other modules, with its checks: the
texts capped as ``/score_preview`` caps them (divided by the scoring a comparison multiplies),
a time budget on every scoring call, and the run read only for its owner.
"""

from __future__ import annotations

from typing import Any

import gradio as gr

from engine.tracking.rescore import RescoreError, rescore_run
from rewards.lab.advantages import SCALE_REWARDS
from rewards.lab.batch import Generations
from rewards.lab.compare import MAX_SPECS, compare
from rewards.params import describe_value
from rewards.verification.deadline import call_deadline
from rewards.verification.mathpool import INTERACTIVE_DEADLINE_S
from ui.access.identity import Viewer, viewer_for
from ui.api import scoring
from ui.api.call_share import OnePerClient
from ui.api.errors import ApiError, as_gradio_error
from ui.shared.context import AppContext

#: Most completions one comparison scores (each spec scores them and six probe edits of each).
MAX_COMPARE_COMPLETIONS = 256
#: Most characters of completions, prompts and answers in one comparison: the scoring call's
#: cap over the seven texts (original and six probes) each completion becomes.
MAX_COMPARE_CHARS = scoring.MAX_API_TOTAL_CHARS // 7
#: Most stored samples one web re-score reads (the CLI reads up to engine's own cap).
MAX_API_RESCORE_SAMPLES = 4_000
# Two workers each: a client's second call while its first runs is refused at once
# (ui.api.call_share), so one client holds at most one of them.
CONCURRENCY = {"compare_specs": 2, "rescore_run": 2}


def compare_specs(
    ctx: AppContext,
    specs: list[dict | str],
    completions: list[str],
    groups: list[int],
    prompts: list[str] | None = None,
    answers: list[str | None] | None = None,
    scale_rewards: str = "group",
    probes: bool = True,
) -> dict[str, Any]:
    """The first spec against each other one on ``completions`` (``groups``: prompt ids)."""
    if not isinstance(specs, list) or not 2 <= len(specs) <= MAX_SPECS:
        raise ApiError(f"specs: a list of 2 to {MAX_SPECS} reward specs")
    parsed = []
    for i, spec in enumerate(specs):
        try:
            parsed.append((f"spec {i + 1}", scoring.reward_spec(spec)))
        except ApiError as exc:  # "spec.<field>: ..." or "spec: ..." -> "specs[i]..."
            raise ApiError(f"specs[{i}]{str(exc).removeprefix('spec')}") from None
    n = len(completions) if isinstance(completions, list) else 0
    scoring.check_texts("completions", completions, n)
    if not 2 <= n <= MAX_COMPARE_COMPLETIONS:
        raise ApiError(f"completions: 2 to {MAX_COMPARE_COMPLETIONS} per comparison, got {n}")
    total = sum(map(len, completions))
    for name, values in (("prompts", prompts), ("answers", answers)):
        if values is not None:
            scoring.check_texts(name, values, n, allow_none=name == "answers")
            total += sum(len(v) for v in values if v is not None)
    if total > MAX_COMPARE_CHARS:
        raise ApiError(
            f"completions: {total:,} characters of completions, prompts and answers; at most "
            f"{MAX_COMPARE_CHARS:,} in one comparison"
        )
    if not isinstance(groups, list) or len(groups) != n:
        raise ApiError(f"groups: one prompt id per completion ({n})")
    for i, g in enumerate(groups):
        if isinstance(g, bool) or not isinstance(g, int) or not 0 <= g < n:
            raise ApiError(
                f"groups[{i}]: a whole number from 0 to {n - 1}, got {describe_value(g)}"
            )
    if scale_rewards not in SCALE_REWARDS:
        raise ApiError(f"scale_rewards: one of {', '.join(SCALE_REWARDS)}")
    batch = Generations(prompts or [""] * n, completions, groups, answers)
    with call_deadline(INTERACTIVE_DEADLINE_S * len(parsed)):
        result = compare(parsed, batch, scale_rewards=scale_rewards, with_probes=bool(probes))
    return result.to_dict()


def rescore(ctx: AppContext, run_id: str, spec: dict | str, *, viewer: Viewer) -> dict[str, Any]:
    """One of ``viewer``'s runs re-scored with ``spec`` (its newest steps, up to the cap)."""
    reward = scoring.reward_spec(spec)
    try:
        with call_deadline(INTERACTIVE_DEADLINE_S * 3):
            result = rescore_run(
                ctx.db, run_id, reward, owner=viewer.scope, max_samples=MAX_API_RESCORE_SAMPLES
            )
    except RescoreError as exc:
        raise ApiError(str(exc)) from None
    return result.to_dict()


def build_lab_api(ctx: AppContext) -> None:
    """Register ``/compare_specs`` and ``/rescore_run`` on the Blocks being built."""
    shares = {name: OnePerClient(name) for name in CONCURRENCY}

    @as_gradio_error
    def compare_specs_endpoint(
        specs: list[str],
        completions: list[str],
        groups: list[int],
        prompts: list[str] | None = None,
        answers: list[str | None] | None = None,
        scale_rewards: str = "group",
        request: gr.Request = None,
    ) -> dict:
        """Compare 2-4 reward specs (JSON or YAML text) on the same completions, grouped by
        prompt id: totals, GRPO advantages, sign flips, rank correlations, probes."""
        with shares["compare_specs"].hold(request):
            return compare_specs(ctx, specs, completions, groups, prompts, answers, scale_rewards)

    @as_gradio_error
    def rescore_run_endpoint(
        run_id: str,
        spec: str,
        request: gr.Request = None,
        profile: gr.OAuthProfile | None = None,
    ) -> dict:
        """One of your runs' stored samples re-scored with a spec, every logged step."""
        with shares["rescore_run"].hold(request):
            return rescore(ctx, run_id, spec, viewer=viewer_for(request, profile))

    for fn, name in (
        (compare_specs_endpoint, "compare_specs"),
        (rescore_run_endpoint, "rescore_run"),
    ):
        gr.api(fn, api_name=name, concurrency_limit=CONCURRENCY[name], concurrency_id=name)
