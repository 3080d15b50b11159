"""The reward lab's endpoints: /compare_specs and /rescore_run, with their bounds and owners."""

import pytest

from rewards.composer import score
from rewards.spec import PRESETS
from storage import runs as run_store
from storage.records.samples import add_samples
from ui.access.identity import Viewer
from ui.api import ApiError
from ui.api import lab as lab_api

R1 = PRESETS["R1-style math"].to_yaml()
CONCISE = PRESETS["concise answers"].to_json()
TEXTS = [
    "<think>2 + 3 = 5</think><answer>5</answer>",
    "The answer is 5",
    "<think>2 + 3 = 6</think><answer>6</answer>",
    "<answer>5</answer>",
]
ALICE, BOB = Viewer("user:alice", "alice"), Viewer("user:bob", "bob")


def test_compare_specs_reports_each_spec_and_the_differences(ctx):
    out = lab_api.compare_specs(ctx, [R1, CONCISE], TEXTS, [0, 0, 1, 1], answers=["5"] * 4)
    assert [s["label"] for s in out["specs"]] == ["spec 1", "spec 2"]
    assert out["specs"][1]["components"] == ["correctness", "format", "conciseness", "repetition"]
    assert set(out["specs"][0]["probes"]) >= {"strip tags", "answer only"}
    assert len(out["rows"]) == 4 and len(out["groups"]) == 2
    dis = [r["disagreement[spec 2]"] for r in out["rows"]]
    assert dis == sorted(dis, reverse=True)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"specs": [R1]}, "specs: a list of 2 to 4"),
        ({"specs": [R1, {"components": [{"name": "nope"}]}]}, r"specs\[1\]\.components\[0\]\.name"),
        ({"groups": [0, 0, 1]}, "groups: one prompt id per completion"),
        ({"groups": [0, 0, 1, "x"]}, r"groups\[3\]: a whole number"),
        ({"completions": ["x"] * 300, "groups": [0] * 300}, "completions: 2 to 256"),
        ({"completions": ["x" * 20_000] * 8, "groups": [0] * 8}, "at most 142,857"),
        ({"scale_rewards": "mean"}, "scale_rewards: one of group, batch, none"),
    ],
)
def test_compare_specs_names_the_bad_argument(ctx, kwargs, message):
    args = {"specs": [R1, CONCISE], "completions": TEXTS, "groups": [0, 0, 1, 1]} | kwargs
    with pytest.raises(ApiError, match=message):
        lab_api.compare_specs(ctx, **args)


def test_rescore_serves_only_the_owner(ctx):
    run_store.create_run(ctx.db, run_id="a-run", algorithm="grpo", config={}, owner=ALICE.owner)
    spec = PRESETS["R1-style math"]
    scored = score(spec, ["2+3?"] * 4, TEXTS, answers=["5"] * 4)
    rows = [
        {
            "prompt": "2+3?",
            "completion": t,
            "answer": "5",
            "group": i // 2,
            "total": s.total,
            "trace": [x.to_dict() for x in s.trace],
        }
        for i, (t, s) in enumerate(zip(TEXTS, scored, strict=True))
    ]
    for step in (1, 2):
        add_samples(ctx.db, "a-run", step, rows)
    out = lab_api.rescore(ctx, "a-run", R1, viewer=ALICE)
    assert (out["samples"], out["steps"], out["max_abs_diff"]) == (8, 2, 0.0)
    concise = lab_api.rescore(ctx, "a-run", CONCISE, viewer=ALICE)
    assert concise["max_abs_diff"] > 0 and len(concise["top"]) == 8
    with pytest.raises(ApiError, match="run_id: no run with id 'a-run'"):
        lab_api.rescore(ctx, "a-run", R1, viewer=BOB)
