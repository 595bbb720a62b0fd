"""The adjudication screens at 80x24 (the SSH floor): the list, and one item with its ratings and notes."""

from __future__ import annotations

import pytest

from tests.support import wait_until
from tui_rater.service.adjudication import disagreements
from tui_rater.store.adjudication import Adjudication
from tui_rater.ui.adjudicate import AdjudicateApp, ItemScreen


@pytest.mark.parametrize("screen", ["list", "item"])
def test_adjudicate_screen(snap_compare, study, screen):
    alice, bob, carol = (study.human(name) for name in ("alice", "bob", "carol"))
    first, second = study.items("story")[:2]
    for rater, value in ((alice, 1), (bob, 5), (carol, 3)):
        study.add_rating(first.key, "grammaticality", rater.id, value, parse_status="human")
    for rater, value in ((alice, 2), (bob, 3)):
        study.add_rating(second.key, "likability", rater.id, value, parse_status="human")
    study.add_note(first.key, bob.id, "comment", "[b]the ending[/b] is cut")
    study.add_note(first.key, alice.id, "flag")
    queue = disagreements(study, "story")
    app = AdjudicateApp(study.task("story"), Adjudication(study.reopen(), "story", "lead"), queue, 0.0, False)

    async def run_before(pilot):
        await pilot.pause()
        if screen == "item":
            await pilot.press("enter")
            await wait_until(
                pilot, lambda: isinstance(app.screen, ItemScreen) and app.screen.detail is not None, "the item's notes"
            )
            await pilot.pause()

    assert snap_compare(app, terminal_size=(80, 24), run_before=run_before)
