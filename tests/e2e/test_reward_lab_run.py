"""The reward lab on a real short GRPO run of the default model: a linear format-weight
schedule logged and applied at every step, and the run's stored samples re-scored."""

from __future__ import annotations

import json

import pytest

from engine.config.run_config import RunConfig
from engine.tracking.rescore import RescoreError, rescore_run
from rewards.spec import RewardSpec
from storage.paths import db_path
from storage.records import samples as sample_store
from storage.records.metrics import metrics_since
from storage.sqlite.db import Database
from storage.sqlite.schema import RunStatus
from tests.in_process_run import run_in_process

pytestmark = pytest.mark.slow

STEPS = 4
#: The format weight goes 0.5 -> 1.5 over steps 1..4 (0.5, 0.833, 1.167, 1.5).
SCHEDULE = {"kind": "linear", "end": 1.5, "start_step": 1, "end_step": STEPS}


def format_weight(step: int) -> float:
    return 0.5 + (1.5 - 0.5) * min(1.0, max(0.0, (step - 1) / (STEPS - 1)))


@pytest.fixture(scope="module")
def lab_run(tmp_path_factory):
    """A finished 4-step GRPO run (2 prompts x 4 completions a step, every sample stored) whose
    format weight follows :data:`SCHEDULE`."""
    data_dir = tmp_path_factory.mktemp("lab") / "data"
    config = RunConfig.from_dict(
        {
            "name": "lab",
            "reward": {
                "components": [
                    {"name": "correctness", "weight": 1.0},
                    {
                        "name": "format",
                        "weight": 0.5,
                        "params": {"mode": "strict"},
                        "schedule": SCHEDULE,
                    },
                ]
            },
            "generation": {"num_generations": 4, "max_completion_length": 48},
            "training": {
                "steps": STEPS,
                "prompts_per_step": 2,
                "eval_steps": 0,
                "eval_samples": 0,
                "save_steps": 0,
                "samples_per_log": 8,
            },
        }
    )
    run_id, status = run_in_process(data_dir, config)
    assert status == RunStatus.COMPLETED
    return data_dir, run_id, config


def test_the_scheduled_weight_is_logged_and_used_at_every_step(lab_run):
    data_dir, run_id, _ = lab_run
    with Database(db_path(data_dir)) as db:
        rows, _ = metrics_since(db, run_id, cursor=0, limit=100_000)
    series: dict[str, dict[int, float]] = {}
    for r in rows:
        series.setdefault(r.name, {})[r.step] = r.value
    assert series["reward/weight/format"] == {
        s: pytest.approx(format_weight(s), abs=1e-12) for s in range(1, STEPS + 1)
    }
    assert "reward/weight/correctness" not in series  # only scheduled weights are logged
    for step in range(1, STEPS + 1):
        # TRL's logged reward is the mean of the weighted sum, with the step's weights (both
        # components score every sample of the built-in task, so it splits by component).
        want = (
            series["rewards/correctness"][step]
            + format_weight(step) * series["rewards/format"][step]
        )
        assert series["reward/total"][step] == pytest.approx(want, abs=1e-5)
    for step, samples in stored(data_dir, run_id).items():
        for s in samples:
            fmt = next(t for t in s.trace if t["name"] == "format")
            assert fmt["weight"] == pytest.approx(format_weight(step), abs=1e-12)
            parts = [t["contribution"] for t in s.trace if t["contribution"] is not None]
            assert s.total == pytest.approx(sum(parts), abs=1e-12)


def stored(data_dir, run_id):
    with Database(db_path(data_dir)) as db:
        return {
            s: sample_store.samples_at(db, run_id, s) for s in sample_store.sample_steps(db, run_id)
        }


def test_rescoring_with_its_own_spec_reproduces_every_stored_total(lab_run):
    data_dir, run_id, config = lab_run
    by_step = stored(data_dir, run_id)
    with Database(db_path(data_dir)) as db:
        result = rescore_run(db, run_id, config.reward)
    assert result.steps == sorted(by_step) and len(result.steps) == STEPS
    assert result.samples == sum(map(len, by_step.values())) == STEPS * 8
    assert result.max_abs_diff == 0.0 and result.unscored_changes == 0
    for step, a, b in zip(result.steps, result.stored_mean, result.new_mean, strict=True):
        assert a == b, step


def test_a_zero_weight_takes_that_components_contribution_out(lab_run):
    data_dir, run_id, config = lab_run
    spec = RewardSpec.from_dict(config.reward.to_dict())
    spec.components[1].weight = 0.0  # format, at every step
    spec.components[1].schedule = None
    spec.validate()
    name = spec.metric_names()[1]
    with Database(db_path(data_dir)) as db:
        result = rescore_run(db, run_id, spec)
    # Expected per sample: the stored total minus the stored format contribution.
    by_step = stored(data_dir, run_id)
    want = {}
    for step, rows in by_step.items():
        values = [
            s.total - (next(t for t in s.trace if t["name"] == name)["contribution"] or 0.0)
            for s in rows
        ]
        want[step] = sum(values) / len(values)
    for step, got in zip(result.steps, result.new_mean, strict=True):
        assert got == pytest.approx(want[step], abs=1e-12)
    shown = [r for r in result.top if r["diff"]]
    assert shown  # the default model writes the format often enough for some to lose it
    for row in shown:  # the samples listed disagree by exactly their format contribution
        sample = by_step[row["step"]][row["index"]]
        fmt = next(t for t in sample.trace if t["name"] == name)["contribution"]
        assert row["diff"] == pytest.approx(-fmt, abs=1e-12)


def test_rescore_refuses_another_owners_run_and_names_unstored_needs(lab_run):
    data_dir, run_id, config = lab_run
    with Database(db_path(data_dir)) as db:
        with pytest.raises(RescoreError, match="run_id: no run with id"):
            rescore_run(db, run_id, config.reward, owner="someone-else")
        spec = RewardSpec.from_dict(
            {
                "components": [
                    {"name": "correctness"},
                    {"name": "conciseness", "params": {"unit": "tokens"}},
                ]
            }
        )
        result = rescore_run(db, run_id, spec)
    assert list(result.skipped) == ["conciseness"]
    assert "runs do not store token ids" in result.skipped["conciseness"]
    assert result.components == ["correctness"]


def test_cli_rescore_ends_with_one_json_line(lab_run, engine_cli, tmp_path):
    data_dir, run_id, config = lab_run
    spec_file = tmp_path / "spec.yaml"
    spec_file.write_text(config.reward.to_yaml())
    done = engine_cli("rescore", run_id, spec_file, "--data-dir", data_dir)
    assert done.returncode == 0, done.stderr
    last = json.loads(done.stdout.strip().splitlines()[-1])
    assert last["samples"] == STEPS * 8 and last["steps"] == STEPS
    assert last["max_abs_diff"] == 0.0
    missing = engine_cli("rescore", "nope", spec_file, "--data-dir", data_dir)
    assert missing.returncode == 2 and "run_id: no run with id 'nope'" in missing.stderr


def test_cli_ab_prints_a_table_and_writes_the_comparison(engine_cli, tmp_path):
    from rewards.spec import PRESETS

    files = []
    for name in ("R1-style math", "concise answers"):
        path = tmp_path / f"{name.split()[0].lower().split('-')[0]}.yaml"
        path.write_text(PRESETS[name].to_yaml())
        files.append(path)
    out = tmp_path / "ab.json"
    done = engine_cli("ab", *files, "--samples", 16, "--output", out)
    assert done.returncode == 0, done.stderr
    assert "mean total" in done.stdout and "concise vs r1:" in done.stdout
    result = json.loads(out.read_text())
    assert [s["label"] for s in result["specs"]] == ["r1", "concise"]
    assert len(result["rows"]) == 16 and result["versus"][0]["groups"] == 2
    bad = engine_cli("ab", files[0], "--samples", 16)
    assert bad.returncode == 2 and "give 2 to 4 spec files" in bad.stderr


def test_ppo_applies_and_logs_a_step_schedule(tmp_path):
    """PPO (our trainer): the format weight switches from 0.5 to 1.5 at step 2."""
    schedule = {"kind": "step", "end": 1.5, "start_step": 2}
    config = RunConfig.from_dict(
        {
            "name": "lab ppo",
            "algorithm": "ppo",
            "reward": {
                "components": [
                    {"name": "correctness", "weight": 1.0},
                    {"name": "format", "weight": 0.5, "schedule": schedule},
                ]
            },
            "generation": {"num_generations": 4, "max_completion_length": 32},
            "training": {
                "steps": 2,
                "prompts_per_step": 2,
                "eval_steps": 0,
                "eval_samples": 0,
                "save_steps": 0,
            },
        }
    )
    data_dir = tmp_path / "data"
    run_id, status = run_in_process(data_dir, config)
    assert status == RunStatus.COMPLETED
    with Database(db_path(data_dir)) as db:
        rows, _ = metrics_since(db, run_id, cursor=0, limit=100_000)
    weights = {r.step: r.value for r in rows if r.name == "reward/weight/format"}
    assert weights == {1: 0.5, 2: 1.5}
    for step, samples in stored(data_dir, run_id).items():
        for s in samples:
            fmt = next(t for t in s.trace if t["name"] == "format")
            assert fmt["weight"] == weights[step]
            parts = [t["contribution"] for t in s.trace if t["contribution"] is not None]
            assert s.total == pytest.approx(sum(parts), abs=1e-12)


def test_rloo_logs_a_reward_made_with_the_scheduled_weight(tmp_path):
    """RLOO through TRL: a rule every completion keeps scores 1.0, so TRL's logged reward is
    exactly the rule's weight in force (a cosine from 1.0 to 0.0 over steps 1..3)."""
    from engine.models.char_tokenizer import build_char_tokenizer
    from tests.tiny_models import save_tiny_llama

    model_dir = save_tiny_llama(tmp_path / "tiny", build_char_tokenizer())
    schedule = {"kind": "cosine", "end": 0.0, "start_step": 1, "end_step": 3}
    rule = {"pattern": "zzzz", "kind": "must_not_contain", "effect": "bonus"}
    config = RunConfig.from_dict(
        {
            "name": "lab rloo",
            "algorithm": "rloo",
            "model": {"name_or_path": str(model_dir)},
            "reward": {"components": [{"name": "rule", "params": rule, "schedule": schedule}]},
            "generation": {"num_generations": 2, "max_completion_length": 8},
            "training": {
                "steps": 3,
                "prompts_per_step": 2,
                "eval_steps": 0,
                "eval_samples": 0,
                "save_steps": 0,
            },
        }
    )
    run_id, status = run_in_process(tmp_path / "data", config)
    assert status == RunStatus.COMPLETED
    with Database(db_path(tmp_path / "data")) as db:
        rows, _ = metrics_since(db, run_id, cursor=0, limit=100_000)
    by = {(r.name, r.step): r.value for r in rows}
    want = {1: 1.0, 2: 0.5, 3: 0.0}  # 0.5 * (1 + cos(pi * (s - 1) / 2))
    for step, weight in want.items():
        assert by[("reward/weight/rule", step)] == pytest.approx(weight, abs=1e-12)
        assert by[("reward/total", step)] == pytest.approx(weight, abs=1e-6)
