"""A scoring call's time budget: language identification stops when it runs out."""

from rewards.components.base import BatchContext
from rewards.components.language import Language
from rewards.verification.deadline import call_deadline, deadline_passed

ENGLISH = "The answer is twenty four because we add the tens and then the ones. "
GERMAN = "Die Antwort ist vierundzwanzig, weil wir zuerst die Zehner addieren. "


def test_chunked_identification_equals_one_text_at_a_time():
    texts = [ENGLISH * 300, GERMAN * 300, ENGLISH * 5 + GERMAN * 5] * 20  # >100k characters
    language = Language(language="en")
    together = language(texts)
    one_by_one = [language([t])[0] for t in texts]
    assert together == one_by_one and together[0] == 1.0 and together[1] == 0.0


def test_an_expired_budget_leaves_the_rest_unscored():
    language = Language(language="en")
    texts = [ENGLISH * 10] * 3
    with call_deadline(0.0):
        assert deadline_passed()
        judged = language.judge(texts, BatchContext(3, None, None, {}))
    assert [j.value for j in judged] == [None, None, None]
    assert "ran out of time" in judged[0].explanation
    assert not deadline_passed() and language(texts) == [1.0, 1.0, 1.0]
