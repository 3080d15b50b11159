"""Held-out evaluation for every dataset, scored with the run's own reward spec."""

import json

import pytest

from engine.data.datasets import DataSpec, load_rows
from engine.run.worker import heldout_rows
from engine.tracking import metric_names as m
from engine.tracking.heldout_rewards import heldout_reward_metrics
from rewards.spec import RewardSpec


@pytest.fixture
def jsonl(tmp_path):
    path = tmp_path / "summaries.jsonl"
    rows = [{"question": f"Summarise item {i}.", "summary": f"item {i} summary"} for i in range(60)]
    path.write_text("\n".join(json.dumps(r) for r in rows), encoding="utf-8")
    return path


def file_spec(path, **kw):
    return DataSpec(
        source="file", path=str(path), prompt_column="question", answer_column="summary", **kw
    )


def test_a_file_has_a_heldout_split_disjoint_from_training(jsonl):
    spec = file_spec(jsonl, heldout_share=0.25)
    held = heldout_rows(spec, 100)
    train = load_rows(spec)
    assert held and {repr(r["prompt"]) for r in held}.isdisjoint(repr(r["prompt"]) for r in train)
    assert len(held) + len(train) == 60
    assert len(heldout_rows(spec, 3)) == 3


@pytest.mark.parametrize(
    "changes",
    [{"split": "all"}, {"heldout_share": 0.0}],
)
def test_no_heldout_rows_when_training_reads_everything(jsonl, changes):
    assert heldout_rows(file_spec(jsonl, **changes), 100) == []


def test_builtin_still_has_heldout_rows_and_zero_asks_for_none(jsonl):
    assert len(heldout_rows(DataSpec(), 5)) == 5
    assert heldout_rows(file_spec(jsonl, heldout_share=0.25), 0) == []


def test_metrics_are_the_specs_component_means_total_and_accuracy():
    spec = RewardSpec.from_dict(
        {
            "components": [
                {"name": "correctness", "weight": 1.0, "params": {"mode": "exact"}},
                {"name": "similarity", "weight": 0.5, "params": {"metric": "chrf"}},
            ]
        }
    )
    rows = [{"prompt": "p0", "answer": "cat"}, {"prompt": "p1", "answer": None}]
    samples = [
        {"prompt_index": 0, "text": "cat"},
        {"prompt_index": 0, "text": "dog"},
        {"prompt_index": 1, "text": "anything"},
    ]
    got = heldout_reward_metrics(spec, rows, samples)
    # correctness: 1, 0, unscored; chrF: 1, 0, unscored (no reference); totals 1.5, 0, None
    assert got == pytest.approx(
        {
            m.EVAL_REWARD_TOTAL: 0.75,
            m.eval_component_metric("correctness"): 0.5,
            m.eval_component_metric("similarity"): 0.5,
            m.EVAL_ACCURACY: 0.5,
        }
    )


def test_no_correctness_component_means_no_accuracy():
    spec = RewardSpec.from_dict({"components": [{"name": "similarity"}]})
    got = heldout_reward_metrics(
        spec, [{"prompt": "p", "answer": "a b c"}], [{"prompt_index": 0, "text": "a b c"}]
    )
    assert got == {m.EVAL_REWARD_TOTAL: 1.0, m.eval_component_metric("similarity"): 1.0}
