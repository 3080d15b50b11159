"""The Playground, /generate, /export_model and ``engine generate`` on a short real run (the
session's tiny run, tests/ui/conftest.py)."""

from __future__ import annotations

import zipfile

import pytest
import torch

from engine.generation.playground import SamplingSettings
from engine.run.saved_models import BASE, FINAL
from engine.runtime.devices import bounded_threads
from ui import api
from ui.access.identity import LOCAL_VIEWER, Viewer
from ui.api import ApiError
from ui.playground.replies import (
    DESIGN_REWARD,
    RUN_REWARD,
    PlaygroundCache,
    PlaygroundError,
    Side,
    compare_stream,
    model_choices,
    scoring_spec,
)
from ui.runs.actions import RunActionError
from ui.runs.model_export import model_export_archive
from ui.shared.context import AppContext, DemoLimits

SPEC = {"components": [{"name": "correctness", "weight": 1.0}, {"name": "format", "weight": 0.5}]}
STRANGER = Viewer("hf:mallory", "mallory")


@pytest.fixture(autouse=True)
def one_thread():
    # Tiny models run fastest on one torch thread, and more would oversubscribe a shared box.
    with bounded_threads(1):
        yield


@pytest.fixture
def ctx(tiny_run):
    context = AppContext(tiny_run[0])
    yield context
    context.close()


def stream_unscored(ctx, run_id, sides, prompt, settings, viewer=LOCAL_VIEWER):
    """The Playground's frames for ``prompt`` with no gold answer and no reward, from a fresh
    model cache."""
    return compare_stream(
        ctx, PlaygroundCache(), viewer, run_id, sides, prompt, None, settings, None
    )


def test_choices_default_to_the_starting_and_final_models(ctx, tiny_run):
    keys = [key for _, key in model_choices(ctx, LOCAL_VIEWER, tiny_run[1])]
    assert keys == [BASE, "checkpoint-1", "checkpoint-2", FINAL, "custom"]
    assert [k for _, k in model_choices(ctx, STRANGER, tiny_run[1])] == ["custom"]


def test_both_sides_stream_then_show_rewards_with_traces(ctx, tiny_run):
    from rewards.spec import RewardSpec

    settings = SamplingSettings(num_samples=2, max_new_tokens=6, seed=3)
    frames = list(
        compare_stream(
            ctx,
            PlaygroundCache(),
            LOCAL_VIEWER,
            tiny_run[1],
            (Side(BASE), Side(FINAL)),
            "What is 2 + 3?",
            "5",
            settings,
            RewardSpec.from_dict(SPEC),
        )
    )
    assert len(frames) >= 6  # one per token, then the scored frame
    left, right = frames[-1]
    for side, label in ((left, "starting model"), (right, "final model")):
        assert label in side
        assert side.count('class="pg-sample"') == 2
        assert side.count('class="pg-trace"') == 2
        assert "correctness" in side and "format" in side and "reward <b>" in side
    assert 'class="pg-trace"' not in frames[0][0]  # streamed frames come before the scores


def test_replies_are_scored_with_the_runs_own_reward_unless_the_design_one_is_asked_for(
    ctx, tiny_run
):
    from engine.config.run_config import RunConfig
    from rewards.spec import RewardSpec
    from storage import runs as run_store

    design = RewardSpec.from_dict({"components": [{"name": "format", "weight": 0.5}]})
    trained = RunConfig.from_dict(run_store.get_run(ctx.db, tiny_run[1]).config).reward
    spec, which = scoring_spec(
        ctx, PlaygroundCache(), LOCAL_VIEWER, tiny_run[1], RUN_REWARD, design
    )
    assert spec == trained and spec != design
    assert which.startswith("Scored with the reward Tiny was trained with: ")
    assert f"{trained.components[0].name} × " in which
    spec, which = scoring_spec(
        ctx, PlaygroundCache(), LOCAL_VIEWER, tiny_run[1], DESIGN_REWARD, design
    )
    assert (spec, which) == (design, "Scored with the Design tab's current reward: format × 0.5.")
    assert scoring_spec(ctx, PlaygroundCache(), LOCAL_VIEWER, None, RUN_REWARD, None)[0] is None
    with pytest.raises(PlaygroundError, match="No run with id"):  # another user's run's spec
        scoring_spec(ctx, PlaygroundCache(), STRANGER, tiny_run[1], RUN_REWARD, design)


def test_a_stream_left_half_read_leaves_gradients_on(ctx, tiny_run):
    """Grad mode is per thread: a generator holding no_grad across its yields turned gradients
    off for the caller (a training run in the same process then failed)."""
    stream = stream_unscored(
        ctx,
        tiny_run[1],
        (Side(BASE), Side(FINAL)),
        "What is 2 + 3?",
        SamplingSettings(max_new_tokens=8),
    )
    next(stream)
    assert torch.is_grad_enabled()
    stream.close()


def test_a_stranger_cannot_generate_from_the_run(ctx, tiny_run):
    with pytest.raises(PlaygroundError, match="No run with id"):
        list(
            stream_unscored(
                ctx,
                tiny_run[1],
                (Side(BASE), Side(FINAL)),
                "hi",
                SamplingSettings(),
                viewer=STRANGER,
            )
        )
    with pytest.raises(ApiError, match="run_id: no run"):
        api.generate(ctx, PlaygroundCache(), tiny_run[1], "hi", viewer=STRANGER)
    with pytest.raises(ApiError, match="run_id: no run"):
        api.export_model(ctx, tiny_run[1], "gguf", viewer=STRANGER)
    with pytest.raises(RunActionError, match="No run with id"):  # the Runs view's own check
        model_export_archive(ctx.db, STRANGER, tiny_run[1], "gguf")


def test_public_caps_and_model_rules_bound_the_work(tiny_run, tmp_path):
    ctx = AppContext(
        tiny_run[0],
        demo=DemoLimits(max_preview_samples=2, sizes={"generation.max_completion_length": 32}),
    )
    try:
        for settings, field in (
            (SamplingSettings(num_samples=3, max_new_tokens=8), "num_samples"),
            (SamplingSettings(max_new_tokens=33), "max_new_tokens"),
        ):
            with pytest.raises(PlaygroundError, match=f"{field}: must be a whole number"):
                list(stream_unscored(ctx, tiny_run[1], (Side(BASE), Side(FINAL)), "hi", settings))
        with pytest.raises(PlaygroundError, match=r"model: .*other server paths"):
            list(
                stream_unscored(
                    ctx,
                    tiny_run[1],
                    (Side("custom", str(tmp_path)), Side(FINAL)),
                    "hi",
                    SamplingSettings(max_new_tokens=8),
                )
            )
    finally:
        ctx.close()


def test_generate_endpoint_is_seeded_and_scored(ctx, tiny_run):
    cache = PlaygroundCache()
    settings = {"num_samples": 2, "seed": 7, "max_new_tokens": 8}
    first = api.generate(
        ctx, cache, tiny_run[1], "What is 2 + 3?", "base", settings, viewer=LOCAL_VIEWER
    )
    again = api.generate(
        ctx, cache, tiny_run[1], "What is 2 + 3?", "base", settings, viewer=LOCAL_VIEWER
    )
    assert first["replies"] == again["replies"] and len(first["replies"]) == 2
    assert len(first["totals"]) == 2 and first["traces"][0]
    with pytest.raises(ApiError, match=r"settings\.temp: unknown field; allowed: temperature"):
        api.generate(ctx, cache, tiny_run[1], "hi", "base", {"temp": 1}, viewer=LOCAL_VIEWER)
    with pytest.raises(ApiError, match="model: the run has no model 'checkpoint-9'"):
        api.generate(ctx, cache, tiny_run[1], "hi", "checkpoint-9", viewer=LOCAL_VIEWER)
    with pytest.raises(ApiError, match="prompt: "):
        api.generate(ctx, cache, tiny_run[1], "", viewer=LOCAL_VIEWER)


def test_export_endpoint_zips_an_ollama_export(ctx, tiny_run):
    path, command = api.export_model(ctx, tiny_run[1], "ollama", "F16", viewer=LOCAL_VIEWER)
    assert command == "ollama create tiny -f Modelfile && ollama run tiny"
    names = zipfile.ZipFile(path).namelist()
    assert {"Modelfile", "README.md", "tiny-F16.gguf"} <= set(names)
    assert not path.startswith(str(tiny_run[0]))  # a per-request copy, outside the data dir
    with pytest.raises(ApiError, match="format: must be one of hf, merged, gguf, ollama"):
        api.export_model(ctx, tiny_run[1], "../../etc", viewer=LOCAL_VIEWER)


def test_cli_generate_prints_the_reply_and_its_reward(tiny_run, engine_cli):
    data_dir, run_id = tiny_run
    out = engine_cli(
        "generate",
        run_id,
        "What is 2 + 3?",
        "--base",
        "--temperature",
        "0",
        "--max-new-tokens",
        "5",
        "--data-dir",
        data_dir,
    )
    assert out.returncode == 0, out.stderr
    assert "starting model" in out.stdout and "[reward" in out.stdout
    bad = engine_cli("generate", run_id, "hi", "--checkpoint", "9", "--data-dir", data_dir)
    assert bad.returncode == 2 and "checkpoint-9" in bad.stderr


def test_one_seed_gives_both_sides_the_same_draws_while_they_interleave(ctx, tiny_run):
    """Each side draws from its own seeded generator, so the same model on both sides, streamed
    turn by turn, samples the same replies (a shared global RNG would not promise that)."""
    settings = SamplingSettings(temperature=1.0, num_samples=3, max_new_tokens=8, seed=11)
    *_, (left, right) = stream_unscored(
        ctx, tiny_run[1], (Side(FINAL), Side(FINAL)), "What is 2 + 3?", settings
    )
    assert left == right
    *_, (other, _) = stream_unscored(
        ctx,
        tiny_run[1],
        (Side(FINAL), Side(FINAL)),
        "What is 2 + 3?",
        SamplingSettings(temperature=1.0, num_samples=3, max_new_tokens=8, seed=12),
    )
    assert other != left  # another seed, other draws


def test_a_prompt_longer_than_the_model_reads_is_refused_by_field(ctx, tiny_run):
    with pytest.raises(ApiError, match=r"prompt: \d+ tokens; this model reads at most 512"):
        api.generate(
            ctx, PlaygroundCache(), tiny_run[1], "7 + 5 " * 100, "base", viewer=LOCAL_VIEWER
        )
