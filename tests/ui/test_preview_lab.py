"""The Preview's reward lab as data: A/B tables, sweeps and their figures on a cache."""

import pytest

from rewards.spec import PRESETS, preset
from ui.plots.lab_charts import sweep_heatmap, sweep_lines, sweep_metric_choices
from ui.preview.cache import PreviewCache
from ui.preview.lab_views import (
    ab_markdown,
    ab_table,
    compare_cache,
    onsets_markdown,
    other_spec,
    sweep_cache,
)
from ui.shared.lab_inputs import LabError

RIGHT = "<think>2+3: 5, checked twice over.</think><answer>5</answer>"
WRONG = "<think>2+3: 6</think><answer>6</answer>"
LOOSE = "the answer is 5"
SHORT = "<answer>5</answer>"


@pytest.fixture
def cache():
    completions = [RIGHT, WRONG, LOOSE, SHORT, RIGHT, SHORT, WRONG, LOOSE]
    return PreviewCache(
        prompts=["What is 2+3?"] * 8,
        completions=completions,
        answers=["5"] * 8,
        completion_ids=[[ord(c) for c in t] for t in completions],
        truncated=[False] * 8,
        groups=[0, 0, 0, 0, 1, 1, 1, 1],
    )


def test_ab_table_sorts_by_disagreement_and_filters_flips(cache):
    others = [("concise answers", preset("concise answers"))]
    result = compare_cache(cache, PRESETS["R1-style math"], others, "group")
    headers, rows = ab_table(result, cache, "most disagreement first")
    assert headers[:5] == ["#", "group", "completion", "total: current", "total: concise answers"]
    dis = [
        max(r["disagreement[concise answers]"] for r in result["rows"] if r["sample"] == row[0])
        for row in rows
    ]
    assert dis == sorted(dis, reverse=True)
    _, by_sample = ab_table(result, cache, "sample order")
    assert [r[0] for r in by_sample] == list(range(8))
    _, flips = ab_table(result, cache, "sample order", only_flips=True)
    flipped = set(result["versus"][0]["sign_flips"])
    assert {r[0] for r in flips} == flipped and all(r[-1] == "flips" for r in flips)
    text = ab_markdown(result)
    assert "| current | sum_then_normalize |" in text and "concise answers** against" in text


def test_ab_slots_and_inputs_are_checked_by_name(cache):
    assert other_spec("—", "", "spec 2") is None
    with pytest.raises(LabError, match="spec 3: the spec text is empty"):
        other_spec("format only", " ", "spec 3")
    with pytest.raises(LabError, match=r"spec 2: components\[0\]\.name"):
        other_spec("copy of the current spec", "components:\n- name: nope\n", "spec 2")
    with pytest.raises(LabError, match="at least one other spec"):
        compare_cache(cache, PRESETS["R1-style math"], [], "group")
    with pytest.raises(LabError, match="Generate completions first"):
        compare_cache(
            PreviewCache(), PRESETS["R1-style math"], [("x", preset("format only"))], "group"
        )


def test_sweeps_draw_lines_or_a_heatmap_and_name_bad_axes(cache):
    spec = preset("concise answers")
    one = sweep_cache(cache, spec, [("conciseness", 0.0, 5.0, 11)])
    figure = sweep_lines(one)
    assert figure["data"][0]["name"] == "zero-variance groups" and len(figure["data"][0]["x"]) == 11
    # The weight axis and its title under the lower panel, not between the two.
    assert figure["layout"]["xaxis"]["anchor"] == "y2"
    assert figure["layout"]["yaxis2"]["domain"][0] == 0.0
    two = sweep_cache(cache, spec, [("format", 0.0, 2.0, 5), ("conciseness", 0.0, 5.0, 4)])
    keys = [k for _, k in sweep_metric_choices(two)]
    assert keys[:2] == ["zero_std_fraction", "correctness_corr"] and "probe:answer only" in keys
    heat = sweep_heatmap(two, "probe:answer only")
    assert len(heat["data"][0]["z"]) == 5 and len(heat["data"][0]["z"][0]) == 4
    assert onsets_markdown(two).startswith(("Where a hacking probe", "No probe pays"))
    with pytest.raises(LabError, match="weight 1: choose one of the spec's components"):
        sweep_cache(cache, spec, [("nope", 0.0, 1.0, 5)])
    with pytest.raises(LabError, match="weight 2: 2 to 61 points here"):
        sweep_cache(cache, spec, [("format", 0.0, 1.0, 5), ("conciseness", 0.0, 1.0, 500)])
    with pytest.raises(LabError, match="weight 2: choose a different component"):
        sweep_cache(cache, spec, [("format", 0.0, 1.0, 5), ("format", 0.0, 1.0, 5)])


def test_the_preview_states_advantages_under_the_specs_aggregation(cache):
    gdpo = preset("concise answers")
    gdpo.aggregation = "normalize_then_sum"
    gdpo.validate()
    line = cache.rescore(gdpo).advantage_line()
    assert line.startswith("- GRPO advantages (normalize then sum): largest |A|")
    assert "(sum then normalize)" in cache.rescore(PRESETS["concise answers"]).advantage_line()
