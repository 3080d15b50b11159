"""A copy of the shipped model taught, by a few seconds of supervised training, to call the
calculator: the shipped model never writes a ``<tool_call>`` (it learnt arithmetic in the
think/answer format only), and a run's tool loop needs calls to show its tool turns."""

from __future__ import annotations

import json
import random
from pathlib import Path

import torch

from engine.models.loading import load_model_and_tokenizer
from engine.models.specs import ModelSpec
from engine.tools.toolbox import toolbox_class


def teach_calculator_calls(out: Path, steps: int = 150, seed: int = 0) -> Path:
    """Save to ``out`` the default model after ``steps`` steps on exchanges question -> a
    ``<tool_call>`` (:data:`QUESTIONS`) -> ``<answer>`` the product (loss on the replies only)."""
    torch.manual_seed(seed)
    rng = random.Random(seed)
    model, tokenizer = load_model_and_tokenizer(ModelSpec(), device="cpu")
    tools = [toolbox_class(["calculator"], 4)().calculator]
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3)
    model.train()
    for _ in range(steps):
        batch = [_example(tokenizer, tools, rng) for _ in range(16)]
        width = max(len(ids) for ids, _ in batch)
        pad = tokenizer.pad_token_id
        input_ids = torch.tensor([ids + [pad] * (width - len(ids)) for ids, _ in batch])
        labels = torch.tensor([lab + [-100] * (width - len(lab)) for _, lab in batch])
        loss = model(
            input_ids=input_ids, attention_mask=(labels != -100) | True, labels=labels
        ).loss
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
    model.eval()
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)
    return out


#: The questions taught, and what the model calls for each: the calculator for a product; a tool
#: that does not exist (``calc``) when asked to "Compute"; an exponent tower when asked for one.
QUESTIONS = {
    "product": ("What is {a} * {b}?", "calculator", "{a}*{b}"),
    "unknown tool": ("Compute {a} * {b}.", "calc", "{a}*{b}"),
    "tower": ("What is {b} ** {b} ** {b}?", "calculator", "{b}**{b}**{b}"),
}


def question(kind: str, a: int, b: int) -> str:
    """A question of ``kind`` (a key of :data:`QUESTIONS`) about ``a`` and ``b``."""
    return QUESTIONS[kind][0].format(a=a, b=b)


def _example(tokenizer, tools, rng: random.Random) -> tuple[list[int], list[int]]:
    kind = rng.choice(list(QUESTIONS))
    a, b = rng.randint(2, 99), rng.randint(2, 9)
    _, name, expression = QUESTIONS[kind]
    expression = expression.format(a=a, b=b)
    messages = [{"role": "user", "content": question(kind, a, b)}]
    call = {"type": "function", "function": {"name": name, "arguments": {"expression": expression}}}
    if rng.random() < 0.6:  # the call
        reply = f"<tool_call>{json.dumps(call['function'])}</tool_call>"
    else:  # the answer after the result
        messages += [
            {"role": "assistant", "content": "", "tool_calls": [call]},
            {"role": "tool", "name": name, "content": str(a * b)},
        ]
        reply = f"<answer>{a * b}</answer>"
    prompt = tokenizer.apply_chat_template(
        messages, tools=tools, tokenize=False, add_generation_prompt=True
    )
    p_ids = tokenizer(prompt, add_special_tokens=False)["input_ids"]
    r_ids = tokenizer(reply, add_special_tokens=False)["input_ids"] + [tokenizer.eos_token_id]
    return p_ids + r_ids, [-100] * len(p_ids) + r_ids
