"""Dark mode reads, in a real browser (issue 45, bug 8): the run config's YAML comments and the
disabled buttons have WCAG's 4.5:1 contrast against what is drawn behind them."""

from __future__ import annotations

import pytest
from playwright.sync_api import Page, expect

from tests.ui.test_browser import open_tab

pytestmark = pytest.mark.browser

# WCAG 2.1's contrast ratio (https://www.w3.org/TR/WCAG21/#dfn-contrast-ratio) of an element's
# text against the first opaque background behind it, the element's opacity blended in.
CONTRAST = """(el) => {
  const rgb = (c) => (c.match(/[\\d.]+/g) || []).map(Number);
  const lum = ([r, g, b]) => { const f = (v) => { v /= 255;
    return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4; };
    return 0.2126 * f(r) + 0.7152 * f(g) + 0.0722 * f(b); };
  const over = (top, a, under) => top.map((v, i) => a * v + (1 - a) * under[i]);
  let page = [255, 255, 255], layers = [];
  for (let n = el; n; n = n.parentElement) {
    const [r, g, b, a = 1] = rgb(getComputedStyle(n).backgroundColor);
    if (a > 0) layers.push([[r, g, b], a]);
    if (a >= 1) break;
  }
  let back = layers.length && layers.at(-1)[1] >= 1 ? layers.pop()[0] : page;
  for (const [c, a] of layers.reverse()) back = over(c, a, back);
  const [r, g, b, a = 1] = rgb(getComputedStyle(el).color);
  const alpha = a * Number(getComputedStyle(el).opacity);
  const text = over([r, g, b], alpha, back);
  const [hi, lo] = [lum(text), lum(back)].sort((x, y) => y - x);
  return (hi + 0.05) / (lo + 0.05);
}"""


@pytest.mark.opens_a_link
def test_yaml_comments_and_disabled_buttons_read_in_dark_mode(page: Page, live_app):
    page.goto(f"{live_app.url}?__theme=dark")
    page.wait_for_selector("#main-tabs")
    open_tab(page, "Train")
    comment = page.locator("#train-yaml .cm-line span", has_text="# Reward Studio").first
    expect(comment).to_be_visible()
    assert comment.evaluate(CONTRAST) >= 4.5
    open_tab(page, "Runs")
    stop = page.locator("#run-stop button, button#run-stop").first
    expect(stop).to_be_disabled()
    assert stop.evaluate(CONTRAST) >= 4.5
