from rewards.registry import REGISTRY


def rule(**params):
    return REGISTRY["rule"].build(params)


def test_must_not_contain_penalty():
    fn = rule(pattern="sorry", kind="must_not_contain", effect="penalty")
    assert fn(["I am SORRY", "fine"]) == [-1.0, 0.0]


def test_must_contain_bonus_and_penalty():
    assert rule(pattern=r"Step \d", kind="must_contain", effect="bonus")(["Step 1", "no"]) == [
        1.0,
        0.0,
    ]
    assert rule(pattern=r"Step \d", kind="must_contain", effect="penalty")(["Step 1", "no"]) == [
        0.0,
        -1.0,
    ]


def test_must_not_contain_bonus():
    assert rule(pattern="maybe", kind="must_not_contain", effect="bonus")(["maybe", "sure"]) == [
        0.0,
        1.0,
    ]


def test_literal_and_case():
    fn = rule(pattern="a.b", literal=True, case_sensitive=True)
    assert fn(["a.b", "axb", "A.B"]) == [-1.0, 0.0, 0.0]


def test_answer_scope():
    fn = rule(pattern="[a-z]", kind="must_not_contain", scope="answer")
    assert fn(["<think>words</think><answer>42</answer>", "<answer>forty</answer>"]) == [0.0, -1.0]


def test_explanation():
    [j] = rule(pattern="sorry").judge(["so sorry"], None)
    assert j.explanation == 'found "sorry": must not contain rule broken'


def test_pathological_pattern_finishes():
    # (a+)+$ backtracks exponentially in Python's re on "aaaa...b" (this would never end); RE2
    # runs in linear time.
    fn = rule(pattern="(a+)+$", kind="must_contain", effect="bonus")
    assert fn(["a" * 30_000 + "b"]) == [0.0]
