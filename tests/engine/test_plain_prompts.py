"""A model whose tokenizer has no chat template: plain-text prompts in preview and training."""

from __future__ import annotations

import pytest
from trl.data_utils import maybe_apply_chat_template

from engine.config.run_config import RunConfig
from engine.data.prompts import for_trainer, plain_prompt, prompt_format, render_prompt
from engine.generation.sampling import encode_prompts
from engine.models.char_tokenizer import build_char_tokenizer
from engine.models.loading import load_model_and_tokenizer
from engine.models.specs import ModelSpec
from storage import runs as run_store
from storage.paths import db_path
from storage.records.metrics import metric_names
from storage.sqlite.db import Database
from storage.sqlite.schema import RunStatus
from tests.in_process_run import run_in_process
from tests.tiny_models import save_tiny_llama
from ui.preview.generate import CUSTOM, PreviewRequest, generate_preview
from ui.shared.context import AppContext, DemoLimits

CHAT = [
    {"role": "system", "content": "Answer in tags."},
    {"role": "user", "content": "What is 2 plus 3?"},
]


@pytest.fixture(scope="module")
def plain_model_dir(tmp_path_factory):
    """A tiny random Llama whose tokenizer has no chat template, as base models ship."""
    tokenizer = build_char_tokenizer()
    tokenizer.chat_template = None
    path = save_tiny_llama(tmp_path_factory.mktemp("plain-llama"), tokenizer)
    assert not (path / "chat_template.jinja").exists()
    return path


def test_plain_layout_is_question_then_answer():
    assert plain_prompt(CHAT) == "Answer in tags.\n\nQuestion: What is 2 plus 3?\nAnswer:"
    assert plain_prompt("already text") == "already text"
    turns = [*CHAT, {"role": "assistant", "content": "5"}, {"role": "user", "content": "And 4?"}]
    assert plain_prompt(turns).endswith("Answer: 5\n\nQuestion: And 4?\nAnswer:")
    with pytest.raises(ValueError, match="message 0 must be a dict"):
        plain_prompt([{"text": "hi"}])


def test_a_prompt_ending_with_the_answers_opening_is_continued():
    opened = [*CHAT, {"role": "assistant", "content": "<think>"}]
    assert plain_prompt(opened) == "Answer in tags.\n\nQuestion: What is 2 plus 3?\nAnswer: <think>"
    tokenizer = build_char_tokenizer()
    text = render_prompt(tokenizer, opened)
    assert text.endswith("<|assistant|><think>")  # no end-of-turn, no second generation prompt
    # rendered as TRL renders it for GRPO and RLOO, so sampling and training see one prompt
    assert text == maybe_apply_chat_template({"prompt": opened}, tokenizer)["prompt"]


def test_tokenizer_without_template_gets_plain_text(plain_model_dir):
    _, tokenizer = load_model_and_tokenizer(ModelSpec(str(plain_model_dir)), device="cpu")
    assert prompt_format(tokenizer) == "plain text"
    assert render_prompt(tokenizer, CHAT) == plain_prompt(CHAT)
    # Token for token as TRL tokenizes a plain string prompt.
    assert encode_prompts(tokenizer, [CHAT])[0] == tokenizer(plain_prompt(CHAT))["input_ids"]
    rows = [{"prompt": CHAT, "answer": "5"}]
    assert for_trainer(tokenizer, rows) == [{"prompt": plain_prompt(CHAT), "answer": "5"}]


def test_tokenizer_with_template_keeps_chat_prompts():
    tokenizer = build_char_tokenizer()
    assert prompt_format(tokenizer) == "chat template"
    rows = [{"prompt": CHAT, "answer": "5"}]
    assert for_trainer(tokenizer, rows) is rows
    assert render_prompt(tokenizer, CHAT).startswith("<|system|>")


def test_preview_says_prompts_went_as_plain_text(plain_model_dir, tmp_path, monkeypatch):
    monkeypatch.setenv("STUDIO_MODEL_ROOTS", str(plain_model_dir.parent))  # the web may load it
    ctx = AppContext(data_dir=tmp_path)
    request = PreviewRequest(
        model_key=CUSTOM,
        custom_model=str(plain_model_dir),
        data={"source": "builtin"},
        num_prompts=2,
        samples_per_prompt=2,
        max_new_tokens=4,
    )
    cache = generate_preview(ctx, request)
    assert "prompts as plain text (the tokenizer has no chat template)" in cache.source
    assert len(cache.completions) == 4


def _train_one_step(data_dir, plain_model_dir, algorithm: str) -> str:
    config = RunConfig.from_dict(
        {
            "algorithm": algorithm,
            "model": {"name_or_path": str(plain_model_dir)},
            "generation": {"num_generations": 2, "max_completion_length": 8},
            "training": {
                "steps": 1,
                "prompts_per_step": 2,
                "save_steps": 0,
                "eval_samples": 0,
                "samples_per_log": 4,
            },
        }
    )
    run_id, status = run_in_process(data_dir, config)
    with Database(db_path(data_dir)) as db:
        run = run_store.get_run(db, run_id)
        names = set(metric_names(db, run_id))
    assert status == RunStatus.COMPLETED, run.error_message
    assert run.last_step == 1
    return names


@pytest.mark.parametrize("algorithm", ["grpo", "rloo", "ppo"])
def test_a_step_trains_on_plain_prompts(data_dir, plain_model_dir, algorithm):
    names = _train_one_step(data_dir, plain_model_dir, algorithm)
    assert any(n.startswith("reward") for n in names), names


@pytest.mark.reliability
def test_a_preview_stops_at_the_public_apps_time_per_call(
    plain_model_dir, tmp_path, monkeypatch, record_property
):
    """Previews and the Playground share one slot: on a public app a call generates for at
    most ``max_call_s`` and keeps what it has (here 0 s: the first chunk of prompts only)."""
    monkeypatch.setenv("STUDIO_MODEL_ROOTS", str(plain_model_dir.parent))
    ctx = AppContext(data_dir=tmp_path, demo=DemoLimits(max_call_s=0))
    request = PreviewRequest(
        model_key=CUSTOM,
        custom_model=str(plain_model_dir),
        data={"source": "builtin"},
        num_prompts=40,
        samples_per_prompt=2,
        max_new_tokens=2,
    )
    cache = generate_preview(ctx, request)
    record_property("probes_tried", 1)
    record_property("probes_passed", int(len(cache.completions) == 32))
    assert len(cache.completions) == 32  # 16 prompts x 2 samples: one chunk, then the bound
    assert "stopped at this app's 0 s per preview" in cache.source
