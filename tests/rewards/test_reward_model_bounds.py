"""Bounded work and no server-path oracle for the reward_model component on the web: a forward
pass holds at most MAX_BATCH_TOKENS padded tokens whatever batch_size x max_length a spec asks,
no batch starts after a web call's time budget, and a server folder the app's model rule refuses
reads the same whether it exists or not."""

from __future__ import annotations

import pytest

from engine.models.char_tokenizer import build_char_tokenizer
from rewards.components import reward_model
from rewards.components.reward_model import MAX_BATCH_TOKENS, load_reward_model
from rewards.composer import score
from rewards.spec import RewardSpec
from rewards.verification.deadline import call_deadline
from tests.tiny_models import save_tiny_reward_model
from ui.shared.context import AppContext, DemoLimits

TEXTS = ["a", "bb", "ccc", "dddd", "eeeee"]


@pytest.fixture(scope="module")
def rm_dir(tmp_path_factory):
    return save_tiny_reward_model(tmp_path_factory.mktemp("tiny-rm"), build_char_tokenizer())


def spec(folder, **params) -> RewardSpec:
    component = {"name": "reward_model", "params": {"model": str(folder), **params}}
    return RewardSpec.from_dict({"components": [component]})


def test_a_forward_pass_holds_at_most_max_batch_tokens(rm_dir):
    model, _ = load_reward_model(str(rm_dir), "cpu")
    rows = []
    hook = model.register_forward_pre_hook(
        lambda _m, _a, kw: rows.append(kw["input_ids"].shape[0]), with_kwargs=True
    )
    try:
        got = score(spec(rm_dir, batch_size=256, max_length=32768, device="cpu"), TEXTS, TEXTS)
    finally:
        hook.remove()
    assert all(s.total is not None for s in got)
    assert rows and max(rows) <= MAX_BATCH_TOKENS // 32768 and sum(rows) == len(TEXTS)


def test_no_batch_starts_after_the_web_call_s_time_budget(rm_dir):
    with call_deadline(0.0):
        got = score(spec(rm_dir, device="cpu"), TEXTS, TEXTS)
    assert all(s.total is None for s in got)
    assert "time budget ran out" in got[0].trace[0].explanation


def test_a_refused_server_folder_reads_the_same_whether_it_exists(rm_dir, tmp_path):
    ctx = AppContext(data_dir=tmp_path / "data", demo=DemoLimits(max_model_params=10**9))
    reward_model.restrict_models(ctx.check_reward_model)
    load_reward_model.cache_clear()  # loaded by the tests above, before the rule
    try:
        answers = []
        for folder in (rm_dir, tmp_path / "no-such-model"):
            got = score(spec(folder), TEXTS[:1], TEXTS[:1])  # validates, then refused
            answers.append(got[0].trace[0].explanation.replace(str(folder), "<folder>"))
    finally:
        reward_model.restrict_models(None)
        ctx.close()
    assert answers[0] == answers[1] and "must be a Hugging Face model id" in answers[0]
