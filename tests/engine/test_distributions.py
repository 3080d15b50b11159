"""Distributions over a step's whole generation batch: the values of each completion, the lengths
of right and wrong answers apart, and a real GRPO run that stores them beside its samples."""

from __future__ import annotations

import numpy as np
import pytest

from engine.config.run_config import RunConfig
from engine.tracking import metric_names as m
from engine.tracking.distributions import (
    is_correct,
    reward_values,
    scored_values,
    step_distributions,
)
from engine.tracking.generation_batch import GenerationBatch
from engine.tracking.samples import scored_batch
from rewards.composer import ComponentTrace, ScoredSample
from rewards.spec import ComponentSpec, RewardSpec
from storage.paths import db_path
from storage.records.distributions import distributions_since
from storage.records.samples import sample_steps, samples_at
from storage.sqlite.db import Database
from storage.sqlite.schema import RunStatus
from tests.in_process_run import run_in_process

SPEC = RewardSpec([ComponentSpec("correctness", 1.0), ComponentSpec("format", 0.5)])
RIGHT = "<think>2+2=4</think><answer>4</answer>"


def batch(completions: list[str], lengths: list[int], advantages=()) -> GenerationBatch:
    return GenerationBatch(
        prompts=["2+2?"] * len(completions),
        completions=completions,
        answers=["4"] * len(completions),
        completion_ids=[[7] * n for n in lengths],
        advantages=list(advantages),
    )


def test_each_completion_gives_one_value_and_lengths_split_by_correctness():
    b = batch([RIGHT, "<answer>5</answer>", "5", RIGHT], [10, 30, 50, 12], [1.0, -1.0, -1.0, 1.0])
    dist = step_distributions(b, *scored_values(scored_batch(SPEC, b)))
    assert dist[m.DIST_REWARD] == [1.5, 0.0, 0.0, 1.5]
    assert dist[m.DIST_ADVANTAGE] == [1.0, -1.0, -1.0, 1.0]
    assert dist[m.DIST_LENGTH] == [10.0, 30.0, 50.0, 12.0]
    assert dist[m.DIST_LENGTH_CORRECT] == [10.0, 12.0]
    assert dist[m.DIST_LENGTH_WRONG] == [30.0, 50.0]


def test_no_correctness_component_no_split_and_no_advantages_no_advantage():
    fmt_only = RewardSpec([ComponentSpec("format", 1.0)])
    b = batch([RIGHT, "5"], [3, 4])
    dist = step_distributions(b, *scored_values(scored_batch(fmt_only, b)))
    assert set(dist) == {m.DIST_REWARD, m.DIST_LENGTH}


def test_an_unscored_answer_is_neither_right_nor_wrong():
    def traced(component: str, raw: float | None) -> ScoredSample:
        return ScoredSample(raw, [ComponentTrace(component, raw, 1.0, raw, "", component)])

    assert is_correct(traced("correctness", 1.0)) is True
    assert is_correct(traced("tool_answer", -0.5)) is False  # its wrong_value
    assert is_correct(traced("correctness", None)) is None
    assert is_correct(traced("format", 1.0)) is None
    with pytest.raises(ValueError, match="scored: 1 scores for a batch of 2"):
        step_distributions(batch([RIGHT, RIGHT], [1, 1]), *scored_values([traced("format", 1.0)]))


def test_trls_per_function_rewards_give_the_composers_totals_and_verdicts():
    """TRL's rewards_per_func (float32, NaN where a function returned None) against the composer
    scoring the same batch: the distributions need no second scoring."""
    spec = RewardSpec(
        [ComponentSpec("format", 0.5), ComponentSpec("correctness", 1.0, {"gold_column": "answer"})]
    )
    b = batch([RIGHT, "<answer>5</answer>", "5", RIGHT], [10, 30, 50, 12])
    b.answers[3] = None  # correctness cannot score it: NaN in TRL's column
    scored = scored_batch(spec, b)
    columns = [[float("nan") if t.raw is None else t.raw for t in s.trace] for s in scored]
    as_trl = np.asarray(columns, dtype=np.float32).tolist()
    totals, verdicts = reward_values(as_trl, spec)
    want_totals, want_verdicts = scored_values(scored)
    assert totals == pytest.approx(want_totals) and verdicts == want_verdicts
    assert verdicts == [True, False, False, None]
    with pytest.raises(ValueError, match="scores for 2 enabled components"):
        reward_values([[1.0]], spec)


def test_a_grpo_run_stores_the_whole_batch_as_distributions_beside_its_samples(data_dir):
    config = RunConfig.from_dict(
        {
            "reward": {
                "components": [
                    {"name": "correctness", "weight": 1.0},
                    {"name": "format", "weight": 0.5},
                ]
            },
            "generation": {"num_generations": 4, "max_completion_length": 16},
            # 8 completions a step, 4 of them (one group) stored as samples
            "training": {
                "steps": 2,
                "prompts_per_step": 2,
                "save_steps": 0,
                "eval_samples": 0,
                "samples_per_log": 4,
            },
        }
    )
    run_id, status = run_in_process(data_dir, config)
    assert status == RunStatus.COMPLETED
    with Database(db_path(data_dir)) as db:
        rows, _ = distributions_since(db, run_id)
        samples = {step: samples_at(db, run_id, step) for step in sample_steps(db, run_id)}
    by_step = {(r.step, r.name): r for r in rows}
    assert sorted(samples) == [1, 2] and all(len(s) == 4 for s in samples.values())
    for step in (1, 2):
        reward, length = by_step[step, m.DIST_REWARD], by_step[step, m.DIST_LENGTH]
        assert reward.count == length.count == 8  # the whole batch, not the 4 samples
        assert by_step[step, m.DIST_ADVANTAGE].count == 8
        split = [by_step.get((step, n)) for n in (m.DIST_LENGTH_CORRECT, m.DIST_LENGTH_WRONG)]
        assert sum(r.count for r in split if r is not None) == 8  # correctness scored each
        assert all(0 < n <= 16 for n in length.values)
        stored = sorted(s.tokens for s in samples[step])
        assert set(stored) <= set(length.values)  # the samples' lengths are among the batch's
        totals = {float(f"{s.total:.4g}") for s in samples[step]}  # as storage rounds them
        assert totals <= set(reward.values)
