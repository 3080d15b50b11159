"""The similarity component scores exactly what rouge-score and sacrebleu compute."""

import pytest
from rouge_score import rouge_scorer
from sacrebleu.metrics import CHRF

from rewards.composer import score
from rewards.spec import RewardSpec, RewardSpecError

PAIRS = [
    ("the cat sat on the mat", "a cat was sitting on the mat"),
    ("Police arrested two men after a robbery in the city centre.", "Two men were arrested."),
    ("running runs ran", "the runner is running"),
    ("", "something"),
    ("Der Hund bellt laut.", "Der Hund bellte sehr laut."),
    ("完全不同的文本", "完全相同的文本"),
]


def spec(**params):
    return RewardSpec.from_dict({"components": [{"name": "similarity", "params": params}]})


def raws(s, completions, references):
    return [x.trace[0].raw for x in score(s, None, completions, answers=references)]


@pytest.mark.parametrize("stem", [False, True])
def test_rouge_l_equals_rouge_score(stem):
    scorer = rouge_scorer.RougeScorer(["rougeL"], use_stemmer=stem)
    want = [scorer.score(ref, hyp)["rougeL"].fmeasure for hyp, ref in PAIRS]
    got = raws(spec(use_stemmer=stem), [h for h, _ in PAIRS], [r for _, r in PAIRS])
    assert got == want


def test_chrf_equals_sacrebleu():
    chrf = CHRF()
    want = [chrf.sentence_score(hyp, [ref]).score / 100 for hyp, ref in PAIRS]
    got = raws(spec(metric="chrf"), [h for h, _ in PAIRS], [r for _, r in PAIRS])
    assert got == want


def test_answer_scope_and_missing_references():
    s = spec(scope="answer")
    scored = score(
        s,
        None,
        ["<think>long notes</think><answer>the cat sat</answer>", "x", "y"],
        answers=["the cat sat", None, " "],
    )
    assert scored[0].total == 1.0 and "ROUGE-L F 1.000" in scored[0].trace[0].explanation
    assert scored[1].total is None and scored[2].total is None


def test_a_named_reference_column():
    s = spec(gold_column="summary", metric="chrf")
    got = score(s, None, ["a short summary"], columns={"summary": ["a short summary"]})
    assert got[0].total == pytest.approx(1.0)


def test_embedding_is_refused_by_name_without_its_package_or_a_local_model(tmp_path):
    import importlib.util

    with pytest.raises(RewardSpecError) as err:
        spec(metric="embedding", embedding_model=str(tmp_path))
    if importlib.util.find_spec("sentence_transformers") is None:
        assert err.value.field == "components[0].params.metric"
        assert "sentence-transformers package, which is not installed" in str(err.value)
    else:
        assert err.value.field == "components[0].params.embedding_model"
