"""The footer names the focused question's answer keys, through Textual's Pilot (the 1-5 case runs in tmux too:
tests/ui/test_terminal_first_contact.py)."""

from __future__ import annotations

import pytest
from textual.widgets._footer import FooterKey

from tests.support import settle, wait_until


def footer_keys(app) -> dict[str, str]:
    """description -> the keys the footer shows for it."""
    return {key.description: key.key_display for key in app.screen.query(FooterKey)}


@pytest.mark.parametrize("task, keys", [("story", "1-5"), ("story-explicit", "0-100")])
async def test_the_footer_names_the_scale_keys_of_the_focused_question(app_for, task, keys):
    """It said `0-9 rate` whatever the scale: 1-5 on a Likert question, 0-100 on an explicit score (typed, then
    Enter); and `c comment`, the word the help and README use."""
    app = app_for(task=task)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_until(pilot, lambda: footer_keys(app).get("rate") == keys, f"{keys} rate in the footer")
        shown = footer_keys(app)
        assert shown["comment"] == "c" and "note" not in shown and shown["quit"] == "q"


async def test_the_footer_names_the_pairwise_letters(pairwise_app):
    _, app = pairwise_app
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_until(pilot, lambda: footer_keys(app).get("rate") == "a/b/t", "a/b/t rate in the footer")


async def test_an_off_scale_digit_says_so_and_saves_nothing(app_for, study):
    app = app_for()
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("9")
        await settle(app, pilot)
        assert [n.message for n in app._notifications] == ["9 is not on this scale (1–5)"]
        assert app.value(0, "grammaticality") is None
