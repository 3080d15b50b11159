"""The shipped default model reads arithmetic asked plainly, not only in its built-in templates.

Before it was trained on many phrasings it answered "What is 17 + 25?" with ``<`` (greedy) and
was right on 5% of reworded word problems; these checks fail on that model.
"""

from __future__ import annotations

import pytest

from engine.generation.sampling import sample_completions
from engine.generation.settings import SamplingSettings
from engine.models.loading import load_model_and_tokenizer
from engine.models.specs import ModelSpec
from engine.tasks import builtin_task
from engine.tracking.evaluation import evaluate

pytestmark = pytest.mark.slow

# Plain questions in the shapes people type; the numbers are arbitrary (some are training
# problems, some held out): what is measured is reading the question and answering in format.
PLAIN = {
    "What is 17 + 25?": 42,
    "Compute 17+25.": 42,
    "17 plus 25 equals what?": 42,
    "What is 9 - 4?": 5,
    "what is 3 + 5": 8,
    "How much is 8 + 7?": 15,
    "Calculate 52 - 38.": 14,
    "What's 12 plus 6?": 18,
    "64 - 21 = ?": 43,
    "WHAT IS 30 + 45?": 75,
    "Add 6 to 13.": 19,
    "Subtract 7 from 16.": 9,
    "What is 7 + 2 - 3?": 6,
    "What is 81 minus 40?": 41,
    "Q: 5+4=?": 9,
    "What is the sum of 23 and 14?": 37,
}


@pytest.fixture(scope="module")
def default_model():
    return load_model_and_tokenizer(ModelSpec(), device="cpu")


def rows(with_system: bool = True) -> list[dict]:
    task = builtin_task()
    out = []
    for question, answer in PLAIN.items():
        prompt = task.prompt(question)
        out.append({"prompt": prompt if with_system else prompt[-1:], "answer": str(answer)})
    return out


def test_greedy_reply_to_a_plain_question_is_worked_and_strict(default_model):
    model, tok = default_model
    prompt = builtin_task().prompt("What is 17 + 25?")
    (reply,) = sample_completions(model, tok, [prompt], temperature=0.0, max_new_tokens=96)
    assert reply.text.startswith("<think>17+25: "), reply.text
    assert reply.text.endswith("</answer>") and "</think><answer>" in reply.text, reply.text


def test_plain_questions_sampled_are_mostly_in_format_and_often_right(default_model):
    model, tok = default_model
    report = evaluate(model, tok, rows(), SamplingSettings(num_samples=2))
    assert report.n == 2 * len(PLAIN)
    assert report.format_rate >= 0.6, report.to_dict()
    assert report.accuracy >= 0.35, report.to_dict()


def test_plain_questions_without_the_system_message(default_model):
    model, tok = default_model
    report = evaluate(model, tok, rows(with_system=False), SamplingSettings(num_samples=2))
    assert report.format_rate >= 0.5, report.to_dict()
    assert report.accuracy >= 0.15, report.to_dict()
