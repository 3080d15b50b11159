"""The Playground in a real browser (Debian's chromium through Playwright): after a short run,
base and trained replies side by side with their reward traces."""

from __future__ import annotations

import pytest
from playwright.sync_api import Page, expect

from engine.config.run_config import RunConfig
from engine.models.char_tokenizer import build_char_tokenizer
from storage.sqlite.schema import RunStatus
from tests.in_process_run import run_in_process
from tests.tiny_models import save_tiny_llama

pytestmark = pytest.mark.browser


@pytest.mark.opens_a_link
def test_playground_shows_base_and_trained_replies_with_traces(page: Page, live_app, tmp_path):
    model_dir = save_tiny_llama(tmp_path / "tiny", build_char_tokenizer())
    config = RunConfig.from_dict(
        {
            "name": "playground run",
            "model": {"name_or_path": str(model_dir)},
            "generation": {"num_generations": 2, "max_completion_length": 8},
            "training": {"steps": 2, "prompts_per_step": 2, "eval_samples": 0},
            # Not the Design tab's default reward: the replies must be scored with this one.
            "reward": {"components": [{"name": "format", "weight": 1.0}]},
        }
    )
    run_id, status = run_in_process(live_app.data_dir, config)
    assert status == RunStatus.COMPLETED
    page.goto(f"{live_app.url}?run={run_id}")
    page.wait_for_selector("#main-tabs")
    # The link opens the run's view first (the page load selects Runs); then to the Playground.
    runs_tab = page.get_by_role("tab", name="Runs", exact=True)
    expect(runs_tab).to_have_attribute("aria-selected", "true")
    page.get_by_role("tab", name="Playground", exact=True).click()
    expect(page.locator("#pg-run input")).to_have_value("playground run (completed)")
    expect(page.locator("#pg-left input")).to_have_value("starting model (" + str(model_dir) + ")")
    expect(page.locator("#pg-right input")).to_have_value("final model")
    page.locator("#pg-prompt textarea").fill("What is 2 + 3?")
    page.locator("button#pg-generate").click()
    left, right = page.locator("#pg-left-out"), page.locator("#pg-right-out")
    expect(left.locator(".pg-trace")).to_have_count(2, timeout=90_000)  # two samples, scored
    expect(right.locator(".pg-trace")).to_have_count(2)
    expect(left).to_contain_text("starting model")
    expect(right).to_contain_text("final model")
    for side in (left, right):  # the run's own reward, component by component
        expect(side.locator(".pg-trace").first).to_contain_text("format")
        expect(side.locator(".pg-trace").first).not_to_contain_text("correctness")
        expect(side.locator(".pg-trace").first).to_contain_text("why")
        expect(side).to_contain_text("reward")
    expect(page.locator("#pg-message")).to_have_text(
        "ℹ Scored with the reward playground run was trained with: format × 1."
    )
    # The same run's model from the Runs view: an Ollama export, downloaded as a zip.
    page.get_by_role("tab", name="Runs", exact=True).click()
    page.get_by_text("Export the model (Hugging Face, merged, GGUF, Ollama)").click()
    page.locator("#export-format input").click()
    page.get_by_role("option", name="Ollama (GGUF + Modelfile)").click()
    page.locator("button#export-model").click()
    expect(page.locator("#export-message")).to_contain_text(
        "ollama create playground-run -f Modelfile", timeout=60_000
    )
    expect(page.locator("#export-download a[href*='-ollama.zip']").first).to_be_visible()
