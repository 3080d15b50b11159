"""The Design tab says what it is doing, in a real browser (issue 45, bug 8): a "Try it" score
on its way is marked pending, the preset menu names the preset a reload restored, and Add shows
the block it added."""

from __future__ import annotations

import pytest
from playwright.sync_api import Page, expect

from tests.ui.test_browser import add_component, set_number
from tests.ui.test_browser_memory import stored_change

pytestmark = pytest.mark.browser

# Every value the total's data-pending attribute took, in order (null: cleared).
WATCH_PENDING = """() => { const el = document.querySelector('#try-total'); window.pendings = [];
  new MutationObserver(() => window.pendings.push(el.getAttribute('data-pending')))
    .observe(el, {attributes: true, attributeFilter: ['data-pending']}); }"""


def load_preset(page: Page, name: str) -> None:
    page.locator("#preset input").click()
    page.get_by_role("option", name=name, exact=True).click()
    page.locator("#load-preset").click()


def test_a_try_it_score_on_its_way_is_marked_pending_until_it_lands(page: Page):
    total = page.locator("#try-total")
    expect(total).to_contain_text("Total reward: 1.5")
    page.evaluate(WATCH_PENDING)
    load_preset(page, "format only")
    expect(total).to_contain_text("Total reward: 1")
    expect(total).not_to_contain_text("1.5")
    expect(total).not_to_have_attribute("data-pending", "")
    pendings = page.evaluate("() => window.pendings")
    assert pendings and pendings[0] == "" and pendings[-1] is None, pendings
    # A typed completion too: pending, then its own score.
    page.evaluate("() => { window.pendings = []; }")
    box = page.locator("#try-completion textarea")
    box.fill("no tags at all")
    box.press("End")
    box.press_sequentially(" x")  # typed: a filled value fires no input event
    expect(total).to_contain_text("Total reward: 0")
    expect(total).not_to_have_attribute("data-pending", "")
    pendings = page.evaluate("() => window.pendings")
    assert pendings and pendings[0] == "" and pendings[-1] is None, pendings


def test_the_preset_menu_names_the_preset_a_reload_restored(page: Page):
    preset = page.locator("#preset input")
    expect(preset).to_have_value("R1-style math")
    with stored_change(page, "reward-studio-design"):
        load_preset(page, "format only")
    page.reload()
    page.wait_for_selector("#main-tabs")
    expect(page.locator("#spec-status")).to_contain_text("format × 1")
    expect(preset).to_have_value("format only")
    # A spec edited away from every preset, once restored, is shown under none.
    with stored_change(page, "reward-studio-design"):
        set_number(page, "format-weight", 3)
    page.reload()
    page.wait_for_selector("#main-tabs")
    expect(page.locator("#spec-status")).to_contain_text("format × 3")
    expect(preset).to_have_value("")


# The top of a block, as a share of the window's height from its top edge.
BLOCK_TOP = "(id) => document.getElementById(id).getBoundingClientRect().top / innerHeight"


def test_add_shows_the_block_it_added(page: Page):
    # A short window whose view ends at the Add button: the new block lands at the view's edge.
    page.set_viewport_size({"width": 1400, "height": 500})
    page.evaluate("() => document.querySelector('#add-component').scrollIntoView({block: 'end'})")
    add_component(page, "tool_answer")
    block = page.locator("#slot-tool-answer")
    expect(block).to_contain_text("● on")
    top = page.evaluate(BLOCK_TOP, "slot-tool-answer")
    assert -0.01 <= top < 0.5, top  # shown from its title, not cut at the bottom
