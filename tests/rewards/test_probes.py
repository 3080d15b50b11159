import json

from rewards.analysis.probes import perturbations, run_probes
from rewards.spec import PRESETS, ComponentSpec, RewardSpec

TASK = "<think>86-62: 6-2=4; 8-6=2; so 24. That settles it.</think><answer>24</answer>"


def by_name(results):
    return {r.name: r for r in results}


def test_all_probes_apply_to_a_tagged_completion():
    edits = dict((n, t) for n, _, t in perturbations(TASK))
    assert edits["strip tags"] == "86-62: 6-2=4; 8-6=2; so 24. That settles it.24"
    assert edits["answer only"] == "<answer>24</answer>"
    assert edits["wrong answer, right format"].endswith("<answer>25</answer>")
    assert edits["truncate"] == TASK[: len(TASK) // 2]
    assert edits["repeat a sentence"].count("86-62: 6-2=4; 8-6=2; so 24.") == 4


def test_r1_reward_does_not_pay_for_cheap_edits():
    results = by_name(run_probes(PRESETS["R1-style math"], "86-62", TASK, "24"))
    assert not any(r.rewarded for r in results.values())
    wrong = results["wrong answer, right format"]
    assert wrong.delta_total == -1.0
    assert wrong.summary == "reward falls by 1.00 (correctness -1.00)"
    assert [c.delta_contribution for c in wrong.components] == [-1.0, 0.0]


def test_a_length_reward_pays_for_answer_only():
    spec = RewardSpec(
        [
            ComponentSpec("correctness", 1.0),
            ComponentSpec("conciseness", 1.0, {"unit": "characters", "max_len": 100}),
        ]
    )
    results = by_name(run_probes(spec, "86-62", TASK, "24"))
    answer_only = results["answer only"]
    assert answer_only.rewarded and answer_only.delta_total > 0
    assert "conciseness" in answer_only.summary


def test_probes_without_a_marked_answer():
    results = by_name(run_probes(PRESETS["R1-style math"], "p", "I think it is 24", "24"))
    assert not results["answer only"].applicable
    assert not results["wrong answer, right format"].applicable
    assert results["strip tags"].applicable is False  # nothing to strip
    assert results["append filler"].applicable


def test_tokens_via_tokenize():
    spec = RewardSpec(
        [ComponentSpec("conciseness", 1.0, {"mode": "overlong", "max_len": 80, "cache": 20})]
    )
    results = by_name(run_probes(spec, "p", TASK, "24", tokenize=lambda s: list(s)))
    assert results["append filler"].total == -1.0
    untokenized = by_name(run_probes(spec, "p", TASK, "24"))
    assert untokenized["append filler"].total is None


def test_json():
    json.dumps(
        [r.to_dict() for r in run_probes(PRESETS["hand-tuned GRPO script"], "p", TASK, "24")]
    )
