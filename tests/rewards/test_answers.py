from rewards.verification.answers import extract_answer, find_answer, gold_answer

TASK = "<think>86-62: 6-2=4; 8-6=2; so 24</think><answer>24</answer>"


def test_answer_tag_content_is_extracted():
    assert extract_answer(TASK) == "24"


def test_answer_span_points_into_the_completion():
    span = find_answer(TASK)
    assert span.source == "answer_tag"
    assert TASK[span.start : span.end] == "24"


def test_last_answer_pair_wins_and_whitespace_is_stripped():
    text = "<answer>1</answer> no wait <answer> 2 </answer>"
    span = find_answer(text)
    assert span.text == "2"
    assert text[span.start : span.end] == "2"


def test_boxed_with_nested_braces():
    assert extract_answer(r"so \boxed{\frac{1}{2}} done") == r"\frac{1}{2}"


def test_unbalanced_last_box_falls_back_to_an_earlier_one():
    assert extract_answer(r"\boxed{3} and then \boxed{4") == "3"


def test_gsm8k_hashes():
    assert extract_answer("She has 5 apples.\n#### 5\n") == "5"


def test_loose_completion_has_no_marked_answer():
    assert extract_answer("<think>6-2=4</think> The answer is 24") is None
    assert extract_answer("24") is None


def test_empty_answer_is_none():
    assert extract_answer("<answer>  </answer>") is None


def test_custom_answer_tag():
    assert extract_answer("<final>7</final>", answer_tag="final") == "7"


def test_gold_answer_forms():
    assert gold_answer("Natalia sold 48 clips... #### 72") == "72"
    assert gold_answer(r"\boxed{\frac{1}{3}}") == r"\frac{1}{3}"
    assert gold_answer(" 24 ") == "24"
    assert gold_answer(24) == "24"
    assert gold_answer(None) is None
    assert gold_answer("") is None
    assert gold_answer(float("nan")) is None
    assert gold_answer(True) is None
