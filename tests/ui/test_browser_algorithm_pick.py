"""In the real page: picking PPO for a pretrained model fills in PPO's own suggestion, and
picking the default model again puts the defaults back (issue 43)."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import Page, expect

from engine.config.algorithms import PPOSettings
from engine.config.suggestions import PPO_WARMUP

pytestmark = pytest.mark.browser


def test_picking_ppo_for_a_pretrained_model_fills_in_its_suggestion(page: Page):
    page.get_by_role("tab", name="Train", exact=True).click()
    page.locator("#train-model input").click()
    page.get_by_role("option", name=re.compile("Hugging Face id")).click()
    page.locator("#train-algorithm").get_by_text("PPO", exact=True).click()
    warmup = PPO_WARMUP[False].value  # this machine has no GPU
    expect(page.locator("#train-ppo-value-warmup-steps input")).to_have_value(str(warmup))
    expect(page.locator("#train-ppo-kl-coef input")).to_have_value("0")
    expect(page.locator("#train-model-note")).to_contain_text("PPO's own settings")
    page.locator("#train-model input").click()
    page.get_by_role("option", name=re.compile("default", re.IGNORECASE)).first.click()
    expect(page.locator("#train-ppo-kl-coef input")).to_have_value(str(PPOSettings().kl_coef))
