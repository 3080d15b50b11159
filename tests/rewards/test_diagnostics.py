import json
import math

import pytest

from rewards.analysis.diagnostics import group_diagnostics
from rewards.composer import ComponentTrace, ScoredSample, score
from rewards.spec import PRESETS


def sample(**raws_and_weights):
    trace = []
    total, scored = 0.0, False
    for name, (raw, weight) in raws_and_weights.items():
        c = None if raw is None else raw * weight
        trace.append(ComponentTrace(name, raw, weight, c, ""))
        if c is not None:
            total, scored = total + c, True
    return ScoredSample(total if scored else None, trace)


def test_group_stats_follow_trls_bessel_std():
    scored = [sample(a=(x, 1.0)) for x in (1.0, 0.0, 1.0, 1.0)]
    d = group_diagnostics(scored, [0, 0, 1, 1])
    g0, g1 = d.groups
    assert (g0.mean, g1.mean) == (0.5, 1.0)
    assert math.isclose(g0.std, math.sqrt(0.5))
    assert g1.std == 0.0 and g1.zero_std and not g0.zero_std
    assert d.zero_std_fraction == 0.5


def test_variance_shares_sum_to_one_and_name_the_dominant_component():
    # format varies within groups, correctness barely does
    rows = [(1, 1), (1, 0), (1, 1), (0, 0), (0, 1), (0, 0), (1, 1), (1, 0)]
    scored = [sample(correctness=(c, 1.0), format=(f, 0.5)) for c, f in rows]
    groups = [0, 0, 0, 0, 1, 1, 1, 1]
    d = group_diagnostics(scored, groups)
    assert math.isclose(sum(d.variance_share.values()), 1.0)
    # naive: cov(c_k, t) / var(t) over within-group centred values
    cent = {"correctness": [], "format": [], "total": []}
    for g in (0, 1):
        idx = [i for i, x in enumerate(groups) if x == g]
        for key, get in (("correctness", lambda r: r[0] * 1.0), ("format", lambda r: r[1] * 0.5)):
            vals = [get(rows[i]) for i in idx]
            cent[key] += [v - sum(vals) / len(vals) for v in vals]
    cent["total"] = [a + b for a, b in zip(cent["correctness"], cent["format"], strict=True)]
    var = sum(t * t for t in cent["total"])
    for key in ("correctness", "format"):
        want = sum(c * t for c, t in zip(cent[key], cent["total"], strict=True)) / var
        assert math.isclose(d.variance_share[key], want, abs_tol=1e-12)


def test_warnings_in_plain_language():
    rows = (
        [(1, 1, 1.0), (1, 0, 1.0), (0, 1, 1.0), (0, 0, 1.0)] + [(1, 1, 1.0)] * 4 + [(0, 0, 1.0)] * 4
    )
    scored = [
        sample(format=(f, 1.0), correctness=(c * 0.0, 1.0), language=(lang, 0.1))
        for c, f, lang in rows
    ]
    d = group_diagnostics(scored, [0] * 4 + [1] * 4 + [2] * 4)
    assert "67% of groups score identically: GRPO gets no signal from them" in d.warnings[0]
    assert "format explains 100% of reward variance" in d.warnings
    assert "language paid 1 on all 12 samples: it adds no learning signal" in "\n".join(d.warnings)
    assert any(w.startswith("correctness paid 0 on all 12 samples") for w in d.warnings)


def test_missing_scores_are_reported():
    scored = [sample(a=(1.0, 1.0), b=(None, 1.0)), sample(a=(0.0, 1.0), b=(None, 1.0))]
    d = group_diagnostics(scored, [0, 0])
    assert any(w.startswith("b could not score 100% of samples") for w in d.warnings)


def test_correlations():
    scored = [sample(a=(x, 1.0), b=(2 * x + 1, 1.0), c=(-x, 1.0)) for x in (0.0, 1.0, 2.0, 5.0)]
    d = group_diagnostics(scored, [0, 0, 1, 1])
    assert math.isclose(d.correlations["a"]["b"], 1.0)
    assert math.isclose(d.correlations["a"]["c"], -1.0)
    assert any("move together" in w for w in d.warnings)


def test_on_real_scores_and_json():
    completions = [
        "<think>a</think><answer>24</answer>",
        "24",
        "<think>b</think><answer>23</answer>",
        "x",
    ] * 2
    scored = score(PRESETS["R1-style math"], None, completions, answers=["24"] * 8)
    d = group_diagnostics(scored, [0] * 4 + [1] * 4)
    json.dumps(d.to_dict())
    assert d.zero_std_fraction == 0.0


def test_length_mismatch():
    with pytest.raises(ValueError, match="group_ids"):
        group_diagnostics([sample(a=(1.0, 1.0))], [0, 1])
